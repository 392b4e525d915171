// The named accumulation models of one output element y = sum_kb sa_kb·sb_kb·sum_{k in kb} a_k·b_k
// (docs/design.md §10): `exact` (the real value rounded once), fp32_sequential, and model_dot,
// which evaluates any named model with its split-K and epilogue order and returns the f32 result
// with a rigorous error bound against the exact value. docs/models.md has the definitions,
// sources and bound derivations; numerics/models.h is the entry point.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "numerics/codec.h"
#include "numerics/models/blackwell_models.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"
#include "numerics/models/hopper_models.h"
#include "numerics/models/model_types.h"

namespace fp8ref {

// ---- exact ----------------------------------------------------------------------------------

namespace detail {

// The block partial p times its scale significand q (the block's pair, times the tensor pair
// under nvfp4) at 2^e, as terms t, te whose sum is exact: one term when |p·q| < 2^126 (always
// without tensor scales: |p| < 2^71, |q| < 2^48), else q split at bit 48 into two. Returns the
// number of terms written.
inline int block_terms(i128 p, i128 q, int e, i128* t, int* te) {
  const u128 pm = p < 0 ? u128(-p) : u128(p), qm = q < 0 ? u128(-q) : u128(q);
  if (bit_length(pm) + bit_length(qm) <= 126) {
    t[0] = p * q, te[0] = e;
    return 1;
  }
  const i128 lo = i128(qm & ((u128(1) << 48) - 1)), hi = i128(qm >> 48);
  t[0] = p * (q < 0 ? -lo : lo), te[0] = e;
  t[1] = p * (q < 0 ? -hi : hi), te[1] = e + 48;
  return 2;
}

}  // namespace detail

// The exact value rounded once (RNE) to `out`; returned as an f64 holding that value. Operands
// are FP8, FP6 or FP4 codes (is_f8f6f4_operand); the per-tensor scales sc.tensor_a·tensor_b
// (nvfp4) multiply every block. Non-finite codes or scales give the IEEE result of the f64
// evaluation (NaN or ±Inf).
inline double exact_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K, Format fa,
                        Format fb, ElementScales sc, OutDtype out) {
  const std::int64_t w = sc.promotion_k(), nb = ceil_div(K, w);
  const bool tensor = sc.tensor_a != 1.0f || sc.tensor_b != 1.0f;
  bool finite = !dot_has_nonfinite(a, b, K, fa, fb) &&
                (!tensor || (std::isfinite(sc.tensor_a) && std::isfinite(sc.tensor_b)));
  for (std::int64_t kb = 0; kb < nb && finite; ++kb)
    finite = std::isfinite(sc.a(kb)) && std::isfinite(sc.b(kb));
  if (!finite) {
    double s = 0.0;
    for (std::int64_t k = 0; k < K; ++k)
      // A NaN sum stays that NaN (two NaNs in one add would give compiler-dependent bits).
      if (!std::isnan(s))
        s += double(sc.a(k / w)) * sc.b(k / w) * decode_f64(fa, a[k]) * decode_f64(fb, b[k]);
    return tensor ? s * (double(sc.tensor_a) * double(sc.tensor_b)) : s;
  }
  const F32Parts ta = tensor ? f32_parts_odd(sc.tensor_a) : F32Parts{1, 0};
  const F32Parts tb = tensor ? f32_parts_odd(sc.tensor_b) : F32Parts{1, 0};
  const int unit = product_unit_exp(fa, fb) + ta.exp + tb.exp;
  constexpr std::int64_t kChunk = 64;  // blocks per round_terms batch on the stack
  i128 t[2 * kChunk];
  int e[2 * kChunk];
  ExactAccumulator acc;
  for (std::int64_t kb0 = 0; kb0 < nb; kb0 += kChunk) {
    const std::int64_t n = std::min(kChunk, nb - kb0);
    int terms = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t k0 = (kb0 + j) * w, len = std::min(w, K - k0);
      const i128 p = exact_dot_units(a + k0, b + k0, len, fa, fb);  // |p| < 2^71
      const F32Parts x = f32_parts_odd(sc.a(kb0 + j)), y = f32_parts_odd(sc.b(kb0 + j));
      const i128 q = i128(x.sig * y.sig) * (i128(ta.sig) * tb.sig);  // |q| < 2^96
      terms += detail::block_terms(p, q, unit + x.exp + y.exp, t + terms, e + terms);
    }
    if (nb <= kChunk) return round_terms(t, e, terms, out);
    for (int j = 0; j < terms; ++j) acc.add(t[j], e[j]);
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
    acc = fma_f32(x, w, acc);
    const double ex = std::fabs(double(x) - av), ew = std::fabs(double(w) - bv);
    bound += std::fabs(double(x)) * ew + std::fabs(bv) * ex + f32_rounding_bound(acc);
  }
  return {acc, bound * kBoundSlack};
}

// ---- model_dot ------------------------------------------------------------------------------

// A model with its split-K and epilogue order, checked once against the shape of the scales its
// elements will have (per block, or constant over K): model_dot(const CheckedModel&, ...) then
// evaluates element after element with no check in the loop. The reference builds one per
// operation, where it builds the operands (docs/design.md §10-12).
class CheckedModel {
 public:
  // Throws std::invalid_argument naming the first precondition broken: a model model_dot
  // evaluates (not `exact`); split-K for the hopper models only, and a valid one; an epilogue
  // order only for the models that accept one, on scales constant over K; scales constant over K
  // for hopper_unpromoted / _tensorwise / _rowwise. (The Blackwell models check their operands.)
  CheckedModel(AccumulationModel m, bool per_block_scales, SplitK split_k, Epilogue ep)
      : model_(m), split_k_(split_k), epilogue_(ep) {
    if (ep != Epilogue::model) check_epilogue(per_block_scales);
    if (!accepts_split_k(m) && !split_k.is_single())
      throw std::invalid_argument(
          std::string("fp8ref: split_k applies to the hopper models only, not ") + to_string(m));
    if (m == AccumulationModel::exact)
      throw std::invalid_argument("fp8ref: model_dot does not evaluate `exact`; use exact_dot");
    if (is_blackwell_model(m)) return;
    if (ep == Epilogue::model && needs_constant_scales(m))
      detail::require_constant_scales({nullptr, nullptr, per_block_scales}, m);
    detail::require_valid_split(split_k);
  }

  AccumulationModel model() const { return model_; }
  SplitK split_k() const { return split_k_; }
  Epilogue epilogue() const { return epilogue_; }

 private:
  void check_epilogue(bool per_block_scales) const {
    if (!accepts_epilogue(model_))
      throw std::invalid_argument(std::string("fp8ref: epilogue ") + to_string(epilogue_) +
                                  " applies to hopper_unpromoted, hopper_promoted_tensorwise, "
                                  "hopper_promoted_rowwise and hopper_mma_sync, not " +
                                  to_string(model_));
    if (per_block_scales)
      throw std::invalid_argument(std::string("fp8ref: epilogue ") + to_string(epilogue_) +
                                  " needs scales constant over K (tensorwise, rowwise or none)");
  }

  AccumulationModel model_;
  SplitK split_k_;
  Epilogue epilogue_;
};

namespace detail {

// The model's own evaluation of one element (CheckedModel holds its preconditions).
inline Bounded checked_model_dot(AccumulationModel m, const DotRun& x, std::int64_t K,
                                 ElementScales sc, SplitK split_k) {
  if (is_blackwell_model(m)) return blackwell_model_dot(m, x.a, x.b, K, x.fa, x.fb, sc);
  switch (m) {
    case AccumulationModel::fp32_sequential:
      return fp32_sequential_dot(x.a, x.b, K, x.fa, x.fb, sc);
    case AccumulationModel::hopper_unpromoted:
      return unpromoted_dot(TensorCoreStep::wgmma, x, K, sc, split_k);
    case AccumulationModel::hopper_promoted_blockwise:
      return promoted_blockwise_dot(TensorCoreStep::wgmma, x, K, sc, split_k);
    case AccumulationModel::hopper_promoted_tensorwise:
      return apply_scale_product(promoted_f32_sum(x, K, split_k), x, K, sc);
    case AccumulationModel::hopper_promoted_rowwise: return promoted_rowwise_dot(x, K, sc, split_k);
    case AccumulationModel::hopper_mma_sync: return mma_sync_dot(x, K, sc, split_k);
    default: return {NAN, INFINITY};  // exact: CheckedModel refuses it
  }
}

// The scalar scales applied to the model's accumulator `acc` (scales 1) in the order `ep`.
inline Bounded apply_epilogue(Epilogue ep, Bounded acc, float sa, float sb, const DotRun& x,
                              std::int64_t K) {
  double bound = 0;
  float z = 0;
  switch (ep) {
    case Epilogue::scale_product: {
      const ScaleProduct sp = scale_product(sa, sb);
      z = acc.z * sp.s;
      bound = std::fabs(double(sp.s)) * acc.bound + sp.err * abs_dot(x, K) + f32_rounding_bound(z);
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
    case Epilogue::model: return acc;
  }
  return {z, bound * kBoundSlack};
}

}  // namespace detail

// One element under a checked model: sc must have the shape the model was checked for. With an
// epilogue order, the model's accumulator (scales 1) with the scalar scales applied in that
// order; the model's own order for Epilogue::model.
inline Bounded model_dot(const CheckedModel& m, const DotRun& x, std::int64_t K, ElementScales sc) {
  if (m.epilogue() == Epilogue::model)
    return detail::checked_model_dot(m.model(), x, K, sc, m.split_k());
  static constexpr float kUnit = 1.0f;
  const Bounded acc =
      detail::checked_model_dot(m.model(), x, K, ElementScales{&kUnit, &kUnit, false}, m.split_k());
  return detail::apply_epilogue(m.epilogue(), acc, sc.a(0), sc.b(0), x, K);
}

// The same, checking the model for this one call: the model's accumulator with the scalar scales
// applied in the order `ep`; the model's own order for Epilogue::model. Scales must be constant
// over K for another order.
inline Bounded model_dot(AccumulationModel m, const DotRun& x, std::int64_t K, ElementScales sc,
                         SplitK split_k, Epilogue ep = Epilogue::model) {
  return model_dot(CheckedModel(m, sc.per_block, split_k, ep), x, K, sc);
}

// The same on codes alone.
inline Bounded model_dot(AccumulationModel m, const std::uint8_t* a, const std::uint8_t* b,
                         std::int64_t K, Format fa, Format fb, ElementScales sc, SplitK split_k,
                         Epilogue ep = Epilogue::model) {
  return model_dot(m, DotRun{a, b, fa, fb}, K, sc, split_k, ep);
}

}  // namespace fp8ref
