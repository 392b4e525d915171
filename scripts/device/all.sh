#!/usr/bin/env bash
# Every GPU check of the repository in one call on the GPU machine (docs/building.md "GPU
# machine"): build the GPU targets, `ctest -L gpu`, compute-sanitizer memcheck / racecheck on the
# GPU suites, a fuzz campaign over every GPU suite, verify --device cuda of a torch
# _scaled_grouped_mm output, a short kernel-preset survey (verify --kernel), the Python package's
# CUDA tests, and the quantize and grouped GEMM benchmarks (and the GPU oracle benchmark with
# GPU_ORACLE_BENCH=1).
# Usage (repository root): OUT=DIR bash scripts/device/all.sh KIT [PYKIT]
#   KIT: the root of an extracted librapidcheck-dev (the GPU machine has no RapidCheck);
#   PYKIT: a `pip install --target` folder with nanobind, pytest, hypothesis (optional).
set -u
kit=$(cd "${1:?usage: all.sh KIT [PYKIT]}" && pwd)
pykit=${2:-}
OUT=${OUT:-$PWD/device-out}
FUZZ_SECONDS=${FUZZ_SECONDS:-45}
B=build-device
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$OUT"
summary="$OUT/summary.txt"
step() { printf '\n===== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$summary"; }
say() { echo "$*" | tee -a "$summary"; }

python_args=(-DFP8REF_PYTHON="$(command -v python3)")
if [[ -n "$pykit" ]]; then
  export PYTHONPATH="$(cd "$pykit" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
  python_args+=(-DFP8REF_PYTHON_MODULE=ON)
fi

step configure
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_args[@]}" \
  -Drapidcheck_DIR="$kit/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" > "$OUT/configure.log" 2>&1 ||
  { tail -30 "$OUT/configure.log" | tee -a "$summary"; exit 1; }

step build
targets=(fp8-check fp8ref_gpu_cast_test fp8ref_gpu_mma_sync_test fp8ref_gpu_oracle_test
  fp8ref_gpu_quantize_test fp8ref_gpu_quantize_dual_test fp8ref_gpu_swiglu_quantize_test
  fp8ref_gpu_pad_permute_test proptests_gpu_oracle_emulated_test fp8ref_gpu_quantize_bench
  fp8ref_gpu_grouped_gemm_test fp8ref_gpu_gemm_bench fp8ref_gpu_oracle_wgrad_test
  proptests_gpu_oracle_wgrad_emulated_test fp8ref_gpu_oracle_bench fp8ref_gpu_cli_swiglu_test)
[[ -n "$pykit" ]] && targets+=(_core)
cmake --build $B -j16 --target "${targets[@]}" -- -k 0 > "$OUT/build.log" 2>&1
say "build exit $?"
grep -E "error|FAILED" "$OUT/build.log" | head -20 | tee -a "$summary"

step "ctest -L gpu"
(cd $B && timeout 240 ctest -L gpu -j2 --output-on-failure > "$OUT/ctest_gpu.log" 2>&1)
grep -E "tests passed|tests failed|\*\*\*|Not Run" "$OUT/ctest_gpu.log" | tail -15 | tee -a "$summary"

step compute-sanitizer
T=$B/proptests/gpu
n_sanitize=0
sanitize() {  # tool binary filter (a log per run: the same binary runs under several filters)
  n_sanitize=$((n_sanitize + 1))
  local log="$OUT/$1_$(basename "$2")_$n_sanitize.log"
  RC_PARAMS="max_success=10" timeout 180 compute-sanitizer --tool "$1" --error-exitcode 9 "$2" \
    --gtest_filter="$3" > "$log" 2>&1
  local rc=$?  # (before any expansion below resets $?)
  say "$1 $(basename "$2") [$3]: exit $rc $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
}
sanitize memcheck $T/fp8ref_gpu_quantize_test '*Grouped*:*GridSize*:*BadInput*'
sanitize memcheck $T/fp8ref_gpu_quantize_dual_test '*'
sanitize memcheck $T/fp8ref_gpu_swiglu_quantize_test '*'
sanitize memcheck $T/fp8ref_gpu_pad_permute_test '*'
sanitize memcheck $T/fp8ref_gpu_oracle_test '*Empty*:*Reject*:*Dgrad*'
sanitize memcheck $T/fp8ref_gpu_oracle_wgrad_test '*Empty*:*Reject*:*Exact128*'
sanitize racecheck $T/fp8ref_gpu_quantize_test '*GridSize*:*Grouped*'
sanitize racecheck $T/fp8ref_gpu_quantize_dual_test '*GridSize*'
sanitize memcheck $T/fp8ref_gpu_grouped_gemm_test '*Drawn*:*Repeated*:*Merged*:*BadInput*:*Wgrad*:*Wide*:*PastOneWarp*'
sanitize racecheck $T/fp8ref_gpu_grouped_gemm_test '*Repeated*:*WgradEmpty*:*Wide*'
sanitize racecheck $T/fp8ref_gpu_grouped_gemm_test '*WgradGroupStartsOff*:*WgradPairs*:*WgradIntoC*:*WgradUnaligned*'

step "fuzz: every GPU suite, $FUZZ_SECONDS s"
timeout $((FUZZ_SECONDS + 60)) $B/tools/fp8-check fuzz --suite gpu.quantize --suite gpu.pad \
  --suite gpu.permute --suite gpu.oracle --suite gpu.grouped_gemm --suite gpu.oracle_wgrad \
  --suite gpu.oracle_large --suite gpu.quantize_dual --suite gpu.swiglu \
  --seconds "$FUZZ_SECONDS" --quiet \
  --failure-dir "$OUT/failures" > "$OUT/fuzz.log" 2>&1
say "fuzz exit $?"
tail -8 "$OUT/fuzz.log" | tee -a "$summary"

step "verify --device cuda: torch _scaled_grouped_mm at the MoE shape"
timeout 120 python3 scripts/device/scaled_grouped_mm_dump.py /tmp/sgmm.safetensors 2>&1 | tail -2 | tee -a "$summary"
s=$(date +%s%N)
$B/tools/fp8-check verify grouped-gemm --in /tmp/sgmm.safetensors --a a --b b --scale-a scale_a \
  --scale-b scale_b --offs offs --scaling rowwise --model hopper_promoted_rowwise \
  --epilogue a_then_b --out-dtype bf16 --got out --device cuda > "$OUT/verify.log" 2>&1
rc=$?
say "verify exit $rc, wall $((($(date +%s%N) - s) / 1000000)) ms"
tail -2 "$OUT/verify.log" | tee -a "$summary"

step "verify --kernel: torch _scaled_mm / _scaled_grouped_mm outputs, no model flag (docs/presets.md)"
timeout 60 python3 scripts/device/kernel_survey.py --fp8-check "$PWD/$B/tools/fp8-check" \
  --out "$OUT/kernel_survey" --budget-s 25 --deadline-s 45 --only tw_f32,tw_fast_f32,rw_bf16,bw_f32,grouped_m_bf16,grouped_k_bf16 \
  > "$OUT/kernel_survey.log" 2>&1
say "kernel survey exit $?"
tail -1 "$OUT/kernel_survey.log" | tee -a "$summary"

if [[ -n "$pykit" ]]; then
  step "python: CUDA tests"
  PYTHONPATH="$PWD/$B/python:$PYTHONPATH" FP8REF_CHECK="$PWD/$B/tools/fp8-check" timeout 120 \
    python3 -m pytest -q -rs -p no:cacheprovider python/tests_gpu \
    python/tests/test_device_grouping.py > "$OUT/pytest_gpu.log" 2>&1
  say "pytest gpu exit $?"
  tail -4 "$OUT/pytest_gpu.log" | tee -a "$summary"
fi

step "benchmark: quantize kernels"
timeout 90 $B/tools/fp8ref_gpu_quantize_bench "$OUT/bench.csv" > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log" | tee -a "$summary"
timeout 120 python3 tools/bench/gpu_quantize_torch.py "$OUT/bench.csv" 2>&1 | tail -8 | tee -a "$summary"
step "benchmark: FP8 grouped GEMM (every output against the GPU oracle) and its torch peers"
timeout 150 $B/tools/fp8ref_gpu_gemm_bench --check --csv "$OUT/gemm_bench.csv" > "$OUT/gemm_bench.log" 2>&1
cat "$OUT/gemm_bench.log" | tee -a "$summary"
timeout 150 python3 tools/bench/gpu_gemm_torch.py "$OUT/gemm_bench.csv" 2>&1 | tail -30 | tee -a "$summary"
if [[ -n "${GPU_ORACLE_BENCH:-}" ]]; then  # about 40 s: the GPU oracle per MoE layer, wgrad, a campaign case
  step "benchmark: GPU oracle"
  timeout 150 $B/tools/fp8ref_gpu_oracle_bench --cpu-rows 1024 > "$OUT/oracle_bench.log" 2>&1
  cat "$OUT/oracle_bench.log" | tee -a "$summary"
fi
step done
