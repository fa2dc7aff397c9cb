#!/usr/bin/env bash
# Run every test from a fresh machine: install what is missing, build (warnings are errors),
# then run the whole suite under ctest (unit tests, golden IR tests, PyTorch oracle tests).
set -euo pipefail
cd "$(dirname "$0")/.."
TORCHLESS_CMAKE_ARGS="-DTORCHLESS_WERROR=ON ${TORCHLESS_CMAKE_ARGS:-}" scripts/setup.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
