#!/usr/bin/env bash
# A/B of the forward GEMM kernel's FP8REF_GEMM_HOIST switch (docs/gpu_gemm.md §7) on prebuilt
# sm_90a binaries: DIR/bench_base (fp8ref_gpu_gemm_bench, switch 0: the kernel of main),
# DIR/bench_hoist and DIR/gtest_hoist (fp8ref_gpu_grouped_gemm_test) built with
# -DFP8REF_GEMM_HOIST=1 (/work/team/fwdhoist-build.sh).
# Usage, on the device machine from the repository root:
#   OUT=$OUT [BUDGET=seconds] bash scripts/device/gemm_hoist_ab.sh [DIR]
# Steps, each under a timeout that also keeps the whole inside BUDGET (default 170 s; a step
# with no time left is skipped and said so): `--no-wgrad` on base then hoist; the gtests
# `*Drawn*:*EveryOp*:*WideTiles*:*MnMajor*:*Repeated*:*ManyWaves*` on hoist; base and hoist
# again; compute-sanitizer memcheck and racecheck on `*Drawn*:*Wide*` of gtest_hoist (RC_PARAMS
# max_success 8 and 4); `--no-wgrad --check` on hoist (every forward / dgrad output against the
# GPU oracle, a row per output as it is checked: rows missing at a timeout were not checked). Writes $OUT/summary.txt (verdicts, bench lines, means per row and the
# hoist / base ratios) and $OUT/log.txt. Exit 124 in a line = timed out: not a pass.
set -u
D=${1:-.dev/fwdhoist}
BUDGET=${BUDGET:-170}
S=$OUT/summary.txt L=$OUT/log.txt T=$(mktemp -d)
t0=$(date +%s)
el() { echo $(($(date +%s) - t0)); }
# lim SECONDS: the step's timeout, cut to what is left of BUDGET (0: no time left).
lim() {
  local l=$((BUDGET - $(el)))
  [ "$l" -lt 5 ] && l=0
  [ "$1" -lt "$l" ] && l=$1
  echo "$l"
}
for b in bench_base bench_hoist gtest_hoist; do
  [ -x "$D/$b" ] || { echo "gemm_hoist_ab: no executable $D/$b" | tee -a "$S"; exit 2; }
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >>"$S" 2>&1
bench() {  # bench BIN RUN
  local t
  t=$(lim 30)
  [ "$t" -gt 0 ] || { echo "bench $1 run $2 skipped: no time left" >>"$S"; return; }
  timeout "$t" "$D/bench_$1" --no-wgrad >"$T/b.log" 2>&1
  echo "bench $1 run $2 exit $? at +$(el)s" | tee -a "$S" >>"$L"
  cat "$T/b.log" >>"$L"
  grep -E '^(forward|dgrad) ' "$T/b.log" | sed "s/^/$1 $2 /" >>"$T/bench.txt"
}
gtest() {  # gtest NAME LIMIT FILTER [PREFIX...]
  local name=$1 t filter=$3
  t=$(lim "$2")
  shift 3
  [ "$t" -gt 0 ] || { echo "$name skipped: no time left" >>"$S"; return; }
  timeout "$t" "$@" "$D/gtest_hoist" --gtest_filter="$filter" >"$T/g.log" 2>&1
  local rc=$?
  cat "$T/g.log" >>"$L"
  echo "$name exit $rc at +$(el)s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' "$T/g.log" | tr '\n' ' ')" >>"$S"
}

bench base 1
bench hoist 1
gtest "gtest hoist" 45 '*Drawn*:*EveryOp*:*WideTiles*:*MnMajor*:*Repeated*:*ManyWaves*'
bench base 2
bench hoist 2
touch "$T/bench.txt"
cat "$T/bench.txt" >>"$S"
# Mean TF/s per binary and row over loads and runs (fields: bin run op scaling load ms tflops),
# then hoist / base per row.
awk '{ k = $3 " " $4; s[$1, k] += $7; n[$1, k]++; keys[k] = 1 }
     END { for (k in keys) if (n["base", k] && n["hoist", k]) {
             b = s["base", k] / n["base", k]; h = s["hoist", k] / n["hoist", k];
             printf "mean %-20s base %7.1f (%d) hoist %7.1f (%d) ratio %.4f\n", k, b,
                    n["base", k], h, n["hoist", k], h / b } }' "$T/bench.txt" | sort >>"$S"

RC_PARAMS="max_success=8" gtest "memcheck hoist" 20 '*Drawn*:*Wide*' \
  compute-sanitizer --tool memcheck --error-exitcode 9
RC_PARAMS="max_success=4" gtest "racecheck hoist" 20 '*Drawn*:*Wide*' \
  compute-sanitizer --tool racecheck --error-exitcode 9
t=$(lim 90)
if [ "$t" -gt 0 ]; then
  timeout "$t" stdbuf -oL "$D/bench_hoist" --no-wgrad --check >"$T/c.log" 2>&1
  echo "check hoist exit $? at +$(el)s:" >>"$S"
  grep -E '^(forward|dgrad) |mismatch' "$T/c.log" >>"$S"
  cat "$T/c.log" >>"$L"
else
  echo "check hoist skipped: no time left" >>"$S"
fi
echo "done at +$(el)s (exit 124 = timed out: not a pass)" >>"$S"
rm -rf "$T"
