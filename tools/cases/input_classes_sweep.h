// The class-weighted f64 samples of `fp8-check sweep --samples` (docs/design.md §14; f64 has
// 2^64 patterns): six classes, ties and f32 midpoints (double rounding) weighted most, since that
// is where codecs go wrong. Counter-based: input i depends only on the seed and i, so any thread
// draws any input and a run is reproducible; a sweep's report (class counts, mismatches) depends
// on this exact draw order, so it is pinned like the golden tables. Values are built from bit
// patterns and exactly computed f64 midpoints; the codes' values come from decode_f64, which is
// exact. Part of the one set of class-weighted inputs (cases/input_classes.h).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "cases/split_mix64.h"
#include "numerics/codec.h"
#include "numerics/format.h"

namespace fp8ref::cases {

enum class SampleClass : std::uint8_t {
  random_bits,   // any 64-bit pattern: NaN payloads, huge, tiny
  in_range,      // random sign, exponent in the format's range (+margin), random 52-bit fraction
  f32_midpoint,  // halfway between adjacent f32 values, +-0/1 ulp/small: the f64->f32->fp8 trap
  fp8_tie,       // halfway between adjacent codes (max..overflow included), exact or +-2^-40 rel.
  fp8_exact,     // a code's value, exact or +-1 ulp / 2^-40 relative
  special,       // +-0, +-Inf, NaNs, overflow thresholds, f32/f64 limits, f32 subnormal edges
};
inline constexpr int kSampleClassCount = 6;
constexpr std::string_view to_string(SampleClass c) {
  switch (c) {
    case SampleClass::random_bits: return "random_bits";
    case SampleClass::in_range: return "in_range";
    case SampleClass::f32_midpoint: return "f32_midpoint";
    case SampleClass::fp8_tie: return "fp8_tie";
    case SampleClass::fp8_exact: return "fp8_exact";
    case SampleClass::special: return "special";
  }
  return "?";
}

struct SampleDraw {
  std::uint64_t f64_bits;
  SampleClass cls;
};

namespace sample_detail {

// Weights out of 64: ties and f32 midpoints dominate, since that is where codecs go wrong.
inline constexpr std::array<int, kSampleClassCount> kWeights = {6, 12, 16, 18, 8, 4};

inline constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;

inline double from_bits(std::uint64_t b) { return std::bit_cast<double>(b); }
inline std::uint64_t to_bits(double d) { return std::bit_cast<std::uint64_t>(d); }

// Exponent range of the values that matter for `format`, with a margin on both sides.
inline void exponent_range(Format f, int& lo, int& hi) {
  switch (f) {
    case Format::e4m3: lo = -13, hi = 10; break;
    case Format::e5m2: lo = -20, hi = 17; break;
    case Format::e8m0: lo = -152, hi = 129; break;  // down to f32 subnormals, up past 2^127
    case Format::e2m1: lo = -4, hi = 5; break;      // 0.5 .. 6
    case Format::e2m3: lo = -6, hi = 5; break;      // 2^-3 .. 7.5
    case Format::e3m2: lo = -7, hi = 7; break;      // 2^-4 .. 28
    case Format::ue4m3: lo = -13, hi = 10; break;
  }
}

// Largest finite code of a format, and the value one step above it in the top binade (used as
// the "next value" when forming the overflow tie: 448 -> 480 (tie 464), 57344 -> 65536 (61440)).
inline std::uint8_t max_code(Format f) {
  switch (f) {
    case Format::e4m3: return E4m3Traits::kMaxFinite;
    case Format::e5m2: return E5m2Traits::kMaxFinite;
    case Format::e8m0: return E8m0Traits::kMaxFinite;
    case Format::e2m1: return E2m1Traits::kMaxFinite;
    case Format::e2m3: return E2m3Traits::kMaxFinite;
    case Format::e3m2: return E3m2Traits::kMaxFinite;
    case Format::ue4m3: return Ue4m3Traits::kMaxFinite;
  }
  return 0;
}

inline double next_code_value(Format f, std::uint8_t c) {
  if (c < max_code(f)) return decode_f64(f, static_cast<std::uint8_t>(c + 1));
  if (f == Format::e8m0) return 2 * decode_f64(f, c);
  return 2 * decode_f64(f, c) - decode_f64(f, static_cast<std::uint8_t>(c - 1));
}

// x moved by a small amount: exact, +-1 f64 ulp, +-2^-40 relative, +-2^-24 relative.
inline double perturb(double x, SplitMix64& rng) {
  switch (rng.below(7)) {
    case 0: return x;
    case 1: return from_bits(to_bits(x) + 1);
    case 2: return x == 0 ? x : from_bits(to_bits(x) - 1);
    case 3: return x * (1 + std::ldexp(1.0, -40));
    case 4: return x * (1 - std::ldexp(1.0, -40));
    case 5: return x * (1 + std::ldexp(1.0, -24));
    default: return x * (1 - std::ldexp(1.0, -24));
  }
}

inline std::uint64_t draw_in_range(Format f, SplitMix64& rng) {
  int lo = 0, hi = 0;
  exponent_range(f, lo, hi);
  const int e = lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
  const std::uint64_t frac = rng.next() & ((std::uint64_t{1} << 52) - 1);
  return (rng.next() & kSignBit) | (std::uint64_t(e + 1023) << 52) | frac;
}

inline std::uint64_t draw_f32_midpoint(Format f, SplitMix64& rng) {
  int lo = 0, hi = 0;
  exponent_range(f, lo, hi);
  // A random f32 magnitude in range (f32 subnormals when e < -126), then its successor.
  const int e = lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
  const auto man = static_cast<std::uint32_t>(rng.next() & 0x7FFFFF);
  std::uint32_t x =
      e < -126 ? (man >> std::min(23, -126 - e)) : (std::uint32_t(e + 127) << 23) | man;
  if (x >= 0x7F7FFFFF) x = 0x7F7FFFFE;
  const double a = std::bit_cast<float>(x);
  const double b = std::bit_cast<float>(x + 1);
  const double mid = (a + b) / 2;  // exact: both have <= 24 significant bits
  const std::uint64_t m = to_bits(mid);
  // +-0, +-1, +-k f64 ulps (k < 2^20, still far below an f32 ulp)
  const std::uint64_t k = rng.below(3) == 0 ? 0 : (rng.below(2) ? 1 : rng.below(1 << 20));
  const std::uint64_t moved = rng.below(2) ? m + k : m - k;
  return (rng.next() & kSignBit) | moved;
}

inline std::uint64_t draw_fp8_value(Format f, SplitMix64& rng, bool tie) {
  const auto c = static_cast<std::uint8_t>(rng.below(std::uint64_t{max_code(f)} + 1));
  const double a = decode_f64(f, c);
  const double x = tie ? (a + next_code_value(f, c)) / 2 : a;  // exact midpoint
  const std::uint64_t sign = f == Format::e8m0 && rng.below(4) != 0 ? 0 : (rng.next() & kSignBit);
  return sign | to_bits(perturb(x, rng));
}

inline std::uint64_t draw_special(SplitMix64& rng) {
  static constexpr std::uint64_t kFixed[] = {
      0x0000000000000000ULL,  // 0
      0x7FF0000000000000ULL,  // Inf
      0x7FF8000000000000ULL,  // quiet NaN
      0x7FF0000000000001ULL,  // signalling NaN, lowest payload
      0x7FFC000000000000ULL,  // quiet NaN, payload in the top bits (CUDA's f64 e5m2 NaN)
      0x7FF4000000000000ULL,  // signalling NaN, payload in the top bits
      0x7FEFFFFFFFFFFFFFULL,  // f64 max
      0x0000000000000001ULL,  // f64 min subnormal
      0x47EFFFFFE0000000ULL,  // f32 max
      0x47EFFFFFF0000000ULL,  // f32 max + 1/2 f32 ulp: rounds to Inf in f32
      0x3810000000000000ULL,  // 2^-126, f32 min normal
      0x3800000000000000ULL,  // 2^-127, e8m0 min
      0x36A0000000000000ULL,  // 2^-149, f32 min subnormal
      0x3690000000000000ULL,  // 2^-150, half of it (f32 RNE -> 0)
      0x3800A3D70A3D70A4ULL,  // 1.01 * 2^-127 (f32 subnormal region, e8m0 field rounding)
      0x3FF8000000000000ULL,  // 1.5: e8m0 tie
  };
  static constexpr double kThresholds[] = {448, 464, 480, 57344, 61440, 65536, 240, 0.75, 3};
  const std::uint64_t sign = rng.next() & kSignBit;
  const std::uint64_t pick = rng.below(std::size(kFixed) + std::size(kThresholds));
  if (pick < std::size(kFixed)) {
    std::uint64_t b = kFixed[pick];
    if ((b & ~kSignBit) > 0x7FF0000000000000ULL && rng.below(2))
      b |= rng.next() & 0x0003FFFFFFFFFFFFULL;  // random low payload bits
    return sign | b;
  }
  return sign | to_bits(perturb(kThresholds[pick - std::size(kFixed)], rng));
}

}  // namespace sample_detail

// Input i of the sample stream `seed` for a sweep into `format`.
inline SampleDraw draw_f64_sample(Format format, std::uint64_t seed, std::uint64_t i) {
  // Start each input's stream at a scrambled point, so that neighbouring inputs do not share
  // draws (consecutive counters would: state + k * golden).
  SplitMix64 rng{SplitMix64{seed ^ (i * 0xD1B54A32D192ED03ULL)}.next()};
  using namespace sample_detail;
  const auto c = static_cast<SampleClass>(weighted_index(kWeights, rng));
  switch (c) {
    case SampleClass::random_bits: return {rng.next(), c};
    case SampleClass::in_range: return {draw_in_range(format, rng), c};
    case SampleClass::f32_midpoint: return {draw_f32_midpoint(format, rng), c};
    case SampleClass::fp8_tie: return {draw_fp8_value(format, rng, true), c};
    case SampleClass::fp8_exact: return {draw_fp8_value(format, rng, false), c};
    case SampleClass::special: return {draw_special(rng), c};
  }
  return {0, c};
}

}  // namespace fp8ref::cases
