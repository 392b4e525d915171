// A model's f32 result with its error bound (Bounded, f32_rounding_bound), and what the
// tensor-core step models share: FP8 values, the special-value result of a step, truncating
// shifts. Part of the accumulation models (numerics/models.h, docs/design.md §10).
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
#include "numerics/models/exact_sum.h"

namespace fp8ref {

// A model's f32 result with a rigorous bound on |z - exact| (exact: the real-number value the
// model approximates). Bounds are evaluated in f64 and inflated by kBoundSlack to cover the
// f64 rounding of the bound arithmetic itself (all terms non-negative, < 2^20 operations).
struct Bounded {
  float z;
  double bound;
};
inline constexpr double kBoundSlack = 1.0 + 0x1p-20;

// The models' f32 operations with a defined NaN result. x86 returns the first NaN operand of the
// *instruction* (quieted), and a compiler may swap the operands of an add or pick any FMA form, so
// where two different NaNs meet (a NaN code's NaN and the default NaN of Inf - Inf) the bits
// would depend on the compiler. Here a NaN result is the first NaN operand in the order written,
// quieted, and with no NaN operand (Inf - Inf, 0·Inf) the x86 default NaN 0xFFC00000: what the GPU
// oracle computes (gpu/oracle/emu_arith.h), on any compiler (docs/gpu_oracle.md §2).
inline float nan_in_order(float a, float b, float c) {
  for (float x : {a, b, c})
    if (std::isnan(x)) return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) | 0x00400000u);
  return std::bit_cast<float>(std::uint32_t{0xFFC00000u});
}
inline float add_f32(float a, float b) {
  const float r = a + b;
  return std::isnan(r) ? nan_in_order(a, b, 0.0f) : r;
}
inline float fma_f32(float a, float b, float c) {
  const float r = std::fmaf(a, b, c);
  return std::isnan(r) ? nan_in_order(a, b, c) : r;
}

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

// ---- f32 helpers shared by the models --------------------------------------------------------

// Bound on |RN_f32(x) - x| given the rounded result: half an ulp, <= 2^-24·|r| for normal
// results and 2^-150 below 2^-126.
inline double f32_rounding_bound(float r) { return std::fabs(double(r)) * 0x1p-24 + 0x1p-150; }

}  // namespace fp8ref
