// A second, fast FP8 / FP6 / FP4 / UE4M3 / E8M0 oracle (docs/design.md §14), independent of
// numerics/codec.h and of the rational oracle: a sorted table of a format's non-negative finite
// values and the midpoints between neighbours (all exact doubles), a binary search, and every
// rounding as a choice between the two neighbours. Fast enough to sweep all 2^32 f32 inputs.
#pragma once

#include <bit>
#include <cstdint>

#include "numerics/codec.h"
#include "numerics/format.h"

namespace fp8ref::oracle {

namespace table_detail {

inline constexpr std::uint64_t kInfBits = 0x7FF0000000000000ULL;

constexpr double exp2i(int k) {  // 2^k for -1022 <= k <= 1023
  return std::bit_cast<double>(std::uint64_t(k + 1023) << 52);
}

// Magnitudes of a format in increasing order: kSize slots, value[i] for i < count the finite
// codes code[i]; slot `count` holds the first value past max ("virtual_next": the value the
// code max+1 has by the normal-number formula, e4m3 0x7F -> 480, e5m2 0x7C -> 65536, e8m0 0xFF
// -> 2^128), where any result means overflow; the rest are +huge padding for the search.
struct MagnitudeTable {
  static constexpr int kSize = 256;
  int count;
  int first_step;  // largest power of two <= count: the binary search's first probe
  double value[kSize];
  double midpoint[kSize];  // (value[i] + value[i+1]) / 2, exact: one bit more than the format
  std::uint8_t code[kSize];
};

// OCP FP8 v1.0: (1 + m/2^p) * 2^(e - bias) for e > 0, (m/2^p) * 2^(1 - bias) for e = 0, written
// as an integer significand times a power of two. Codes are visited in increasing value order.
constexpr double fp8_formula(int code, int man_bits, int bias) {
  const int e = code >> man_bits, m = code & ((1 << man_bits) - 1);
  return e == 0 ? double(m) * exp2i(1 - bias - man_bits)
                : double((1 << man_bits) + m) * exp2i(e - bias - man_bits);
}

// Field layout of a format, from OCP FP8 v1.0 and OCP MX v1.0 §5.3: mantissa bits, bias, the
// last finite non-negative code, the sign bit (0: unsigned), the code an unsaturated overflow
// takes (0: the format has neither Inf nor NaN, so overflow saturates).
struct Layout {
  int man_bits, bias, last;
  std::uint8_t sign, overflow_nonsat;
};
constexpr Layout layout(Format f) {
  switch (f) {
    case Format::e4m3: return {3, 7, 0x7E, 0x80, 0x7F};   // S.1111.111 is NaN
    case Format::e5m2: return {2, 15, 0x7B, 0x80, 0x7C};  // exponent field 31: Inf / NaN
    case Format::e2m1: return {1, 1, 0x7, 0x8, 0};        // 6
    case Format::e2m3: return {3, 1, 0x1F, 0x20, 0};      // 7.5
    case Format::e3m2: return {2, 3, 0x1F, 0x20, 0};      // 28
    case Format::ue4m3: return {3, 7, 0x7E, 0, 0x7F};     // no sign bit
    case Format::e8m0: return {0, 127, 0xFE, 0, 0xFF};
  }
  return {0, 0, 0, 0, 0};
}

constexpr MagnitudeTable make_table(Format f) {
  MagnitudeTable t{};
  const Layout l = layout(f);
  const int man_bits = l.man_bits, bias = l.bias, last = l.last;
  for (int c = 0; c <= last + 1; ++c) {
    t.value[c] = f == Format::e8m0 ? exp2i(c - 127) : fp8_formula(c, man_bits, bias);
    t.code[c] = std::uint8_t(c);
  }
  t.count = last + 1;
  for (t.first_step = 1; t.first_step * 2 <= t.count;) t.first_step *= 2;
  for (int i = last + 2; i < MagnitudeTable::kSize; ++i) t.value[i] = exp2i(1023);
  for (int i = 0; i + 1 < MagnitudeTable::kSize; ++i)
    t.midpoint[i] = t.value[i] / 2 + t.value[i + 1] / 2;
  return t;
}

inline constexpr MagnitudeTable kE4m3Table = make_table(Format::e4m3);
inline constexpr MagnitudeTable kE5m2Table = make_table(Format::e5m2);
inline constexpr MagnitudeTable kE8m0Table = make_table(Format::e8m0);
inline constexpr MagnitudeTable kE2m1Table = make_table(Format::e2m1);
inline constexpr MagnitudeTable kE2m3Table = make_table(Format::e2m3);
inline constexpr MagnitudeTable kE3m2Table = make_table(Format::e3m2);

inline const MagnitudeTable& table_of(Format f) {
  switch (f) {
    case Format::e5m2: return kE5m2Table;
    case Format::e2m1: return kE2m1Table;
    case Format::e2m3: return kE2m3Table;
    case Format::e3m2: return kE3m2Table;
    default: return kE4m3Table;  // e4m3, ue4m3
  }
}

// Index of the largest value[i] <= a, for value[0] <= a < value[count] (binary search; a sweep's
// neighbouring inputs take the same branches, so they predict well).
inline int floor_index(const MagnitudeTable& t, double a) {
  int i = 0;
  for (int step = t.first_step; step >= 1; step /= 2)
    if (t.value[i + step] <= a) i += step;
  return i;
}

// Placement of a non-zero finite magnitude: lo = index of the largest value <= a (-1 below the
// table), exact when value[lo] == a, hi = lo + 1 otherwise (hi == count means overflow).
struct Placement {
  int lo;
  bool exact;
};

inline Placement place(const MagnitudeTable& t, double a) {
  if (a < t.value[0]) return {-1, false};
  const int lo = floor_index(t, a);
  return {lo, t.value[lo] == a};
}

}  // namespace table_detail

namespace table_detail {

// The code of a NaN input (bits: the f64 pattern, s: its sign bit in the format) under `nan`.
// FP6 / FP4 have no NaN: ±max (quiet_signed, double_payload), +max (positive_all_ones) or, as
// ml_dtypes 0.6 does, a zero of the opposite sign.
inline std::uint8_t nan_code(Format f, const Layout& l, std::uint64_t bits, NanEncoding nan,
                             std::uint8_t max_code, std::uint8_t s) {
  if (l.overflow_nonsat == 0) {  // no NaN in the format
    if (nan == NanEncoding::ml_dtypes) return (bits >> 63) ? 0x00 : l.sign;
    return std::uint8_t(nan == NanEncoding::positive_all_ones ? max_code : max_code | s);
  }
  if (nan == NanEncoding::positive_all_ones) return 0x7F;
  if (f == Format::e5m2 && nan == NanEncoding::ml_dtypes) return std::uint8_t(0x7E | s);
  if (f == Format::e5m2 && nan == NanEncoding::double_payload)
    return std::uint8_t(0x7E | ((bits >> 50) & 1) | s);
  return std::uint8_t(0x7F | s);
}

// The rounding's pick, lo or lo + 1, for a magnitude a strictly between value[lo] and
// value[lo + 1] (negative: the input's sign, for the directed roundings).
inline int round_between(const MagnitudeTable& t, double a, int lo, bool negative,
                         const EncodeSpec& spec, std::uint32_t rand) {
  const int hi = lo + 1;
  switch (spec.rounding) {
    case Rounding::rtz: return lo;
    case Rounding::rup: return negative ? lo : hi;
    case Rounding::rdn: return negative ? hi : lo;
    case Rounding::rne:
      if (a != t.midpoint[lo]) return a < t.midpoint[lo] ? lo : hi;
      return (t.code[lo] & 1) == 0 ? lo : hi;
    case Rounding::sr: {
      // (a - value[lo]) is exact (Sterbenz, or value[lo] = 0); the gap is a power of two, so
      // frac * 2^R is exact and floor() is the exact count
      const double gap = t.value[hi] - t.value[lo];
      const double scaled = (a - t.value[lo]) / gap * exp2i(spec.sr_bits);
      const auto count = static_cast<std::uint64_t>(scaled);
      const std::uint64_t r = rand & ((std::uint64_t{1} << spec.sr_bits) - 1);
      return count + r >= (std::uint64_t{1} << spec.sr_bits) ? hi : lo;
    }
  }
  return lo;
}

}  // namespace table_detail

// Minifloat (e4m3, e5m2, e2m1, e2m3, e3m2, ue4m3; E8M0: table_oracle_encode_e8m0) encode of an
// f64 bit pattern under an explicit EncodeSpec (any rounding; `rand` feeds Rounding::sr: round
// away iff floor(frac * 2^R) + (rand mod 2^R) >= 2^R). ue4m3 encodes |x|. FP6 / FP4 have no Inf
// or NaN: overflow and Inf give ±max; a NaN gives table_detail::nan_code.
inline std::uint8_t table_oracle_encode(Format f, std::uint64_t bits, const EncodeSpec& spec,
                                        std::uint32_t rand = 0) {
  using namespace table_detail;
  const MagnitudeTable& t = table_of(f);
  const Layout l = layout(f);
  const bool negative = l.sign != 0 && (bits >> 63) != 0;
  const std::uint8_t s = negative ? l.sign : 0x00;
  const std::uint8_t max_code = t.code[t.count - 1];
  const std::uint8_t overflow_nonsat = l.overflow_nonsat ? l.overflow_nonsat : max_code;
  const std::uint8_t overflow = spec.overflow == Overflow::sat ? max_code : overflow_nonsat;
  const std::uint64_t abs_bits = bits & ~(std::uint64_t{1} << 63);
  const double a = std::bit_cast<double>(abs_bits);
  // rule table: NaN (by NanEncoding), Inf (exact: max only under satfinite), zero
  if (abs_bits > kInfBits) return nan_code(f, l, bits, spec.nan, max_code, s);
  if (abs_bits == kInfBits) {
    const bool to_max = spec.overflow == Overflow::sat && spec.inf == InfEncoding::saturate;
    return std::uint8_t((to_max ? max_code : overflow_nonsat) | s);
  }
  if (a == 0) return s;
  // |x| >= virtual_next: overflow, except a rounding toward zero, which stops at max
  const bool toward_zero_mode = spec.rounding == Rounding::rtz ||
                                (spec.rounding == Rounding::rup && negative) ||
                                (spec.rounding == Rounding::rdn && !negative);
  if (a >= t.value[t.count]) return std::uint8_t((toward_zero_mode ? max_code : overflow) | s);
  const Placement p = place(t, a);
  if (p.exact) return std::uint8_t(t.code[p.lo] | s);
  const int pick = round_between(t, a, p.lo, negative, spec, rand);
  if (pick == t.count) return std::uint8_t(overflow | s);
  return std::uint8_t(t.code[pick] | s);
}

// E8M0 encode of an f64 bit pattern under an explicit E8m0Spec. Rule table, in order: NaN ->
// 0xFF; negative non-zero -> 0xFF when negative_is_nan (else |x|); zero -> 0xFF or 0x00; Inf ->
// 0xFE when saturating, else 0xFF; below 2^-127 -> 0x00 (no zero); a result past 2^127 is 0xFE
// for floor (toward zero never overflows) and when saturating, else 0xFF.
inline std::uint8_t table_oracle_encode_e8m0(std::uint64_t bits, const E8m0Spec& spec) {
  using namespace table_detail;
  const MagnitudeTable& t = kE8m0Table;
  const bool negative = (bits >> 63) != 0;
  const std::uint64_t abs_bits = bits & ~(std::uint64_t{1} << 63);
  const double a = std::bit_cast<double>(abs_bits);
  if (abs_bits > kInfBits) return 0xFF;
  if (negative && a != 0 && spec.negative_is_nan) return 0xFF;
  if (a == 0) return spec.zero_is_nan ? 0xFF : 0x00;
  const std::uint8_t overflow = spec.saturate ? 0xFE : 0xFF;
  if (abs_bits == kInfBits) return overflow;
  if (a >= t.value[t.count]) return spec.rounding == E8m0Rounding::floor ? 0xFE : overflow;
  if (spec.rounding == E8m0Rounding::nearest_f32_field && a < exp2i(-126))
    return a > exp2i(-127) ? 0x01 : 0x00;  // torch / ml_dtypes on an f32 subnormal
  const Placement p = place(t, a);
  if (p.lo < 0) return 0x00;  // below 2^-127: every rounding clamps to the smallest code
  if (p.exact) return t.code[p.lo];
  const int lo = p.lo, hi = p.lo + 1;
  int pick = lo;
  switch (spec.rounding) {
    case E8m0Rounding::floor: pick = lo; break;
    case E8m0Rounding::ceil: pick = hi; break;
    case E8m0Rounding::nearest_ties_up:
    case E8m0Rounding::nearest_f32_field: pick = a < t.midpoint[lo] ? lo : hi; break;
    case E8m0Rounding::nearest_ties_even:
      if (a != t.midpoint[lo])
        pick = a < t.midpoint[lo] ? lo : hi;
      else
        pick = (t.code[lo] & 1) == 0 ? lo : hi;
      break;
  }
  return pick == t.count ? overflow : t.code[pick];
}

}  // namespace fp8ref::oracle
