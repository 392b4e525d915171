// The Hopper tensor-core accumulation models of one output element (docs/design.md §10-12): wgmma
// or mma.sync chains per promotion block or over all of K, split-K slices, the scale epilogues,
// each with a rigorous error bound against the exact value. docs/models.md has the derivations;
// numerics/models.h is the entry point.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "numerics/models/bounded.h"
#include "numerics/models/mma_sync_step.h"
#include "numerics/models/model_types.h"
#include "numerics/models/wgmma_step.h"
#include "numerics/plant.h"

namespace fp8ref {

// ---- Hopper tensor-core models --------------------------------------------------------------

// The tensor-core step a model chains: wgmma (the `hopper_wgmma` step) or emulated mma.sync.
enum class TensorCoreStep : std::uint8_t { wgmma, mma_sync };

// The two FP8 operand runs of one output element: codes and formats, and optionally the wgmma
// planes of the same runs (decode_wgmma_planes), which the wgmma models then step on instead of
// looking the codes up at every step (same bits; a GEMM decodes each row and column once).
struct DotRun {
  const std::uint8_t* a;
  const std::uint8_t* b;
  Format fa, fb;
  WgmmaPlanes pa{nullptr, nullptr};
  WgmmaPlanes pb{nullptr, nullptr};
  bool has_planes() const { return pa.value != nullptr && pb.value != nullptr; }
  DotRun operator+(std::int64_t k) const {
    return {a + k, b + k, fa, fb, has_planes() ? pa + k : pa, has_planes() ? pb + k : pb};
  }
};

namespace detail {

inline Bounded tc_chain(TensorCoreStep st, const DotRun& x, std::int64_t len, Bounded c) {
  if (st == TensorCoreStep::mma_sync) return hopper_mma_sync_chain(x.a, x.b, len, x.fa, x.fb, c);
  return x.has_planes() ? hopper_wgmma_chain(x.pa, x.pb, len, c)
                        : hopper_wgmma_chain(x.a, x.b, len, x.fa, x.fb, c);
}

// sum over a block range of |a_k·b_k| (f64, for the bound of a rounded scale product).
inline double abs_dot(const DotRun& x, std::int64_t n) {
  const double *va = fp8_value_table(x.fa), *vb = fp8_value_table(x.fb);
  double s = 0.0;
  for (std::int64_t k = 0; k < n; ++k) s += std::fabs(va[x.a[k]] * vb[x.b[k]]);
  return s;
}

// s = RN_f32(sa·sb) and a bound on |s - sa·sb|.
struct ScaleProduct {
  float s;
  double err;
};
inline ScaleProduct scale_product(float sa, float sb) {
  const double exact = double(sa) * double(sb);  // exact: 48-bit significand
  const float s = sa * sb;
  return {s, std::fabs(double(s) - exact)};
}

// Split-K slices (in 128-blocks) as k ranges, each evaluated by `slice(k0, k1)`, the results
// added in f32 in slice order starting from the first slice's result.
template <class SliceFn>
Bounded sum_slices(std::int64_t K, SplitK split_k, SliceFn slice) {
  const std::int64_t nblocks = ceil_div(K, kScaleBlockK);
  Bounded r{0.0f, 0.0};
  bool first = true;
  const std::int64_t n = split_k.count(nblocks);
  for (std::int64_t i = 0; i < n; ++i) {
#ifdef FP8REF_PLANT_HOOKS
    const std::int64_t s = FP8REF_PLANTED(splitk_reversed) ? n - 1 - i : i;
#else
    const std::int64_t s = i;
#endif
    const SliceRange sr = split_k.slice(nblocks, s);
    if (sr.first >= sr.last && !first) continue;
    const Bounded v = slice(sr.first * kScaleBlockK, std::min(K, sr.last * kScaleBlockK));
    if (first) {
      r = v, first = false;
      continue;
    }
    r.z = add_f32(r.z, v.z);
    r.bound += v.bound + f32_rounding_bound(r.z);
  }
  return r;
}

// Per slice, T_b = chain over promotion block b from +0 (blocks of sc.promotion_k()), combined
// by `promote(acc, T_b, b)`; the slice result is the final acc (from +0).
template <class PromoteFn>
Bounded promoted_sum(TensorCoreStep st, const DotRun& x, std::int64_t K, std::int64_t w,
                     SplitK split_k, PromoteFn promote) {
  return sum_slices(K, split_k, [&](std::int64_t k0, std::int64_t k1) {
    Bounded acc{0.0f, 0.0};
    for (std::int64_t k = k0; k < k1; k += w) {
      const std::int64_t len = std::min(w, k1 - k);
      promote(acc, tc_chain(st, x + k, len, {0.0f, 0.0}), k / w, k, len);
    }
    return acc;
  });
}

// out = RN(acc·RN(sa·sb)) with its bound (scales constant over K).
inline Bounded apply_scale_product(Bounded acc, const DotRun& x, std::int64_t K, ElementScales sc) {
  const ScaleProduct sp = scale_product(sc.a(0), sc.b(0));
  const float z = acc.z * sp.s;
  const double bound =
      std::fabs(double(sp.s)) * acc.bound + sp.err * abs_dot(x, K) + f32_rounding_bound(z);
  return {z, bound * kBoundSlack};
}

// One chain over each split-K slice from +0, slices added in f32, then out = RN(acc·RN(sa·sb)).
inline Bounded unpromoted_dot(TensorCoreStep st, const DotRun& x, std::int64_t K, ElementScales sc,
                              SplitK split_k) {
  const Bounded acc = sum_slices(K, split_k, [&](std::int64_t k0, std::int64_t k1) {
    return tc_chain(st, x + k0, k1 - k0, {0.0f, 0.0});
  });
  return apply_scale_product(acc, x, K, sc);
}

// acc = fmaf(RN(sa_b·sb_b), T_b, acc) over promotion blocks b ascending, per slice.
inline Bounded promoted_blockwise_dot(TensorCoreStep st, const DotRun& x, std::int64_t K,
                                      ElementScales sc, SplitK split_k) {
  const Bounded r =
      promoted_sum(st, x, K, sc.promotion_k(), split_k,
                   [&](Bounded& acc, Bounded t, std::int64_t kb, std::int64_t k, std::int64_t len) {
                     const ScaleProduct sp = scale_product(sc.a(kb), sc.b(kb));
#ifdef FP8REF_PLANT_HOOKS
                     acc.z = FP8REF_PLANTED(blockwise_fma_split) ? acc.z + sp.s * t.z
                                                                 : fma_f32(sp.s, t.z, acc.z);
#else
                     acc.z = fma_f32(sp.s, t.z, acc.z);
#endif
                     acc.bound += std::fabs(double(sp.s)) * t.bound + sp.err * abs_dot(x + k, len) +
                                  f32_rounding_bound(acc.z);
                   });
  return {r.z, r.bound * kBoundSlack};
}

// acc = sum of T_kb over 128-blocks in f32 RN, per slice (scales applied afterwards).
inline Bounded promoted_f32_sum(const DotRun& x, std::int64_t K, SplitK split_k) {
#ifdef FP8REF_PLANT_HOOKS
  const std::int64_t w = FP8REF_PLANTED(promote_every_256) ? 2 * kScaleBlockK : kScaleBlockK;
#else
  constexpr std::int64_t w = kScaleBlockK;
#endif
  return promoted_sum(TensorCoreStep::wgmma, x, K, w, split_k,
                      [](Bounded& acc, Bounded t, std::int64_t, std::int64_t, std::int64_t) {
                        acc.z = add_f32(acc.z, t.z);
                        acc.bound += t.bound + f32_rounding_bound(acc.z);
                      });
}

// hopper_promoted_rowwise's accumulation and epilogue (the public function below has the checks).
inline Bounded promoted_rowwise_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                    SplitK split_k) {
  const Bounded acc = promoted_f32_sum(x, K, split_k);
  const float sa = sc.a(0), sb = sc.b(0);
#ifdef FP8REF_PLANT_HOOKS
  const bool swap = FP8REF_PLANTED(rowwise_scales_swapped);
  const float w = (swap ? sa : sb) * acc.z, z = (swap ? sb : sa) * w;
#else
  const float w = sb * acc.z, z = sa * w;
#endif
  const double bound =
      std::fabs(double(sa)) * (std::fabs(double(sb)) * acc.bound + f32_rounding_bound(w)) +
      f32_rounding_bound(z);
  return {z, bound * kBoundSlack};
}

// hopper_mma_sync's two forms (the public function below has the check).
inline Bounded mma_sync_dot(const DotRun& x, std::int64_t K, ElementScales sc, SplitK split_k) {
  if (sc.per_block) return promoted_blockwise_dot(TensorCoreStep::mma_sync, x, K, sc, split_k);
  return unpromoted_dot(TensorCoreStep::mma_sync, x, K, sc, split_k);
}

// The preconditions of the functions below, checked once per call here (model_dot's
// CheckedModel checks them once per operation instead and calls the detail:: bodies).
inline void require_valid_split(SplitK split_k) {
  if (!split_k.valid())
    throw std::invalid_argument("fp8ref: split-K needs S >= 1, or a slice length L >= 1 alone");
}

inline void require_constant_scales(ElementScales sc, AccumulationModel m) {
  if (sc.per_block)
    throw std::invalid_argument(std::string("fp8ref: ") + to_string(m) +
                                " needs scales constant over K");
}

}  // namespace detail

// hopper_unpromoted: per split-K slice one wgmma chain over the slice from +0; slices added in f32;
// out = RN(acc·RN(sa·sb)). Requires scales constant over K (tensorwise, rowwise, unscaled).
inline Bounded hopper_unpromoted_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                     SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_unpromoted);
  detail::require_valid_split(split_k);
  return detail::unpromoted_dot(TensorCoreStep::wgmma, x, K, sc, split_k);
}

// hopper_promoted_blockwise: T_b = wgmma chain from +0 over promotion block b (128, or the MX
// 32); acc = fmaf(RN(sa_b·sb_b), T_b, acc), b ascending from +0 within each split-K slice;
// slices added in f32.
inline Bounded hopper_promoted_blockwise_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                             SplitK split_k) {
  detail::require_valid_split(split_k);
  return detail::promoted_blockwise_dot(TensorCoreStep::wgmma, x, K, sc, split_k);
}

// hopper_promoted_tensorwise (cuBLASLt default tensorwise): acc = sum_kb T_kb in f32 RN, kb
// ascending within each slice, slices added in f32; out = RN(acc·RN(sa·sb)).
inline Bounded hopper_promoted_tensorwise_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                              SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_promoted_tensorwise);
  detail::require_valid_split(split_k);
  return detail::apply_scale_product(detail::promoted_f32_sum(x, K, split_k), x, K, sc);
}

// hopper_promoted_rowwise (CUTLASS SM90 rowwise epilogue of torch / FBGEMM f8f8bf16_rowwise and
// the grouped variant: Sm90EVT<multiplies, XScale, Sm90EVT<multiplies, WScale, Accum>>): acc as
// in promoted_tensorwise; out = RN(sa·RN(sb·acc)), sa the row (A) scale, sb the column (B) scale.
// Bound: |sa|·(|sb|·bound(acc) + rounding of sb·acc) + rounding of the outer product.
inline Bounded hopper_promoted_rowwise_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                           SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_promoted_rowwise);
  detail::require_valid_split(split_k);
  return detail::promoted_rowwise_dot(x, K, sc, split_k);
}

// hopper_mma_sync: with scales constant over K, one mma.sync chain over each split-K slice
// from +0 (the accumulator is each step's C), slices added in f32, out = RN(acc·RN(sa·sb));
// with per-block scales, T_b = chain from +0 per promotion block and acc = fmaf(RN(sa·sb), T_b,
// acc) as in promoted_blockwise.
inline Bounded hopper_mma_sync_dot(const DotRun& x, std::int64_t K, ElementScales sc,
                                   SplitK split_k) {
  detail::require_valid_split(split_k);
  return detail::mma_sync_dot(x, K, sc, split_k);
}

}  // namespace fp8ref
