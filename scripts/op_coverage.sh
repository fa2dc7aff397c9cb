#!/bin/sh
# Regenerates tests/ops/op_coverage.tsv, the op table's coverage (per schema: interpreter kernel,
# ONNX converter opsets, engine converter), from a build's `torchless ops --table`. Run it after
# adding a kernel or a converter; the ops.coverage_file test fails until the file matches.
#
# Usage: scripts/op_coverage.sh [path/to/torchless]   (default: build/bin/torchless)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-"$root/build/bin/torchless"}
out="$root/tests/ops/op_coverage.tsv"
"$bin" ops --table > "$out.tmp"
mv "$out.tmp" "$out"
awk -F'\t' 'NR > 4 { n++; if ($2 != "-") k++; if ($3 != "-") o++; if ($4 != "-") e++ }
  END { printf "%d schemas: %d kernels, %d ONNX converters, %d engine converters\n", n, k, o, e }' "$out"
