#!/usr/bin/env bash
# Hardware fidelity of the accumulation models (docs/design.md §14), one shot on the GPU
# machine (H100, python3 with torch, numpy and safetensors, g++): installs the carried mmasim
# wheel, builds the two drivers (the CMake targets step_driver / gemm_driver of a full build are
# the same programs), runs 7a (mmasim_step_xcheck.py: hopper_wgmma_step vs mmasim, golden vectors) and 7b
# (scaled_mm_predict.py: torch _scaled_mm / _scaled_grouped_mm predicted bitwise), logs to $OUT.
#
#   bash proptests/fidelity/run_fidelity.sh [--quick]        (repo root or anywhere; carry .whl)
#   PART=7a|7b bash proptests/fidelity/run_fidelity.sh       one part only (two calls of a short lease)
#   DRY_RUN=1 PYTHON=.venv/bin/python bash proptests/fidelity/run_fidelity.sh --quick
#       no torch, no GPU: both scripts in --dry-run mode (checks the build and the plumbing)
#
# .whl holds mmasim-2.1.1-py3-none-any.whl and, for machines without them, eigen3/ (the Eigen
# headers) and nlohmann/json.hpp (gemm_driver reads the safetensors case files through
# tools/tensor_io).
# Files in $OUT (./out when unset): build.log, mmasim_step_xcheck.log, hopper_wgmma_step.hex
# (copy to golden/reference/) and .safetensors (the same vectors), scaled_mm_predict.log,
# scaled_mm_summary.json, and
# unpredicted_cases.tar.xz when some path was not predicted. Exit 0 when both parts pass.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
PART=${PART:-all}
case $PART in all | 7a | 7b) ;; *) echo "PART must be 7a, 7b or all" >&2; exit 2 ;; esac
DRY=()
[ "${DRY_RUN:-0}" = 1 ] && DRY=(--dry-run)
WORK=/tmp/fp8ref_fidelity
mkdir -p "$WORK"
LOG=$OUT/build.log
: >"$LOG"
t0=$(date +%s)

# 1. mmasim (pure Python; needs torch, which is there).
if ls .whl/mmasim-*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/mmasim-*.whl >>"$LOG" 2>&1 || echo "warning: mmasim wheel install failed (see build.log)"
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
else
  echo "warning: no .whl/mmasim-*.whl (carry .whl); the step cross-check will fail to import mmasim"
fi

# 2. Drivers. ISO C++20 and -ffp-contract=off: no fused multiply-add the models do not name.
EIGEN=""
for d in /usr/include/eigen3 .whl/eigen3; do
  [ -f "$d/Eigen/Core" ] && EIGEN=$d && break
done
[ -n "$EIGEN" ] || echo "warning: no Eigen headers (/usr/include/eigen3 or .whl/eigen3)"
JSON=""
for d in /usr/include .whl; do
  [ -f "$d/nlohmann/json.hpp" ] && JSON=$d && break
done
[ -n "$JSON" ] || echo "warning: no nlohmann/json.hpp (/usr/include or .whl)"
CXX="g++ -std=c++20 -O3 -ffp-contract=off -I. -Itools"
$CXX -fopenmp proptests/fidelity/step_driver.cpp -o "$WORK/step_driver" >>"$LOG" 2>&1 &
objs=()
# gemm_driver: the reference, the case file form (tools/cases) and the safetensors reader.
for f in proptests/fidelity/gemm_driver.cpp reference/*.cpp tools/cases/gemm_case.cpp \
  tools/cases/tensor_form.cpp tools/tensor_io/{safetensors,mapped_file,tensor}.cpp; do
  o=$WORK/$(basename "$f").o
  objs+=("$o")
  $CXX -fopenmp ${EIGEN:+-I"$EIGEN"} ${JSON:+-I"$JSON"} -c "$f" -o "$o" >>"$LOG" 2>&1 &
done
wait
$CXX -fopenmp "${objs[@]}" -o "$WORK/gemm_driver" >>"$LOG" 2>&1
if [ ! -x "$WORK/step_driver" ] || [ ! -x "$WORK/gemm_driver" ]; then
  echo "build failed:"
  grep -E "error|Error" "$LOG" | head -20
  exit 2
fi
echo "built the drivers in $(($(date +%s) - t0)) s ($(nproc) cores, Eigen: ${EIGEN:-none})"

# 3. 7a: the step model against mmasim, and the golden vectors.
step_args=(--driver "$WORK/step_driver" --workdir "$WORK/step" --emit-golden 3000 --speed-tiles 64
           --golden-out "$OUT/hopper_wgmma_step.hex" --golden-safetensors "$OUT/hopper_wgmma_step.safetensors")
[ $QUICK = 1 ] && step_args+=(--cases 8000)
[ ${#DRY[@]} = 1 ] && step_args+=(--golden-out "$OUT/hopper_wgmma_step.DRYRUN.hex"
                                  --golden-safetensors "$OUT/hopper_wgmma_step.DRYRUN.safetensors")
rc_a=0
if [ "$PART" != 7b ]; then
  timeout 240 $PY proptests/fidelity/mmasim_step_xcheck.py "${step_args[@]}" "${DRY[@]}" 2>&1 | tee "$OUT/mmasim_step_xcheck.log"
  rc_a=${PIPESTATUS[0]}
fi

# 4. 7b: torch FP8 GEMMs predicted bitwise.
rc_b=0
if [ "$PART" != 7a ]; then
  pred_args=(--driver "$WORK/gemm_driver" --workdir "$WORK/gemm" --pack-unpredicted "$OUT/unpredicted_cases.tar.xz")
  [ $QUICK = 1 ] && pred_args+=(--small)
  left=$((560 - ($(date +%s) - t0)))
  timeout $((left > 60 ? left : 60)) $PY proptests/fidelity/scaled_mm_predict.py "${pred_args[@]}" "${DRY[@]}" 2>&1 |
    tee "$OUT/scaled_mm_predict.log"
  rc_b=${PIPESTATUS[0]}
  if [ -f "$WORK/gemm/summary.json" ]; then
    cp "$WORK/gemm/summary.json" "$OUT/scaled_mm_summary.json"
  elif [ -f "$WORK/gemm/partial.json" ]; then
    cp "$WORK/gemm/partial.json" "$OUT/scaled_mm_summary.json"
    echo "prediction cut short (exit $rc_b): partial results in scaled_mm_summary.json"
  fi
fi

echo "== fidelity: step vs mmasim exit $rc_a, prediction exit $rc_b, $(($(date +%s) - t0)) s =="
[ $rc_a = 0 ] && [ $rc_b = 0 ]
