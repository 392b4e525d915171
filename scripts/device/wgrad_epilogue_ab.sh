#!/usr/bin/env bash
# The wgrad kernel's staged epilogue (docs/gpu_gemm.md §7, prepared, not yet measured) in ONE
# device call. Builds fp8ref_gpu_gemm_bench, fp8ref_gpu_grouped_gemm_test and fp8-check at
# FP8REF_WGRAD_STAGED_EPILOGUE = 0 (the kept kernel), 1 (C and dW through the ring, C stages freed
# after the stores' reads), 2 (freed after the next tile's first wgmma) and 3 (C through the
# ring, dW from registers) in one build directory (reconfigured: only
# gpu/grouped_wgrad_kernels.cu recompiles), then: the wgrad gtests on 1 2 3; `--wgrad-only`
# alternating 0 1 2 3 0 1 2 3 (the modes passing the gtests); `--wgrad-only --check` on 1 2 3 (the
# only check with several tiles per CTA); on the fastest correct mode (sum of its wgrad TF/s):
# memcheck and racecheck, and 60 s of fuzzing if time is left. Run from the repository root with
# RapidCheck's Debian package extracted under KIT (scripts/device/all.sh takes the same):
#   OUT=$OUT bash scripts/device/wgrad_epilogue_ab.sh KIT > $OUT/call.log 2>&1; tail -c 11000 $OUT/summary.txt
# About 6-8 minutes.
set -u
S=$OUT/summary.txt; t0=$(date +%s); T=/tmp/wg3; mkdir -p $T; rm -f $T/sums
export PATH="/usr/local/cuda/bin:$PATH"
kit=$(cd "${1:?usage: wgrad_epilogue_ab.sh KIT (RapidCheck extracted)}" && pwd)
step() { printf '\n===== [+%ss] %s\n' "$(( $(date +%s) - t0 ))" "$*" | tee -a "$S"; }
left() { echo $(( 575 - ($(date +%s) - t0) )); }
say() { echo "$*" | tee -a "$S"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $S
SRC=$PWD; say "source: this tree ($(git log --oneline -1 2>/dev/null))"
B=$T/build; built=""
for m in 0 1 2 3; do
  step "configure + build mode $m"
  cmake -S $SRC -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -Drapidcheck_DIR="$kit/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" \
    -DFP8REF_WGRAD_STAGED_EPILOGUE=$m > $T/configure.log 2>&1 || { tail -20 $T/configure.log | tee -a $S; exit 1; }
  cmake --build $B -j16 --target fp8ref_gpu_gemm_bench fp8ref_gpu_grouped_gemm_test fp8-check -- -k 0 > $T/build$m.log 2>&1
  rc=$?; say "build mode $m exit $rc"
  grep -E "error:|warning|FAILED:" $T/build$m.log | head -10 | tee -a $S
  [ $rc = 0 ] || { cp $T/build$m.log $OUT/; [ $m = 0 ] && exit 1; continue; }
  mkdir -p $T/m$m; built="$built $m"
  cp $B/tools/fp8ref_gpu_gemm_bench $B/proptests/gpu/fp8ref_gpu_grouped_gemm_test $B/tools/fp8-check $T/m$m/
done
ok=""
for m in ${built# 0}; do
  step "gtest [*Wgrad*:*Wide*:*EveryOp*:*Drawn*] mode $m"
  timeout 60 $T/m$m/fp8ref_gpu_grouped_gemm_test --gtest_filter='*Wgrad*:*Wide*:*EveryOp*:*Drawn*' \
    > $T/gtest$m.log 2>&1; rc=$?
  say "mode $m gtest exit $rc"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|mismatch" $T/gtest$m.log | head -8 | cut -c1-300 | tee -a $S
  [ $rc = 0 ] && ok="$ok $m" || cp $T/gtest$m.log $OUT/
done
say "staged modes passing the gtests:$ok"
for m in 0 $ok 0 $ok; do  # a mode that failed (or hung in) the gtests is not timed
  step "bench --wgrad-only mode $m"
  timeout 40 $T/m$m/fp8ref_gpu_gemm_bench --wgrad-only > $T/b.log 2>&1
  grep -E "^forward  blockwise   balanced|^wgrad" $T/b.log | tee -a $S
  awk -v m=$m '/^wgrad/ {s += $5} END {printf "%s %.1f\n", m, s}' $T/b.log >> $T/sums
done
say "wgrad TF/s sums (balanced+zipf+two_empty+shift16+shift32), per run: $(tr '\n' ';' < $T/sums)"
good=""
for m in $ok; do
  [ $(left) -gt 150 ] || { say "--check mode $m skipped: no time left"; continue; }
  step "bench --wgrad-only --check (mode $m)"
  timeout 90 $T/m$m/fp8ref_gpu_gemm_bench --wgrad-only --check > $T/c.log 2>&1; rc=$?
  grep -E "^forward|^wgrad" $T/c.log | tee -a $S
  awk '/^(forward|wgrad) / && $6 != "0" {bad = 1} END {exit bad}' $T/c.log && [ $rc = 0 ] && good="$good $m"
done
say "staged modes passing the gtests and --check:$good"
best=$(awk -v ok="$good" 'BEGIN{n=split(ok,a," "); for(i=1;i<=n;i++) good[a[i]]=1} good[$1] {s[$1]+=$2} END {b=""; for (m in s) if (b=="" || s[m]>s[b]) b=m; print b}' $T/sums)
say "fastest correct staged mode: ${best:-none}"
[ -z "$best" ] && { step "no correct staged mode"; exit 0; }
X=$T/m$best
fz=""
if [ $(left) -gt 220 ]; then
  step "fuzz 60 s (mode $best) in parallel with the sanitizers"
  timeout 130 $X/fp8-check fuzz --suite gpu.grouped_gemm --suite gpu.oracle_wgrad --seconds 60 \
    --failure-dir $OUT/failures > $OUT/fuzz.log 2>&1 &
  fz=$!
fi
for t in "memcheck|*Wgrad*:*Wide*:*Drawn*" "racecheck|*Wgrad*:*Wide*"; do
  tool=${t%%|*}; f=${t#*|}
  [ $(left) -gt 40 ] || { say "$tool skipped: no time left"; continue; }
  step "$tool [$f] (mode $best)"
  RC_PARAMS="max_success=6" timeout $(( $(left) - 20 )) compute-sanitizer --tool $tool --error-exitcode 9 \
    $X/fp8ref_gpu_grouped_gemm_test --gtest_filter="$f" > $T/$tool.log 2>&1
  say "$tool: exit $? | $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' $T/$tool.log | tail -1) | $(grep -E '^\[  (PASSED|FAILED)' $T/$tool.log | tr '\n' ' ')"
  head -c 60000 $T/$tool.log > $OUT/$tool.log
done
[ -n "$fz" ] && { wait $fz; say "fuzz exit $?"; tail -5 $OUT/fuzz.log | tee -a $S; }
step done
