#!/usr/bin/env bash
# GPU-machine run of the Python package (docs/python.md "GPU"): builds fp8ref._core (CMake, CUDA
# and tests off: the module is CPU code) with the machine's python3, then runs the CPU pytest
# suite and the CUDA file python/tests_gpu/ (torch CUDA tensors, torch._scaled_grouped_mm), and
# the API benchmark; logs into $OUT (or build-python-device/out). The GPU machine has no package index:
# nanobind, pytest and hypothesis come from the machine or from PYKIT, a folder made here with
#   pip install --target .dev/pykit nanobind==2.9.2 pytest==8.4.2 hypothesis==6.140.3
# and carried with the working tree. Usage: bash scripts/device/python.sh [PYKIT]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build=build-python-device
out=${OUT:-$root/$build/out}
mkdir -p "$out"
pykit=${1:-${PYKIT:-}}
[[ -n "$pykit" ]] && export PYTHONPATH="$(cd "$pykit" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
py=$(command -v python3)
{
  nvidia-smi -L
  "$py" -c 'import sys, numpy, ml_dtypes, torch; print(sys.version.split()[0], numpy.__version__,
ml_dtypes.__version__, torch.__version__, torch.cuda.is_available())'
} > "$out/python-env.log" 2>&1
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$py" -DFP8REF_PYTHON_MODULE=ON \
  -DFP8REF_BUILD_TESTS=OFF -DFP8REF_ENABLE_CUDA=OFF > "$out/python-build.log" 2>&1 &&
  cmake --build "$build" -j16 --target _core fp8-check >> "$out/python-build.log" 2>&1
rc_build=$?
echo "build rc=$rc_build" | tee -a "$out/python-build.log"
[[ $rc_build -eq 0 ]] || exit "$rc_build"
export PYTHONPATH="$root/$build/python${PYTHONPATH:+:$PYTHONPATH}"
export FP8REF_CHECK="$root/$build/tools/fp8-check"
"$py" -m pytest -q -rs -p no:cacheprovider python/tests_gpu > "$out/python-pytest-gpu.log" 2>&1
rc_gpu=$?  # 5: nothing collected, every test SKIPPED (no torch or no CUDA device)
"$py" -m pytest -q -p no:cacheprovider python/tests > "$out/python-pytest-cpu.log" 2>&1
rc_cpu=$?
"$py" python/bench/api_bench.py > "$out/python-bench.log" 2>&1
echo "pytest gpu rc=$rc_gpu cpu rc=$rc_cpu" | tee "$out/python-summary.log"
tail -n 3 "$out/python-pytest-gpu.log" "$out/python-pytest-cpu.log" >> "$out/python-summary.log"
exit $((rc_gpu || rc_cpu))
