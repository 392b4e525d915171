// The inputs of a sweep: every bit pattern of a 16/32-bit source type in order (index = pattern),
// or N class-weighted f64 samples (f64 has 2^64 patterns). Samples are counter-based (input i
// depends only on seed and i), so any thread can draw any input and a run is reproducible.
// Classes follow docs/design.md §14: ties, f32 midpoints (double rounding), exact codes, specials.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "cases/input_classes.h"
#include "numerics/format.h"

namespace fp8ref::cli {

// The sample classes and the counter-based draw: tools/cases/input_classes_sweep.h (one of the
// class-weighted input sets of cases/input_classes.h).
using cases::draw_f64_sample;
using cases::kSampleClassCount;
using cases::SampleClass;
using cases::SampleDraw;

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
