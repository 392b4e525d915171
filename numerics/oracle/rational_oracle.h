// The slow, obviously correct FP8 / E8M0 oracle of the tests (docs/design.md §14). Every code's
// value is an exact rational computed from the OCP 8-bit FP v1.0 / MX v1.0 definition, every f64
// input is an exact rational from the IEEE 754 binary64 formula, and rounding compares the input
// with every finite code. Nothing here calls or copies numerics/codec.h (only its policy structs).
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "numerics/codec.h"
#include "numerics/format.h"

namespace fp8ref::oracle {

using BigInt = boost::multiprecision::cpp_int;
using Rational = boost::multiprecision::cpp_rational;

inline Rational pow2(int k) {
  return k >= 0 ? Rational(BigInt(1) << k) : Rational(BigInt(1), BigInt(1) << -k);
}

// Sign of a - b by cross-multiplying numerators and (positive) denominators; exact, and much
// faster than boost::rational's division-based comparison.
inline int exact_compare(const Rational& a, const Rational& b) {
  const BigInt l = numerator(a) * denominator(b);
  const BigInt r = numerator(b) * denominator(a);
  return l.compare(r);
}

// ---- values of codes and inputs -------------------------------------------------------------

enum class ValueKind : std::uint8_t { finite, inf, nan };

struct ExactValue {
  ValueKind kind;
  bool negative;   // sign bit (also for zero, Inf and NaN)
  Rational value;  // signed exact value when finite
};

// OCP FP8 v1.0 field layout. e5m2 reserves exponent field 31 for Inf (m = 0) and NaN (IEEE);
// e4m3fn reserves only S.1111.111 for NaN, so its top binade holds finite values up to 448.
struct Fp8Layout {
  int man_bits;
  int bias;
  bool ieee_specials;
};

inline Fp8Layout fp8_layout(Format f) {
  if (f == Format::e4m3) return {3, 7, false};
  if (f == Format::e5m2) return {2, 15, true};
  throw std::invalid_argument("fp8_layout: e4m3 or e5m2 only");
}

// (-1)^s * 2^(e - bias) * (1 + m / 2^p) for e > 0, (-1)^s * 2^(1 - bias) * (m / 2^p) for e = 0;
// E8M0: 2^(code - 127), 0xFF = NaN.
inline ExactValue code_value(Format f, std::uint8_t code) {
  if (f == Format::e8m0) {
    if (code == 0xFF) return {ValueKind::nan, false, 0};
    return {ValueKind::finite, false, pow2(int(code) - 127)};
  }
  const Fp8Layout l = fp8_layout(f);
  const bool negative = (code & 0x80) != 0;
  const int e = (code & 0x7F) >> l.man_bits;
  const int m = code & ((1 << l.man_bits) - 1);
  const int e_all_ones = (1 << (7 - l.man_bits)) - 1;
  if (l.ieee_specials && e == e_all_ones)
    return {m == 0 ? ValueKind::inf : ValueKind::nan, negative, 0};
  if (!l.ieee_specials && e == e_all_ones && m == (1 << l.man_bits) - 1)
    return {ValueKind::nan, negative, 0};
  const Rational frac = Rational(m) * pow2(-l.man_bits);
  Rational v = e == 0 ? pow2(1 - l.bias) * frac : pow2(e - l.bias) * (1 + frac);
  return {ValueKind::finite, negative, negative ? Rational(-v) : v};
}

// IEEE 754 binary64: (-1)^s * 2^(E - 1023) * (1 + F / 2^52), subnormal 2^-1022 * (F / 2^52).
inline ExactValue f64_value(std::uint64_t bits) {
  const bool negative = (bits >> 63) != 0;
  const int biased = int((bits >> 52) & 0x7FF);
  const std::uint64_t f = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) return {f == 0 ? ValueKind::inf : ValueKind::nan, negative, 0};
  const Rational frac = Rational(BigInt(f)) * pow2(-52);
  Rational v = biased == 0 ? pow2(-1022) * frac : pow2(biased - 1023) * (1 + frac);
  return {ValueKind::finite, negative, negative ? Rational(-v) : v};
}

// ---- FP8 (e4m3, e5m2) -------------------------------------------------------------------------

struct FiniteCode {
  Rational value;
  std::uint8_t code;
  int rank;  // position in increasing value order (so a scan compares x only with codes)
};

// Every finite code of the format, +0 standing for both zeros; plus the largest finite value and
// the "virtual" next value V = max + ulp(max) that IEEE 754 §7.4 rounds to before declaring
// overflow (e4m3: 1.875 * 2^8 = 480 in the NaN slot; e5m2: 2^16 = 65536 in the Inf slot).
struct Fp8Table {
  Format format;
  std::vector<FiniteCode> finite;
  Rational max;
  std::uint8_t max_code;
  Rational virtual_next;
  bool virtual_next_even;  // mantissa LSB of V, for ties between max and V
};

inline Fp8Table make_fp8_table(Format f) {
  Fp8Table t{f, {}, 0, 0, 0, false};
  for (int c = 0; c < 256; ++c) {
    if (c == 0x80) continue;
    ExactValue v = code_value(f, std::uint8_t(c));
    if (v.kind != ValueKind::finite) continue;
    if (exact_compare(v.value, t.max) > 0) {
      t.max = v.value;
      t.max_code = std::uint8_t(c);
    }
    t.finite.push_back({v.value, std::uint8_t(c), 0});
  }
  for (FiniteCode& a : t.finite)
    for (const FiniteCode& b : t.finite) a.rank += exact_compare(b.value, a.value) < 0;
  const Fp8Layout l = fp8_layout(f);
  const int e_max = (t.max_code >> l.man_bits) - l.bias;
  const int m_next = (t.max_code & ((1 << l.man_bits) - 1)) + 1;  // wraps to 0 in the next binade
  t.virtual_next = t.max + pow2(e_max - l.man_bits);
  t.virtual_next_even = m_next == (1 << l.man_bits) || (m_next & 1) == 0;
  return t;
}

inline const Fp8Table& fp8_table(Format f) {
  static const Fp8Table e4m3 = make_fp8_table(Format::e4m3);
  static const Fp8Table e5m2 = make_fp8_table(Format::e5m2);
  return f == Format::e4m3 ? e4m3 : e5m2;
}

// A finite x placed among the finite codes by comparing it with every one of them:
// lo = the largest finite value <= x, hi = the smallest >= x (absent beyond -max / +max).
struct Fp8Bracket {
  const Fp8Table* table;
  Rational x;
  bool negative;  // sign bit of the input (decides the sign of a zero result and of overflow)
  const FiniteCode* lo;
  const FiniteCode* hi;
};

inline Fp8Bracket bracket_fp8(const Fp8Table& t, const Rational& x, bool negative) {
  Fp8Bracket b{&t, x, negative, nullptr, nullptr};
  for (const FiniteCode& c : t.finite) {
    const int cmp = exact_compare(c.value, x);
    if (cmp <= 0 && (!b.lo || c.rank > b.lo->rank)) b.lo = &c;
    if (cmp >= 0 && (!b.hi || c.rank < b.hi->rank)) b.hi = &c;
  }
  return b;
}

// One rounding decision: a finite code (zero carries no sign yet) or an overflow.
struct Rounded {
  bool overflow;
  std::uint8_t code;
};

inline std::uint8_t signed_zero(std::uint8_t code, bool negative) {
  return code == 0x00 && negative ? std::uint8_t(0x80) : code;
}

// Directed roundings choose among the finite values and +-Inf (IEEE 754 §4.3.2), so a rounding
// toward zero never overflows.
inline Rounded round_down(const Fp8Bracket& b) {
  return b.lo ? Rounded{false, b.lo->code} : Rounded{true, 0};
}
inline Rounded round_up(const Fp8Bracket& b) {
  return b.hi ? Rounded{false, b.hi->code} : Rounded{true, 0};
}

// Round to nearest, ties to even mantissa LSB, among the finite values and +-V: a result of +-V
// (or anything past it) is an overflow (IEEE 754 §7.4: the exponent range is unbounded first).
inline Rounded round_nearest_even(const Fp8Bracket& b) {
  const Fp8Table& t = *b.table;
  if (b.lo && b.hi && b.lo == b.hi) return {false, b.lo->code};
  const Rational ax = abs(b.x);
  if (exact_compare(ax, t.virtual_next) >= 0) return {true, 0};
  if (!b.lo || !b.hi) {  // |x| in (max, V): neighbours max and V
    const int c = exact_compare(t.virtual_next - ax, ax - t.max);
    const bool to_v = c < 0 || (c == 0 && t.virtual_next_even);
    return to_v ? Rounded{true, 0} : Rounded{false, b.lo ? b.lo->code : b.hi->code};
  }
  const int c = exact_compare(b.x - b.lo->value, b.hi->value - b.x);
  if (c < 0) return {false, b.lo->code};
  if (c > 0) return {false, b.hi->code};
  return (b.lo->code & 1) == 0 ? Rounded{false, b.lo->code} : Rounded{false, b.hi->code};
}

inline Rounded round_fp8(const Fp8Bracket& b, Rounding r) {
  switch (r) {
    case Rounding::rne: return round_nearest_even(b);
    case Rounding::rtz: return b.x.sign() >= 0 ? round_down(b) : round_up(b);
    case Rounding::rup: return round_up(b);
    case Rounding::rdn: return round_down(b);
    case Rounding::sr: break;
  }
  throw std::invalid_argument("round_fp8: use sr_outcomes for stochastic rounding");
}

// The code an overflow becomes: +-max when saturating, else +-Inf (e5m2) / the NaN S.1111.111
// (e4m3, which has no infinity).
inline std::uint8_t overflow_code(const Fp8Table& t, Overflow o, bool negative) {
  const std::uint8_t s = negative ? 0x80 : 0x00;
  if (o == Overflow::sat) return std::uint8_t(t.max_code | s);
  return std::uint8_t((t.format == Format::e5m2 ? 0x7C : 0x7F) | s);
}

inline std::uint8_t finish(const Fp8Bracket& b, Rounded r, Overflow o) {
  return r.overflow ? overflow_code(*b.table, o, b.negative) : signed_zero(r.code, b.negative);
}

// NaN input, rule table of NanEncoding (codec.h): which NaN code each convention writes.
inline std::uint8_t nan_code(Format f, NanEncoding e, std::uint64_t bits) {
  const std::uint8_t s = (bits >> 63) ? 0x80 : 0x00;
  if (e == NanEncoding::positive_all_ones) return 0x7F;  // sign dropped: 0.1111.111 / 0.11111.11
  if (f == Format::e4m3 || e == NanEncoding::quiet_signed) return std::uint8_t(0x7F | s);
  if (e == NanEncoding::ml_dtypes) return std::uint8_t(0x7E | s);  // S.11111.10
  // double_payload: S.11111.1b keeps the f64 payload bit b just below the quiet bit
  return std::uint8_t(0x7E | ((bits >> 50) & 1) | s);
}

// An f64 input prepared once (its exact value and, when finite, its bracket), so that one input
// can be encoded under many policies without repeating the scan.
struct Fp8Input {
  std::uint64_t bits;
  ExactValue v;
  Fp8Bracket b;
};

inline Fp8Input prepare_fp8(Format f, std::uint64_t bits) {
  Fp8Input in{bits, f64_value(bits), {&fp8_table(f), 0, false, nullptr, nullptr}};
  if (in.v.kind == ValueKind::finite) in.b = bracket_fp8(fp8_table(f), in.v.value, in.v.negative);
  return in;
}

// The oracle's encode with a non-stochastic rounding.
inline std::uint8_t rational_oracle_encode(const Fp8Input& in, const EncodeSpec& spec) {
  const Fp8Table& t = *in.b.table;
  if (in.v.kind == ValueKind::nan) return nan_code(t.format, spec.nan, in.bits);
  if (in.v.kind == ValueKind::inf) {  // exact, never an overflow: only satfinite makes it max
    const bool to_max = spec.overflow == Overflow::sat && spec.inf == InfEncoding::saturate;
    return to_max ? overflow_code(t, Overflow::sat, in.v.negative)
                  : overflow_code(t, Overflow::nonsat, in.v.negative);
  }
  return finish(in.b, round_fp8(in.b, spec.rounding), spec.overflow);
}

inline std::uint8_t rational_oracle_encode(Format f, std::uint64_t bits, const EncodeSpec& spec) {
  return rational_oracle_encode(prepare_fp8(f, bits), spec);
}

// Stochastic rounding with R random bits (codec.h EncodeSpec::sr_bits) of a finite input: the two
// outcomes and how many of the 2^R random values must pick the one away from zero:
// floor(frac * 2^R), frac the exact position of |x| between its neighbours toward and away from
// zero in the unbounded-exponent set (so rounding away from max may overflow).
struct SrOutcomes {
  std::uint8_t toward_zero;
  std::uint8_t away_from_zero;
  std::uint64_t away_count;
};

inline SrOutcomes sr_outcomes(const Fp8Bracket& b, Overflow o, int sr_bits) {
  const Fp8Table& t = *b.table;
  const bool pos = b.x.sign() >= 0;
  const Rounded tz = pos ? round_down(b) : round_up(b);
  const Rounded az = pos ? round_up(b) : round_down(b);
  const Rational ax = abs(b.x);
  if (exact_compare(ax, t.virtual_next) >= 0) {  // both unbounded neighbours are past max
    const std::uint8_t z = overflow_code(t, o, b.negative);
    return {z, z, 0};
  }
  const std::uint8_t z_tz = finish(b, tz, o);
  if (!az.overflow && az.code == tz.code) return {z_tz, z_tz, 0};  // exact
  // magnitudes of the neighbour toward zero (always finite) and away from zero (V on overflow)
  const Rational m_tz = pos ? b.lo->value : Rational(-b.hi->value);
  const Rational m_az = az.overflow ? t.virtual_next : (pos ? b.hi->value : Rational(-b.lo->value));
  const Rational scaled = (ax - m_tz) / (m_az - m_tz) * pow2(sr_bits);
  const BigInt count = numerator(scaled) / denominator(scaled);  // floor, scaled >= 0
  return {z_tz, finish(b, az, o), count.convert_to<std::uint64_t>()};
}

// ---- E8M0 -------------------------------------------------------------------------------------

// E8M0 values are the powers of two 2^k, k = -127..127 (codes 0..254; code_value). Rounding works
// on the unbounded ladder 2^k, k any integer, then clamps to the codes.

// An f64 input prepared once: its exact value and, when finite and non-zero, k with
// 2^k <= |x| < 2^(k+1) (estimated from the bit lengths of numerator and denominator, then
// established by exact comparison), whether |x| = 2^k, and the sign of
// (2^(k+1) - |x|) - (|x| - 2^k): which power of two is nearer.
struct E8m0Input {
  ExactValue v;
  int k;
  bool exact;
  int hi_vs_lo;  // < 0: 2^(k+1) nearer, 0: tie (|x| = 1.5 * 2^k), > 0: 2^k nearer
};

inline E8m0Input prepare_e8m0(std::uint64_t bits) {
  E8m0Input in{f64_value(bits), 0, false, 0};
  if (in.v.kind != ValueKind::finite || in.v.value.sign() == 0) return in;
  const Rational ax = abs(in.v.value);
  in.k = int(msb(numerator(ax))) - int(msb(denominator(ax)));
  while (exact_compare(pow2(in.k), ax) > 0) --in.k;
  while (exact_compare(pow2(in.k + 1), ax) <= 0) ++in.k;
  const Rational lo = pow2(in.k), hi = pow2(in.k + 1);
  in.exact = exact_compare(ax, lo) == 0;
  in.hi_vs_lo = exact_compare(hi - ax, ax - lo);
  return in;
}

// Rounded exponent of |x| (unbounded: may fall outside -127..127).
inline int e8m0_round_exponent(const E8m0Input& in, E8m0Rounding r) {
  const int k = in.k, c = in.hi_vs_lo;
  if (in.exact) return k;
  switch (r) {
    case E8m0Rounding::floor: return k;
    case E8m0Rounding::ceil: return k + 1;
    case E8m0Rounding::nearest_ties_up: return c <= 0 ? k + 1 : k;
    case E8m0Rounding::nearest_ties_even:
      if (c != 0) return c < 0 ? k + 1 : k;
      return ((k + 127) & 1) == 0 ? k : k + 1;  // even biased exponent
    case E8m0Rounding::nearest_f32_field:
      // torch / ml_dtypes read the f32 pattern: below 2^-126 (f32 subnormal) anything above
      // 2^-127 becomes 2^-126, the rest 2^-127; above, nearest with ties up
      if (k < -126) return k == -127 ? -126 : -127;  // not exact here, so k = -127 is above
      return c <= 0 ? k + 1 : k;
  }
  return k;
}

// The oracle's E8M0 encode, rule table of E8m0Spec (codec.h) applied in this order:
// NaN -> 0xFF; negative (not -0) -> 0xFF when negative_is_nan, else the sign is ignored;
// zero -> 0xFF when zero_is_nan, else 0x00 (2^-127); Inf -> max when saturating, else 0xFF;
// finite: round the exponent, below 2^-127 clamp to 0x00 (no zero), past 2^127 overflow: floor
// (a rounding toward zero, IEEE 754 §7.4) gives max, other roundings NaN unless saturating.
inline std::uint8_t rational_oracle_encode_e8m0(const E8m0Input& in, const E8m0Spec& spec) {
  if (in.v.kind == ValueKind::nan) return 0xFF;
  const bool zero = in.v.kind == ValueKind::finite && in.v.value.sign() == 0;
  if (in.v.negative && !zero && spec.negative_is_nan) return 0xFF;
  if (zero) return spec.zero_is_nan ? 0xFF : 0x00;
  if (in.v.kind == ValueKind::inf) return spec.saturate ? 0xFE : 0xFF;
  const int k = e8m0_round_exponent(in, spec.rounding);
  if (k < -127) return 0x00;
  if (k > 127) return spec.saturate || spec.rounding == E8m0Rounding::floor ? 0xFE : 0xFF;
  return std::uint8_t(k + 127);
}

inline std::uint8_t rational_oracle_encode_e8m0(std::uint64_t bits, const E8m0Spec& spec) {
  return rational_oracle_encode_e8m0(prepare_e8m0(bits), spec);
}

}  // namespace fp8ref::oracle
