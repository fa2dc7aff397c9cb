"""Runs a program built against libtorch and the same program built against torchless's
compat headers on the same arguments; their stdout must be the same bytes and their exit
codes equal (tests/sdk/extra.cmake). Prints a unified diff when they differ.

    compare.py LIBTORCH_BINARY TORCHLESS_BINARY [ARG ...]
"""
import difflib
import subprocess
import sys

ref_bin, our_bin, args = sys.argv[1], sys.argv[2], sys.argv[3:]


def run(binary):
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stdout, p.stderr


ref = run(ref_bin)
ours = run(our_bin)
ok = True
if ref[0] != ours[0]:
    print(f"exit codes differ: libtorch {ref[0]}, torchless {ours[0]}")
    ok = False
if ref[1] != ours[1]:
    print("stdout differs (--- libtorch, +++ torchless):")
    sys.stdout.writelines(difflib.unified_diff(ref[1].decode(errors="replace").splitlines(True),
                                               ours[1].decode(errors="replace").splitlines(True),
                                               "libtorch", "torchless"))
    ok = False
if not ok:
    print("torchless stderr:\n" + ours[2].decode(errors="replace"))
    sys.exit(1)
print(f"same stdout ({len(ours[1])} bytes) and exit code {ours[0]}")
