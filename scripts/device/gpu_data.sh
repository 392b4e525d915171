#!/usr/bin/env bash
# The GPU data-path kernels on the GPU machine, one call: configure (RapidCheck from ../kit), build
# the GPU tests, fp8-check and the benchmark, run the gtests and the campaign suites, the
# compute-sanitizer memcheck / racecheck passes, a fuzz campaign and the benchmark with its torch
# baselines. Every log goes under $OUT; a summary is printed at the end.
# Usage (from the repository root): OUT=/some/dir bash scripts/device/gpu_data.sh [fuzz-seconds]
set -u
OUT=${OUT:-$PWD/gpu_data_out}
FUZZ_SECONDS=${1:-60}
B=build-device
mkdir -p "$OUT"
step() { echo "== $* ($(date -u +%T))"; }

step configure
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S . -B $B "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$(command -v python3)" \
  -Drapidcheck_DIR="$PWD/../kit/root/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" \
  >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
step build
cmake --build $B -j16 --target fp8ref_gpu_quantize_test fp8ref_gpu_quantize_dual_test \
  fp8ref_gpu_swiglu_quantize_test proptests_reference_swiglu_test fp8ref_gpu_pad_permute_test \
  fp8-check fp8ref_gpu_quantize_bench >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -40; exit 1; }

step ctest
ctest --test-dir $B -R "GpuQuantize|GpuQuantizeDual|GpuSwigluQuantize|Swiglu\.|GpuPad|GpuPermute|fuzz.gpu.(quantize|pad|permute)" --output-on-failure \
  --timeout 200 >"$OUT/ctest_gpu.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest_gpu.log" | head -30

step sanitizers
T=$B/proptests/gpu
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $T/fp8ref_gpu_quantize_test \
  --gtest_filter='*Grouped*:*GridSize*:*BadInput*' >"$OUT/memcheck_quantize.log" 2>&1
echo "memcheck quantize rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_quantize.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T/fp8ref_gpu_quantize_dual_test \
  >"$OUT/memcheck_quantize_dual.log" 2>&1
echo "memcheck quantize_dual rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_quantize_dual.log")"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $T/fp8ref_gpu_quantize_dual_test \
  --gtest_filter='*GridSize*' >"$OUT/racecheck_quantize_dual.log" 2>&1
echo "racecheck quantize_dual rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_quantize_dual.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T/fp8ref_gpu_swiglu_quantize_test \
  >"$OUT/memcheck_swiglu_quantize.log" 2>&1
echo "memcheck swiglu_quantize rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_swiglu_quantize.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T/fp8ref_gpu_pad_permute_test \
  --gtest_filter='*Permute*' >"$OUT/memcheck_pad_permute.log" 2>&1
echo "memcheck pad_permute rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_pad_permute.log")"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $T/fp8ref_gpu_quantize_test \
  --gtest_filter='*GridSize*:*Grouped*' >"$OUT/racecheck_quantize.log" 2>&1
echo "racecheck quantize rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_quantize.log")"

step fuzz
$B/tools/fp8-check fuzz --suite gpu.quantize --suite gpu.pad --suite gpu.permute --seconds "$FUZZ_SECONDS" --quiet \
  --failure-dir "$OUT/failures" >"$OUT/fuzz.log" 2>&1
echo "fuzz rc=$?"; tail -5 "$OUT/fuzz.log"

step cli
python3 - <<'PY'
import json, struct, random
random.seed(3)
M, K = 256, 512
vals = [random.gauss(0, 1) for _ in range(M * K)]
data = struct.pack(f"<{M*K}f", *vals)
h = json.dumps({"x": {"dtype": "F32", "shape": [M, K], "data_offsets": [0, len(data)]}}).encode()
open("/tmp/cli_x.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
for args in "--recipe te --block 1x128 --layout tma_mn_major" \
            "--recipe mx_rceil --block 1x32 --layout e8m0_blocked_128x4" \
            "--recipe deepgemm --pow2 --block 128x128 --layout cublas_k_major_pad4"; do
  $B/tools/fp8-check quantize $args --in /tmp/cli_x.safetensors --out /tmp/cli_cpu.safetensors >/dev/null &&
  $B/tools/fp8-check quantize $args --in /tmp/cli_x.safetensors --out /tmp/cli_cuda.safetensors --device cuda >/dev/null &&
  cmp /tmp/cli_cpu.safetensors /tmp/cli_cuda.safetensors && echo "cli --device cuda == cpu (byte-identical file): $args" ||
  echo "cli MISMATCH: $args"
done 2>&1 | tee "$OUT/cli.log"

step bench
$B/tools/fp8ref_gpu_quantize_bench "$OUT/bench.csv" 2>&1 | tee "$OUT/bench.log"
timeout 150 python3 tools/bench/gpu_quantize_torch.py "$OUT/bench.csv" 2>&1 | tail -6 | tee "$OUT/torch.log"
step done
