// The inputs of a sweep: every bit pattern of a 16/32-bit source type in order (index = pattern),
// or N class-weighted f64 samples (f64 has 2^64 patterns). Samples are counter-based (input i
// depends only on seed and i), so any thread can draw any input and a run is reproducible.
// Classes follow docs/design.md §20: ties, f32 midpoints (double rounding), exact codes, specials.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "numerics/format.h"

namespace fp8ref::cli {

enum class SampleClass : std::uint8_t {
  random_bits,   // any 64-bit pattern: NaN payloads, huge, tiny
  in_range,      // random sign, exponent in the format's range (+margin), random 52-bit fraction
  f32_midpoint,  // halfway between adjacent f32 values, +-0/1 ulp/small: the f64->f32->fp8 trap
  fp8_tie,       // halfway between adjacent codes (max..overflow included), exact or +-2^-40 rel.
  fp8_exact,     // a code's value, exact or +-1 ulp / 2^-40 relative
  special,       // +-0, +-Inf, NaNs, overflow thresholds, f32/f64 limits, f32 subnormal edges
};
inline constexpr int kSampleClassCount = 6;
std::string_view to_string(SampleClass c);

struct SampleDraw {
  std::uint64_t f64_bits;
  SampleClass cls;
};

// Input i of the sample stream `seed` for a sweep into `format`.
SampleDraw draw_f64_sample(Format format, std::uint64_t seed, std::uint64_t i);

struct SweepDomain {
  Source source;
  Format format;
  std::uint64_t count;   // inputs 0..count-1
  bool sampled = false;  // false: input i is the pattern i
  std::uint64_t seed = 0;

  std::uint64_t input(std::uint64_t i) const {
    return sampled ? draw_f64_sample(format, seed, i).f64_bits : i;
  }
};

using SampleClassCounts = std::array<std::uint64_t, kSampleClassCount>;

}  // namespace fp8ref::cli
