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

// Every e2m1 product a·b in units of 2^-2, indexed by (a << 4) | b (codes 0..15; every e2m1 value
// is a multiple of 1/2): the k64 step's group sums are 16 look-ups and adds.
inline const std::int16_t* e2m1_product_table() {
  static const auto t = [] {
    std::array<std::int16_t, 256> p{};
    const ElemParts* e = elem_parts_table(Format::e2m1);
    for (int i = 0; i < 256; ++i) {
      const ElemParts x = e[i >> 4], y = e[i & 15];
      // value = sig·2^(exp - 1): in units of 2^-1, sig << exp (exp is 0, 1 or 2)
      p[std::size_t(i)] = std::int16_t((x.sig << x.exp) * (y.sig << y.exp));
    }
    return p;
  }();
  return t.data();
}

// Exact sum of the e2m1 products a_k·b_k, k in [k0, k1), in units of 2^-2; `all_zero` when every
// product is zero.
inline std::int64_t e2m1_group_sum(const std::uint8_t* a, const std::uint8_t* b, int k0, int k1,
                                   bool& all_zero) {
  const std::int16_t* t = e2m1_product_table();
  std::int32_t s = 0;
  int nonzero = 0;
  for (int k = k0; k < k1; ++k) {
    const std::int32_t p = t[((a[k] & 15) << 4) | (b[k] & 15)];
    nonzero += p != 0;
    s += p;
  }
  all_zero = nonzero == 0;
  return s;
}

}  // namespace detail

inline Bounded blackwell_mxf4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                           const std::uint8_t* sa, const std::uint8_t* sb,
                                           Format scale, int block, float c) {
  detail::require_mxf4_scales(scale, block);
  detail::require_step_length(n, kBlackwellMxf4StepK);
  constexpr int kF = kBlackwellMxf4FractionBits, kG = kBlackwellMxf4GroupK;
  constexpr int kGroups = kBlackwellMxf4StepK / kG;
  const detail::ElemParts* ts = detail::elem_parts_table(scale);
  bool nan_scale = false;
  for (int j = 0; j * block < kBlackwellMxf4StepK; ++j)
    nan_scale = nan_scale || !ts[sa[j]].finite || !ts[sb[j]].finite;
  if (nan_scale || !std::isfinite(c))
    return {detail::special_f32(nan_scale ? std::numeric_limits<double>::quiet_NaN() : double(c)),
            0.0};
  // 2. Group terms: P·2^-2 · (Sa·Sb)·2^-(2·man) at exponent ea + eb, or e_zero.
  std::int64_t sig[kGroups];
  int exp[kGroups], sh_extra[kGroups];
  const detail::CTerm ct = detail::c_term(c);
  int e_max = ct.sig != 0 ? ct.exp : kZeroTermExpMxf4;
  for (int g = 0; g < kGroups; ++g) {
    const int k0 = std::min(n, g * kG), k1 = std::min(n, (g + 1) * kG);
    bool all_zero = true;
    const std::int64_t p = detail::e2m1_group_sum(a, b, k0, k1, all_zero);
    const detail::ElemParts x = ts[sa[g * kG / block]], y = ts[sb[g * kG / block]];
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
