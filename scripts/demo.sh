#!/usr/bin/env bash
# The main job on the shipped example: install and build if needed, then load
# examples/tiny_cnn.pt (a conv/bn/linear classifier scripted by PyTorch 1.13), run it on
# examples/input.npy with no Python, and print its output beside PyTorch's (examples/expected.npy,
# written by examples/make_examples.py).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/torchless ] || scripts/setup.sh
cmake --build build --target torchless >/dev/null
bin=build/bin/torchless
out=build/demo
"$bin" --version
"$bin" info examples/tiny_cnn.pt | sed -n '1,2p;/^methods/,/^buffers/p'
"$bin" run examples/tiny_cnn.pt examples/input.npy --output-dir "$out" --print
echo "PyTorch 1.13 printed: tensor([[0.1926, 0.3451, 0.2515, 0.2108]]) (examples/expected.npy; the api.oracle test compares all four values at 1e-4)"
