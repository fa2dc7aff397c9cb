"""Loads a frozen archive torchless wrote with torch.jit.load and checks forward's outputs.

Usage: check_frozen_loads.py ARCHIVE.pt INPUT.npy TOL EXPECTED.npy [EXPECTED2.npy ...]

forward runs once per EXPECTED file, in order (a module that counts its calls gives a
different output each time), and each output must match within rtol = atol = TOL. Exit 0
when all match; otherwise the first mismatch is printed on stderr.
"""
import sys

import numpy as np
import torch


def main():
    archive, inp, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    m = torch.jit.load(archive)
    x = torch.from_numpy(np.load(inp))
    for i, expected in enumerate(sys.argv[4:]):
        with torch.no_grad():
            out = m(x).numpy()
        want = np.load(expected)
        if out.shape != want.shape or not np.allclose(out, want, rtol=tol, atol=tol):
            diff = np.abs(out - want).max() if out.shape == want.shape else "shape"
            print(f"call {i}: mismatch with {expected}: max abs diff {diff}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
