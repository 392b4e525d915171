// The named accumulation models of one output element y = sum_kb sa_kb·sb_kb·sum_{k in kb} a_k·b_k
// (DESIGN §3.5 "Accumulation models"), each returning its f32 result with a rigorous error bound
// against the exact value, plus `exact` (the real value rounded once). docs/models.md has the
// definitions, sources and bound derivations.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/accumulate.h"
#include "numerics/codec.h"
#include "numerics/exact_sum.h"

namespace fp8ref {

enum class AccumulationModel : std::uint8_t {
  exact,                       // real value, rounded once to the output type
  fp32_sequential,             // dequantize to f32, fmaf in increasing k
  hopper_unpromoted,           // DESIGN "fast": one wgmma chain over K, scales applied once
  hopper_promoted_blockwise,   // T per scale block; acc = fmaf(RN(sa·sb), T, acc)
  hopper_promoted_tensorwise,  // T per 128-block summed in f32; out = RN(acc·RN(sa·sb))
  hopper_promoted_rowwise,     // T per 128-block summed in f32; out = RN(sa·RN(sb·acc))
  hopper_mma_sync,             // mma.sync FP8 emulated on sm_90 (accumulate.h), chained over K
};

inline constexpr std::array kAllAccumulationModels = {
    AccumulationModel::exact,
    AccumulationModel::fp32_sequential,
    AccumulationModel::hopper_unpromoted,
    AccumulationModel::hopper_promoted_blockwise,
    AccumulationModel::hopper_promoted_tensorwise,
    AccumulationModel::hopper_promoted_rowwise,
    AccumulationModel::hopper_mma_sync,
};

constexpr const char* to_string(AccumulationModel m) {
  switch (m) {
    case AccumulationModel::exact: return "exact";
    case AccumulationModel::fp32_sequential: return "fp32_sequential";
    case AccumulationModel::hopper_unpromoted: return "hopper_unpromoted";
    case AccumulationModel::hopper_promoted_blockwise: return "hopper_promoted_blockwise";
    case AccumulationModel::hopper_promoted_tensorwise: return "hopper_promoted_tensorwise";
    case AccumulationModel::hopper_promoted_rowwise: return "hopper_promoted_rowwise";
    case AccumulationModel::hopper_mma_sync: return "hopper_mma_sync";
  }
  return "?";
}

inline std::optional<AccumulationModel> accumulation_model_from_string(std::string_view s) {
  for (AccumulationModel m : kAllAccumulationModels)
    if (s == to_string(m)) return m;
  return std::nullopt;
}

// Models that accept split_k > 1 (every tensor-core model).
constexpr bool accepts_split_k(AccumulationModel m) {
  return m != AccumulationModel::exact && m != AccumulationModel::fp32_sequential;
}
// Models that need the scales constant over K (tensorwise, rowwise or none).
constexpr bool needs_constant_scales(AccumulationModel m) {
  return m == AccumulationModel::hopper_unpromoted ||
         m == AccumulationModel::hopper_promoted_tensorwise ||
         m == AccumulationModel::hopper_promoted_rowwise;
}

// Width of the K blocks of promotion and of 1×128 / 128×128 scales; MX scales cover 32.
inline constexpr std::int64_t kScaleBlockK = 128;
inline constexpr std::int64_t kMxBlockK = 32;

// The decode scales that apply to one output element: sa[kb], sb[kb] for each K block kb of
// width block_k (128, or 32 for MX) when per_block, else the single pair sa[0], sb[0].
struct ElementScales {
  const float* sa;
  const float* sb;
  bool per_block;
  std::int64_t block_k = kScaleBlockK;
  float a(std::int64_t kb) const { return per_block ? sa[kb] : sa[0]; }
  float b(std::int64_t kb) const { return per_block ? sb[kb] : sb[0]; }
  // Width of the blocks the promoted models promote at (the scale block, or 128).
  std::int64_t promotion_k() const { return per_block ? block_k : kScaleBlockK; }
};

constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

// Split-K: K's 128-blocks cut into contiguous slices, each accumulated from +0, the slice
// results added in f32 in slice order. Two ways of cutting, both seen in libraries:
//   SplitK(S)                  S slices of ceil(nb / S) blocks (the last ones shorter or empty);
//   SplitK::of_length(L)       slices of L blocks each (the last one shorter): the count follows
//                              from K. cuBLASLt's blockwise split-K kernels on an H100 cut K = 8192
//                              and 16384 into 24-block slices, which no S gives as ceil(nb / S).
// SplitK(1) (the default) is one slice over all of K.
struct SliceRange {
  std::int64_t first, last;
};
struct SplitK {
  int slices = 1;                // S, when slice_blocks == 0
  std::int64_t slice_blocks = 0;  // L > 0: slices of L 128-blocks

  constexpr SplitK(int s = 1) : slices(s) {}  // NOLINT: an int is S
  static constexpr SplitK of_length(std::int64_t blocks) {
    SplitK k(1);
    k.slice_blocks = blocks;
    return k;
  }
  constexpr bool valid() const { return slice_blocks > 0 ? slices == 1 : slices >= 1; }
  // One slice over all of K for every K (what models without split-K accept).
  constexpr bool is_single() const { return slice_blocks == 0 && slices == 1; }
  // Number of slices for nb 128-blocks.
  constexpr std::int64_t count(std::int64_t nb) const {
    return slice_blocks > 0 ? std::max<std::int64_t>(1, (nb + slice_blocks - 1) / slice_blocks) : slices;
  }
  constexpr SliceRange slice(std::int64_t nb, std::int64_t s) const {
    const std::int64_t per = slice_blocks > 0 ? slice_blocks : (nb + slices - 1) / slices;
    return {std::min(nb, s * per), std::min(nb, (s + 1) * per)};
  }
  // "S=3" or "L=24".
  std::string str() const {
    return slice_blocks > 0 ? "L=" + std::to_string(slice_blocks) : "S=" + std::to_string(slices);
  }
};
inline SliceRange split_k_slice(std::int64_t nblocks, SplitK split_k, int s) {
  return SplitK(split_k).slice(nblocks, s);
}

// ---- exact ----------------------------------------------------------------------------------

// The exact value rounded once (RNE) to `out`; returned as an f64 holding that value. Non-finite
// codes or scales give the IEEE result of the f64 evaluation (NaN or ±Inf).
inline double exact_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K, Format fa,
                        Format fb, ElementScales sc, OutDtype out) {
  const std::int64_t w = sc.promotion_k(), nb = ceil_div(K, w);
  bool finite = !dot_has_nonfinite(a, b, K, fa, fb);
  for (std::int64_t kb = 0; kb < nb && finite; ++kb)
    finite = std::isfinite(sc.a(kb)) && std::isfinite(sc.b(kb));
  if (!finite) {
    double s = 0.0;
    for (std::int64_t k = 0; k < K; ++k)
      s += double(sc.a(k / w)) * sc.b(k / w) * decode_f64(fa, a[k]) * decode_f64(fb, b[k]);
    return s;
  }
  const int unit = product_unit_exp(fa, fb);
  constexpr std::int64_t kChunk = 64;  // terms per round_terms batch on the stack
  i128 t[kChunk];
  int e[kChunk];
  ExactAccumulator acc;
  for (std::int64_t kb0 = 0; kb0 < nb; kb0 += kChunk) {
    const std::int64_t n = std::min(kChunk, nb - kb0);
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t k0 = (kb0 + j) * w, len = std::min(w, K - k0);
      const i128 p = exact_dot_units(a + k0, b + k0, len, fa, fb);  // |p| < 2^71
      const F32Parts x = f32_parts_odd(sc.a(kb0 + j)), y = f32_parts_odd(sc.b(kb0 + j));
      t[j] = p * i128(x.sig * y.sig);  // |.| < 2^119
      e[j] = unit + x.exp + y.exp;
    }
    if (nb <= kChunk) return round_terms(t, e, n, out);
    for (std::int64_t j = 0; j < n; ++j) acc.add(t[j], e[j]);
  }
  return acc.round_to(out);
}

// ---- fp32_sequential ------------------------------------------------------------------------

// x_k = RN_f32(a_k·sa), w_k = RN_f32(b_k·sb), acc = fmaf(x_k, w_k, acc) from +0, k ascending
// (a CUDA-core kernel on dequantized operands). Bound per k: the two dequantization roundings
// propagated through the product, plus the fmaf rounding.
inline Bounded fp32_sequential_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                   Format fa, Format fb, ElementScales sc) {
  const double *va = detail::fp8_value_table(fa), *vb = detail::fp8_value_table(fb);
  float acc = 0.0f;
  double bound = 0.0;
  for (std::int64_t k = 0; k < K; ++k) {
    const double av = va[a[k]] * sc.a(k / sc.block_k);  // exact in f64
    const double bv = vb[b[k]] * sc.b(k / sc.block_k);
    const float x = float(av), w = float(bv);
    acc = std::fmaf(x, w, acc);
    const double ex = std::fabs(double(x) - av), ew = std::fabs(double(w) - bv);
    bound += std::fabs(double(x)) * ew + std::fabs(bv) * ex + f32_rounding_bound(acc);
  }
  return {acc, bound * kBoundSlack};
}

// ---- Hopper tensor-core models --------------------------------------------------------------

// The tensor-core step a model chains: wgmma (DESIGN "hopper_wgmma") or emulated mma.sync.
enum class TensorCoreStep : std::uint8_t { wgmma, mma_sync };

namespace detail {

inline Bounded tc_chain(TensorCoreStep st, const std::uint8_t* a, const std::uint8_t* b,
                        std::int64_t len, Format fa, Format fb, Bounded c) {
  return st == TensorCoreStep::wgmma ? hopper_wgmma_chain(a, b, len, fa, fb, c)
                                     : hopper_mma_sync_chain(a, b, len, fa, fb, c);
}

// sum over a block range of |a_k·b_k| (f64, for the bound of a rounded scale product).
inline double abs_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t n, Format fa,
                      Format fb) {
  const double *va = fp8_value_table(fa), *vb = fp8_value_table(fb);
  double s = 0.0;
  for (std::int64_t k = 0; k < n; ++k) s += std::fabs(va[a[k]] * vb[b[k]]);
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
  if (!split_k.valid())
    throw std::invalid_argument("fp8ref: split-K needs S >= 1, or a slice length L >= 1 alone");
  const std::int64_t nblocks = ceil_div(K, kScaleBlockK);
  Bounded r{0.0f, 0.0};
  bool first = true;
  const std::int64_t n = split_k.count(nblocks);
  for (std::int64_t s = 0; s < n; ++s) {
    const SliceRange sr = split_k.slice(nblocks, s);
    if (sr.first >= sr.last && !first) continue;
    const Bounded v = slice(sr.first * kScaleBlockK, std::min(K, sr.last * kScaleBlockK));
    if (first) {
      r = v, first = false;
      continue;
    }
    r.z = r.z + v.z;
    r.bound += v.bound + f32_rounding_bound(r.z);
  }
  return r;
}

// Per slice, T_b = chain over promotion block b from +0 (blocks of sc.promotion_k()), combined
// by `promote(acc, T_b, b)`; the slice result is the final acc (from +0).
template <class PromoteFn>
Bounded promoted_sum(TensorCoreStep st, const std::uint8_t* a, const std::uint8_t* b,
                     std::int64_t K, Format fa, Format fb, std::int64_t w, SplitK split_k,
                     PromoteFn promote) {
  return sum_slices(K, split_k, [&](std::int64_t k0, std::int64_t k1) {
    Bounded acc{0.0f, 0.0};
    for (std::int64_t k = k0; k < k1; k += w) {
      const std::int64_t len = std::min(w, k1 - k);
      promote(acc, tc_chain(st, a + k, b + k, len, fa, fb, {0.0f, 0.0}), k / w, k, len);
    }
    return acc;
  });
}

// out = RN(acc·RN(sa·sb)) with its bound (scales constant over K).
inline Bounded apply_scale_product(Bounded acc, const std::uint8_t* a, const std::uint8_t* b,
                                   std::int64_t K, Format fa, Format fb, ElementScales sc) {
  const ScaleProduct sp = scale_product(sc.a(0), sc.b(0));
  const float z = acc.z * sp.s;
  const double bound = std::fabs(double(sp.s)) * acc.bound + sp.err * abs_dot(a, b, K, fa, fb) +
                       f32_rounding_bound(z);
  return {z, bound * kBoundSlack};
}

// One chain over each split-K slice from +0, slices added in f32, then out = RN(acc·RN(sa·sb)).
inline Bounded unpromoted_dot(TensorCoreStep st, const std::uint8_t* a, const std::uint8_t* b,
                              std::int64_t K, Format fa, Format fb, ElementScales sc, SplitK split_k) {
  const Bounded acc = sum_slices(K, split_k, [&](std::int64_t k0, std::int64_t k1) {
    return tc_chain(st, a + k0, b + k0, k1 - k0, fa, fb, {0.0f, 0.0});
  });
  return apply_scale_product(acc, a, b, K, fa, fb, sc);
}

// acc = fmaf(RN(sa_b·sb_b), T_b, acc) over promotion blocks b ascending, per slice.
inline Bounded promoted_blockwise_dot(TensorCoreStep st, const std::uint8_t* a,
                                      const std::uint8_t* b, std::int64_t K, Format fa, Format fb,
                                      ElementScales sc, SplitK split_k) {
  const Bounded r = promoted_sum(
      st, a, b, K, fa, fb, sc.promotion_k(), split_k,
      [&](Bounded& acc, Bounded t, std::int64_t kb, std::int64_t k, std::int64_t len) {
        const ScaleProduct sp = scale_product(sc.a(kb), sc.b(kb));
        acc.z = std::fmaf(sp.s, t.z, acc.z);
        acc.bound += std::fabs(double(sp.s)) * t.bound +
                     sp.err * abs_dot(a + k, b + k, len, fa, fb) + f32_rounding_bound(acc.z);
      });
  return {r.z, r.bound * kBoundSlack};
}

// acc = sum of T_kb over 128-blocks in f32 RN, per slice (scales applied afterwards).
inline Bounded promoted_f32_sum(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                Format fa, Format fb, SplitK split_k) {
  return promoted_sum(TensorCoreStep::wgmma, a, b, K, fa, fb, kScaleBlockK, split_k,
                      [](Bounded& acc, Bounded t, std::int64_t, std::int64_t, std::int64_t) {
                        acc.z = acc.z + t.z;
                        acc.bound += t.bound + f32_rounding_bound(acc.z);
                      });
}

inline void require_constant_scales(ElementScales sc, AccumulationModel m) {
  if (sc.per_block)
    throw std::invalid_argument(std::string("fp8ref: ") + to_string(m) +
                                " needs scales constant over K");
}

}  // namespace detail

// hopper_unpromoted: per split-K slice one wgmma chain over the slice from +0; slices added in f32;
// out = RN(acc·RN(sa·sb)). Requires scales constant over K (tensorwise, rowwise, unscaled).
inline Bounded hopper_unpromoted_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                     Format fa, Format fb, ElementScales sc, SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_unpromoted);
  return detail::unpromoted_dot(TensorCoreStep::wgmma, a, b, K, fa, fb, sc, split_k);
}

// hopper_promoted_blockwise: T_b = wgmma chain from +0 over promotion block b (128, or the MX
// 32); acc = fmaf(RN(sa_b·sb_b), T_b, acc), b ascending from +0 within each split-K slice;
// slices added in f32.
inline Bounded hopper_promoted_blockwise_dot(const std::uint8_t* a, const std::uint8_t* b,
                                             std::int64_t K, Format fa, Format fb, ElementScales sc,
                                             SplitK split_k) {
  return detail::promoted_blockwise_dot(TensorCoreStep::wgmma, a, b, K, fa, fb, sc, split_k);
}

// hopper_promoted_tensorwise (cuBLASLt default tensorwise): acc = sum_kb T_kb in f32 RN, kb
// ascending within each slice, slices added in f32; out = RN(acc·RN(sa·sb)).
inline Bounded hopper_promoted_tensorwise_dot(const std::uint8_t* a, const std::uint8_t* b,
                                              std::int64_t K, Format fa, Format fb,
                                              ElementScales sc, SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_promoted_tensorwise);
  return detail::apply_scale_product(detail::promoted_f32_sum(a, b, K, fa, fb, split_k), a, b, K,
                                     fa, fb, sc);
}

// hopper_promoted_rowwise (CUTLASS SM90 rowwise epilogue of torch / FBGEMM f8f8bf16_rowwise and
// the grouped variant: Sm90EVT<multiplies, XScale, Sm90EVT<multiplies, WScale, Accum>>): acc as
// in promoted_tensorwise; out = RN(sa·RN(sb·acc)), sa the row (A) scale, sb the column (B) scale.
// Bound: |sa|·(|sb|·bound(acc) + rounding of sb·acc) + rounding of the outer product.
inline Bounded hopper_promoted_rowwise_dot(const std::uint8_t* a, const std::uint8_t* b,
                                           std::int64_t K, Format fa, Format fb, ElementScales sc,
                                           SplitK split_k) {
  detail::require_constant_scales(sc, AccumulationModel::hopper_promoted_rowwise);
  const Bounded acc = detail::promoted_f32_sum(a, b, K, fa, fb, split_k);
  const float sa = sc.a(0), sb = sc.b(0);
  const float w = sb * acc.z, z = sa * w;
  const double bound =
      std::fabs(double(sa)) * (std::fabs(double(sb)) * acc.bound + f32_rounding_bound(w)) +
      f32_rounding_bound(z);
  return {z, bound * kBoundSlack};
}

// hopper_mma_sync: with scales constant over K, one mma.sync chain over each split-K slice
// from +0 (the accumulator is each step's C), slices added in f32, out = RN(acc·RN(sa·sb));
// with per-block scales, T_b = chain from +0 per promotion block and acc = fmaf(RN(sa·sb), T_b,
// acc) as in promoted_blockwise.
inline Bounded hopper_mma_sync_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                   Format fa, Format fb, ElementScales sc, SplitK split_k) {
  if (sc.per_block)
    return detail::promoted_blockwise_dot(TensorCoreStep::mma_sync, a, b, K, fa, fb, sc, split_k);
  return detail::unpromoted_dot(TensorCoreStep::mma_sync, a, b, K, fa, fb, sc, split_k);
}

// The order in which scalar scales (tensorwise, rowwise: constant over K) meet the f32
// accumulator. Libraries differ, and with general scales the orders differ in the last bit:
enum class Epilogue : std::uint8_t {
  model,          // the model's own order (below)
  scale_product,  // RN(acc·RN(sa·sb))        cuBLASLt tensorwise; hopper_promoted_tensorwise,
                  //                          hopper_unpromoted, hopper_mma_sync
  b_then_a,       // RN(RN(acc·sb)·sa)        cuBLASLt `_scaled_mm` rowwise; hopper_promoted_rowwise
  a_then_b,       // RN(RN(acc·sa)·sb)        CUTLASS grouped rowwise: torch `_scaled_grouped_mm`
};
constexpr const char* to_string(Epilogue e) {
  switch (e) {
    case Epilogue::model: return "model";
    case Epilogue::scale_product: return "scale_product";
    case Epilogue::b_then_a: return "b_then_a";
    case Epilogue::a_then_b: return "a_then_b";
  }
  return "?";
}
inline std::optional<Epilogue> epilogue_from_string(std::string_view s) {
  for (Epilogue e : {Epilogue::model, Epilogue::scale_product, Epilogue::b_then_a, Epilogue::a_then_b})
    if (s == to_string(e)) return e;
  return std::nullopt;
}
// Models whose scales are applied after the accumulation, so that the epilogue order can be chosen.
constexpr bool accepts_epilogue(AccumulationModel m) {
  return m == AccumulationModel::hopper_unpromoted ||
         m == AccumulationModel::hopper_promoted_tensorwise ||
         m == AccumulationModel::hopper_promoted_rowwise || m == AccumulationModel::hopper_mma_sync;
}

// Dispatch for the f32-producing models (every model but `exact`).
inline Bounded model_dot(AccumulationModel m, const std::uint8_t* a, const std::uint8_t* b,
                         std::int64_t K, Format fa, Format fb, ElementScales sc, SplitK split_k) {
  if (!accepts_split_k(m) && !split_k.is_single())
    throw std::invalid_argument(
        std::string("fp8ref: split_k applies to the hopper models only, not ") + to_string(m));
  switch (m) {
    case AccumulationModel::fp32_sequential: return fp32_sequential_dot(a, b, K, fa, fb, sc);
    case AccumulationModel::hopper_unpromoted:
      return hopper_unpromoted_dot(a, b, K, fa, fb, sc, split_k);
    case AccumulationModel::hopper_promoted_blockwise:
      return hopper_promoted_blockwise_dot(a, b, K, fa, fb, sc, split_k);
    case AccumulationModel::hopper_promoted_tensorwise:
      return hopper_promoted_tensorwise_dot(a, b, K, fa, fb, sc, split_k);
    case AccumulationModel::hopper_promoted_rowwise:
      return hopper_promoted_rowwise_dot(a, b, K, fa, fb, sc, split_k);
    case AccumulationModel::hopper_mma_sync:
      return hopper_mma_sync_dot(a, b, K, fa, fb, sc, split_k);
    case AccumulationModel::exact: break;
  }
  throw std::invalid_argument("fp8ref: model_dot does not evaluate `exact`; use exact_dot");
}

// The model's accumulator (scales 1) with the scalar scales applied in the order `ep`; the
// model's own order for Epilogue::model. Scales must be constant over K for another order.
inline Bounded model_dot(AccumulationModel m, const std::uint8_t* a, const std::uint8_t* b,
                         std::int64_t K, Format fa, Format fb, ElementScales sc, SplitK split_k,
                         Epilogue ep) {
  if (ep == Epilogue::model) return model_dot(m, a, b, K, fa, fb, sc, split_k);
  if (!accepts_epilogue(m))
    throw std::invalid_argument(std::string("fp8ref: epilogue ") + to_string(ep) +
                                " applies to hopper_unpromoted, hopper_promoted_tensorwise, "
                                "hopper_promoted_rowwise and hopper_mma_sync, not " + to_string(m));
  if (sc.per_block)
    throw std::invalid_argument(std::string("fp8ref: epilogue ") + to_string(ep) +
                                " needs scales constant over K (tensorwise, rowwise or none)");
  static constexpr float kUnit = 1.0f;
  const Bounded acc = model_dot(m, a, b, K, fa, fb, ElementScales{&kUnit, &kUnit, false}, split_k);
  const float sa = sc.a(0), sb = sc.b(0);
  double bound = 0;
  float z = 0;
  switch (ep) {
    case Epilogue::scale_product: {
      const detail::ScaleProduct sp = detail::scale_product(sa, sb);
      z = acc.z * sp.s;
      bound = std::fabs(double(sp.s)) * acc.bound + sp.err * detail::abs_dot(a, b, K, fa, fb) +
              f32_rounding_bound(z);
      break;
    }
    case Epilogue::b_then_a: {
      const float w = acc.z * sb;
      z = w * sa;
      bound = std::fabs(double(sa)) * (std::fabs(double(sb)) * acc.bound + f32_rounding_bound(w)) +
              f32_rounding_bound(z);
      break;
    }
    case Epilogue::a_then_b: {
      const float w = acc.z * sa;
      z = w * sb;
      bound = std::fabs(double(sb)) * (std::fabs(double(sa)) * acc.bound + f32_rounding_bound(w)) +
              f32_rounding_bound(z);
      break;
    }
    case Epilogue::model: break;
  }
  return {z, bound * kBoundSlack};
}

}  // namespace fp8ref
