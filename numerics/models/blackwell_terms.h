// The terms of a Blackwell tensor-core step (numerics/models/blackwell_step.h has the step's
// numbered rules and its bound; MMA-Sim 2.1.1 mmasim/arithmetic/fdpa.py): the operand codes as
// significand and exponent, operand vectors decoded once (value, exponent), the largest exponent,
// the truncated fused sum (step 3), and the final roundings RZ-FP32 and RNE-FP16 (step 4).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

// Operand formats of kind::f8f6f4 / mxf8f6f4: is_f8f6f4_operand (exact_sum.h).

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

// RNE-FP16 of s·2^q (|s| < 2^62): 11 significant bits, subnormal below 2^-14 (quantum 2^-24),
// ±Inf from 65520 (a value that rounds to 2^16); zero is +0 (MMA-Sim adds +0.0).
inline std::uint16_t finish_rne_f16(std::int64_t s, int q) {
  if (s == 0) return 0;
  const std::uint16_t sign = s < 0 ? 0x8000 : 0;
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  const int width = 64 - std::countl_zero(mag);
  if (q + width - 1 > 15) return sign | 0x7C00;
  const int drop = q + width - 1 >= -14 ? width - 11 : -24 - q;
  if (drop > 63) return 0;  // below half the least subnormal
  if (drop > 0) {
    const std::uint64_t rem = mag & ((std::uint64_t{1} << drop) - 1),
                        half = std::uint64_t{1} << (drop - 1);
    mag >>= drop, q += drop;
    mag += rem > half || (rem == half && (mag & 1));
  } else {
    mag <<= -drop, q += drop;  // exact: 11 bits, or the subnormal quantum
  }
  if (mag == 0) return 0;                            // -0 -> +0
  if (mag < 1024) return sign | std::uint16_t(mag);  // subnormal: q = -24
  if (mag == 2048) mag = 1024, ++q;                  // carry into the exponent
  const int field = q + 25;                          // mag·2^q = 1.f·2^(q + 10)
  if (field > 30) return sign | 0x7C00;
  return sign | std::uint16_t((field << 10) | (mag - 1024));
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

// One k32 operand vector decoded once (a GEMM tile decodes each row of A and column of B once
// and reuses it for every step that reads it): exact values as f32 (every FP8 / FP6 / FP4 value
// is one; zero past n) and the exponents of step 2 (subnormals at emin) as int16, kZeroCodeExp
// for a zero so that a product's exponent sum tells whether it is zero; `finite` false when a
// code is NaN or Inf.
inline constexpr std::int16_t kZeroCodeExp = -(1 << 13);
struct Operand32 {
  alignas(32) float val[kBlackwellStepK];
  alignas(32) std::int16_t exp[kBlackwellStepK];
  bool finite;
};

// Per code of an operand format: its value, its Operand32 exponent and whether it is finite.
struct CodeEntry {
  float val;
  std::int16_t exp;
  std::int16_t finite;
};
inline const CodeEntry* code_entry_table(Format f) {
  static const auto make = [](Format g) {
    std::array<CodeEntry, 256> t{};
    for (int c = 0; c < 256; ++c) {
      const ElemParts x = elem_parts(g, std::uint8_t(c));
      t[std::size_t(c)] = {float(decode_f64(g, std::uint8_t(c))), x.sig != 0 ? x.exp : kZeroCodeExp,
                           std::int16_t(x.finite)};
    }
    return t;
  };
  static const std::array<std::array<CodeEntry, 256>, 7> all = {
      make(Format::e4m3), make(Format::e5m2), make(Format::e8m0), make(Format::e2m1),
      make(Format::e2m3), make(Format::e3m2), make(Format::ue4m3)};
  return all[std::size_t(f)].data();
}

inline void decode_operand32(const std::uint8_t* codes, int n, Format f, Operand32& out) {
  const CodeEntry* t = code_entry_table(f);
  int finite = 1;
  for (int k = 0; k < n; ++k) {
    const CodeEntry& x = t[codes[k]];
    out.val[k] = x.val;
    out.exp[k] = x.exp;
    finite &= x.finite;
  }
  for (int k = n; k < kBlackwellStepK; ++k) out.val[k] = 0.0f, out.exp[k] = kZeroCodeExp;
  out.finite = finite != 0;
}

// The largest exponent sum of the non-zero products and their count (int16 lanes, vectorised;
// a sum with a zero's kZeroCodeExp is below kZeroCodeExp / 2, every other one above).
inline int product_max_exp(const Operand32& a, const Operand32& b, int& nonzero) {
  std::int16_t e_max = 2 * kZeroCodeExp, count = 0;
  for (int k = 0; k < kBlackwellStepK; ++k) {
    const std::int16_t e = std::int16_t(a.exp[k] + b.exp[k]);
    e_max = std::max(e_max, e);
    count = std::int16_t(count + (e > kZeroCodeExp / 2));
  }
  nonzero = count;
  return e_max;
}

// Sum over k of trunc(a_k·b_k·2^u), with `lost` set when a term drops bits. Each a_k·b_k·2^u is
// below 2^27 in magnitude (see fdpa_sum32) and, for u >= -100, exact as an f32 (at most 8
// significant bits, at least 2^-32·2^-100 = 2^-132), so its conversion to int32 is the truncation
// toward zero, and eight such terms per lane sum below 2^30: four-lane f32 vectors (GCC / Clang
// vector extensions; one SSE2 register). Below u = -100 (a C far above every product) the terms
// are scaled in f64, one at a time.
inline std::int64_t truncated_sum(const Operand32& a, const Operand32& b, int u, bool& lost) {
  if (u < -100) {
    std::int64_t s = 0;
    for (int k = 0; k < kBlackwellStepK; ++k) {
      const double x = double(a.val[k]) * double(b.val[k]) * pow2_f64(u);
      const std::int64_t t = std::int64_t(x);
      s += t;
      lost = lost || double(t) != x;
    }
    return s;
  }
  using V4f = float __attribute__((vector_size(16)));
  using V4i = std::int32_t __attribute__((vector_size(16)));
  const float unit = std::bit_cast<float>(std::uint32_t(u + 127) << 23);  // 2^u, u in [-100, 53]
  const V4f v = {unit, unit, unit, unit};
  V4i acc = {0, 0, 0, 0}, dropped = {0, 0, 0, 0};
  for (int k = 0; k < kBlackwellStepK; k += 4) {
    V4f va, vb;
    std::memcpy(&va, a.val + k, sizeof va);
    std::memcpy(&vb, b.val + k, sizeof vb);
    const V4f x = va * vb * v;
    const V4i t = __builtin_convertvector(x, V4i);
    dropped |= __builtin_convertvector(t, V4f) != x;
    acc += t;
  }
  lost = (dropped[0] | dropped[1] | dropped[2] | dropped[3]) != 0;
  return std::int64_t(acc[0]) + acc[1] + acc[2] + acc[3];
}

// T-FDPA / ST-FDPA (steps 2-3) on the 32 products of two decoded operands whose scale exponents
// add `scale_exp` (ue8m0 scales: significand 1); a missing product is a zero product. Every
// product a_k·b_k is exact in f64 (at most 8 significant bits), and so is its scaling by
// unit = 2^(scale_exp + F - E); its exponent is at most E and |s_a·s_b| < 4, so the scaled product
// is below 2^(F+2) = 2^27 and its truncation is step 3's. No branch per term.
inline FdpaSum fdpa_sum32(const Operand32& a, const Operand32& b, int scale_exp, CTerm c,
                          int e_zero, int frac_bits, int& e_max) {
  static_assert(kBlackwellFractionBits + 2 + 3 < 31, "8 scaled products must sum in an int32");
  int nonzero = 0;
  const int p_max = product_max_exp(a, b, nonzero);
  e_max = std::numeric_limits<int>::min();
  if (c.sig != 0) e_max = c.exp;
  if (nonzero != 0) e_max = std::max(e_max, p_max + scale_exp);
  if (c.sig == 0 || nonzero != kBlackwellStepK) e_max = std::max(e_max, e_zero);
  FdpaSum sum;
  sum.s = shift_truncate(c.sig, frac_bits + c.exp - e_max - 23, sum.inexact);
  sum.terms = (c.sig != 0) + nonzero;
  // With no non-zero product the scale 2^u is unbounded (u up to 412) and there is nothing to sum;
  // else u <= F - (the least exponent sum, -28) = 53.
  bool lost = false;
  if (nonzero != 0) sum.s += truncated_sum(a, b, scale_exp + frac_bits - e_max, lost);
  sum.inexact = sum.inexact || lost;
  return sum;
}

// The IEEE value of a step with a NaN or Inf operand or C, summed in order as f64.
inline double ieee_dot32(const Operand32& a, const Operand32& b, double c) {
  double s = 0;
  for (int k = 0; k < kBlackwellStepK; ++k) s += double(a.val[k]) * double(b.val[k]);
  return s + c;
}

}  // namespace detail

}  // namespace fp8ref
