#!/usr/bin/env bash
# The GPU oracle on the device machine (docs/gpu_oracle.md §6-7): configure (RapidCheck from
# ../kit), build the oracle's targets, ctest -L gpu, compute-sanitizer memcheck on the oracle's
# gtests, the gpu.oracle fuzz campaign, the benchmark, and verify grouped-gemm --device cuda of a
# torch _scaled_grouped_mm output at the MoE shape. Every log goes under $OUT (default ./device-out).
set -u
OUT=${OUT:-$PWD/device-out}
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$OUT"
B=build-device
KIT=$(cd .. && pwd)/kit/root/usr
START=$(date +%s)
BUDGET=${BUDGET_SECONDS:-460}  # the fuzz campaign gets what is left of it, at most FUZZ_SECONDS
step() { printf '\n===== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$OUT/summary.txt"; }

step configure
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$(command -v python3)" \
  -Drapidcheck_DIR="$KIT/lib/x86_64-linux-gnu/cmake/rapidcheck" \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log" | tee -a "$OUT/summary.txt"; exit 1; }
step build
cmake --build $B -j16 --target fp8ref_gpu_oracle_test fp8ref_gpu_cast_test fp8ref_gpu_mma_sync_test \
  proptests_gpu_oracle_emulated_test fp8-check fp8ref_gpu_oracle_bench > "$OUT/build.log" 2>&1 \
  || { grep -E "error" "$OUT/build.log" | head -30 | tee -a "$OUT/summary.txt"; exit 1; }
step "ctest -L gpu (built targets)"
(cd $B && timeout 300 ctest -L gpu -E "fuzz.gpu" --output-on-failure > "$OUT/ctest_gpu.log" 2>&1)
grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest_gpu.log" | tail -12 | tee -a "$OUT/summary.txt"
step "emulated (cpu) test"
$B/proptests/gpu/proptests_gpu_oracle_emulated_test > "$OUT/emulated.log" 2>&1; tail -1 "$OUT/emulated.log" | tee -a "$OUT/summary.txt"
step benchmark
timeout 200 $B/tools/fp8ref_gpu_oracle_bench  > "$OUT/bench.log" 2>&1; cat "$OUT/bench.log" | tee -a "$OUT/summary.txt"
step "torch _scaled_grouped_mm dump + verify --device cuda"
python3 scripts/device/scaled_grouped_mm_dump.py /tmp/sgmm.safetensors 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
for ep in a_then_b b_then_a; do
  s=$(date +%s%N)
  $B/tools/fp8-check verify grouped-gemm --in /tmp/sgmm.safetensors --a a --b b --scale-a scale_a \
    --scale-b scale_b --offs offs --scaling rowwise --model hopper_promoted_rowwise --epilogue $ep \
    --out-dtype bf16 --got out --device cuda > "$OUT/verify_$ep.log" 2>&1
  rc=$?; e=$(date +%s%N)
  echo "verify --epilogue $ep --device cuda: exit $rc, wall $(((e - s) / 1000000)) ms" | tee -a "$OUT/summary.txt"
  head -1 "$OUT/verify_$ep.log" | tee -a "$OUT/summary.txt"; tail -1 "$OUT/verify_$ep.log" | tee -a "$OUT/summary.txt"
  [ $rc = 0 ] && break
done
step "compute-sanitizer memcheck"
RC_PARAMS="max_success=10" timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/proptests/gpu/fp8ref_gpu_oracle_test \
  --gtest_filter='*Empty*:*Reject*:*Dgrad*' > "$OUT/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$OUT/summary.txt"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | tail -4 | tee -a "$OUT/summary.txt"
LEFT=$((START + BUDGET - $(date +%s) - 20))
FUZZ=${FUZZ_SECONDS:-120}
[ "$LEFT" -lt "$FUZZ" ] && FUZZ=$LEFT
step "fuzz gpu.oracle $FUZZ s"
timeout $((FUZZ + 40)) $B/tools/fp8-check fuzz --suite gpu.oracle --seconds "$FUZZ" --quiet > "$OUT/fuzz.log" 2>&1
echo "fuzz exit $?" | tee -a "$OUT/summary.txt"; tail -6 "$OUT/fuzz.log" | tee -a "$OUT/summary.txt"
step done
