// Exact accumulation of FP8 x FP8 products and of scaled block partials, and the single rounding
// of an exact value (or of a model's f32 result) to an output type (docs/design.md §9 "the
// exactness fact", §10 model `exact`). No floating-point arithmetic touches a value here until
// the final rounding. Part of the accumulation models (numerics/models.h).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/format.h"
#include "numerics/out_dtype.h"

namespace fp8ref {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

// The GEMM operand formats: FP8 e4m3 / e5m2, and the OCP MX FP6 e2m3 / e3m2 and FP4 e2m1 codes
// that Blackwell's kind::f8f6f4 takes (held one per byte in the low bits).
constexpr bool is_f8f6f4_operand(Format f) {
  return f == Format::e4m3 || f == Format::e5m2 || f == Format::e3m2 || f == Format::e2m3 ||
         f == Format::e2m1;
}

// An operand code as value = sig * 2^(exp - man_bits): `exp` is the unbiased exponent of the
// encoding with subnormals (and zero) at emin, `sig` the signed integer significand including the
// hidden bit (|sig| < 2^(man_bits+1)). This is the "raw" decomposition the tensor core uses.
struct Fp8Parts {
  int sig;
  int exp;
  int man_bits;
  bool finite;  // false for NaN / Inf (FP6 / FP4 have neither)
};

// Field widths, bias and sign bit of an operand format (format.h's traits).
struct OperandLayout {
  int exp_bits, man_bits, bias;
  std::uint8_t sign;
};
template <class T>
constexpr OperandLayout operand_layout() {
  return {T::kExpBits, T::kManBits, T::kBias, T::kSignMask};
}
constexpr OperandLayout operand_layout(Format f) {
  switch (f) {
    case Format::e4m3: return operand_layout<E4m3Traits>();
    case Format::e2m1: return operand_layout<E2m1Traits>();
    case Format::e2m3: return operand_layout<E2m3Traits>();
    case Format::e3m2: return operand_layout<E3m2Traits>();
    default: return operand_layout<E5m2Traits>();
  }
}

// Bits above the sign bit of an FP6 / FP4 code are ignored, as decode_f64 ignores them.
constexpr Fp8Parts fp8_parts(Format f, std::uint8_t code) {
  const OperandLayout l = operand_layout(f);
  const int p = l.man_bits;
  const int bits = code & ((1 << (l.exp_bits + p)) - 1);
  const int field = bits >> p;
  const int man = bits & ((1 << p) - 1);
  const bool finite = f == Format::e4m3 ? bits != 0x7F : f == Format::e5m2 ? field != 31 : true;
  const int mag = field ? (1 << p) + man : man;
  return {(code & l.sign) ? -mag : mag, (field ? field : 1) - l.bias, p, finite};
}

// fp8_parts of all 256 codes of an operand format (the models' inner loops look codes up).
inline const Fp8Parts* fp8_parts_table(Format f) {
  static const auto make = [](Format g) {
    std::array<Fp8Parts, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = fp8_parts(g, std::uint8_t(c));
    return t;
  };
  static const std::array<Fp8Parts, 256> e4m3 = make(Format::e4m3), e5m2 = make(Format::e5m2),
                                         e2m1 = make(Format::e2m1), e2m3 = make(Format::e2m3),
                                         e3m2 = make(Format::e3m2);
  switch (f) {
    case Format::e4m3: return e4m3.data();
    case Format::e2m1: return e2m1.data();
    case Format::e2m3: return e2m3.data();
    case Format::e3m2: return e3m2.data();
    default: return e5m2.data();
  }
}

// 2^e as an f64 for normal exponents (-1022 <= e <= 1023), without a libm call.
constexpr double exp2i(int e) { return std::bit_cast<double>(std::uint64_t(e + 1023) << 52); }

constexpr int fp8_emin(Format f) { return 1 - operand_layout(f).bias; }
constexpr int fp8_man_bits(Format f) { return operand_layout(f).man_bits; }

// The Hopper models' operands: FP8 only.
inline void require_operand_format(Format f) {
  if (f != Format::e4m3 && f != Format::e5m2)
    throw std::invalid_argument("fp8ref: GEMM operands must be e4m3 or e5m2, got " +
                                std::string(to_string(f)));
}

// `exact`'s operands: FP8, FP6 or FP4 (docs/models.md "`exact`").
inline void require_exact_operand_format(Format f) {
  if (!is_f8f6f4_operand(f))
    throw std::invalid_argument(
        "fp8ref: exact takes e4m3, e5m2, e3m2, e2m3 or e2m1 operands, got " +
        std::string(to_string(f)));
}

// Every product of an fa code and an fb code is an integer multiple of 2^product_unit_exp:
// e4m3 x e4m3 2^-18, e4m3 x e5m2 2^-25, e5m2 x e5m2 2^-32; the FP6 / FP4 units are coarser
// (e3m2 2^-4, e2m3 2^-3, e2m1 2^-1 per operand: e2m1 x e2m1 2^-2).
constexpr int product_unit_exp(Format fa, Format fb) {
  return fp8_emin(fa) - fp8_man_bits(fa) + fp8_emin(fb) - fp8_man_bits(fb);
}

// Exact sum of a[k]*b[k], k < n, in units of 2^product_unit_exp(fa, fb). Each product is below
// 2^64 units (e5m2: 7*7 * 2^58), so n < 2^63 terms fit in int128. Without e5m2 each product is
// below 2^36 units (e4m3: 14*14 * 2^28; e3m2 at most 7*7 * 2^12 units of its own, FP6 / FP4
// fewer) and the sum of < 2^27 terms is exact in int64, which the loop uses.
// Precondition: all codes finite (see dot_has_nonfinite).
inline i128 exact_dot_units(const std::uint8_t* a, const std::uint8_t* b, std::int64_t n, Format fa,
                            Format fb) {
  const int emin_a = fp8_emin(fa), emin_b = fp8_emin(fb);
  const Fp8Parts *ta = fp8_parts_table(fa), *tb = fp8_parts_table(fb);
  if (fa != Format::e5m2 && fb != Format::e5m2 && n < (std::int64_t{1} << 27)) {
    std::int64_t s = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      const Fp8Parts x = ta[a[k]], y = tb[b[k]];
      s += std::int64_t(x.sig * y.sig) << ((x.exp - emin_a) + (y.exp - emin_b));
    }
    return s;
  }
  i128 s = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const Fp8Parts x = ta[a[k]], y = tb[b[k]];
    s += i128(x.sig * y.sig) << ((x.exp - emin_a) + (y.exp - emin_b));
  }
  return s;
}

inline bool dot_has_nonfinite(const std::uint8_t* a, const std::uint8_t* b, std::int64_t n,
                              Format fa, Format fb) {
  const Fp8Parts *ta = fp8_parts_table(fa), *tb = fp8_parts_table(fb);
  bool finite = true;
  for (std::int64_t k = 0; k < n; ++k) finite &= ta[a[k]].finite & tb[b[k]].finite;
  return !finite;
}

// A finite f32 as sig * 2^exp with |sig| < 2^24 (sig = 0 for zero).
struct F32Parts {
  std::int64_t sig;
  int exp;
};
inline F32Parts f32_parts(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const int field = int((u >> 23) & 0xFF);
  const std::int64_t mag = field ? (std::int64_t{1} << 23) | (u & 0x7FFFFF) : (u & 0x7FFFFF);
  return {(u >> 31) ? -mag : mag, (field ? field : 1) - 127 - 23};
}

// A finite non-zero f32 as odd * 2^exp (fewer significant bits: pow2 scales become 1 * 2^e).
inline F32Parts f32_parts_odd(float x) {
  F32Parts p = f32_parts(x);
  if (p.sig == 0) return p;
  const int tz = std::countr_zero(std::uint64_t(p.sig < 0 ? -p.sig : p.sig));
  return {p.sig / (std::int64_t{1} << tz), p.exp + tz};
}

namespace detail {

// RNE of (keep, half, sticky) at quantum 2^q to `d`, as an f64 (overflow to ±Inf).
inline double finish_rounding(std::uint64_t keep, bool half, bool sticky, int q, bool neg,
                              OutDtype d) {
  if (half && (sticky || (keep & 1))) ++keep;
  double z = std::ldexp(double(keep), q);  // keep <= 2^24: exact in f64
  if (z >= std::ldexp(1.0, out_max_exp(d) + 1)) z = std::numeric_limits<double>::infinity();
  return neg ? -z : z;
}

constexpr int bit_length(u128 x) {
  const std::uint64_t hi = std::uint64_t(x >> 64), lo = std::uint64_t(x);
  return hi ? 128 - std::countl_zero(hi) : lo ? 64 - std::countl_zero(lo) : 0;
}

}  // namespace detail

// The value sig * 2^exp rounded once (RNE) to `d` with gradual underflow and overflow to ±Inf,
// returned as an f64 holding that value; an exact zero gives +0. Requires |sig| < 2^127.
inline double round_to(i128 sig, int exp, OutDtype d) {
  if (sig == 0) return 0.0;
  const bool neg = sig < 0;
  const u128 mag = neg ? u128(-sig) : u128(sig);
  const int top = detail::bit_length(mag) - 1;
  const int lead = exp + top;  // exponent of the leading bit
  const int q = std::max(lead, out_min_exp(d)) - (out_precision(d) - 1);  // quantum exponent
  const int s = q - exp;                                                  // bits to drop
  if (s <= 0) return detail::finish_rounding(std::uint64_t(mag) << -s, false, false, q, neg, d);
  if (s > 128) return detail::finish_rounding(0, false, true, q, neg, d);
  const std::uint64_t keep = s == 128 ? 0 : std::uint64_t(mag >> s);
  const bool half = (mag >> (s - 1)) & 1;
  const bool sticky = s > 1 && (mag & ((u128(1) << (s - 1)) - 1)) != 0;
  return detail::finish_rounding(keep, half, sticky, q, neg, d);
}

// A two's-complement fixed-point accumulator (Kulisch-style) of 15 limbs with bit 0 = 2^-384:
// adds i128 * 2^e terms exactly, then rounds once. Accepts -384 <= e < 320 (else
// std::range_error). Every term `exact` forms lies there (docs/models.md "`exact`", the exactness
// fact of design.md §9): a block partial in product units 2^-32 (e5m2 x e5m2) .. 2^-2 (e2m1 x
// e2m1) times a scale product whose odd significands carry the exponents. An f32 scale's odd
// exponent is -149..127 (E8M0 0x00 = 2^-127 and 0xFE = 2^127 included), so e lies in
// [-32 - 298, -2 + 254] = [-330, 252]. NVFP4 adds the f32 tensor scale to each side's ue4m3 block
// scale (odd exponents -9 (2^-9) .. 8 (256), tensor -149..127): e in [-2 - 316, -2 + 270] =
// [-318, 268] for e2m1 x e2m1, hence the 15th limb (14 held e < 256). Above the top term 128+
// bits of headroom for carries, so any sum of fewer than 2^100 terms is exact. No heap allocation.
class ExactAccumulator {
 public:
  static constexpr int kLimbs = 15;
  static constexpr int kBase = -384;

  void add(i128 sig, int exp) {
    if (sig == 0) return;
    const int shift = exp - kBase;
    if (shift < 0 || shift / 64 + 4 > kLimbs - 1)
      throw std::range_error("fp8ref: ExactAccumulator term 2^" + std::to_string(exp) +
                             " outside its range");
    nonzero_ = true;
    const u128 v = u128(sig);
    const std::uint64_t ext = sig < 0 ? ~std::uint64_t{0} : 0;
    const std::uint64_t w[3] = {std::uint64_t(v), std::uint64_t(v >> 64), ext};
    const int bit = shift % 64;
    std::size_t i = std::size_t(shift / 64);
    std::uint64_t carry = 0, prev = 0;
    for (int j = 0; j < 4; ++j, ++i) {  // the 192-bit sign-extended term shifted into 4 limbs
      const std::uint64_t cur = j < 3 ? w[j] : ext;
      const std::uint64_t part = bit ? (cur << bit) | (prev >> (64 - bit)) : cur;
      prev = cur;
      add_limb(i, part, carry);
    }
    for (; i < std::size_t(kLimbs) && (carry || ext); ++i) add_limb(i, ext, carry);
  }

  bool empty() const { return !nonzero_; }

  // The exact sum rounded to nearest-even in `d` (gradual underflow, overflow to ±Inf); an exact
  // zero gives +0.
  double round_to(OutDtype d) const {
    std::uint64_t mag[kLimbs];
    const bool neg = (limbs_[kLimbs - 1] >> 63) != 0;
    std::uint64_t carry = 1;
    for (int i = 0; i < kLimbs; ++i) {
      mag[i] = neg ? ~limbs_[i] + carry : limbs_[i];
      if (neg) carry = (carry && mag[i] == 0) ? 1 : 0;
    }
    int top = -1;
    for (int i = kLimbs - 1; i >= 0 && top < 0; --i)
      if (mag[i]) top = i * 64 + 63 - std::countl_zero(mag[i]);
    if (top < 0) return 0.0;
    const int q = std::max(kBase + top, out_min_exp(d)) - (out_precision(d) - 1);
    const int s = q - kBase;  // > 0: q >= -149 - 0 > kBase
    const std::uint64_t keep = bits_at(mag, s, top - s + 1);
    const bool half = bits_at(mag, s - 1, 1) != 0;
    bool sticky = false;
    for (int i = 0; i < (s - 1) / 64 && !sticky; ++i) sticky = mag[i] != 0;
    const int rem = (s - 1) % 64;
    if (!sticky && rem) sticky = (mag[(s - 1) / 64] & ((std::uint64_t{1} << rem) - 1)) != 0;
    return detail::finish_rounding(keep, half, sticky, q, neg, d);
  }

 private:
  // `count` (<= 25) bits of m starting at bit `pos` (>= 0).
  static std::uint64_t bits_at(const std::uint64_t* m, int pos, int count) {
    if (count <= 0) return 0;
    const int i = pos / 64, b = pos % 64;
    std::uint64_t w = m[i] >> b;
    if (b && i + 1 < kLimbs) w |= m[i + 1] << (64 - b);
    return w & ((std::uint64_t{1} << count) - 1);
  }
  void add_limb(std::size_t i, std::uint64_t x, std::uint64_t& carry) {
    const std::uint64_t a = limbs_[i];
    const std::uint64_t s1 = a + x;
    const std::uint64_t s2 = s1 + carry;
    carry = (s1 < a || s2 < s1) ? 1 : 0;
    limbs_[i] = s2;
  }

  std::uint64_t limbs_[kLimbs] = {};  // little-endian, two's complement
  bool nonzero_ = false;
};

// The exact sum of terms t[i]·2^e[i] rounded once to `d`. When all terms fit one i128 window
// (the common case: scale exponents within a few dozen binades) the sum is formed in i128,
// otherwise in an ExactAccumulator; the result is the same either way. |t[i]| < 2^120.
inline double round_terms(const i128* t, const int* e, std::int64_t n, OutDtype d) {
  int e_min = std::numeric_limits<int>::max(), top = std::numeric_limits<int>::min();
  for (std::int64_t i = 0; i < n; ++i) {
    if (t[i] == 0) continue;
    e_min = std::min(e_min, e[i]);
    top = std::max(top, e[i] + detail::bit_length(u128(t[i] < 0 ? -t[i] : t[i])));
  }
  if (top == std::numeric_limits<int>::min()) return 0.0;
  if (top - e_min + std::bit_width(std::uint64_t(n)) <= 126) {
    i128 s = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (t[i] != 0) s += t[i] * (i128(1) << (e[i] - e_min));
    return round_to(s, e_min, d);
  }
  ExactAccumulator acc;
  for (std::int64_t i = 0; i < n; ++i) acc.add(t[i], e[i]);
  return acc.round_to(d);
}

// A model's f32 result converted to the output type, RNE (cvt.rn): f32 bits unchanged, bf16 by
// f32_to_bf16_rne, f16 with gradual underflow and overflow to ±Inf (NaN -> sign | 0x7E00).
inline std::uint32_t f32_to_out_bits(float x, OutDtype d) {
  if (d == OutDtype::f32) return std::bit_cast<std::uint32_t>(x);
  if (d == OutDtype::bf16) return f32_to_bf16_rne(x);
  if (std::isnan(x)) return (std::signbit(x) ? 0x8000u : 0u) | 0x7E00u;
  if (std::isinf(x)) return out_bits(double(x), OutDtype::f16);
  const F32Parts p = f32_parts(x);
  const double z =
      p.sig == 0 ? (std::signbit(x) ? -0.0 : 0.0) : round_to(p.sig, p.exp, OutDtype::f16);
  return out_bits(z, OutDtype::f16);
}

}  // namespace fp8ref
