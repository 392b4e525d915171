#!/usr/bin/env bash
# The grouped GEMM's GPU checks in one call on the GPU machine (docs/gpu_gemm.md §6): build its
# targets, its ctest suite, compute-sanitizer memcheck / racecheck on it, the gpu.grouped_gemm fuzz
# suite, and the benchmark (every output checked against the GPU oracle) with the torch peers.
# Usage (repository root): OUT=DIR bash scripts/device/gemm.sh KIT [FUZZ_SECONDS]
#   KIT: the root of an extracted librapidcheck-dev (the GPU machine has no RapidCheck).
set -u
kit=$(cd "${1:?usage: gemm.sh KIT [FUZZ_SECONDS]}" && pwd)
fuzz_seconds=${2:-0}
OUT=${OUT:-$PWD/device-out}
B=build-device
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$OUT"
summary="$OUT/summary.txt"
step() { printf '\n===== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$summary"; }
say() { echo "$*" | tee -a "$summary"; }

step configure
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$(command -v python3)" \
  -Drapidcheck_DIR="$kit/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" > "$OUT/configure.log" 2>&1 ||
  { tail -30 "$OUT/configure.log" | tee -a "$summary"; exit 1; }

step build
targets=(fp8ref_gpu_grouped_gemm_test fp8ref_gpu_gemm_bench)
[[ $fuzz_seconds -gt 0 ]] && targets+=(fp8-check)
cmake --build $B -j16 --target "${targets[@]}" -- -k 0 > "$OUT/build.log" 2>&1
say "build exit $?"
grep -E "error|FAILED" "$OUT/build.log" | head -20 | tee -a "$summary"

step "ctest -R GpuGroupedGemm"
(cd $B && timeout 300 ctest -R GpuGroupedGemm --output-on-failure > "$OUT/ctest_gpu.log" 2>&1)
ctest_rc=$?
grep -E "tests passed|tests failed|\*\*\*|Not Run|Passed|Failed" "$OUT/ctest_gpu.log" | tail -20 |
  tee -a "$summary"

step compute-sanitizer
n_sanitize=0
sanitize() {  # tool binary filter (a log per run: the same binary runs under several filters)
  n_sanitize=$((n_sanitize + 1))
  local log="$OUT/$1_$2_$n_sanitize.log"
  RC_PARAMS="max_success=6" timeout 150 compute-sanitizer --tool "$1" --error-exitcode 9 \
    "$B/proptests/gpu/$2" --gtest_filter="$3" > "$log" 2>&1
  say "$1 $2 [$3]: exit $? $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  grep -E "FAILED|OK \]" "$log" | head -12 | tee -a "$summary"
}
sanitize memcheck fp8ref_gpu_grouped_gemm_test '*Drawn*:*Repeated*:*Merged*:*BadInput*:*Wgrad*:*Wide*'
sanitize racecheck fp8ref_gpu_grouped_gemm_test '*Repeated*'
sanitize racecheck fp8ref_gpu_grouped_gemm_test '*WgradEmpty*:*Wide*'
sanitize racecheck fp8ref_gpu_grouped_gemm_test '*WgradGroupStartsOff*:*WgradPairs*:*WgradIntoC*:*WgradUnaligned*'

if [[ $ctest_rc -ne 0 ]]; then
  say "ctest failed: no fuzz campaign, no benchmark"
  exit 1
fi

if [[ $fuzz_seconds -gt 0 ]]; then
  step "fuzz gpu.grouped_gemm, $fuzz_seconds s"
  timeout $((fuzz_seconds + 60)) $B/tools/fp8-check fuzz --suite gpu.grouped_gemm \
    --seconds "$fuzz_seconds" --quiet --failure-dir "$OUT/failures" > "$OUT/fuzz.log" 2>&1
  say "fuzz exit $?"
  tail -8 "$OUT/fuzz.log" | tee -a "$summary"
fi

step bench
timeout 200 $B/tools/fp8ref_gpu_gemm_bench --check --csv "$OUT/gemm_bench.csv" 2>&1 |
  tee "$OUT/bench.log" | tee -a "$summary"
timeout 150 python3 tools/bench/gpu_gemm_torch.py "$OUT/gemm_bench.csv" 2>&1 |
  tee "$OUT/bench_torch.log" | tee -a "$summary"
