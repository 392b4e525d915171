// The Blackwell tensor-core step models (docs/design.md §10; docs/models.md "Blackwell"):
// tcgen05.mma and sm_120 mma.sync kind::f8f6f4 (T-FDPA), kind::mxf8f6f4 block32 (ST-FDPA),
// kind::mxf4 / mxf4nvf4 k64 (GST-FDPA), each with a per-step error bound against the exact value.
// Source: MMA-Sim 2.1.1 (github.com/microsoft/MMA-Sim, mmasim/arithmetic/fdpa.py t_fdpa, st_fdpa,
// gst_fdpa; nv_ptx/sim.py TCGen05MMA, TCGen05MMABlockScale, MMA / MMABlockScale "RTX Blackwell").
//
// One step D = sum_k a_k·b_k·(scales) + C, as MMA-Sim computes it:
//  1. Specials: a NaN / Inf operand, scale or C gives the IEEE sum (NaN -> 0x7FFFFFFF, f16 0x7FFF).
//  2. Terms. An operand is s·2^e with s = sig / 2^man (not renormalised: subnormals and zero at the
//     format's emin: e4m3 -6, e5m2 -14, e3m2 -2, e2m3 0, e2m1 0); a product term has s_a·s_b (and
//     the scales' significands) at exponent e_a + e_b (+ the scales' exponents); C is an f32 (f16)
//     normalised with subnormals at -126 (-14). A zero term (a zero product, a zero C; k64: a
//     group whose 16 products are all zero or whose scale product is zero) takes the exponent
//     e_zero: -133 (f16 output: -21; k64: -139) and TAKES PART in the maximum.
//     k64 (GST): the 16 products of a group are summed exactly first; that sum times the scale
//     significands is the term, at the scales' exponent sum (a cancelling group keeps it).
//  3. E = the largest term exponent. Each term is scaled by 2^(e_i - E) and truncated toward zero
//     to F fraction bits (F = 25; k64: 35); the truncated terms are summed exactly.
//  4. RZ-FP32: the sum is normalised (subnormal below 2^-126) and truncated to 24 significant bits;
//     an exponent above 127 gives ±Inf; zero is +0. f16 output (kind::f8f6f4 only): RNE to f16
//     (subnormal below 2^-14, ±Inf from 65520).
// Bound of a step against the exact value of its inputs: t·2^(E-F) (t non-zero terms, each
// truncation losing < 2^(E-F)) + the final rounding (RZ: 2^-23·|D| + 2^-149).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/models/blackwell_terms.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"

namespace fp8ref {

namespace detail {

inline void require_f8f6f4(Format f) {
  if (!is_f8f6f4_operand(f))
    throw std::invalid_argument(
        "fp8ref: kind::f8f6f4 operands are e4m3, e5m2, e3m2, e2m3 or e2m1, "
        "not " +
        std::string(to_string(f)));
}
inline void require_step_length(int n, int k) {
  if (n < 0 || n > k)
    throw std::invalid_argument("fp8ref: a Blackwell step fuses 0 to " + std::to_string(k) +
                                " products, not " + std::to_string(n));
}
}  // namespace detail

// An operand vector of a k32 step, decoded once (blackwell_step_tile.h reuses it across a tile).
using BlackwellOperand32 = detail::Operand32;
inline void decode_blackwell_operand32(const std::uint8_t* codes, int n, Format f,
                                       BlackwellOperand32& out) {
  detail::require_f8f6f4(f);
  detail::require_step_length(n, kBlackwellStepK);
  detail::decode_operand32(codes, n, f, out);
}

// kind::f8f6f4 (tcgen05.mma, sm_120 mma.sync), f32 accumulator, on decoded operands.
inline Bounded blackwell_f8f6f4_step_bounded(const BlackwellOperand32& a,
                                             const BlackwellOperand32& b, float c) {
  if (!std::isfinite(c) || !a.finite || !b.finite)
    return {detail::special_f32(detail::ieee_dot32(a, b, double(c))), 0.0};
  int e_max = 0;
  const detail::FdpaSum s =
      detail::fdpa_sum32(a, b, 0, detail::c_term(c), kZeroTermExp, kBlackwellFractionBits, e_max);
  return detail::finish_rz_f32(s, e_max - kBlackwellFractionBits);
}

// kind::f8f6f4 (tcgen05.mma, sm_120 mma.sync), f32 accumulator: one step over n <= 32 products
// (a short step is a step whose missing products are zero, as a kernel pads K), with its bound.
inline Bounded blackwell_f8f6f4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                             Format fa, Format fb, float c) {
  BlackwellOperand32 da, db;
  decode_blackwell_operand32(a, n, fa, da);
  decode_blackwell_operand32(b, n, fb, db);
  return blackwell_f8f6f4_step_bounded(da, db, c);
}

inline float blackwell_f8f6f4_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                   Format fb, float c) {
  return blackwell_f8f6f4_step_bounded(a, b, n, fa, fb, c).z;
}

// kind::f8f6f4 with an f16 accumulator (C and D f16 bit patterns): e_zero -21, RNE to f16.
inline std::uint16_t blackwell_f8f6f4_step_f16(const BlackwellOperand32& a,
                                               const BlackwellOperand32& b, std::uint16_t c) {
  const int field = (c >> 10) & 0x1F, man = c & 0x3FF;
  if (field == 0x1F || !a.finite || !b.finite) {
    const double x = detail::ieee_dot32(a, b, out_value(c, OutDtype::f16));
    return std::isnan(x) ? std::uint16_t(0x7FFF) : std::uint16_t(out_bits(x, OutDtype::f16));
  }
  // C as sig·2^(exp - 23), read off its f16 fields: 1.man·2^(field - 15), subnormals (and zero)
  // 0.man·2^-14; the 11-bit significand scaled up to 24 bits.
  const std::int64_t mag = std::int64_t(field != 0 ? 1024 + man : man) << 13;
  const detail::CTerm ct{(c & 0x8000) != 0 ? -mag : mag, field != 0 ? field - 15 : -14};
  int e_max = 0;
  const detail::FdpaSum s =
      detail::fdpa_sum32(a, b, 0, ct, kZeroTermExpF16, kBlackwellFractionBits, e_max);
  return detail::finish_rne_f16(s.s, e_max - kBlackwellFractionBits);
}

inline std::uint16_t blackwell_f8f6f4_step_f16(const std::uint8_t* a, const std::uint8_t* b, int n,
                                               Format fa, Format fb, std::uint16_t c) {
  BlackwellOperand32 da, db;
  decode_blackwell_operand32(a, n, fa, da);
  decode_blackwell_operand32(b, n, fb, db);
  return blackwell_f8f6f4_step_f16(da, db, c);
}

// kind::mxf8f6f4 block32 (tcgen05.mma, sm_120 mma.sync), ue8m0 scales sa, sb for the 32 products
// of the step: the scales' exponents join each product's exponent (their significands are 1).
inline Bounded blackwell_mxf8f6f4_step_bounded(const BlackwellOperand32& a,
                                               const BlackwellOperand32& b, std::uint8_t sa,
                                               std::uint8_t sb, float c) {
  const bool nan_scale = sa == E8m0Traits::kNan || sb == E8m0Traits::kNan;
  if (nan_scale) return {detail::special_f32(std::numeric_limits<double>::quiet_NaN()), 0.0};
  if (!std::isfinite(c) || !a.finite || !b.finite)
    return {detail::special_f32(detail::ieee_dot32(a, b, double(c))), 0.0};
  const int scale_exp = int(sa) + int(sb) - 254;
  int e_max = 0;
  const detail::FdpaSum s = detail::fdpa_sum32(a, b, scale_exp, detail::c_term(c), kZeroTermExp,
                                               kBlackwellFractionBits, e_max);
  return detail::finish_rz_f32(s, e_max - kBlackwellFractionBits);
}

inline Bounded blackwell_mxf8f6f4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                               Format fa, Format fb, std::uint8_t sa,
                                               std::uint8_t sb, float c) {
  BlackwellOperand32 da, db;
  decode_blackwell_operand32(a, n, fa, da);
  decode_blackwell_operand32(b, n, fb, db);
  return blackwell_mxf8f6f4_step_bounded(da, db, sa, sb, c);
}

// kind::mxf4 / mxf4nvf4 (k64, e2m1 operands one code per byte, element k = code k): scales sa[j],
// sb[j] (ue8m0 or ue4m3 codes, `scale` names which) for the products of block j of `block` (16 or
// 32) elements. n <= 64 products; a short step's missing products are zero.
// (numerics/models/blackwell_mxf4_step.h)

}  // namespace fp8ref

#include "numerics/models/blackwell_mxf4_step.h"  // IWYU pragma: export
