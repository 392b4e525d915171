#!/usr/bin/env bash
# The GPU oracle's wgrad, large-M campaign and Python device paths on the GPU machine
# (docs/gpu_oracle.md §5-7): the oracle gtests (forward, dgrad, wgrad), the host emulation tests,
# compute-sanitizer memcheck and racecheck on the wgrad gtest, the fuzz suites gpu.oracle_wgrad,
# gpu.oracle_large and gpu.oracle, the benchmark, and the Python CUDA tests. Binaries come
# prebuilt in BIN (a folder with tools/, proptests/gpu/, python/fp8ref/ of a Release build made on
# the development machine, same CUDA 13 and Debian) when they run here, else they are built.
# Usage: OUT=dir bash scripts/device/gpu_oracle_wgrad.sh [BIN] [PYKIT] [KIT]; logs under $OUT.
set -u
OUT=${OUT:-$PWD/device-out}
BIN=${1:-}
PYKIT=${2:-}
KIT=${3:-}
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$OUT"
S="$OUT/summary.txt"
step() { printf '\n===== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$S"; }
[[ -n "$PYKIT" ]] && export PYTHONPATH="$(cd "$PYKIT" && pwd)"
[[ -n "$BIN" && -d "$BIN/cuda" ]] && export LD_LIBRARY_PATH="$(cd "$BIN/cuda" && pwd)"

step "environment"
nvidia-smi -L | tee -a "$S"
python3 -c 'import sys; print("python", sys.version.split()[0])' | tee -a "$S"

B=build-device
if [[ -n "$BIN" ]] && "$BIN/tools/fp8-check" --version > /dev/null 2>&1 &&
  "$BIN/proptests/gpu/fp8ref_gpu_oracle_wgrad_test" --gtest_list_tests > /dev/null 2>&1; then
  B=$BIN
  echo "prebuilt binaries run here: $B" | tee -a "$S"
else
  step "build (prebuilt binaries do not run here)"
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$(command -v python3)" \
    -DFP8REF_PYTHON_MODULE=ON -Drapidcheck_DIR="$KIT/lib/x86_64-linux-gnu/cmake/rapidcheck" \
    > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log" | tee -a "$S"; exit 1; }
  cmake --build $B -j16 --target fp8ref_gpu_oracle_test fp8ref_gpu_oracle_wgrad_test \
    proptests_gpu_oracle_wgrad_emulated_test proptests_gpu_oracle_emulated_test fp8-check \
    fp8ref_gpu_oracle_bench _core > "$OUT/build.log" 2>&1 ||
    { grep -E "error" "$OUT/build.log" | head -20 | tee -a "$S"; exit 1; }
fi
G=$B/proptests/gpu

step "gtests: GPU oracle forward/dgrad and wgrad (label gpu), emulation (label cpu)"
for t in fp8ref_gpu_oracle_test fp8ref_gpu_oracle_wgrad_test proptests_gpu_oracle_emulated_test \
  proptests_gpu_oracle_wgrad_emulated_test; do
  RC_PARAMS="seed=20261122" timeout 240 "$G/$t" > "$OUT/$t.log" 2>&1
  echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/$t.log" | tr '\n' ' ')" | tee -a "$S"
done

step "compute-sanitizer memcheck / racecheck (wgrad gtest, small cases)"
for tool in memcheck racecheck; do
  RC_PARAMS="max_success=8" timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$G/fp8ref_gpu_oracle_wgrad_test" --gtest_filter='*Empty*:*Reject*:*Exact128*:*EveryModel*' \
    > "$OUT/$tool.log" 2>&1
  echo "$tool exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" | tee -a "$S"
done

step "fuzz"
for spec in gpu.oracle_wgrad:${FUZZ_WGRAD:-25} gpu.oracle_large:${FUZZ_LARGE:-30} gpu.oracle:${FUZZ_FWD:-15}; do
  suite=${spec%%:*} secs=${spec##*:}
  timeout $((secs + 60)) "$B/tools/fp8-check" fuzz --suite "$suite" --seconds "$secs" \
    > "$OUT/fuzz_$suite.log" 2>&1
  echo "fuzz $suite ${secs}s: exit $?" | tee -a "$S"
  grep -E "^(suite|$suite|total)" "$OUT/fuzz_$suite.log" | tee -a "$S"
  grep -iE "fail|replay" "$OUT/fuzz_$suite.log" | head -5 | tee -a "$S"
done

step "benchmark"
timeout 150 "$B/tools/fp8ref_gpu_oracle_bench" --cpu-rows "${CPU_ROWS:-1024}" > "$OUT/bench.log" 2>&1
echo "bench exit $?" | tee -a "$S"
cat "$OUT/bench.log" | tee -a "$S"

step "python: CUDA device and K-grouped tests"
export PYTHONPATH="$(cd "$B/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
export FP8REF_CHECK="$(cd "$B/tools" && pwd)/fp8-check"
if ls "$B/python/fp8ref/" | grep -q "cpython-$(python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')"; then
  timeout 120 python3 -m pytest -q -rs -p no:cacheprovider python/tests > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?: $(tail -1 "$OUT/pytest.log")" | tee -a "$S"
else
  echo "pytest not run: fp8ref._core was built for another Python ($(ls "$B/python/fp8ref/" | grep so))" | tee -a "$S"
fi
step done
