#!/usr/bin/env python3
"""Checks that the checked-in coverage table (tests/ops/op_coverage.tsv) is what
`torchless ops --table` prints: the op table's coverage (kernel x ONNX x engine) is exact, and
a kernel or converter added or lost shows up as a diff here.

Usage: check_op_coverage.py TORCHLESS_BIN op_coverage.tsv
Exit 0 when they are equal; 1 with a unified diff (and how to regenerate) when not.
"""

import difflib
import subprocess
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, path = argv[1], argv[2]
    run = subprocess.run([binary, "ops", "--table"], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        print(f"check_op_coverage: {binary} ops --table failed ({run.returncode}):\n{run.stderr}",
              file=sys.stderr)
        return 1
    with open(path, encoding="utf-8") as f:
        want = f.read()
    if run.stdout == want:
        rows = [l.split("\t") for l in want.splitlines()[4:]]
        print(f"check_op_coverage: {len(rows)} schemas, "
              f"{sum(r[1] != '-' for r in rows)} kernels, {sum(r[2] != '-' for r in rows)} ONNX, "
              f"{sum(r[3] != '-' for r in rows)} engine; the table matches {path}")
        return 0
    diff = difflib.unified_diff(want.splitlines(keepends=True), run.stdout.splitlines(keepends=True),
                                fromfile=path, tofile="torchless ops --table")
    sys.stdout.writelines(diff)
    print(f"\ncheck_op_coverage: {path} is not the op table's coverage; if the change is "
          "intended, run scripts/op_coverage.sh and commit the file", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
