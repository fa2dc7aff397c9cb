"""Issue 14 part 9: the ATen operators torch.onnx (the installed PyTorch's
torch/onnx/symbolic_opset*.py registry) exports at some opset up to 17, against the ones
`torchless ops --onnx` lists. Every operator torch.onnx exports and we do not must be listed in
README.md's "ONNX export gaps" line, and every operator listed there must still be a gap (the
list stays exact as converters land).

Usage: check_onnx_coverage.py TORCHLESS_BIN README.md
Prints the counts and the gaps; exits 1 when README's list differs.
"""
import re
import subprocess
import sys

import torch
from torch.onnx._internal import registration


def base_name(name):
    # torch.onnx names dunder symbolics with one trailing underscore (aten::__and_ for __and__).
    if name.startswith("aten::__") and name.endswith("_") and not name.endswith("__"):
        name += "_"
    return name


def main():
    binary, readme = sys.argv[1], sys.argv[2]
    reg = registration.registry
    theirs = set()
    for name in reg.all_functions():
        if not name.startswith("aten::"):
            continue
        group = reg.get_function_group(name)
        if any(group.get(opset) is not None for opset in range(7, 18)):
            theirs.add(base_name(name))
    lines = subprocess.run([binary, "ops", "--onnx"], check=True, capture_output=True, text=True).stdout.splitlines()
    ours = set()
    for line in lines:
        name = line.split("(")[0].split(".")[0]
        ours.add(name)
        if name.endswith("_") and not name.endswith("__"):
            ours.add(name[:-1])  # in-place forms: the functional op is exported too
    # Operators on ints, lists and None whose inputs are constants at export time are computed
    # by their kernels there (aten::dim, aten::__is__, ...): they count as covered only through a
    # converter, as torch.onnx's do.
    # torch.onnx has symbolics for a few names that are no operator of the installed PyTorch
    # (aten::_cast_Bool, aten::tanhshrink, ...): no graph can hold them, so they are no gap.
    schemas = {s.name for s in torch._C._jit_get_all_schemas()}
    phantom = sorted(theirs - schemas)
    theirs -= set(phantom)
    print("torch.onnx symbolics that name no operator of PyTorch %s (left out): %s"
          % (torch.__version__, " ".join(phantom)))
    gaps = sorted(theirs - ours)
    covered = len(theirs) - len(gaps)
    print("torch.onnx exports %d ATen operators; torchless converts %d of them; %d gaps"
          % (len(theirs), covered, len(gaps)))
    text = open(readme).read()
    m = re.search(r"ONNX export gaps[^:]*:(.*)", text)
    listed = set(re.findall(r"`(aten::[A-Za-z0-9_]+)`", m.group(1))) if m else set()
    missing = sorted(set(gaps) - listed)
    stale = sorted(listed - set(gaps))
    if missing:
        print("README.md does not list these gaps:", " ".join(missing))
    if stale:
        print("README.md lists these as gaps but they export now:", " ".join(stale))
    ok = not missing and not stale
    print("%d passed, %d failed" % (1 if ok else 0, 0 if ok else 1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
