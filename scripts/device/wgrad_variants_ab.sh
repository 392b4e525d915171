#!/usr/bin/env bash
# A/B of the wgrad kernel's block-loop variants (docs/gpu_gemm.md §7, "wgrad block-loop variants")
# on prebuilt sm_90a binaries: DIR/bench_base (the kernel of main), and per variant V
# DIR/bench_V (fp8ref_gpu_gemm_bench) and DIR/gtest_V (fp8ref_gpu_grouped_gemm_test), built with
# the switches of gpu/CMakeLists.txt: lds1 = FP8REF_WGRAD_LDS=1, lds2 = LDS=2, hoist = HOIST=1,
# lds2h = LDS=2 HOIST=1, lds2he = LDS=2 HOIST=1 EPI=1, lds1hb = LDS=1 HOIST=1 BULK=1,
# lds1hbe = LDS=1 HOIST=1 BULK=1 EPI=1.
# Usage, on the device machine from the repository root:
#   OUT=$OUT bash scripts/device/wgrad_variants_ab.sh [DIR [V ...]]
# DIR defaults to .dev/wgrad5, the variants to lds1 lds2h lds2he lds1hb lds1hbe. Steps: the wgrad
# gtests on every variant; `--wgrad-only` on base and the variants in turn, twice; on the variant
# with the highest mean wgrad TF/s: `--check` (bitwise against the GPU oracle), memcheck and
# racecheck. Writes $OUT/summary.txt (verdicts and the bench lines) and $OUT/log.txt; about
# 150-200 s with five variants (name fewer to go faster).
set -u
D=${1:-.dev/wgrad5}
[ $# -gt 0 ] && shift
V=("$@")
[ ${#V[@]} -gt 0 ] || V=(lds1 lds2h lds2he lds1hb lds1hbe)
S=$OUT/summary.txt L=$OUT/log.txt T=$(mktemp -d)
t0=$(date +%s)
el() { echo $(($(date +%s) - t0)); }
for b in base "${V[@]}"; do
  [ -x "$D/bench_$b" ] || { echo "wgrad_variants_ab: no executable $D/bench_$b" | tee -a "$S"; exit 2; }
done
for v in "${V[@]}"; do
  [ -x "$D/gtest_$v" ] || { echo "wgrad_variants_ab: no executable $D/gtest_$v" | tee -a "$S"; exit 2; }
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >>"$S" 2>&1

# 1. The wgrad gtests (every wgrad output against the model, bitwise) on each variant.
for v in "${V[@]}"; do
  timeout 60 "$D/gtest_$v" --gtest_filter='*Wgrad*:*Drawn*:*EveryOp*:*WideTiles*' >"$T/g.log" 2>&1
  rc=$?
  cat "$T/g.log" >>"$L"
  echo "gtest $v exit $rc at +$(el)s: $(grep -E '^\[  (PASSED|FAILED) ' "$T/g.log" | tr '\n' ' ')" >>"$S"
done

# 2. The bench, base and variants alternating, twice; lines prefixed "BIN run".
for i in 1 2; do
  for b in base "${V[@]}"; do
    timeout 40 "$D/bench_$b" --wgrad-only >"$T/b.log" 2>&1
    echo "bench $b run $i exit $? at +$(el)s" >>"$L"
    cat "$T/b.log" >>"$L"
    grep -E '^(forward|wgrad) ' "$T/b.log" | sed "s/^/$b $i /" >>"$T/bench.txt"
  done
done
cat "$T/bench.txt" >>"$S"
# Mean wgrad TF/s per binary (fields: bin run op scaling load ms tflops ...), forward beside it.
awk '$3 == "wgrad" { w[$1] += $7; n[$1]++ } $3 == "forward" { f[$1] += $7; m[$1]++ }
     END { for (b in w) printf "mean %s wgrad %.1f TF/s (%d lines), forward %.1f, ratio %.3f\n",
           b, w[b] / n[b], n[b], f[b] / m[b], (w[b] / n[b]) / (f[b] / m[b]) }' "$T/bench.txt" |
  sort >>"$S"
best=$(awk '$3 == "wgrad" && $1 != "base" { w[$1] += $7; n[$1]++ }
            END { for (b in w) print w[b] / n[b], b }' "$T/bench.txt" | sort -g | tail -1 | cut -d' ' -f2)
[ -n "$best" ] || best=${V[0]}
echo "best variant: $best (highest mean wgrad TF/s) at +$(el)s" >>"$S"

# 3. On the best: every output against the GPU oracle, then the sanitizers.
timeout 60 "$D/bench_$best" --wgrad-only --check >"$T/c.log" 2>&1
echo "check $best exit $? at +$(el)s:" >>"$S"
grep -E '^(forward|wgrad) |mismatch' "$T/c.log" >>"$S"
cat "$T/c.log" >>"$L"
timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 "$D/gtest_$best" \
  --gtest_filter='*WgradEmpty*:*WgradGroupStarts*' >"$T/m.log" 2>&1
echo "memcheck $best exit $? at +$(el)s: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$T/m.log" | tr '\n' ' ')" >>"$S"
cat "$T/m.log" >>"$L"
timeout 35 compute-sanitizer --tool racecheck --error-exitcode 9 "$D/gtest_$best" \
  --gtest_filter='*WgradGroupStarts*' >"$T/r.log" 2>&1
echo "racecheck $best exit $? at +$(el)s: $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' "$T/r.log" | tr '\n' ' ')" >>"$S"
cat "$T/r.log" >>"$L"
echo "done at +$(el)s (exit 124 = timed out: not a pass)" >>"$S"
rm -rf "$T"
