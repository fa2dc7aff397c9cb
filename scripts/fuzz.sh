#!/bin/sh
# Long fuzzing runs with figures (issue #18 part 9; README, Reliability).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]
#
# Builds the libFuzzer targets of tests/robust/fuzz (clang, ASan + UBSan; setup.sh installs
# clang and libclang-rt-14-dev) into build/fuzz_robust, writes seeds (make_seeds.py), then runs
# each target for SECONDS_PER_TARGET (default 3600) with one job. Targets: script ir npy types
# onnx (default: all). Figures per target (seconds, executions, coverage edges, features, corpus
# size, findings) are appended to build/fuzz_robust/fuzz_results.tsv; findings (crash-*,
# timeout-*, oom-*, leak-* inputs) are kept in build/fuzz_robust/artifacts/TARGET/. Exits 1
# when any run found something.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-3600}
[ $# -gt 0 ] && shift
targets=${*:-script ir npy types onnx}
out=build/fuzz_robust
cxx=$(command -v clang++ || command -v clang++-14)
launcher=""
command -v ccache >/dev/null && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
cmake -S tests/robust/fuzz -B "$out" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DTORCHLESS_SOURCE_DIR="$PWD" $launcher >/dev/null
build_targets=""
for t in $targets; do build_targets="$build_targets fuzz_$t"; done
cmake --build "$out" -j"${FUZZ_BUILD_JOBS:-2}" --target $build_targets
python3 tests/robust/fuzz/make_seeds.py "$PWD" "$out/seeds"
results="$out/fuzz_results.tsv"
[ -f "$results" ] || printf 'date\ttarget\tseconds\texecutions\tcov_edges\tfeatures\tcorpus\tfindings\n' > "$results"
found=0
for t in $targets; do
  mkdir -p "$out/corpus_$t" "$out/artifacts/$t"
  seeds="$out/seeds/$t"
  [ -d "$seeds" ] || seeds="$out/seeds/ir"  # fuzz_onnx starts from the IR seeds
  log="$out/fuzz_$t.log"
  before=$(ls "$out/artifacts/$t" | wc -l)
  # Leak checks on for every target. -fork=1 keeps going after a finding (each is one input).
  ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
    -ignore_ooms=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" "$out/corpus_$t" "$seeds" \
    >"$log" 2>&1 || true
  after=$(ls "$out/artifacts/$t" | wc -l)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
  if [ "$execs" = 0 ]; then
    execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  fi
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  corpus=$(ls "$out/corpus_$t" | wc -l)
  findings=$((after - before))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$seconds" "${execs:-?}" \
    "${cov:-?}" "${ft:-?}" "$corpus" "$findings" | tee -a "$results"
  [ "$findings" = 0 ] || found=1
done
exit $found
