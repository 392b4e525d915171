// The class-weighted f32 inputs of the codec golden tables (`fp8-check golden gen-codec`,
// docs/design.md §14): a fixed list of specials, then seeded SplitMix64 draws over nine classes
// aimed at each format's decision points (TestFloat genCases: ties, subnormal boundaries, max±ulp,
// overflow, NaN/Inf, ±0), built from the format's own value line (decode_f64 of all 256 codes).
// The draw order is pinned: golden/numerics/ holds tables generated from it (golden verify
// regenerates them byte for byte), so the classes and weights here change only with new golden
// files. Part of the one set of class-weighted inputs (cases/input_classes.h).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "cases/split_mix64.h"
#include "numerics/codec.h"
#include "numerics/format.h"

namespace fp8ref::cases {

enum class F32InputClass : std::uint8_t {
  special,      // ±0, ±Inf, NaNs, f32 subnormal / min normal / max, format max and min subnormal
  exact,        // a finite value of the format (any rounding must return its code)
  near_exact,   // exact ± 1..3 f32 ulps (sticky bits only)
  tie,          // midpoint of two adjacent format values, incl. max + ulp/2 (the overflow edge)
  near_tie,     // tie ± 1..3 f32 ulps
  subnormal,    // |x| below twice the format's smallest normal (or 2^-120 for e8m0)
  overflow,     // |x| in (max, f32 max]
  in_range,     // log-uniform over the format's binades, random f32 fraction
  random_bits,  // uniform 32-bit patterns
};
inline constexpr int kF32InputClassCount = 9;
constexpr const char* to_string(F32InputClass c) {
  constexpr const char* kNames[kF32InputClassCount] = {"special",  "exact",    "near_exact",
                                                       "tie",      "near_tie", "subnormal",
                                                       "overflow", "in_range", "random_bits"};
  return kNames[static_cast<int>(c)];
}

struct F32Input {
  std::uint32_t bits;
  F32InputClass cls;
};

namespace f32_input_detail {

inline constexpr std::uint32_t kSign = 0x80000000u;
inline constexpr std::uint32_t kF32Inf = 0x7f800000u;

inline std::uint32_t f32_bits(double exact) {
  const float f = static_cast<float>(exact);
  if (static_cast<double>(f) != exact)
    throw std::logic_error("f32 codec inputs: value not exact in f32");
  return std::bit_cast<std::uint32_t>(f);
}

// The format's value line: sorted non-negative finite magnitudes, plus the midpoints between
// neighbours and the midpoint between max and the next (virtual) value of max's binade.
struct ValueLine {
  std::vector<std::uint32_t> values;  // f32 bits of each magnitude
  std::vector<std::uint32_t> ties;
  double max = 0, min_subnormal = 0, min_normal = 0;
};

inline ValueLine value_line(Format format) {
  std::vector<double> mags;
  for (int c = 0; c < 256; ++c) {
    const double v = decode_f64(format, static_cast<std::uint8_t>(c));
    if (std::isfinite(v) && !std::signbit(v)) mags.push_back(v);
  }
  std::sort(mags.begin(), mags.end());
  mags.erase(std::unique(mags.begin(), mags.end()), mags.end());
  ValueLine line;
  for (std::size_t i = 0; i < mags.size(); ++i) {
    line.values.push_back(f32_bits(mags[i]));
    const double next = i + 1 < mags.size() ? mags[i + 1] : 2 * mags[i] - mags[i - 1];
    line.ties.push_back(f32_bits((mags[i] + next) / 2));
  }
  line.max = mags.back();
  line.min_subnormal = mags[0] > 0 ? mags[0] : mags[1];
  // e8m0 has no subnormals: its smallest value 2^-127 plays both parts.
  line.min_normal = format == Format::e8m0
                        ? mags[0]
                        : std::ldexp(1.0, format == Format::e4m3 ? E4m3Traits::kMinNormalExp
                                                                 : E5m2Traits::kMinNormalExp);
  return line;
}

inline std::uint32_t step_ulps(std::uint32_t mag, int ulps) {
  const std::int64_t m = std::int64_t{mag} + ulps;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(m, 0, kF32Inf - 1));
}

inline std::vector<std::uint32_t> special_inputs(const ValueLine& line) {
  std::vector<std::uint32_t> mags = {0,
                                     kF32Inf,
                                     0x7fc00000u,
                                     0x7f800001u,
                                     0x7fffffffu,
                                     0x7fa00000u,  // ±0, ±Inf, qNaN, sNaNs, payloads
                                     1,
                                     0x007fffffu,
                                     0x00800000u,
                                     0x7f7fffffu,  // f32 subnormal edges, min normal, max
                                     f32_bits(line.max),
                                     line.ties.back(),
                                     step_ulps(line.ties.back(), -1),
                                     step_ulps(line.ties.back(), 1),
                                     f32_bits(line.min_subnormal),
                                     f32_bits(line.min_subnormal / 2),
                                     step_ulps(f32_bits(line.min_subnormal / 2), 1),
                                     step_ulps(f32_bits(line.min_subnormal / 2), -1),
                                     f32_bits(line.min_normal),
                                     step_ulps(f32_bits(line.min_normal), -1)};
  std::vector<std::uint32_t> out;
  for (std::uint32_t m : mags) out.insert(out.end(), {m, m | kSign});
  return out;
}

// One weighted draw (weights in the table below); returns the magnitude or full pattern.
inline std::uint32_t draw(F32InputClass c, const ValueLine& line,
                          const std::vector<std::uint32_t>& specials, SplitMix64& rng) {
  const std::uint32_t sign = (rng.next() & 1) ? kSign : 0;
  const int jitter = static_cast<int>(rng.below(3)) + 1;
  const auto pick = [&](const std::vector<std::uint32_t>& v) { return v[rng.below(v.size())]; };
  switch (c) {
    case F32InputClass::special: return pick(specials);
    case F32InputClass::exact: return sign | pick(line.values);
    case F32InputClass::near_exact:
      return sign | step_ulps(pick(line.values), (rng.next() & 1) ? jitter : -jitter);
    case F32InputClass::tie: return sign | pick(line.ties);
    case F32InputClass::near_tie:
      return sign | step_ulps(pick(line.ties), (rng.next() & 1) ? jitter : -jitter);
    case F32InputClass::subnormal: {
      const std::uint32_t top =
          line.min_normal < 0x1p-120 ? f32_bits(0x1p-120) : f32_bits(2 * line.min_normal);
      return sign | static_cast<std::uint32_t>(rng.below(top));
    }
    case F32InputClass::overflow: {
      const std::uint32_t lo = f32_bits(line.max) + 1;
      return sign | (lo + static_cast<std::uint32_t>(rng.below(kF32Inf - lo)));
    }
    case F32InputClass::in_range: {
      const int lo = std::ilogb(line.min_subnormal) - 1,
                hi = std::min(std::ilogb(line.max) + 1, 127);
      const int e = lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
      const std::uint32_t frac = static_cast<std::uint32_t>(rng.next()) & 0x007fffffu;
      return sign | (f32_bits(std::ldexp(1.0, e)) +
                     frac);  // same binade: adding the fraction bits is exact
    }
    case F32InputClass::random_bits: return static_cast<std::uint32_t>(rng.next());
  }
  return 0;
}

// Draw weights per class (special is the fixed list, drawn again only rarely).
inline constexpr std::array<int, kF32InputClassCount> kWeight = {2, 14, 10, 16, 16, 10, 10, 12, 10};

}  // namespace f32_input_detail

// `count` distinct f32 patterns for `format`: the fixed special list first, then weighted seeded
// draws. Identical for every profile, so tables of one format align line by line.
inline std::vector<F32Input> f32_codec_inputs(Format format, std::uint64_t seed,
                                              std::size_t count) {
  using namespace f32_input_detail;
  const ValueLine line = value_line(format);
  const std::vector<std::uint32_t> specials = special_inputs(line);
  std::vector<F32Input> out;
  std::unordered_set<std::uint32_t> seen;
  for (std::uint32_t s : specials) {
    if (out.size() < count && seen.insert(s).second) out.push_back({s, F32InputClass::special});
  }
  SplitMix64 rng{seed};
  for (std::size_t tries = 0; out.size() < count && tries < 100 * count; ++tries) {
    const int c = weighted_index(f32_input_detail::kWeight, rng);
    const std::uint32_t bits = draw(static_cast<F32InputClass>(c), line, specials, rng);
    if (seen.insert(bits).second) out.push_back({bits, static_cast<F32InputClass>(c)});
  }
  return out;
}

}  // namespace fp8ref::cases
