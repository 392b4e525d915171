// The Blackwell accumulation models of one output element (docs/models.md "Blackwell models"):
// the tcgen05.mma / sm_120 mma.sync steps of numerics/models/blackwell_step.h chained over all of
// K from +0 (numerics/models/blackwell_chain.h), the block scales applied inside each step, then
// the scalar scales once: out = RN(acc·RN(sa·sb)) for kind::f8f6f4 under tensorwise / rowwise
// scales, RN(acc·RN(ta·tb)) for NVFP4's per-tensor scales. The decode scales arrive as f32 values
// (ElementScales) and are re-encoded exactly: 32-wide blocks as ue8m0, 16-wide blocks as ue4m3
// (nvfp4) or, with ElementScales::block16_e8m0 (mx16), as ue8m0.
// Part of the accumulation models (numerics/models.h).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/models/blackwell_chain.h"
#include "numerics/models/bounded.h"
#include "numerics/models/model_types.h"

namespace fp8ref {

namespace detail {

// The ue8m0 code of a power-of-two f32 scale (2^-127 .. 2^127); throws on any other value.
inline std::uint8_t e8m0_code_of(float v) {
  if (v > 0.0f && std::isfinite(v)) {
    const int e = std::ilogb(v);
    if (e >= -127 && e <= 127 && std::ldexp(1.0, e) == double(v)) return std::uint8_t(e + 127);
  }
  throw std::invalid_argument("fp8ref: the Blackwell block-32 scale " + std::to_string(v) +
                              " is not a ue8m0 value (a power of two)");
}

// The ue4m3 code (0x00 .. 0x7E) of a non-negative f32 scale with that exact value; throws else.
inline std::uint8_t ue4m3_code_of(float v) {
  static const auto table = [] {
    std::array<double, 127> t{};
    for (int c = 0; c < 127; ++c) t[std::size_t(c)] = decode_f64(Format::ue4m3, std::uint8_t(c));
    return t;
  }();
  const auto it = std::lower_bound(table.begin(), table.end(), double(v));
  if (it == table.end() || *it != double(v))
    throw std::invalid_argument("fp8ref: the NVFP4 block-16 scale " + std::to_string(v) +
                                " is not a ue4m3 value");
  return std::uint8_t(it - table.begin());
}

inline void require_blackwell_operands(AccumulationModel m, Format fa, Format fb) {
  const BlackwellKind k = blackwell_kind(m);
  const bool k64 = k == BlackwellKind::mxf4 || k == BlackwellKind::mxf4nvf4;
  const bool ok = k64 ? fa == Format::e2m1 && fb == Format::e2m1
                      : is_f8f6f4_operand(fa) && is_f8f6f4_operand(fb);
  if (!ok)
    throw std::invalid_argument(
        std::string("fp8ref: ") + to_string(m) + " takes " +
        (k64 ? "e2m1 operands" : "e4m3, e5m2, e3m2, e2m3 or e2m1 operands") + ", not " +
        std::string(to_string(fa)) + " x " + std::string(to_string(fb)));
}

// sum over k of |a_k·b_k·(block scales)|, for the bound of a rounded scalar scale product.
inline double blackwell_abs_dot(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                Format fa, Format fb, ElementScales sc) {
  double s = 0.0;
  for (std::int64_t k = 0; k < K; ++k)
    s += std::fabs(decode_f64(fa, a[k]) * decode_f64(fb, b[k]) *
                   (sc.per_block ? double(sc.a(k / sc.block_k)) * sc.b(k / sc.block_k) : 1.0));
  return s;
}

// The block-scaled chain over all of K from +0 (scales re-encoded as codes).
inline Bounded blackwell_scaled_chain(BlackwellKind kind, const std::uint8_t* a,
                                      const std::uint8_t* b, std::int64_t K, Format fa, Format fb,
                                      ElementScales sc) {
  if (!sc.per_block || (sc.block_k != kMxBlockK && sc.block_k != kNvfp4BlockK) ||
      (sc.block_k == kNvfp4BlockK && kind != BlackwellKind::mxf4nvf4))
    throw std::invalid_argument(
        "fp8ref: kind::mxf8f6f4 and kind::mxf4 take ue8m0 scales per 32 elements (mx); "
        "kind::mxf4nvf4 ue8m0 per 32 (mx) or per 16 (mx16), or ue4m3 per 16 (nvfp4)");
  const bool ue4m3 = sc.block_k == kNvfp4BlockK && !sc.block16_e8m0;
  const std::int64_t nb = ceil_div(K, sc.block_k);
  std::vector<std::uint8_t> xa(static_cast<std::size_t>(nb)), xb(static_cast<std::size_t>(nb));
  for (std::int64_t j = 0; j < nb; ++j) {
    xa[std::size_t(j)] = ue4m3 ? ue4m3_code_of(sc.a(j)) : e8m0_code_of(sc.a(j));
    xb[std::size_t(j)] = ue4m3 ? ue4m3_code_of(sc.b(j)) : e8m0_code_of(sc.b(j));
  }
  if (kind == BlackwellKind::mxf8f6f4)
    return blackwell_mxf8f6f4_chain(a, b, K, fa, fb, xa.data(), xb.data(), {0.0f, 0.0});
  return blackwell_mxf4_chain(a, b, K, xa.data(), xb.data(), ue4m3 ? Format::ue4m3 : Format::e8m0,
                              int(sc.block_k), {0.0f, 0.0});
}

}  // namespace detail

// A Blackwell model (is_blackwell_model(m)) on one output element: the chain of its kind over all
// of K from +0, then out = RN(acc·RN(s_a·s_b)) with the scalar pair (sc.a(0), sc.b(0)) for
// kind::f8f6f4 (scales constant over K), (sc.tensor_a, sc.tensor_b) for the block-scaled kinds
// (1, 1 under mx: the chain's result unchanged). Bound against the exact scaled sum.
inline Bounded blackwell_model_dot(AccumulationModel m, const std::uint8_t* a,
                                   const std::uint8_t* b, std::int64_t K, Format fa, Format fb,
                                   ElementScales sc) {
  detail::require_blackwell_operands(m, fa, fb);
  const BlackwellKind kind = blackwell_kind(m);
  Bounded acc{0.0f, 0.0};
  float sa = sc.tensor_a, sb = sc.tensor_b;
  if (kind == BlackwellKind::f8f6f4) {
    if (sc.per_block)
      throw std::invalid_argument(std::string("fp8ref: ") + to_string(m) +
                                  " needs scales constant over K (tensorwise, rowwise or none)");
    acc = blackwell_f8f6f4_chain(a, b, K, fa, fb, {0.0f, 0.0});
    sa = sc.a(0), sb = sc.b(0);
  } else {
    acc = detail::blackwell_scaled_chain(kind, a, b, K, fa, fb, sc);
  }
  if (sa == 1.0f && sb == 1.0f) return acc;
  const double exact = double(sa) * double(sb);
  const float s = sa * sb;
  const float z = acc.z * s;
  const double abs_dot = detail::blackwell_abs_dot(a, b, K, fa, fb, sc);
  const double bound = std::fabs(double(s)) * acc.bound + std::fabs(double(s) - exact) * abs_dot +
                       f32_rounding_bound(z);
  return {z, bound * kBoundSlack};
}

}  // namespace fp8ref
