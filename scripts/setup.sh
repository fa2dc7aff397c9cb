#!/usr/bin/env bash
# Install everything torchless needs on a fresh Debian (bookworm) machine, then configure and build.
# Idempotent; run as root. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libzip-dev zlib1g-dev libdeflate-dev  # libdeflate: fast CRC-32 of archive records
  libdnnl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-14-tools clang libclang-rt-14-dev libomp-14-dev
  clang-format-14  # .ci/run: changed C++ files follow .clang-format (scripts/check_format.sh)
  python3 python3-torch python3-torchvision python3-numpy python3-pytest python3-onnx
  libtorch-dev  # tests only: the oracle of the libtorch-compatible C++ API (tests/sdk)
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc  # torchless serve (HTTP/REST, gRPC)
  python3-grpcio python3-grpc-tools python3-yaml  # tests only: a real v2 client, deploy manifests
)
# Node.js runs ONNX Runtime in tests. The machine image may bring its own Node.js (whose
# package conflicts with Debian's npm); install Debian's only when there is none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime for tests and benchmarks only. Its install script downloads GPU files and fails
# offline; the CPU library ships inside the package, so skip scripts.
if [ ! -d tests/node_modules/onnxruntime-node ]; then
  (cd tests && npm install --ignore-scripts --no-audit --no-fund --silent)
fi

if [ "${1:-}" != "--no-build" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${TORCHLESS_CMAKE_ARGS:-}
  cmake --build build
fi
