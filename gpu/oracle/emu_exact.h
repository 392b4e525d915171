// The `exact` model of the GPU oracle (docs/gpu_oracle.md §3): per K block the exact integer sum
// of FP8 products, times the integer significands of the two scales, added into a 1024-bit
// two's-complement fixed-point accumulator (32 limbs of 32 bits, bit 0 = 2^-384), rounded once
// to the output type. __host__ __device__, held bitwise to reference/
// (numerics/models/exact_sum.h).
//
// Why it cannot overflow: a block sum is below 2^71 units (at most 2^7 products below 2^64 units
// each, e5m2 x e5m2), a term below 2^119 after the two 24-bit scale significands; term exponents
// lie in [-330, 236] (product units 2^-32..2^-18, scale exponents -149..104 each), so every term
// sits in bits [54, 355] and a sum of fewer than 2^100 terms (any K below 2^63) stays below bit
// 456 < 1023. No shape the library accepts is rejected.
#pragma once

#include <cstdint>

#include "gpu/oracle/emu_arith.h"

namespace fp8ref::gpu::emu {

class FixedAccumulator {
 public:
  static constexpr int kLimbs = 32;
  static constexpr int kBase = -384;

  // Adds t·2^e exactly (|t| < 2^127, kBase <= e, e + 160 < kBase + 1024).
  FP8REF_HD void add(i128 t, int e) {
    if (t == 0) return;
    const int shift = e - kBase, bit = shift % 32;
    const u128 v = u128(t);
    const std::uint32_t ext = t < 0 ? 0xFFFFFFFFu : 0u;
    std::uint32_t w[6] = {std::uint32_t(v),
                          std::uint32_t(v >> 32),
                          std::uint32_t(v >> 64),
                          std::uint32_t(v >> 96),
                          ext,
                          ext};
    std::uint32_t carry = 0, prev = 0;
    int i = shift / 32;
    for (int j = 0; j < 6 && i < kLimbs; ++j, ++i) {
      const std::uint32_t part = bit ? (w[j] << bit) | (prev >> (32 - bit)) : w[j];
      prev = w[j];
      add_limb(i, part, carry);
    }
    // The sign extension: adding 0 without carry, or ~0 with carry, leaves every higher limb.
    for (; i < kLimbs && !((ext == 0 && carry == 0) || (ext != 0 && carry == 1)); ++i)
      add_limb(i, ext, carry);
  }

  // The exact sum rounded once (RNE) to `d`; an exact zero gives +0.
  FP8REF_HD std::uint32_t round(OutDtype d) const {
    std::uint32_t mag[kLimbs];
    const bool neg = (limbs_[kLimbs - 1] >> 31) != 0;
    std::uint32_t carry = 1;
    int top = -1;
    for (int i = 0; i < kLimbs; ++i) {
      mag[i] = neg ? ~limbs_[i] + carry : limbs_[i];
      if (neg) carry = (carry && mag[i] == 0) ? 1 : 0;
      if (mag[i]) top = i * 32 + bit_length(mag[i]) - 1;
    }
    if (top < 0) return 0u;
    const int prec = precision(d), emn = min_exp(d);
    const int lead = kBase + top;
    const int q = (lead > emn ? lead : emn) - (prec - 1);
    const int s = q - kBase;  // > 0: q >= -149
    std::uint64_t keep = bits_at(mag, s, top - s + 1);
    const bool half = bits_at(mag, s - 1, 1) != 0;
    bool sticky = false;
    for (int i = 0; i < (s - 1) / 32; ++i) sticky = sticky || mag[i] != 0;
    const int rem = (s - 1) % 32;
    if (rem) sticky = sticky || (mag[(s - 1) / 32] & ((1u << rem) - 1)) != 0;
    if (half && (sticky || (keep & 1))) ++keep;
    return out_bits_of_exact(keep, q, neg, d);
  }

 private:
  // `count` (<= 25) bits of m from bit `pos`.
  FP8REF_HD static std::uint64_t bits_at(const std::uint32_t* m, int pos, int count) {
    if (count <= 0) return 0;
    const int i = pos / 32, b = pos % 32;
    std::uint64_t w = m[i];
    if (i + 1 < kLimbs) w |= std::uint64_t(m[i + 1]) << 32;
    return (w >> b) & ((std::uint64_t{1} << count) - 1);
  }
  FP8REF_HD void add_limb(int i, std::uint32_t x, std::uint32_t& carry) {
    const std::uint64_t s = std::uint64_t(limbs_[i]) + x + carry;
    limbs_[i] = std::uint32_t(s);
    carry = std::uint32_t(s >> 32);
  }

  std::uint32_t limbs_[kLimbs] = {};
};

// A finite f32 as odd·2^exp (sig 0 for zero).
struct OddParts {
  std::int64_t sig;
  int exp;
};
FP8REF_HD OddParts odd_parts(float x) {
  const std::uint32_t u = bits_of(x);
  const int field = int(u >> 23 & 0xFF);
  std::int64_t mag = field ? (u & 0x7FFFFF) | 0x800000 : (u & 0x7FFFFF);
  int exp = (field ? field : 1) - 150;
  if (mag == 0) return {0, exp};
  const int tz = count_trailing_zeros(std::uint64_t(mag));
  mag >>= tz;
  return {(u >> 31) ? -mag : mag, exp + tz};
}

// Exact sum of a[k]·b[k], k < n, in units of 2^(emin_a - pa + emin_b - pb). Finite codes only.
FP8REF_HD i128 block_units(const std::uint8_t* a, const std::uint8_t* b, std::int64_t n, Format fa,
                           Format fb) {
  const int ea0 = emin(fa), eb0 = emin(fb);
  if (fa == Format::e4m3 && fb == Format::e4m3) {
    std::int64_t s = 0;  // each product below 2^22 units
    for (std::int64_t k = 0; k < n; ++k) {
      const Fp8 x = fp8(fa, a[k]), y = fp8(fb, b[k]);
      s += std::int64_t(x.sig * y.sig) << ((x.exp - ea0) + (y.exp - eb0));
    }
    return s;
  }
  i128 s = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const Fp8 x = fp8(fa, a[k]), y = fp8(fb, b[k]);
    s += i128(x.sig * y.sig) << ((x.exp - ea0) + (y.exp - eb0));
  }
  return s;
}

}  // namespace fp8ref::gpu::emu
