// The Hopper wgmma FP8 step model `hopper_wgmma_step` and its chains (docs/design.md §10, entry
// point numerics/models.h), on codes and on decoded planes, each with a running per-element error
// bound against the exact result.
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
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"
#include "numerics/plant.h"

// The planes paths (chains, instructions) also come as a copy compiled for AVX2 on x86-64, chosen
// at run time: the same operations on wider vectors, so the same bits (ISO mode contracts no
// multiply-add and the target has no FMA); the tests run both copies.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8REF_STEP_HAS_AVX2 1
#define FP8REF_TARGET_AVX2 __attribute__((target("avx2")))
#define FP8REF_TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512dq")))
#else
#define FP8REF_STEP_HAS_AVX2 0
#define FP8REF_TARGET_AVX2
#define FP8REF_TARGET_AVX512
#endif
#define FP8REF_ALWAYS_INLINE inline __attribute__((always_inline))

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
// kStepNoTerm + kStepNoTerm) with raw exponents e_k, and C; the bound only when kBound.
// Step 4 for a term: trunc(x·2^(13-E)). With a product term E >= -28, so the scale is at most
// 2^41 and the scaling is exact in f32 for the products and for C (|x|·2^(13-E) < 2^15; a result
// far below 1 may round, but it truncates to 0 either way); the f32 -> int conversion truncates
// toward zero, sign kept, and |S| < 2^21 makes the int sum exact. C alone (no product term) may
// lie below the f32 range of the scale: its term is shifted as an integer. Step 6: float(S) is
// exact, clearing its 10 low significand bits truncates it to 14 significant bits, and the
// power-of-two scaling in f64 and the conversion to f32 are exact (multiples of 2^-139 below
// 2^-126), but overflow to ±Inf from a leading exponent above 127. No branch on the data but
// the rare specials and C-alone cases; the loops vectorise.
template <bool kBound>
FP8REF_ALWAYS_INLINE Bounded wgmma_step_core(const float* p, const std::int16_t* e, float c) {
  constexpr int kF = kHopperFp8FractionBits;
  std::int16_t e_prod = kStepNoTerm + kStepNoTerm;
  for (int k = 0; k < kHopperWgmmaK; ++k) e_prod = std::max(e_prod, e[k]);
  // 1. Specials: a NaN / Inf operand or C. The f64 sum of C and the products is NaN or ±Inf
  // (finite FP8 products cannot overflow), whatever the order: NaN -> 0x7FFFFFFF, ±Inf kept.
  if (e_prod > kStepSpecialAbove || !std::isfinite(c)) {
    double s = double(c);
    for (int k = 0; k < kHopperWgmmaK; ++k) s += double(p[k]);
    return {std::isnan(s) ? std::bit_cast<float>(std::uint32_t{0x7FFFFFFF}) : float(s), 0.0};
  }
  // 2-3. E over the non-zero terms, C included (exponent of its encoding, subnormal at -126).
  const std::uint32_t cu = std::bit_cast<std::uint32_t>(c);
  const bool c_term = (cu & 0x7FFFFFFFu) != 0;
  const int field = int(cu >> 23 & 0xFF), ec = (field ? field : 1) - 127;
  const bool product_term = e_prod > kStepNoTermBelow;
  if (!product_term && !c_term) return {0.0f, 0.0};
  const int e_max = product_term ? (c_term ? std::max<int>(e_prod, ec) : e_prod) : ec;
  // 4-5. Align to E, truncate each magnitude to 13 fraction bits below it, sum exactly.
  std::int32_t s = 0;
  bool inexact = false;
  if (product_term) {
    const float scale = std::bit_cast<float>(std::uint32_t(127 + kF - e_max) << 23);
    int lost = 0;
    for (int k = 0; k < kHopperWgmmaK; ++k) {
      const float x = p[k] * scale;
      const int t = int(x);
      s += t;
      if constexpr (kBound) lost |= float(t) != x;
    }
    const float xc = c * scale;
    s += int(xc);
    inexact = lost || float(int(xc)) != xc;
  } else {
    const std::int32_t mag = std::int32_t(cu & 0x7FFFFF) | (field ? 0x800000 : 0);
    s = (cu >> 31) ? -(mag >> 10) : mag >> 10;  // E = ec: C's significand keeps 13 fraction bits
    inexact = (mag & 0x3FF) != 0;
  }
  // 6. Normalise and truncate to 14 significant bits (value = s·2^(e_max - 13)).
#ifdef FP8REF_PLANT_HOOKS
  const std::uint32_t keep = FP8REF_PLANTED(wgmma_keeps_14_bits) ? 0xFFFFFE00u : 0xFFFFFC00u;
#else
  constexpr std::uint32_t keep = 0xFFFFFC00u;
#endif
  const float t14 = std::bit_cast<float>(std::bit_cast<std::uint32_t>(float(s)) & keep);
  const float z = float(double(t14) * exp2i(e_max - kF));
  if constexpr (!kBound) {
    return {z, 0.0};
  } else {
    int terms = c_term;
    for (int k = 0; k < kHopperWgmmaK; ++k) terms += e[k] > kStepNoTermBelow;
    const double term_bound = inexact ? terms * exp2i(e_max - kF) : 0.0;
    return {z, (term_bound + std::fabs(double(z)) * exp2i(-kF)) * kBoundSlack};
  }
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

namespace detail {

template <bool kBound>
FP8REF_ALWAYS_INLINE Bounded step_on_planes(WgmmaPlanes a, WgmmaPlanes b, int n, float c) {
  if (n < 0 || n > kHopperWgmmaK) throw_step_length(n);
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
  return wgmma_step_core<kBound>(p, e, c);
}

template <bool kBound>
Bounded step_on_codes(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb,
                      float c) {
  if (n < 0 || n > kHopperWgmmaK) throw_step_length(n);
  require_operand_format(fa);
  require_operand_format(fb);
  const StepCode *ta = step_code_table(fa), *tb = step_code_table(fb);
  float p[kHopperWgmmaK];
  std::int16_t e[kHopperWgmmaK];
  for (int k = 0; k < kHopperWgmmaK; ++k) p[k] = 0.0f, e[k] = kStepNoTerm + kStepNoTerm;
  for (int k = 0; k < n; ++k) {
    const StepCode x = ta[a[k]], y = tb[b[k]];
    p[k] = x.value * y.value, e[k] = std::int16_t(x.exp + y.exp);
  }
  return wgmma_step_core<kBound>(p, e, c);
}

}  // namespace detail

// One step on planes (n <= 32 products) with its error bound against the exact value of
// sum(a_k·b_k) + c.
inline Bounded hopper_wgmma_step_bounded(WgmmaPlanes a, WgmmaPlanes b, int n, float c) {
  return detail::step_on_planes<true>(a, b, n, c);
}

// One step on codes, with its error bound against the exact value of sum(a_k·b_k) + c.
inline Bounded hopper_wgmma_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                         Format fa, Format fb, float c) {
  return detail::step_on_codes<true>(a, b, n, fa, fb, c);
}

// The model of one H100 wgmma FP8 step: D = sum_{k<n} a_k·b_k + c (n = 32 for the hardware).
inline float hopper_wgmma_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                               Format fb, float c) {
  return detail::step_on_codes<false>(a, b, n, fa, fb, c).z;
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

// Instruction sets of the planes paths: `baseline` (the compiler's target) everywhere, `avx2` and
// `avx512` on x86-64 processors that have them. Same bits.
enum class StepIsa : std::uint8_t { baseline, avx2, avx512 };
constexpr const char* to_string(StepIsa isa) {
  return isa == StepIsa::avx512 ? "avx512" : isa == StepIsa::avx2 ? "avx2" : "baseline";
}
inline bool step_isa_available(StepIsa isa) {
#if FP8REF_STEP_HAS_AVX2
  static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  static const bool avx512 =
      avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return isa == StepIsa::baseline || (isa == StepIsa::avx2 && avx2) ||
         (isa == StepIsa::avx512 && avx512);
#else
  return isa == StepIsa::baseline;
#endif
}
inline StepIsa best_step_isa() {
  return step_isa_available(StepIsa::avx512) ? StepIsa::avx512
         : step_isa_available(StepIsa::avx2) ? StepIsa::avx2
                                             : StepIsa::baseline;
}

namespace detail {

FP8REF_ALWAYS_INLINE Bounded chain_on_planes(WgmmaPlanes a, WgmmaPlanes b, std::int64_t len,
                                             Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kHopperWgmmaK) {
    const int n = int(std::min<std::int64_t>(kHopperWgmmaK, len - k));
    const Bounded st = step_on_planes<true>(a + k, b + k, n, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}
FP8REF_TARGET_AVX2 inline Bounded chain_on_planes_avx2(WgmmaPlanes a, WgmmaPlanes b,
                                                       std::int64_t len, Bounded c) {
  return chain_on_planes(a, b, len, c);
}
FP8REF_TARGET_AVX512 inline Bounded chain_on_planes_avx512(WgmmaPlanes a, WgmmaPlanes b,
                                                           std::int64_t len, Bounded c) {
  return chain_on_planes(a, b, len, c);
}

inline void require_isa(StepIsa isa) {
  if (!step_isa_available(isa))
    throw std::invalid_argument(std::string("fp8ref: this processor cannot run the ") +
                                to_string(isa) + " copy of the wgmma step");
}

}  // namespace detail

// The same chain on planes, on the instruction set `isa`.
inline Bounded hopper_wgmma_chain(WgmmaPlanes a, WgmmaPlanes b, std::int64_t len, Bounded c,
                                  StepIsa isa = best_step_isa()) {
  detail::require_isa(isa);
  switch (isa) {
    case StepIsa::avx512: return detail::chain_on_planes_avx512(a, b, len, c);
    case StepIsa::avx2: return detail::chain_on_planes_avx2(a, b, len, c);
    case StepIsa::baseline: break;
  }
  return detail::chain_on_planes(a, b, len, c);
}

}  // namespace fp8ref
