// The generic codec: every encode funnels into one rounding routine per format family (the
// minifloats FP8 / FP6 / FP4 / UE4M3 through encode_fp8_bits, E8M0 through encode_e8m0_bits),
// written as numbered steps, with rounding, overflow, NaN and Inf handling as explicit policy
// arguments (docs/design.md §5). Sources (f32, bf16, f16) are widened exactly to f64 first, so any
// encode here rounds once; profiles (profile.h) add the double roundings libraries do.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "numerics/format.h"
#include "numerics/plant.h"
#include "numerics/source.h"

namespace fp8ref {

// How a NaN input is written. For the formats without NaN (FP6, FP4) the all-ones magnitude is
// max finite, so quiet_signed writes ±max and positive_all_ones +max; UE4M3 has no sign bit.
enum class NanEncoding : std::uint8_t {
  quiet_signed,       // 0x7F | sign for both formats (torch; OCP all-ones NaN keeping the sign)
  ml_dtypes,          // e4m3 0x7F | sign, e5m2 0x7E | sign (ml_dtypes quiet_NaN); FP6 / FP4:
                      // a zero of the opposite sign (ml_dtypes 0.6: +NaN -> -0, -NaN -> +0)
  positive_all_ones,  // 0x7F whatever the sign (cuda_fp8.h float path: NaN canonicalised first)
  double_payload,     // e4m3 0x7F | sign; e5m2 0x7E | top 2 payload bits | sign (cuda_fp8.h f64)
};

// What ±Inf becomes under Overflow::sat. Under nonsat (or a rounding toward zero) an infinite
// input stays infinite: ±Inf in e5m2, NaN in e4m3 (which has no infinity). Formats with neither
// infinity nor NaN (FP6, FP4) write ±max whatever the policy: there is nothing else to write.
enum class InfEncoding : std::uint8_t {
  keep,      // ±Inf -> ±Inf (e5m2) / NaN (e4m3), even when saturating
  saturate,  // ±Inf -> ±max finite when Overflow::sat (CUDA satfinite, OCP saturation mode)
};

struct EncodeSpec {
  Rounding rounding;
  Overflow overflow;
  NanEncoding nan;
  InfEncoding inf;
  // Rounding::sr only: number R of random bits consumed (1..32). The magnitude is rounded away
  // from zero iff floor(f * 2^R) + (rand mod 2^R) >= 2^R, where f in [0,1) is the discarded
  // fraction of one unit in the last place. So over all 2^R random values, exactly
  // floor(f * 2^R) round away from zero; exact values never change.
  int sr_bits;
};

namespace detail {

__extension__ typedef unsigned __int128 u128;  // exact remainders past 64 bits

// |x| = sig * 2^q with sig < 2^53 (0 for zero); the decomposition of a finite f64.
struct Unpacked {
  bool sign;
  std::uint64_t sig;
  int q;
};

constexpr Unpacked unpack_f64(std::uint64_t bits) {
  const bool sign = (bits >> 63) != 0;
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t frac = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0) return {sign, frac, -1074};
  return {sign, frac | (std::uint64_t{1} << 52), biased - 1075};
}

// Whether to add one unit to the kept magnitude. `rem` holds the discarded low `shift` bits of
// `sig` (shift >= 1); `kept_odd` is the parity of what is kept.
constexpr bool round_increment(Rounding r, bool sign, std::uint64_t sig, int shift, bool kept_odd,
                               std::uint32_t rand, int sr_bits) {
  const u128 rem = shift >= 64 ? u128{sig} : u128{sig & ((std::uint64_t{1} << shift) - 1)};
  if (rem == 0) return false;
  switch (r) {
    case Rounding::rtz: return false;
    case Rounding::rup: return !sign;
    case Rounding::rdn: return sign;
    case Rounding::rne: {
      if (shift > 64) return false;  // rem < 2^53 <= half
      const u128 half = u128{1} << (shift - 1);
#ifdef FP8REF_PLANT_HOOKS
      if (FP8REF_PLANTED_RT(codec_ties_half_up)) return rem >= half;
#endif
      return rem > half || (rem == half && kept_odd);
    }
    case Rounding::sr: {
      // top R bits of the discarded fraction: floor(rem * 2^R / 2^shift)
      const u128 top = shift >= 120 ? 0 : (rem << sr_bits) >> shift;
      const std::uint64_t mask = (std::uint64_t{1} << sr_bits) - 1;
      return top + (rand & mask) >= (u128{1} << sr_bits);
    }
  }
  return false;
}

// True when rounding direction r never increases the magnitude of a value with this sign.
constexpr bool rounds_toward_zero(Rounding r, bool sign) {
  return r == Rounding::rtz || (r == Rounding::rdn && !sign) || (r == Rounding::rup && sign);
}

template <class T>
constexpr std::uint8_t nan_code(NanEncoding e, bool sign, std::uint64_t f64_bits) {
  const std::uint8_t s = sign ? T::kSignMask : 0x00;
  if constexpr (!T::kHasNan) {  // FP6 / FP4
    if (e == NanEncoding::ml_dtypes) return sign ? 0x00 : T::kSignMask;
    return e == NanEncoding::positive_all_ones ? T::kMaxFinite : std::uint8_t(T::kMaxFinite | s);
  } else if constexpr (!T::kHasInf) {  // e4m3, ue4m3 (kSignMask 0)
    return e == NanEncoding::positive_all_ones ? T::kQuietNan : std::uint8_t(T::kQuietNan | s);
  } else {
    switch (e) {
      case NanEncoding::quiet_signed: return std::uint8_t(0x7F | s);
      case NanEncoding::ml_dtypes: return std::uint8_t(0x7E | s);
      case NanEncoding::positive_all_ones: return 0x7F;
      case NanEncoding::double_payload: return std::uint8_t(0x7E | ((f64_bits >> 50) & 0x3) | s);
    }
    return 0x7F;
  }
}

}  // namespace detail

// Encode the f64 bit pattern `bits` into the minifloat format T (e4m3, e5m2, e2m1, e2m3, e3m2,
// ue4m3), rounding once. An unsigned format (T::kSignMask == 0: ue4m3) encodes |x|.
template <class T>
constexpr std::uint8_t encode_fp8_bits(std::uint64_t bits, const EncodeSpec& spec,
                                       std::uint32_t rand = 0) {
  constexpr int p = T::kManBits;
  constexpr bool kCanOverflow = T::kHasInf || T::kHasNan;  // else overflow can only saturate
  const bool sign = T::kSignMask != 0 && (bits >> 63) != 0;
  const std::uint8_t s = sign ? T::kSignMask : 0x00;
  const std::uint64_t abs_bits = bits & ~(std::uint64_t{1} << 63);
  constexpr std::uint64_t kInfBits = 0x7FF0000000000000ULL;
  const std::uint8_t overflow_code = T::kHasInf ? T::kInf : T::kQuietNan;

  // 1. NaN and infinity.
  if (abs_bits > kInfBits) return detail::nan_code<T>(spec.nan, sign, bits);
  if (abs_bits == kInfBits) {
    const bool to_max =
        !kCanOverflow || (spec.overflow == Overflow::sat && spec.inf == InfEncoding::saturate);
    return std::uint8_t((to_max ? T::kMaxFinite : overflow_code) | s);
  }
  // 2. Zero keeps its sign.
  const detail::Unpacked u = detail::unpack_f64(bits);
  if (u.sig == 0) return s;
  // 3. Quantum: the target exponent of the leading bit, clamped at the subnormal binade.
  const int lead = u.q + (63 - std::countl_zero(u.sig));
  const int e_t = lead > T::kMinNormalExp ? lead : T::kMinNormalExp;
  const int shift = e_t - p - u.q;  // >= 49 for every f64 input
  // 4. Truncate, then round by the policy.
  std::uint64_t kept = shift >= 64 ? 0 : (u.sig >> shift);
  kept += detail::round_increment(spec.rounding, sign, u.sig, shift, (kept & 1) != 0, rand,
                                  spec.sr_bits);
  // 5. Pack: subnormal when the hidden bit is absent, renormalise a carry out of the binade.
  int exp_field = 0;
  std::uint64_t man = kept;
  if (kept >= (std::uint64_t{1} << p)) {
    int e = e_t;
    if (kept >= (std::uint64_t{2} << p)) {
      kept >>= 1;
      ++e;
    }
    exp_field = e + T::kBias;
    man = kept - (std::uint64_t{1} << p);
  }
  const int code = (exp_field << p) | static_cast<int>(man);
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED_RT(codec_subnormal_ftz) && exp_field == 0) return s;
  if (FP8REF_PLANTED_RT(codec_sat_one_high) && code == T::kMaxFinite + 1 &&
      spec.overflow == Overflow::sat)
    return std::uint8_t(code | s);
#endif
  // 6. Overflow: past max finite (for e4m3 the would-be 0x7F slot is NaN, not a value).
  if (code > T::kMaxFinite) {
    if (!kCanOverflow || detail::rounds_toward_zero(spec.rounding, sign) ||
        spec.overflow == Overflow::sat)
      return std::uint8_t(T::kMaxFinite | s);
    return std::uint8_t(overflow_code | s);
  }
  return std::uint8_t(code | s);
}

// ---- E8M0 -------------------------------------------------------------------------------

enum class E8m0Rounding : std::uint8_t {
  floor,              // largest power of two <= |x| (OCP MX scale derivation; CUDA rz)
  ceil,               // smallest power of two >= |x| (CUDA rp)
  nearest_ties_up,    // nearest in value, the midpoint 1.5 * 2^e goes up
  nearest_ties_even,  // nearest in value, the midpoint goes to the even biased exponent
  nearest_f32_field,  // torch / ml_dtypes: on the f32 pattern, exponent field + 1 when the
                      // stored fraction >= 1/2 (normal) or > 1/2 (subnormal); equals
                      // nearest_ties_up except f32 subnormals in (2^-127, 1.5*2^-127) go up
};

struct E8m0Spec {
  E8m0Rounding rounding;
  bool saturate;         // overflow and +-Inf -> 0xFE (max) instead of NaN
  bool zero_is_nan;      // +-0 -> 0xFF (ml_dtypes) instead of 0x00 (2^-127, torch / CUDA)
  bool negative_is_nan;  // x < 0 (and -0 when zero_is_nan) -> 0xFF; else the sign is ignored
};

// Encode the f64 bit pattern `bits` into E8M0, rounding once. Magnitudes below 2^-127 that are
// not zero clamp to 0x00, since E8M0 has no zero.
constexpr std::uint8_t encode_e8m0_bits(std::uint64_t bits, const E8m0Spec& spec) {
  const bool sign = (bits >> 63) != 0;
  const std::uint64_t abs_bits = bits & ~(std::uint64_t{1} << 63);
  // 1. NaN, infinity, zero, sign.
  if (abs_bits > 0x7FF0000000000000ULL) return E8m0Traits::kNan;
  if (sign && spec.negative_is_nan && (abs_bits != 0 || spec.zero_is_nan)) return E8m0Traits::kNan;
  if (abs_bits == 0x7FF0000000000000ULL)
    return spec.saturate ? E8m0Traits::kMaxFinite : E8m0Traits::kNan;
  if (abs_bits == 0) return spec.zero_is_nan ? E8m0Traits::kNan : 0x00;
  // 2. |x| = (1 + f) * 2^lead with the fraction f held in the bits below the leading one.
  const detail::Unpacked u = detail::unpack_f64(abs_bits);
  const int width = 63 - std::countl_zero(u.sig);  // bits below the leading one
  const int lead = u.q + width;
  const std::uint64_t frac = u.sig - (std::uint64_t{1} << width);
  const std::uint64_t half = width == 0 ? 0 : (std::uint64_t{1} << (width - 1));
  // 3. Round the exponent.
  int e = lead;
  switch (spec.rounding) {
    case E8m0Rounding::floor: break;
    case E8m0Rounding::ceil: e += frac != 0; break;
    case E8m0Rounding::nearest_ties_up: e += width > 0 && frac >= half; break;
    case E8m0Rounding::nearest_ties_even:
      e += width > 0 && (frac > half || (frac == half && ((lead + 127) & 1) != 0));
      break;
    case E8m0Rounding::nearest_f32_field:
      if (lead >= -126)
        e += width > 0 && frac >= half;  // f32 normal
      else
        e = abs_bits > 0x3800000000000000ULL ? -126 : -127;  // f32 subnormal: > 2^-127 up
      break;
  }
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED_RT(e8m0_ties_down) && width > 0 && frac == half &&
      spec.rounding != E8m0Rounding::floor && spec.rounding != E8m0Rounding::ceil)
    e = lead;
#endif
  // 4. Clamp below (no zero in E8M0), overflow above. floor rounds toward zero, which never
  //    overflows (IEEE 754 §7.4; CUDA's __nv_cvt_double_to_e8m0 rz nosat: 2^200 -> 0xFE).
  if (e < E8m0Traits::kMinExp) e = E8m0Traits::kMinExp;
  if (e > E8m0Traits::kMaxExp)
    return spec.saturate || spec.rounding == E8m0Rounding::floor ? E8m0Traits::kMaxFinite
                                                                 : E8m0Traits::kNan;
  return static_cast<std::uint8_t>(e + E8m0Traits::kBias);
}

// ---- decode -------------------------------------------------------------------------------

namespace detail {

// Exact value of a minifloat code of format T (bits above the format's width and, for an unsigned
// format, the sign bit are ignored): (exp_field ? 2^p + man : man) * 2^(max(exp_field,1) - bias -
// p).
template <class T>
constexpr double decode_minifloat(std::uint8_t code) {
  constexpr int p = T::kManBits;
  constexpr int width = T::kExpBits + p;
  const int mag = code & ((1 << width) - 1);
  const bool negative = T::kSignMask != 0 && (code & T::kSignMask) != 0;
  const double sgn = negative ? -1.0 : 1.0;
  const int exp_field = mag >> p;
  const int man = mag & ((1 << p) - 1);
  if constexpr (T::kHasInf) {
    if (exp_field == (1 << T::kExpBits) - 1)
      return man ? std::numeric_limits<double>::quiet_NaN()
                 : sgn * std::numeric_limits<double>::infinity();
  } else if constexpr (T::kHasNan) {
    if (mag == T::kQuietNan) return std::numeric_limits<double>::quiet_NaN();
  }
  const double sig = exp_field ? double((1 << p) + man) : double(man);
  const int e = (exp_field ? exp_field : 1) - T::kBias - p;
  const double scale = std::bit_cast<double>(std::uint64_t(e + 1023) << 52);
  return sgn * sig * scale;
}

}  // namespace detail

// Exact value of a code as f64 (every FP8 / FP6 / FP4 / UE4M3 / E8M0 value is a double).
constexpr double decode_f64(Format f, std::uint8_t code) {
  switch (f) {
    case Format::e8m0:
      if (code == E8m0Traits::kNan) return std::numeric_limits<double>::quiet_NaN();
      return std::bit_cast<double>(std::uint64_t(code - 127 + 1023) << 52);
    case Format::e4m3: return detail::decode_minifloat<E4m3Traits>(code);
    case Format::e5m2: return detail::decode_minifloat<E5m2Traits>(code);
    case Format::e2m1: return detail::decode_minifloat<E2m1Traits>(code);
    case Format::e2m3: return detail::decode_minifloat<E2m3Traits>(code);
    case Format::e3m2: return detail::decode_minifloat<E3m2Traits>(code);
    case Format::ue4m3: return detail::decode_minifloat<Ue4m3Traits>(code);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Exact f32 value (every FP8 / E8M0 value is an f32, 2^-127 as an f32 subnormal).
constexpr float decode_f32(Format f, std::uint8_t code) { return float(decode_f64(f, code)); }

inline double decode(e4m3_t x) { return decode_f64(Format::e4m3, x.bits); }
inline double decode(e5m2_t x) { return decode_f64(Format::e5m2, x.bits); }
inline double decode(e8m0_t x) { return decode_f64(Format::e8m0, x.bits); }

// encode_fp8_bits with the format named at run time. Throws std::invalid_argument for e8m0
// (encode_e8m0_bits takes an E8m0Spec).
constexpr std::uint8_t encode_minifloat_bits(Format f, std::uint64_t bits, const EncodeSpec& spec,
                                             std::uint32_t rand = 0) {
  switch (f) {
    case Format::e4m3: return encode_fp8_bits<E4m3Traits>(bits, spec, rand);
    case Format::e5m2: return encode_fp8_bits<E5m2Traits>(bits, spec, rand);
    case Format::e2m1: return encode_fp8_bits<E2m1Traits>(bits, spec, rand);
    case Format::e2m3: return encode_fp8_bits<E2m3Traits>(bits, spec, rand);
    case Format::e3m2: return encode_fp8_bits<E3m2Traits>(bits, spec, rand);
    case Format::ue4m3: return encode_fp8_bits<Ue4m3Traits>(bits, spec, rand);
    case Format::e8m0: break;
  }
  throw std::invalid_argument("encode_minifloat_bits: e8m0 is encoded by encode_e8m0_bits");
}

// Encode an exact f64 value (single rounding) into a minifloat format (not e8m0).
constexpr std::uint8_t encode(Format f, double x, const EncodeSpec& spec, std::uint32_t rand = 0) {
  return encode_minifloat_bits(f, std::bit_cast<std::uint64_t>(x), spec, rand);
}

}  // namespace fp8ref
