#!/usr/bin/env python3
"""A large archive for the load-memory test (see extra.cmake): torchvision's vit_b_16 with
random weights, scripted and saved (about 330 MB).

Usage: gen_big_model.py OUTDIR   (writes OUTDIR/vit_b_16.pt through a temporary name)
"""
import os
import sys

import torch
import torchvision


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "vit_b_16.pt")
    if os.path.exists(path) and os.path.getsize(path) > 300_000_000:
        return  # already there (the weights are random, any copy will do)
    torch.manual_seed(0)
    m = torch.jit.script(torchvision.models.vit_b_16(weights=None).eval())
    tmp = path + ".tmp"
    m.save(tmp)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
