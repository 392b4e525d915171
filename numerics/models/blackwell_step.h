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
#include <limits>
#include <stdexcept>
#include <string>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"

namespace fp8ref {

inline constexpr int kBlackwellFractionBits = 25;      // T-FDPA, ST-FDPA (k32)
inline constexpr int kBlackwellMxf4FractionBits = 35;  // GST-FDPA (k64)
inline constexpr int kBlackwellStepK = 32;             // products per kind::f8f6f4 / mxf8f6f4 step
inline constexpr int kBlackwellMxf4StepK = 64;         // products per kind::mxf4 / mxf4nvf4 step
inline constexpr int kBlackwellMxf4GroupK = 16;        // products summed exactly first (k64)
inline constexpr int kZeroTermExp = -133;              // e_zero, f32 output
inline constexpr int kZeroTermExpF16 = -21;            // e_zero, f16 output
inline constexpr int kZeroTermExpMxf4 = -139;          // e_zero, k64

// Operand formats of kind::f8f6f4 / mxf8f6f4 (FP6 / FP4 codes in the low bits of a byte).
constexpr bool is_f8f6f4_operand(Format f) {
  return f == Format::e4m3 || f == Format::e5m2 || f == Format::e3m2 || f == Format::e2m3 ||
         f == Format::e2m1;
}

namespace detail {

// A code as sig·2^(exp - man): sig the signed integer significand (hidden bit included), exp the
// unbiased exponent with subnormals and zero at emin. Read off decode_f64's exact value.
struct ElemParts {
  std::int32_t sig;
  std::int16_t exp;
  std::int8_t man;
  bool finite;
};

constexpr int elem_emin(Format f) {
  switch (f) {
    case Format::e4m3:
    case Format::ue4m3: return -6;
    case Format::e5m2: return -14;
    case Format::e3m2: return -2;
    case Format::e8m0: return -127;
    default: return 0;  // e2m3, e2m1
  }
}
constexpr int elem_man(Format f) {
  switch (f) {
    case Format::e4m3:
    case Format::ue4m3:
    case Format::e2m3: return 3;
    case Format::e5m2:
    case Format::e3m2: return 2;
    case Format::e2m1: return 1;
    default: return 0;  // e8m0
  }
}

inline ElemParts elem_parts(Format f, std::uint8_t code) {
  const double v = decode_f64(f, code);
  const int man = elem_man(f), emin = elem_emin(f);
  if (!std::isfinite(v)) return {0, std::int16_t(emin), std::int8_t(man), false};
  if (v == 0) return {0, std::int16_t(emin), std::int8_t(man), true};
  const int e = std::max(std::ilogb(v), emin);
  return {std::int32_t(std::ldexp(v, man - e)), std::int16_t(e), std::int8_t(man), true};
}

inline const ElemParts* elem_parts_table(Format f) {
  static const auto make = [](Format g) {
    std::array<ElemParts, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = elem_parts(g, std::uint8_t(c));
    return t;
  };
  static const std::array<std::array<ElemParts, 256>, 7> all = {
      make(Format::e4m3), make(Format::e5m2), make(Format::e8m0), make(Format::e2m1),
      make(Format::e2m3), make(Format::e3m2), make(Format::ue4m3)};
  return all[std::size_t(f)].data();
}

// The exact-sum accumulator of one step: sum of truncated terms in units of 2^(E - F).
struct FdpaSum {
  std::int64_t s = 0;
  int terms = 0;
  bool inexact = false;
};

// RZ-FP32 of s·2^q (|s| < 2^62) with the step bound; exponent > 127 gives ±Inf.
// 2^e as a double, e in [-1022, 1023] (every exponent a step produces), without a libm call.
inline double pow2_f64(int e) { return std::bit_cast<double>(std::uint64_t(e + 1023) << 52); }

inline Bounded finish_rz_f32(const FdpaSum& sum, int q) {
  const double term_bound = sum.inexact ? sum.terms * pow2_f64(q) : 0.0;
  if (sum.s == 0) return {0.0f, term_bound * kBoundSlack};
  std::uint64_t mag = std::uint64_t(sum.s < 0 ? -sum.s : sum.s);
  const int width = 64 - std::countl_zero(mag);
  const int lead = q + width - 1;
  if (lead > 127) {
    const float inf = std::numeric_limits<float>::infinity();
    return {sum.s < 0 ? -inf : inf, std::numeric_limits<double>::infinity()};
  }
  const int drop = lead >= -126 ? width - 24 : -149 - q;  // RZ to 24 bits / to 2^-149
  if (drop > 0) mag >>= drop, q += drop;
  // a result truncated to nothing is +0 (MMA-Sim adds +0.0)
  // mag < 2^24 and q >= -149: mag·2^q is exact in f64 and in f32
  const float z = mag == 0 ? 0.0f : float(double(mag) * pow2_f64(q)) * (sum.s < 0 ? -1.0f : 1.0f);
  return {z, (term_bound + std::fabs(double(z)) * 0x1p-23 + 0x1p-149) * kBoundSlack};
}

// The special result of a step whose IEEE value `x` is NaN or ±Inf (NaN -> 0x7FFFFFFF).
inline float special_f32(double x) {
  return std::isnan(x) ? std::bit_cast<float>(std::uint32_t{0x7FFFFFFF}) : float(x);
}

// C as a term: (sig, exp) with value sig·2^(exp - 23), subnormal at -126; zero: no sig.
struct CTerm {
  std::int64_t sig;
  int exp;
};
inline CTerm c_term(float c) {
  const F32Parts p = f32_parts(c);
  return {p.sig, p.exp + 23};
}

// T-FDPA / ST-FDPA on up to 32 products whose scale exponents add `scale_exp` and scale
// significands multiply by `scale_sig` (units 2^-scale_man); e_zero and F as in the header.
// Hot path: the products' significands and exponents are read once into local arrays; every
// term is then aligned by one branchless shift pair (|sig| < 2^16·scale_sig, left shifts <= F), its
// dropped bits or-ed into `lost`, and summed in 64-bit integers.
inline FdpaSum fdpa_sum(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb,
                        int scale_exp, std::int64_t scale_sig, int scale_man, CTerm c, int e_zero,
                        int frac_bits, int& e_max) {
  const ElemParts *ta = elem_parts_table(fa), *tb = elem_parts_table(fb);
  std::int32_t ps[kBlackwellStepK], pe[kBlackwellStepK];
  constexpr int kNone = std::numeric_limits<int>::min() / 2;
  int p_max = kNone, zeros = 0;
  for (int k = 0; k < n; ++k) {
    const ElemParts x = ta[a[k]], y = tb[b[k]];
    ps[k] = x.sig * y.sig;
    pe[k] = x.exp + y.exp;
    zeros += ps[k] == 0;
    p_max = std::max(p_max, ps[k] != 0 ? pe[k] : kNone);
  }
  const bool zero_term = c.sig == 0 || n < kBlackwellStepK || scale_sig == 0 || zeros != 0;
  e_max = std::numeric_limits<int>::min();
  if (c.sig != 0) e_max = c.exp;
  if (p_max != kNone) e_max = std::max(e_max, p_max + scale_exp);
  if (zero_term) e_max = std::max(e_max, e_zero);
  FdpaSum sum;
  sum.s = shift_truncate(c.sig, frac_bits + c.exp - e_max - 23, sum.inexact);
  sum.terms = c.sig != 0;
  if (scale_sig == 0) return sum;
  const int base = frac_bits + scale_exp - e_max - elem_man(fa) - elem_man(fb) - scale_man;
  const std::uint64_t ssig = std::uint64_t(scale_sig < 0 ? -scale_sig : scale_sig);
  std::int64_t acc = 0;
  std::uint64_t lost = 0;
  for (int k = 0; k < n; ++k) {
    const int sh = base + pe[k];
    const std::uint64_t m = std::uint64_t(ps[k] < 0 ? -ps[k] : ps[k]) * ssig;
    // A zero product adds nothing; its exponent is arbitrary, so it is skipped before shifting
    // (a nonzero one has sh <= frac_bits, since e_max >= its exponent).
    if (m == 0) continue;
    const int rs = std::min(std::max(-sh, 0), 63), ls = std::max(sh, 0);
    const std::int64_t r = std::int64_t((m >> rs) << ls);
    lost |= m & ((std::uint64_t{1} << rs) - 1);
    acc += (ps[k] < 0) != (scale_sig < 0) ? -r : r;
  }
  sum.s += acc;
  sum.terms += n - zeros;
  sum.inexact = sum.inexact || lost != 0;
  return sum;
}

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
// decode_f64 of every code of an operand format, looked up instead of decoded (the special path
// of a step reads 64 of them).
inline const double* elem_value_table(Format f) {
  static const auto make = [](Format g) {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = decode_f64(g, std::uint8_t(c));
    return t;
  };
  static const std::array<std::array<double, 256>, 7> all = {
      make(Format::e4m3), make(Format::e5m2), make(Format::e8m0), make(Format::e2m1),
      make(Format::e2m3), make(Format::e3m2), make(Format::ue4m3)};
  return all[std::size_t(f)].data();
}
inline double ieee_dot(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb) {
  const double *va = elem_value_table(fa), *vb = elem_value_table(fb);
  double s = 0;
  for (int k = 0; k < n; ++k) s += va[a[k]] * vb[b[k]];
  return s;
}
inline bool any_nonfinite(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                          Format fb) {
  const ElemParts *ta = elem_parts_table(fa), *tb = elem_parts_table(fb);
  bool bad = false;
  for (int k = 0; k < n; ++k) bad |= !ta[a[k]].finite || !tb[b[k]].finite;
  return bad;
}

}  // namespace detail

// kind::f8f6f4 (tcgen05.mma, sm_120 mma.sync), f32 accumulator: one step over n <= 32 products
// (a short step is a step whose missing products are zero, as a kernel pads K), with its bound.
inline Bounded blackwell_f8f6f4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                             Format fa, Format fb, float c) {
  detail::require_f8f6f4(fa);
  detail::require_f8f6f4(fb);
  detail::require_step_length(n, kBlackwellStepK);
  if (!std::isfinite(c) || detail::any_nonfinite(a, b, n, fa, fb))
    return {detail::special_f32(detail::ieee_dot(a, b, n, fa, fb) + double(c)), 0.0};
  int e_max = 0;
  const detail::FdpaSum s = detail::fdpa_sum(a, b, n, fa, fb, 0, 1, 0, detail::c_term(c),
                                             kZeroTermExp, kBlackwellFractionBits, e_max);
  return detail::finish_rz_f32(s, e_max - kBlackwellFractionBits);
}

inline float blackwell_f8f6f4_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                   Format fb, float c) {
  return blackwell_f8f6f4_step_bounded(a, b, n, fa, fb, c).z;
}

// kind::f8f6f4 with an f16 accumulator (C and D f16 bit patterns): e_zero -21, RNE to f16.
inline std::uint16_t blackwell_f8f6f4_step_f16(const std::uint8_t* a, const std::uint8_t* b, int n,
                                               Format fa, Format fb, std::uint16_t c) {
  detail::require_f8f6f4(fa);
  detail::require_f8f6f4(fb);
  detail::require_step_length(n, kBlackwellStepK);
  const double cv = out_value(c, OutDtype::f16);
  if (!std::isfinite(cv) || detail::any_nonfinite(a, b, n, fa, fb)) {
    const double x = detail::ieee_dot(a, b, n, fa, fb) + cv;
    return std::isnan(x) ? std::uint16_t(0x7FFF) : std::uint16_t(out_bits(x, OutDtype::f16));
  }
  // C as sig·2^(exp - 23) with f16's subnormal exponent -14 (sig < 2^11 scaled up to 24 bits).
  detail::CTerm ct{0, -14};
  if (cv != 0) {
    const int e = std::max(std::ilogb(cv), -14);
    ct = {std::int64_t(std::ldexp(cv, 23 - e)), e};
  }
  int e_max = 0;
  const detail::FdpaSum s = detail::fdpa_sum(a, b, n, fa, fb, 0, 1, 0, ct, kZeroTermExpF16,
                                             kBlackwellFractionBits, e_max);
  const double z = round_to(i128(s.s), e_max - kBlackwellFractionBits, OutDtype::f16);
  return z == 0 ? std::uint16_t{0} : std::uint16_t(out_bits(z, OutDtype::f16));  // -0 -> +0
}

// kind::mxf8f6f4 block32 (tcgen05.mma, sm_120 mma.sync), ue8m0 scales sa, sb for the 32 products
// of the step: the scales' exponents join each product's exponent (their significands are 1).
inline Bounded blackwell_mxf8f6f4_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                               Format fa, Format fb, std::uint8_t sa,
                                               std::uint8_t sb, float c) {
  detail::require_f8f6f4(fa);
  detail::require_f8f6f4(fb);
  detail::require_step_length(n, kBlackwellStepK);
  const bool nan_scale = sa == E8m0Traits::kNan || sb == E8m0Traits::kNan;
  if (nan_scale) return {detail::special_f32(std::numeric_limits<double>::quiet_NaN()), 0.0};
  if (!std::isfinite(c) || detail::any_nonfinite(a, b, n, fa, fb))
    return {detail::special_f32(detail::ieee_dot(a, b, n, fa, fb) + double(c)), 0.0};
  const int scale_exp = int(sa) + int(sb) - 254;
  int e_max = 0;
  const detail::FdpaSum s = detail::fdpa_sum(a, b, n, fa, fb, scale_exp, 1, 0, detail::c_term(c),
                                             kZeroTermExp, kBlackwellFractionBits, e_max);
  return detail::finish_rz_f32(s, e_max - kBlackwellFractionBits);
}

// kind::mxf4 / mxf4nvf4 (k64, e2m1 operands one code per byte, element k = code k): scales sa[j],
// sb[j] (ue8m0 or ue4m3 codes, `scale` names which) for the products of block j of `block` (16 or
// 32) elements. n <= 64 products; a short step's missing products are zero.
// (numerics/models/blackwell_mxf4_step.h)

}  // namespace fp8ref

#include "numerics/models/blackwell_mxf4_step.h"  // IWYU pragma: export
