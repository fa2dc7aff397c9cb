#!/usr/bin/python3
"""The schema oracle (issue 2): PyTorch is the judge of our FunctionSchema parser and printer.

1. Round trip: every schema the installed PyTorch knows (torch._C._jit_get_all_schemas() with
   torchvision imported, plus the custom-class method schemas) is parsed by torchless and
   printed back; the text must equal PyTorch's str(schema) byte for byte.
2. The op table: `torchless ops` must print exactly PyTorch's operator schemas, sorted (the
   table is generated from them by scripts/gen_op_schemas.py).

Usage: schema_oracle.py --roundtrip BUILD/tests/schema_roundtrip [--torchless BUILD/bin/torchless]
Exits 1 on any mismatch, printing the first ones.
"""

import argparse
import os
import subprocess
import sys

import torch
import torchvision  # noqa: F401  (registers torchvision:: operators)

MIN_SCHEMAS = 2000
SHOW = 20


def roundtrip(exe, schemas):
    for s in schemas:
        assert "\n" not in s, s
    proc = subprocess.run([exe], input="\n".join(schemas) + "\n", capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        print("schema_roundtrip exited with %d:\n%s" % (proc.returncode, proc.stderr))
        return None
    out = proc.stdout.split("\n")
    if out and out[-1] == "":
        out.pop()
    return out


def check_roundtrip(exe, label, schemas):
    out = roundtrip(exe, schemas)
    if out is None:
        return False
    if len(out) != len(schemas):
        print("%s: sent %d schemas, got %d lines back" % (label, len(schemas), len(out)))
        return False
    bad = [(s, o) for s, o in zip(schemas, out) if s != o]
    print("%s: %d schemas, %d reprinted identically, %d mismatches"
          % (label, len(schemas), len(schemas) - len(bad), len(bad)))
    for s, o in bad[:SHOW]:
        print("  pytorch:   %s\n  torchless: %s" % (s, o))
    return not bad


def check_table(torchless, schemas):
    if not torchless:
        return True
    if not os.path.exists(torchless):
        print("op table: %s not built (build target torchless)" % torchless)
        return False
    proc = subprocess.run([torchless, "ops"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print("torchless ops exited with %d:\n%s" % (proc.returncode, proc.stderr))
        return False
    # torchless:: operators are our own (fused kernels the runtime creates, never saved into
    # archives); every other schema must be PyTorch's, all of them.
    lines = proc.stdout.splitlines()
    own = [s for s in lines if s.startswith("torchless::")]
    ours = [s for s in lines if not s.startswith("torchless::")]
    theirs = sorted(set(schemas))
    if ours == theirs:
        print("op table: `torchless ops` prints all %d PyTorch operator schemas (+%d torchless:: ops)"
              % (len(ours), len(own)))
        return True
    missing = sorted(set(theirs) - set(ours))
    extra = sorted(set(ours) - set(theirs))
    print("op table: %d schemas, PyTorch has %d; %d missing, %d extra%s"
          % (len(ours), len(theirs), len(missing), len(extra),
             "" if missing or extra else " (order differs)"))
    for s in missing[:SHOW]:
        print("  missing: %s" % s)
    for s in extra[:SHOW]:
        print("  extra:   %s" % s)
    print("  (if PyTorch was upgraded: /usr/bin/python3 scripts/gen_op_schemas.py)")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roundtrip", required=True, help="the schema_roundtrip executable")
    ap.add_argument("--torchless", help="the torchless CLI (checks `torchless ops`)")
    args = ap.parse_args()

    ops = [str(s) for s in torch._C._jit_get_all_schemas()]
    methods = [str(s) for s in torch._C._jit_get_custom_class_schemas()]
    print("PyTorch %s, torchvision %s" % (torch.__version__, torchvision.__version__))
    ok = True
    if len(ops) < MIN_SCHEMAS:
        print("only %d operator schemas (expected > %d)" % (len(ops), MIN_SCHEMAS))
        ok = False
    ok &= check_roundtrip(args.roundtrip, "operator schemas", ops)
    ok &= check_roundtrip(args.roundtrip, "custom-class method schemas", methods)
    ok &= check_table(args.torchless, ops)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
