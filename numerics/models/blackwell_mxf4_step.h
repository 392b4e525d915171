// The Blackwell kind::mxf4 / kind::mxf4nvf4 step (k64, GST-FDPA of MMA-Sim 2.1.1 fdpa.gst_fdpa),
// tcgen05.mma block32 / block16 and the sm_120 mma.sync forms: groups of 16 e2m1 products summed
// exactly, each group sum times its block's scale significands at the scales' exponent sum, then
// the truncated fused sum with C (35 fraction bits, e_zero -139) and RZ to f32. See
// numerics/models/blackwell_step.h for the step's numbered rules and its bound.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "numerics/models/blackwell_step.h"

namespace fp8ref {

namespace detail {

inline void require_mxf4_scales(Format scale, int block) {
  if (scale != Format::e8m0 && scale != Format::ue4m3)
    throw std::invalid_argument("fp8ref: kind::mxf4 / mxf4nvf4 scales are e8m0 or ue4m3, not " +
                                std::string(to_string(scale)));
  if (block != 16 && block != 32)
    throw std::invalid_argument(
        "fp8ref: kind::mxf4 / mxf4nvf4 scale blocks are 16 or 32 wide, not " +
        std::to_string(block));
}

// A k64 e2m1 operand vector with its block scales, decoded once: 2·value per element (an integer
// in [-12, 12]; zero past n), so that a product is an integer in units of 2^-2 and a group sum is
// an int16 dot product; the scale of each group of 16 as sig·2^(exp - man); `scales_finite` false
// when a scale is NaN.
struct OperandE2m1x64 {
  alignas(32) std::int16_t twice[kBlackwellMxf4StepK];
  ElemParts scale[kBlackwellMxf4StepK / kBlackwellMxf4GroupK];
  bool scales_finite;
};

inline void decode_scales64(const std::uint8_t* s, Format scale, int block, OperandE2m1x64& out) {
  const ElemParts* ts = elem_parts_table(scale);
  out.scales_finite = true;
  for (int g = 0; g < kBlackwellMxf4StepK / kBlackwellMxf4GroupK; ++g) {
    out.scale[g] = ts[s[g * kBlackwellMxf4GroupK / block]];
    out.scales_finite = out.scales_finite && out.scale[g].finite;
  }
}

inline void decode_e2m1x64(const std::uint8_t* codes, int n, OperandE2m1x64& out) {
  static const auto table = [] {
    std::array<std::int16_t, 16> t{};
    const ElemParts* e = elem_parts_table(Format::e2m1);
    for (int c = 0; c < 16; ++c) t[std::size_t(c)] = std::int16_t(e[c].sig << e[c].exp);
    return t;
  }();
  for (int k = 0; k < n; ++k) out.twice[k] = table[codes[k] & 15];
  for (int k = n; k < kBlackwellMxf4StepK; ++k) out.twice[k] = 0;
}

// Exact sum of the 16 products of group g in units of 2^-2, and whether all of them are zero.
inline std::int32_t e2m1_group_sum(const OperandE2m1x64& a, const OperandE2m1x64& b, int g,
                                   bool& all_zero) {
  std::int32_t s = 0, nonzero = 0;
  for (int k = g * kBlackwellMxf4GroupK; k < (g + 1) * kBlackwellMxf4GroupK; ++k) {
    const std::int32_t p = std::int32_t(a.twice[k]) * b.twice[k];
    s += p;
    nonzero |= p;
  }
  all_zero = nonzero == 0;
  return s;
}

}  // namespace detail

// An operand vector of a k64 step with its 64 / block scales s[j] (ue8m0 or ue4m3 codes, `scale`
// names which) for block j of `block` (16 or 32) elements, decoded once.
using BlackwellE2m1Operand64 = detail::OperandE2m1x64;
inline void decode_blackwell_e2m1x64(const std::uint8_t* codes, int n, const std::uint8_t* s,
                                     Format scale, int block, BlackwellE2m1Operand64& out) {
  detail::require_mxf4_scales(scale, block);
  detail::require_step_length(n, kBlackwellMxf4StepK);
  detail::decode_e2m1x64(codes, n, out);
  detail::decode_scales64(s, scale, block, out);
}

// kind::mxf4 / mxf4nvf4 on decoded operands.
inline Bounded blackwell_mxf4_step_bounded(const BlackwellE2m1Operand64& a,
                                           const BlackwellE2m1Operand64& b, float c) {
  constexpr int kF = kBlackwellMxf4FractionBits;
  constexpr int kGroups = kBlackwellMxf4StepK / kBlackwellMxf4GroupK;
  const bool nan_scale = !a.scales_finite || !b.scales_finite;
  if (nan_scale || !std::isfinite(c))
    return {detail::special_f32(nan_scale ? std::numeric_limits<double>::quiet_NaN() : double(c)),
            0.0};
  // 2. Group terms: P·2^-2 · (Sa·Sb)·2^-(2·man) at exponent ea + eb, or e_zero.
  std::int64_t sig[kGroups];
  int exp[kGroups], sh_extra[kGroups];
  const detail::CTerm ct = detail::c_term(c);
  int e_max = ct.sig != 0 ? ct.exp : kZeroTermExpMxf4;
  for (int g = 0; g < kGroups; ++g) {
    bool all_zero = true;
    const std::int64_t p = detail::e2m1_group_sum(a, b, g, all_zero);
    const detail::ElemParts x = a.scale[g], y = b.scale[g];
    sig[g] = p * x.sig * y.sig;
    exp[g] = all_zero || x.sig == 0 || y.sig == 0 ? kZeroTermExpMxf4 : x.exp + y.exp;
    sh_extra[g] = -2 - x.man - y.man;
    e_max = std::max(e_max, exp[g]);
  }
  // 3. Truncate each term to 35 fraction bits below E, sum exactly.
  detail::FdpaSum sum;
  sum.s = detail::shift_truncate(ct.sig, kF + ct.exp - e_max - 23, sum.inexact);
  sum.terms = ct.sig != 0;
  for (int g = 0; g < kGroups; ++g) {
    sum.s += detail::shift_truncate(sig[g], kF + exp[g] - e_max + sh_extra[g], sum.inexact);
    sum.terms += sig[g] != 0;
  }
  return detail::finish_rz_f32(sum, e_max - kF);
}

// kind::mxf4 / mxf4nvf4 (k64, e2m1 operands one code per byte, element k = code k): scales sa[j],
// sb[j] (ue8m0 or ue4m3 codes, `scale` names which) for the products of block j of `block` (16 or
// 32) elements. n <= 64 products; a short step's missing products are zero.
inline Bounded blackwell_mxf4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                           const std::uint8_t* sa, const std::uint8_t* sb,
                                           Format scale, int block, float c) {
  BlackwellE2m1Operand64 da, db;
  decode_blackwell_e2m1x64(a, n, sa, scale, block, da);
  decode_blackwell_e2m1x64(b, n, sb, scale, block, db);
  return blackwell_mxf4_step_bounded(da, db, c);
}

inline float blackwell_mxf4_step(const std::uint8_t* a, const std::uint8_t* b, int n,
                                 const std::uint8_t* sa, const std::uint8_t* sb, Format scale,
                                 int block, float c) {
  return blackwell_mxf4_step_bounded(a, b, n, sa, sb, scale, block, c).z;
}

inline float blackwell_mxf8f6f4_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                     Format fb, std::uint8_t sa, std::uint8_t sb, float c) {
  return blackwell_mxf8f6f4_step_bounded(a, b, n, fa, fb, sa, sb, c).z;
}

}  // namespace fp8ref
