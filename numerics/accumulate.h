// The Hopper tensor-core FP8 step models and their chains (DESIGN §3.5): `hopper_wgmma_step`
// (first, below) and `hopper_mma_sync_step` (nvcc's f16 emulation of mma.sync FP8 on sm_90,
// further down), each with a running per-element error bound against the exact result.
// Source of the model: MMA-Sim (Microsoft, github.com/microsoft/MMA-Sim, mmasim/simulator:
// WGMMASim with n_accum_fractional_bits = 13 and output "f32_e8m13" for FP8 inputs).
//
// Exact interpretation implemented here (one step D = A·B + C over n products, n = 32 on H100):
//  1. Specials: if the f64 sum of the n products and C is NaN the result is the f32 NaN
//     0x7FFFFFFF; if it is ±Inf the result is that infinity. (Finite FP8 products cannot
//     overflow f64, so only NaN/Inf operands or C reach this branch.)
//  2. Terms. Product k: a_k = Sa·2^(ea-pa), b_k = Sb·2^(eb-pb) with ea, eb the unbiased exponents
//     of the encodings (subnormals and zero at emin: e4m3 -6, e5m2 -14), Sa, Sb the integer
//     significands with hidden bit, pa, pb the mantissa widths. The term's raw exponent is
//     ea + eb and its significand (Sa·Sb)/2^(pa+pb) in [0, 4): NOT renormalised. C is an f32:
//     exponent of its encoding (subnormal at -126), significand in [0, 2). Zero terms (a zero
//     operand, or C = ±0) take no part in the maximum (MMA-Sim gives them exponent -999).
//  3. E = the largest raw exponent of the non-zero terms. If there is none the result is +0.
//  4. Each term's significand is scaled by 2^(e_i - E) and its magnitude truncated to a
//     multiple of 2^-13 (math.trunc: toward zero), sign kept.
//  5. The truncated terms are summed exactly: S·2^(E-13), S an integer.
//  6. S = 0 gives +0. Otherwise the sum is normalised as an f32 (subnormal below 2^-126) and its
//     significand truncated (toward zero) to 13 fraction bits: an "e8m13" value, 14 significant
//     bits. (Below 2^-126 this is exact: E >= -126 makes S·2^(E-13) a multiple of 2^-139.)
//     A leading exponent above 127 gives ±Inf.
// Error of one step against the exact sum of its inputs (products and the C it was given):
//     |step - exact| <= t·2^(E-13) + 2^-13·|step|,
// t the number of non-zero terms (each truncation loses < 2^(E-13); the final truncation loses
// < 2^(e-13) <= 2^-13·|step|, e the result's exponent). A chain's error is the sum of its steps'.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "numerics/codec.h"
#include "numerics/exact_sum.h"
#include "numerics/format.h"

namespace fp8ref {

// A model's f32 result with a rigorous bound on |z - exact| (exact: the real-number value the
// model approximates). Bounds are evaluated in f64 and inflated by kBoundSlack to cover the
// f64 rounding of the bound arithmetic itself (all terms non-negative, < 2^20 operations).
struct Bounded {
  float z;
  double bound;
};
inline constexpr double kBoundSlack = 1.0 + 0x1p-20;

// Fraction bits the H100 FP8 tensor core keeps in the aligned terms and in its accumulator.
inline constexpr int kHopperFp8FractionBits = 13;
inline constexpr int kHopperWgmmaK = 32;  // products fused per wgmma step (k = 32 for FP8)

namespace detail {

// decode_f64 of all 256 codes of e4m3 / e5m2.
inline const double* fp8_value_table(Format f) {
  static const auto make = [](Format g) {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = decode_f64(g, std::uint8_t(c));
    return t;
  };
  static const std::array<double, 256> e4m3 = make(Format::e4m3), e5m2 = make(Format::e5m2);
  return f == Format::e4m3 ? e4m3.data() : e5m2.data();
}

// Special-value result of a step (NaN -> 0x7FFFFFFF, ±Inf kept), or nullopt-like flag.
inline bool step_special(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb,
                         float c, float* out) {
  const Fp8Parts *ta = fp8_parts_table(fa), *tb = fp8_parts_table(fb);
  bool all_finite = std::isfinite(c);
  for (int k = 0; k < n; ++k) all_finite &= ta[a[k]].finite & tb[b[k]].finite;
  if (all_finite) return false;
  double s = double(c);
  for (int k = 0; k < n; ++k) s += decode_f64(fa, a[k]) * decode_f64(fb, b[k]);
  *out = std::isnan(s) ? std::bit_cast<float>(std::uint32_t{0x7FFFFFFF}) : float(s);
  return true;
}

// Truncate |sig|·2^shift toward zero (shift may be negative), keep the sign. `inexact` is set
// when non-zero bits were discarded.
inline std::int64_t shift_truncate(std::int64_t sig, int shift, bool& inexact) {
  const std::int64_t mag = sig < 0 ? -sig : sig;
  std::int64_t r;
  if (shift >= 0) {
    r = mag << shift;
  } else if (shift <= -63) {
    r = 0;
    inexact = inexact || mag != 0;
  } else {
    r = mag >> -shift;
    inexact = inexact || (r << -shift) != mag;
  }
  return sig < 0 ? -r : r;
}

}  // namespace detail

// One step with its error bound against the exact value of sum(a_k·b_k) + c.
inline Bounded hopper_wgmma_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                         Format fa, Format fb, float c) {
  float special;
  if (detail::step_special(a, b, n, fa, fb, c, &special)) return {special, 0.0};
  constexpr int kF = kHopperFp8FractionBits;
  // 2-3. Raw exponents and the maximum over non-zero terms.
  const F32Parts cp = f32_parts(c);
  const int ec = cp.exp + 23;  // exponent of C's encoding (significand = cp.sig / 2^23)
  int e_max = std::numeric_limits<int>::min();
  int terms = 0;
  if (cp.sig != 0) e_max = ec, ++terms;
  const Fp8Parts *ta = fp8_parts_table(fa), *tb = fp8_parts_table(fb);
  for (int k = 0; k < n; ++k) {
    const Fp8Parts x = ta[a[k]], y = tb[b[k]];
    if (x.sig == 0 || y.sig == 0) continue;
    e_max = std::max(e_max, x.exp + y.exp);
    ++terms;
  }
  if (terms == 0) return {0.0f, 0.0};
  // 4-5. Align to e_max, truncate each magnitude to 13 fraction bits, sum exactly.
  bool inexact = false;
  std::int64_t s = detail::shift_truncate(cp.sig, kF + ec - e_max - 23, inexact);
  for (int k = 0; k < n; ++k) {
    const Fp8Parts x = ta[a[k]], y = tb[b[k]];
    if (x.sig == 0 || y.sig == 0) continue;
    const int shift = kF + (x.exp + y.exp) - e_max - (x.man_bits + y.man_bits);
    s += detail::shift_truncate(std::int64_t(x.sig) * y.sig, shift, inexact);
  }
  const double term_bound = inexact ? terms * exp2i(e_max - kF) : 0.0;
  if (s == 0) return {0.0f, term_bound * kBoundSlack};
  // 6. Normalise and truncate to 14 significant bits (value = s·2^(e_max - 13)).
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  int q = e_max - kF;
  const int lead = q + (63 - std::countl_zero(mag));
  if (lead >= -126) {
    const int drop = (63 - std::countl_zero(mag)) - kF;  // keep kF + 1 significant bits
    if (drop > 0) mag >>= drop, q += drop;
  }
  if (lead > 127) {
    const float inf = std::numeric_limits<float>::infinity();
    return {s < 0 ? -inf : inf, std::numeric_limits<double>::infinity()};
  }
  const float z = float(double(mag) * exp2i(q)) * (s < 0 ? -1.0f : 1.0f);
  return {z, (term_bound + std::fabs(double(z)) * exp2i(-kF)) * kBoundSlack};
}

// The model of one H100 wgmma FP8 step: D = sum_{k<n} a_k·b_k + c (n = 32 for the hardware).
inline float hopper_wgmma_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                               Format fb, float c) {
  return hopper_wgmma_step_bounded(a, b, n, fa, fb, c).z;
}

// A chain of steps over k in [0, len): acc = step(a[k..k+32), b[k..k+32), acc), starting from
// `c`; a short last step fuses fewer products (zero products take no part in a step).
// The bound accumulates the steps' bounds plus `c_bound` (the bound already carried by c).
inline Bounded hopper_wgmma_chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len,
                                  Format fa, Format fb, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kHopperWgmmaK) {
    const int n = int(std::min<std::int64_t>(kHopperWgmmaK, len - k));
    const Bounded st = hopper_wgmma_step_bounded(a + k, b + k, n, fa, fb, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

// ---- f32 helpers shared by the models --------------------------------------------------------

// Bound on |RN_f32(x) - x| given the rounded result: half an ulp, <= 2^-24·|r| for normal
// results and 2^-150 below 2^-126.
inline double f32_rounding_bound(float r) { return std::fabs(double(r)) * 0x1p-24 + 0x1p-150; }

// f32 -> bf16 bits, round to nearest even (NaN stays NaN, quiet, sign kept).
constexpr std::uint16_t f32_to_bf16_rne(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return std::uint16_t((u >> 16) | 0x0040);
  const std::uint32_t rounded = u + 0x7FFF + ((u >> 16) & 1);
  return std::uint16_t(rounded >> 16);
}
constexpr float bf16_to_f32(std::uint16_t h) {
  return std::bit_cast<float>(std::uint32_t(h) << 16);
}

// A model's f32 result converted to the output type, RNE (cvt.rn): f32 bits unchanged, bf16 as
// above, f16 with gradual underflow and overflow to ±Inf (NaN -> sign | 0x7E00).
inline std::uint32_t f32_to_out_bits(float x, OutDtype d) {
  if (d == OutDtype::f32) return std::bit_cast<std::uint32_t>(x);
  if (d == OutDtype::bf16) return f32_to_bf16_rne(x);
  if (std::isnan(x)) return (std::signbit(x) ? 0x8000u : 0u) | 0x7E00u;
  if (std::isinf(x)) return out_bits(double(x), OutDtype::f16);
  const F32Parts p = f32_parts(x);
  const double z =
      p.sig == 0 ? (std::signbit(x) ? -0.0 : 0.0) : round_to(p.sig, p.exp, OutDtype::f16);
  return out_bits(z, OutDtype::f16);
}

// ---- hopper_mma_sync: mma.sync FP8 on sm_90 (DESIGN §3.5) -----------------------------------
// sm_90 has no FP8 mma.sync; nvcc emulates mma.sync.m16n8k32 e4m3/e5m2 -> f32 (CUTLASS #1986:
// "the compiler will use software emulation to convert the data and use fp16 tensor core").
// Exact interpretation implemented here, for one step D = sum_{k<32} a_k·b_k + C:
//  1. Every FP8 operand is converted to f16 (exact for all finite e4m3 / e5m2 values; e4m3
//     subnormals become normal f16, e5m2 subnormals stay f16 subnormals at exponent -14).
//  2. A packed FP8x4 register splits into two f16x2 registers, so HMMA #1 takes the products
//     with k mod 4 in {0, 1} and HMMA #2 those with k mod 4 in {2, 3} (16 each).
//  3. Each HMMA.16816.F32 follows MMA-Sim's Hopper mma model (arch_accum_fractional_bits
//     "Hopper": 25; output "f32"): specials as hopper_wgmma; terms (16 products with f16
//     exponents and unnormalised significands in [0, 4), plus its C) aligned to the largest
//     exponent of the non-zero terms and truncated toward zero to 25 fraction bits, summed
//     exactly, normalised and truncated (RZ) to 24 significant bits (f32; multiples of 2^-149
//     below 2^-126); an exact zero sum is +0; a leading exponent above 127 is ±Inf.
//  4. HMMA #1 runs from C = +0, HMMA #2 takes HMMA #1's result as its C, and the mma.sync C is
//     added last: D = RN_f32(C + T2) (a NaN result is 0x7FFFFFFF).
// Not yet compared with an H100 (issue 4 item 7 covers hopper_wgmma and cuBLASLt only).
inline constexpr int kHopperHmmaFractionBits = 25;
inline constexpr int kMmaSyncK = 32;

namespace detail {

// value = sig·2^(exp - 10), |sig| < 2^11: the f16 an FP8 code converts to.
struct F16Parts {
  int sig;
  int exp;
};
constexpr F16Parts fp8_as_f16(Format f, std::uint8_t code) {
  const Fp8Parts x = fp8_parts(f, code);
  int mag = x.sig < 0 ? -x.sig : x.sig, e = x.exp;
  while (mag != 0 && mag < (1 << x.man_bits) && e > -14) mag <<= 1, --e;
  mag <<= 10 - x.man_bits;
  return {x.sig < 0 ? -mag : mag, e};
}

inline const F16Parts* f16_parts_table(Format f) {
  static const auto make = [](Format g) {
    std::array<F16Parts, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = fp8_as_f16(g, std::uint8_t(c));
    return t;
  };
  static const std::array<F16Parts, 256> e4m3 = make(Format::e4m3), e5m2 = make(Format::e5m2);
  return f == Format::e4m3 ? e4m3.data() : e5m2.data();
}

// One HMMA over the products k < n with (k mod 4) / 2 == half, and c (step 3 above).
inline Bounded hmma_f16_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                             Format fb, int half, float c) {
  std::uint8_t sa[16], sb[16];
  int m = 0;
  for (int k = 0; k < n; ++k)
    if ((k & 3) / 2 == half) sa[m] = a[k], sb[m] = b[k], ++m;
  float special;
  if (step_special(sa, sb, m, fa, fb, c, &special)) return {special, 0.0};
  constexpr int kF = kHopperHmmaFractionBits;
  const F32Parts cp = f32_parts(c);
  const int ec = cp.exp + 23;
  int e_max = std::numeric_limits<int>::min(), terms = 0;
  if (cp.sig != 0) e_max = ec, ++terms;
  F16Parts x[16], y[16];
  const F16Parts *ta = f16_parts_table(fa), *tb = f16_parts_table(fb);
  for (int i = 0; i < m; ++i) {
    x[i] = ta[sa[i]], y[i] = tb[sb[i]];
    if (x[i].sig == 0 || y[i].sig == 0) continue;
    e_max = std::max(e_max, x[i].exp + y[i].exp);
    ++terms;
  }
  if (terms == 0) return {0.0f, 0.0};
  bool inexact = false;
  std::int64_t s = shift_truncate(cp.sig, kF + ec - e_max - 23, inexact);
  for (int i = 0; i < m; ++i)
    if (x[i].sig != 0 && y[i].sig != 0)
      s += shift_truncate(std::int64_t(x[i].sig) * y[i].sig, kF + x[i].exp + y[i].exp - e_max - 20,
                          inexact);
  const double term_bound = inexact ? terms * exp2i(e_max - kF) : 0.0;
  if (s == 0) return {0.0f, term_bound * kBoundSlack};
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  int q = e_max - kF;
  const int width = 64 - std::countl_zero(mag);
  const int lead = q + width - 1;
  if (lead > 127) {
    const float inf = std::numeric_limits<float>::infinity();
    return {s < 0 ? -inf : inf, std::numeric_limits<double>::infinity()};
  }
  const int drop = lead >= -126 ? width - 24 : -149 - q;  // RZ to 24 bits / to 2^-149
  if (drop > 0) mag >>= drop, q += drop;
  const float z = float(double(mag) * exp2i(q)) * (s < 0 ? -1.0f : 1.0f);
  return {z, (term_bound + std::fabs(double(z)) * 0x1p-23 + 0x1p-149) * kBoundSlack};
}

}  // namespace detail

// One mma.sync FP8 step (n <= 32 products, k counted from the step's start) with its bound
// against the exact value of sum(a_k·b_k) + c.
inline Bounded hopper_mma_sync_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                            Format fa, Format fb, float c) {
  const Bounded t1 = detail::hmma_f16_step(a, b, n, fa, fb, 0, 0.0f);
  const Bounded t2 = detail::hmma_f16_step(a, b, n, fa, fb, 1, t1.z);
  float d = c + t2.z;
  if (std::isnan(d)) d = std::bit_cast<float>(std::uint32_t{0x7FFFFFFF});
  return {d, t1.bound + t2.bound + f32_rounding_bound(d)};
}

inline float hopper_mma_sync_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                  Format fb, float c) {
  return hopper_mma_sync_step_bounded(a, b, n, fa, fb, c).z;
}

// acc = step(a[k..k+32), b[k..k+32), acc) over k in [0, len), starting from c.
inline Bounded hopper_mma_sync_chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len,
                                     Format fa, Format fb, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kMmaSyncK) {
    const int n = int(std::min<std::int64_t>(kMmaSyncK, len - k));
    const Bounded st = hopper_mma_sync_step_bounded(a + k, b + k, n, fa, fb, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

}  // namespace fp8ref
