// The Hopper wgmma FP8 step model `hopper_wgmma_step` and its chains (DESIGN §3.5), on codes and
// on decoded planes, each with a running per-element error bound against the exact result.
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
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/bounded.h"
#include "numerics/codec.h"
#include "numerics/exact_sum.h"
#include "numerics/format.h"

namespace fp8ref {

// Fraction bits the H100 FP8 tensor core keeps in the aligned terms and in its accumulator.
inline constexpr int kHopperFp8FractionBits = 13;
inline constexpr int kHopperWgmmaK = 32;  // products fused per wgmma step (k = 32 for FP8)

// ---- hopper_wgmma on planes -----------------------------------------------------------------
// The step reads each FP8 operand as a pair of planes: value[k], the exact value as an f32 (every
// finite e4m3 / e5m2 code is one, and so is every product of two), and exp[k], the raw exponent
// of step 2 (the encoding's unbiased exponent, subnormals at emin), or kStepNoTerm for ±0 and
// kStepSpecial for NaN / ±Inf. The sum of two raw exponents classifies a product in int16: below
// kStepNoTermBelow it is a zero product (no term), above kStepSpecialAbove it is NaN / Inf (the
// step is special), whatever the other factor is; finite non-zero products sum to [-28, 30].
// Decoding a run once and stepping over it many times (a GEMM's rows and columns) saves the
// per-step table lookups, and the step's loops vectorise.
inline constexpr std::int16_t kStepNoTerm = -8192;
inline constexpr std::int16_t kStepSpecial = 16383;
inline constexpr int kStepNoTermBelow = -4096;
inline constexpr int kStepSpecialAbove = 4096;

struct WgmmaPlanes {
  const float* value;
  const std::int16_t* exp;
  WgmmaPlanes operator+(std::int64_t k) const { return {value + k, exp + k}; }
};

namespace detail {

struct StepCode {
  float value;
  std::int16_t exp;
};
inline const StepCode* step_code_table(Format f) {
  static const auto make = [](Format g) {
    std::array<StepCode, 256> t{};
    for (int c = 0; c < 256; ++c) {
      const Fp8Parts x = fp8_parts(g, std::uint8_t(c));
      const int e = !x.finite ? kStepSpecial : x.sig == 0 ? kStepNoTerm : x.exp;
      t[std::size_t(c)] = {float(decode_f64(g, std::uint8_t(c))), std::int16_t(e)};
    }
    return t;
  };
  static const std::array<StepCode, 256> e4m3 = make(Format::e4m3), e5m2 = make(Format::e5m2);
  return f == Format::e4m3 ? e4m3.data() : e5m2.data();
}

// The step on its 32 products p_k (exact f32 values; lanes past n hold 0 with exponent
// kStepNoTerm + kStepNoTerm) with raw exponents e_k, and C.
// Step 4 for a product: trunc(p_k·2^(13-E)). The scaling is exact in f32 (E >= e_k >= -28, so
// the scale is at most 2^41 and |p_k|·2^(13-E) < 2^15; a result far below 1 may round, but it
// truncates to 0 either way), and the f32 -> int conversion truncates toward zero, sign kept.
// C goes through the integer path: its exponent may lie far below the f32 range of the scale.
// |S| < 33·2^15: int arithmetic is exact. The loops have no branches and vectorise.
inline Bounded wgmma_step_core(const float* p, const std::int16_t* e, float c) {
  constexpr int kF = kHopperFp8FractionBits;
  std::int16_t e_prod = kStepNoTerm + kStepNoTerm;
  int terms = 0;
  for (int k = 0; k < kHopperWgmmaK; ++k) {
    e_prod = std::max(e_prod, e[k]);
    terms += e[k] > kStepNoTermBelow;
  }
  // 1. Specials: a NaN / Inf operand or C. The f64 sum of C and the products is NaN or ±Inf
  // (finite FP8 products cannot overflow), whatever the order: NaN -> 0x7FFFFFFF, ±Inf kept.
  if (e_prod > kStepSpecialAbove || !std::isfinite(c)) {
    double s = double(c);
    for (int k = 0; k < kHopperWgmmaK; ++k) s += double(p[k]);
    return {std::isnan(s) ? std::bit_cast<float>(std::uint32_t{0x7FFFFFFF}) : float(s), 0.0};
  }
  // 2-3. E over the non-zero terms, C included (exponent of its encoding, subnormal at -126).
  const F32Parts cp = f32_parts(c);
  const int ec = cp.exp + 23;
  int e_max = e_prod;
  if (cp.sig != 0) e_max = terms ? std::max(e_max, ec) : ec, ++terms;
  if (terms == 0) return {0.0f, 0.0};
  // 4-5. Align to E, truncate each magnitude to 13 fraction bits, sum exactly. Without a
  // product term the lanes are zeros and any scale in range serves.
  bool inexact = false;
  std::int64_t s = shift_truncate(cp.sig, kF + ec - e_max - 23, inexact);
  const float scale = std::bit_cast<float>(std::uint32_t(127 + kF - std::max(e_max, -64)) << 23);
  int sum = 0, lost = 0;
  for (int k = 0; k < kHopperWgmmaK; ++k) {
    const float x = p[k] * scale;
    const int t = int(x);
    sum += t;
    lost |= float(t) != x;
  }
  s += sum;
  inexact = inexact || lost;
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

[[noreturn]] inline void throw_step_length(int n) {
  throw std::invalid_argument("fp8ref: a wgmma step fuses 0 to 32 products, not " +
                              std::to_string(n));
}

}  // namespace detail

// Decodes n codes into planes (value[n], exp[n]) for the step.
inline void decode_wgmma_planes(Format f, const std::uint8_t* codes, std::int64_t n, float* value,
                                std::int16_t* exp) {
  require_operand_format(f);
  const detail::StepCode* t = detail::step_code_table(f);
  for (std::int64_t k = 0; k < n; ++k) value[k] = t[codes[k]].value, exp[k] = t[codes[k]].exp;
}

// One step on planes (n <= 32 products) with its error bound against the exact value of
// sum(a_k·b_k) + c.
inline Bounded hopper_wgmma_step_bounded(WgmmaPlanes a, WgmmaPlanes b, int n, float c) {
  if (n < 0 || n > kHopperWgmmaK) detail::throw_step_length(n);
  float p[kHopperWgmmaK];
  std::int16_t e[kHopperWgmmaK];
  if (n == kHopperWgmmaK) {
    for (int k = 0; k < kHopperWgmmaK; ++k)
      p[k] = a.value[k] * b.value[k], e[k] = std::int16_t(a.exp[k] + b.exp[k]);
  } else {
    for (int k = 0; k < kHopperWgmmaK; ++k) p[k] = 0.0f, e[k] = kStepNoTerm + kStepNoTerm;
    for (int k = 0; k < n; ++k)
      p[k] = a.value[k] * b.value[k], e[k] = std::int16_t(a.exp[k] + b.exp[k]);
  }
  return detail::wgmma_step_core(p, e, c);
}

// One step on codes, with its error bound against the exact value of sum(a_k·b_k) + c.
inline Bounded hopper_wgmma_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                         Format fa, Format fb, float c) {
  if (n < 0 || n > kHopperWgmmaK) detail::throw_step_length(n);
  require_operand_format(fa);
  require_operand_format(fb);
  const detail::StepCode *ta = detail::step_code_table(fa), *tb = detail::step_code_table(fb);
  float p[kHopperWgmmaK];
  std::int16_t e[kHopperWgmmaK];
  for (int k = 0; k < kHopperWgmmaK; ++k) p[k] = 0.0f, e[k] = kStepNoTerm + kStepNoTerm;
  for (int k = 0; k < n; ++k) {
    const detail::StepCode x = ta[a[k]], y = tb[b[k]];
    p[k] = x.value * y.value, e[k] = std::int16_t(x.exp + y.exp);
  }
  return detail::wgmma_step_core(p, e, c);
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

// The same chain on planes.
inline Bounded hopper_wgmma_chain(WgmmaPlanes a, WgmmaPlanes b, std::int64_t len, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kHopperWgmmaK) {
    const int n = int(std::min<std::int64_t>(kHopperWgmmaK, len - k));
    const Bounded st = hopper_wgmma_step_bounded(a + k, b + k, n, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

// One wgmma instruction m{M}n{N}k32: D (M, N) = A (M, 32) · B (N, 32)ᵀ + C (M, N), row-major, each
// output one step (what MMA-Sim's WGMMA("Hopper", "mMnNk32.f32.<fa>.<fb>") computes; B given as
// its N columns of 32 codes). Every row of A and of B is decoded to planes once. d may alias c.
inline void hopper_wgmma_tile(Format fa, Format fb, int M, int N, const std::uint8_t* a,
                              const std::uint8_t* b, const float* c, float* d) {
  constexpr int K = kHopperWgmmaK;
  std::vector<float> va(std::size_t(M) * K), vb(std::size_t(N) * K);
  std::vector<std::int16_t> ea(va.size()), eb(vb.size());
  decode_wgmma_planes(fa, a, std::int64_t(M) * K, va.data(), ea.data());
  decode_wgmma_planes(fb, b, std::int64_t(N) * K, vb.data(), eb.data());
  for (int i = 0; i < M; ++i) {
    const WgmmaPlanes pa{va.data() + std::size_t(i) * K, ea.data() + std::size_t(i) * K};
    for (int j = 0; j < N; ++j) {
      const WgmmaPlanes pb{vb.data() + std::size_t(j) * K, eb.data() + std::size_t(j) * K};
      const std::size_t o = std::size_t(i) * std::size_t(N) + std::size_t(j);
      d[o] = hopper_wgmma_step_bounded(pa, pb, K, c[o]).z;
    }
  }
}

}  // namespace fp8ref
