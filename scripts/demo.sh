#!/usr/bin/env bash
# The main job on the shipped example: install and build if needed, then load
# examples/tiny_cnn.pt (a conv/bn/linear classifier scripted by PyTorch 1.13), run it on
# examples/input.npy with no Python, and compare its output with PyTorch's (examples/expected.npy,
# written by examples/make_examples.py).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/torchless ] || scripts/setup.sh
cmake --build build --target torchless >/dev/null
bin=build/bin/torchless
out=build/demo
"$bin" --version
"$bin" info examples/tiny_cnn.pt | sed -n '1,2p;/^methods/,/^buffers/p'
# --expect compares with what PyTorch 1.13 computed (examples/expected.npy) and exits 1 on a
# mismatch beyond --rtol/--atol.
"$bin" run examples/tiny_cnn.pt examples/input.npy --output-dir "$out" --print \
  --expect examples/expected.npy --rtol 1e-4 --atol 1e-5
