// Source floating-point types (f32, f64, bf16, f16): exact widening of their bit patterns to
// f64, and the one narrowing that libraries put in front of FP8 casts (f64 -> f32, RNE).
// f32, bf16 and f16 values are all exact in f64, so widening never rounds (docs/design.md §5).
#pragma once

#include <bit>
#include <cstdint>

#include "numerics/format.h"

namespace fp8ref {

// IEEE binary16 pattern -> f64 bits, exactly (subnormals, Inf, NaN payload kept in the top bits).
constexpr std::uint64_t f16_to_f64_bits(std::uint16_t h) {
  const std::uint64_t sign = std::uint64_t(h >> 15) << 63;
  const int exp_field = (h >> 10) & 0x1F;
  const std::uint64_t man = h & 0x3FF;
  if (exp_field == 0x1F) return sign | 0x7FF0000000000000ULL | (man << 42);
  if (exp_field == 0) {
    if (man == 0) return sign;
    // man * 2^-24: normalise the leading one into the hidden bit
    const int lead = 63 - std::countl_zero(man);  // 0..9
    const std::uint64_t frac = (man << (52 - lead)) & ((std::uint64_t{1} << 52) - 1);
    return sign | (std::uint64_t(lead - 24 + 1023) << 52) | frac;
  }
  return sign | (std::uint64_t(exp_field - 15 + 1023) << 52) | (man << 42);
}

// bfloat16 pattern -> f64 bits (a bf16 is the top half of an f32).
constexpr std::uint64_t bf16_to_f64_bits(std::uint16_t b) {
  const float f = std::bit_cast<float>(std::uint32_t(b) << 16);
  const bool nan = (b & 0x7FFF) > 0x7F80;
  if (nan)  // keep sign and payload (the float -> double conversion may quiet it)
    return (std::uint64_t(b >> 15) << 63) | 0x7FF0000000000000ULL |
           (std::uint64_t(b & 0x7F) << 45) | (std::uint64_t{1} << 51);
  return std::bit_cast<std::uint64_t>(static_cast<double>(f));
}

// binary32 pattern -> f64 bits, exactly. NaN keeps sign and payload and is made quiet, as every
// IEEE implementation does when widening.
constexpr std::uint64_t f32_to_f64_bits(std::uint32_t u) {
  if ((u & 0x7FFFFFFF) > 0x7F800000)
    return (std::uint64_t(u >> 31) << 63) | 0x7FF0000000000000ULL |
           (std::uint64_t(u & 0x7FFFFF) << 29) | (std::uint64_t{1} << 51);
  return std::bit_cast<std::uint64_t>(static_cast<double>(std::bit_cast<float>(u)));
}

// f64 -> f32, round to nearest even (the default IEEE narrowing torch and numpy use).
constexpr std::uint32_t f64_to_f32_bits_rne(std::uint64_t d) {
  return std::bit_cast<std::uint32_t>(static_cast<float>(std::bit_cast<double>(d)));
}

// A source bit pattern (low source_bits(s) bits of `bits`) widened to f64 bits.
constexpr std::uint64_t source_to_f64_bits(Source s, std::uint64_t bits) {
  switch (s) {
    case Source::f32: return f32_to_f64_bits(std::uint32_t(bits));
    case Source::f64: return bits;
    case Source::bf16: return bf16_to_f64_bits(std::uint16_t(bits));
    case Source::f16: return f16_to_f64_bits(std::uint16_t(bits));
  }
  return 0;
}

}  // namespace fp8ref
