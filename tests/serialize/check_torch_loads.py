"""Loads an archive torchless wrote with torch.jit.load, runs forward on an input .npy and
compares with an expected .npy (rtol = atol = 1e-5). Exit 0 when they match.

Usage: check_torch_loads.py ARCHIVE.pt INPUT.npy EXPECTED.npy
"""
import sys

import numpy as np
import torch


def main():
    archive, inp, expected = sys.argv[1:4]
    m = torch.jit.load(archive)
    with torch.no_grad():
        out = m(torch.from_numpy(np.load(inp))).numpy()
    want = np.load(expected)
    if out.shape != want.shape or not np.allclose(out, want, rtol=1e-5, atol=1e-5):
        print(f"mismatch: max abs diff {np.abs(out - want).max()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
