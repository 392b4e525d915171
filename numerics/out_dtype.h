// The output types of the reference operations (docs/design.md §4): f32, bf16 and f16, with their
// tokens, precision and range, the bit pattern of a value held exactly in an f64, and the
// round-to-nearest-even f32 -> bf16 conversion. Rounding an exact value to an output type is
// numerics/models/exact_sum.h (round_to) and a model's f32 result, f32_to_out_bits there.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace fp8ref {

// Output formats of the reference ops: binary32, bfloat16 (8 significant bits, f32 range) and
// IEEE binary16 (11 significant bits, normal exponents -14..15, max 65504).
enum class OutDtype : std::uint8_t { f32, bf16, f16 };

constexpr int out_precision(OutDtype d) {
  return d == OutDtype::f32 ? 24 : d == OutDtype::bf16 ? 8 : 11;
}
constexpr int out_min_exp(OutDtype d) {
  return d == OutDtype::f16 ? -14 : -126;
}  // smallest normal
constexpr int out_max_exp(OutDtype d) { return d == OutDtype::f16 ? 15 : 127; }
constexpr const char* to_string(OutDtype d) {
  return d == OutDtype::f32 ? "f32" : d == OutDtype::bf16 ? "bf16" : "f16";
}
constexpr std::optional<OutDtype> parse_out_dtype(std::string_view s) {
  for (OutDtype d : {OutDtype::f32, OutDtype::bf16, OutDtype::f16})
    if (std::string_view(to_string(d)) == s) return d;
  return std::nullopt;
}

// f32 -> bf16 bits, round to nearest even (NaN stays NaN, quiet, sign kept).
constexpr std::uint16_t f32_to_bf16_rne(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return std::uint16_t((u >> 16) | 0x0040);
  const std::uint32_t rounded = u + 0x7FFF + ((u >> 16) & 1);
  return std::uint16_t(rounded >> 16);
}
constexpr float bf16_to_f32(std::uint16_t h) {
  return std::bit_cast<float>(std::uint32_t(h) << 16);
}

// The bit pattern of an f64 that holds a value of `d` exactly (f32: 32 bits; bf16, f16: 16).
inline std::uint32_t out_bits(double z, OutDtype d) {
  if (d != OutDtype::f16) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(float(z));
    return d == OutDtype::f32 ? u : u >> 16;
  }
  const std::uint32_t sign = std::signbit(z) ? 0x8000u : 0u;
  if (std::isnan(z)) return sign | 0x7E00u;
  if (std::isinf(z)) return sign | 0x7C00u;
  const double a = std::fabs(z);
  if (a < 0x1p-14) return sign | std::uint32_t(a * 0x1p24);  // subnormal (or zero)
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m·2^e, m in [0.5, 1)
  return sign | std::uint32_t(e - 1 + 15) << 10 | (std::uint32_t(m * 2048.0) - 1024u);
}

// The value of a bit pattern of `d` (bf16 / f16 in the low 16 bits), exactly, as an f64.
inline double out_value(std::uint32_t bits, OutDtype d) {
  if (d == OutDtype::f32) return double(std::bit_cast<float>(bits));
  if (d == OutDtype::bf16) return double(std::bit_cast<float>(bits << 16));
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int field = int((bits >> 10) & 0x1F), man = int(bits & 0x3FF);
  if (field == 31) return man ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * (field ? std::ldexp(1024.0 + man, field - 25) : std::ldexp(double(man), -24));
}

}  // namespace fp8ref
