// The class-weighted inputs (docs/design.md §14, TestFloat's exponent-class x significand-pattern
// idea): each class aims at one rounding hazard, every draw comes from SplitMix64 (a set replays
// from its seed) and a class is drawn by weighted_index. One home, three sets, one per domain:
// - here: f64 inputs of the FP8 / E8M0 encode properties (proptests/numerics/codec/), candidate
//   values from the table oracle's value table, never from the codec under test;
// - input_classes_f32.h: the f32 inputs of the codec golden tables (`fp8-check golden gen-codec`);
// - input_classes_sweep.h: the counter-based f64 samples of `fp8-check sweep --samples`.
// The last two keep their own classes and draw order because their outputs are pinned (golden
// files, reproducible sweep reports); merging the sets would regenerate every golden table.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "cases/input_classes_f32.h"
#include "cases/input_classes_sweep.h"
#include "cases/split_mix64.h"
#include "numerics/format.h"
#include "numerics/oracle/table_oracle.h"

namespace fp8ref::cases {

enum class InputClass : std::uint8_t {
  exact_code,          // the value of a code
  tie,                 // midpoint of adjacent codes, every binade incl. subnormals
  tie_ulp,             // midpoint +- 1 f64 ulp
  max_ulp,             // max finite +- a few f64 ulps
  overflow_boundary,   // around max..V: 464 / 480 (e4m3), 61440 / 65536 (e5m2), 1.5*2^127 / 2^128
  min_subnormal_half,  // min subnormal / 2 and around the smallest codes
  subnormal_normal,  // largest subnormal, min normal, their midpoint (e8m0: the f32 one at 2^-126)
  signed_zero,       // +0, -0
  nan,               // NaN, any sign and payload (quiet and signalling)
  inf,               // +-Inf
  huge,              // far past the format: up to the f64 max
  tiny,              // far below the smallest code, incl. f64 subnormals
  random,            // random sign, exponent across the format's range, random significand
};

inline constexpr InputClass kAllInputClasses[] = {InputClass::exact_code,
                                                  InputClass::tie,
                                                  InputClass::tie_ulp,
                                                  InputClass::max_ulp,
                                                  InputClass::overflow_boundary,
                                                  InputClass::min_subnormal_half,
                                                  InputClass::subnormal_normal,
                                                  InputClass::signed_zero,
                                                  InputClass::nan,
                                                  InputClass::inf,
                                                  InputClass::huge,
                                                  InputClass::tiny,
                                                  InputClass::random};

constexpr std::string_view to_string(InputClass c) {
  constexpr std::string_view names[] = {"exact_code",
                                        "tie",
                                        "tie_ulp",
                                        "max_ulp",
                                        "overflow_boundary",
                                        "min_subnormal_half",
                                        "subnormal_normal",
                                        "signed_zero",
                                        "nan",
                                        "inf",
                                        "huge",
                                        "tiny",
                                        "random"};
  return names[static_cast<int>(c)];
}

inline std::uint64_t bits_of(double x) { return std::bit_cast<std::uint64_t>(x); }

// Positive finite f64 bits moved by `ulps` units in the last place (never crosses zero).
inline std::uint64_t ulp_step(std::uint64_t bits, std::int64_t ulps) {
  return std::uint64_t(std::int64_t(bits) + ulps);
}

namespace input_detail {

constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
constexpr std::uint64_t kInf = 0x7FF0000000000000ULL;
constexpr std::uint64_t kMaxFinite = 0x7FEFFFFFFFFFFFFFULL;

inline std::uint64_t any_nan(SplitMix64& r) {
  std::uint64_t frac = r.next() & ((std::uint64_t{1} << 52) - 1);
  if (r.below(4) == 0) frac = std::uint64_t{1} << 51;      // the canonical quiet NaN
  if (r.below(4) == 0) frac &= ~(std::uint64_t{1} << 51);  // signalling
  if (frac == 0) frac = 1;
  return kInf | frac;
}

inline std::uint64_t near(std::uint64_t bits, SplitMix64& r) {  // bits, or +-1 / +-few ulps
  switch (r.below(4)) {
    case 0: return bits;
    case 1: return ulp_step(bits, 1);
    case 2: return ulp_step(bits, -1);
    default: return ulp_step(bits, std::int64_t(r.in(0, 1u << 20)) - (1 << 19));
  }
}

}  // namespace input_detail

// A non-negative magnitude's f64 bits in class `c` for a value table t (a format's finite
// magnitudes, t.value[t.count] = the first value past max); the caller adds a random sign.
// `first_normal` is the index of the smallest normal (e4m3 8, e5m2 4; e8m0 1: f32's 2^-126).
inline std::uint64_t draw_magnitude(const oracle::table_detail::MagnitudeTable& t, bool e8m0,
                                    int first_normal, InputClass c, SplitMix64& r) {
  using namespace input_detail;
  const int n = t.count;  // value[0..n-1] finite, value[n] = V
  const double max = t.value[n - 1], v = t.value[n];
  const double min_code = e8m0 ? t.value[0] : t.value[1];  // smallest non-zero
  auto tie = [&](int i) { return bits_of(t.midpoint[i]); };
  switch (c) {
    case InputClass::exact_code: return bits_of(t.value[r.below(std::uint64_t(n))]);
    case InputClass::tie: return tie(int(r.below(std::uint64_t(n))));
    case InputClass::tie_ulp:
      return ulp_step(tie(int(r.below(std::uint64_t(n)))), r.below(2) ? 1 : -1);
    case InputClass::max_ulp: return near(bits_of(max), r);
    case InputClass::overflow_boundary:
      switch (r.below(3)) {
        case 0: return near(tie(n - 1), r);  // 464, 61440, 1.5 * 2^127
        case 1: return near(bits_of(v), r);  // 480, 65536, 2^128
        default: return r.in(bits_of(max), bits_of(2 * v));
      }
    case InputClass::min_subnormal_half:
      switch (r.below(3)) {
        case 0: return near(bits_of(min_code / 2), r);
        case 1: return near(bits_of(min_code * 1.5), r);
        default: return r.in(1, bits_of(2 * min_code));
      }
    case InputClass::subnormal_normal: {
      const int i = first_normal - int(r.below(2));  // the boundary or the largest subnormal
      return r.below(2) ? near(bits_of(t.value[i]), r) : near(tie(first_normal - 1), r);
    }
    case InputClass::signed_zero: return 0;
    case InputClass::nan: return any_nan(r);
    case InputClass::inf: return kInf;
    case InputClass::huge: return r.below(8) == 0 ? kMaxFinite : r.in(bits_of(2 * v), kMaxFinite);
    case InputClass::tiny:
      return r.below(2) ? r.in(1, (std::uint64_t{1} << 52) - 1)  // f64 subnormal
                        : r.in(1, bits_of(min_code / 4));
    case InputClass::random: {
      // exponent from 3 binades below the smallest code to 2 past max, any significand
      const int lo = std::ilogb(min_code) - 3, hi = std::ilogb(max) + 2;
      const int e = lo + int(r.below(std::uint64_t(hi - lo + 1)));
      return (std::uint64_t(e + 1023) << 52) | (r.next() >> 12);
    }
  }
  return 0;
}

inline std::uint64_t draw_input(Format f, InputClass c, SplitMix64& r) {
  namespace td = oracle::table_detail;
  const auto& t = f == Format::e8m0 ? td::kE8m0Table : td::table_of(f);
  const std::uint64_t sign = r.below(2) ? input_detail::kSign : 0;
  // index of the smallest normal: 2^mantissa bits (e8m0: 1, f32's 2^-126)
  const int first_normal = f == Format::e8m0 ? 1 : 1 << td::layout(f).man_bits;
  return sign | draw_magnitude(t, f == Format::e8m0, first_normal, c, r);
}

}  // namespace fp8ref::cases
