#!/usr/bin/env bash
# The main job on the shipped example: install and build if needed, then show what torchless
# does today with examples/tiny_cnn.pt (a conv/bn/linear model scripted by PyTorch 1.13).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/torchless ] || scripts/setup.sh
cmake --build build --target torchless >/dev/null
bin=build/bin/torchless
"$bin" --version
if "$bin" info --help >/dev/null 2>&1; then
  "$bin" info examples/tiny_cnn.pt
fi
echo "operators known: $("$bin" ops | wc -l)"
