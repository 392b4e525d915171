// Value classes of generated operands (docs/fuzz.md "Generators"): FP8 operand codes and f32
// source tensors by class, filled from one seed, so a case file stores the class and the seed's
// output and a draw shrinks by class and seed. Code fields are written here, not taken from the
// codec under test. The RapidCheck generator of a class lives in tools/campaign/gen/values.h.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "numerics/format.h"

namespace fp8ref::cases {

enum class ValueClass : std::uint8_t {
  normal,           // magnitudes 2^U(-8, 8)
  outliers,         // small values with rare values near the format's max
  subnormal_heavy,  // half of the values subnormal in the target format
  near_max,         // max, max - a few ulps, and their negatives
  integer,          // small integers (exactly representable; exact sums everywhere)
  nan_inf,          // normal values with NaN / Inf injected at a few positions
};
inline constexpr std::array kValueClasses = {ValueClass::normal,          ValueClass::outliers,
                                             ValueClass::subnormal_heavy, ValueClass::near_max,
                                             ValueClass::integer,         ValueClass::nan_inf};
constexpr const char* to_string(ValueClass v) {
  switch (v) {
    case ValueClass::normal: return "normal";
    case ValueClass::outliers: return "outliers";
    case ValueClass::subnormal_heavy: return "subnormal_heavy";
    case ValueClass::near_max: return "near_max";
    case ValueClass::integer: return "integer";
    case ValueClass::nan_inf: return "nan_inf";
  }
  return "?";
}

// Code fields of the two element formats (written here, not taken from the codec under test).
struct CodeFields {
  int man_bits, bias;
  std::uint8_t max_code;  // largest finite magnitude code
  std::uint8_t nan_code;  // a NaN magnitude code
  int inf_code;           // the +Inf magnitude code, -1 when the format has none
};
constexpr CodeFields code_fields(Format f) {
  return f == Format::e4m3 ? CodeFields{3, 7, 0x7E, 0x7F, -1} : CodeFields{2, 15, 0x7B, 0x7E, 0x7C};
}

// The code of magnitude 2^e·(1 + m/2^p) (normal, clamped to the finite range).
inline std::uint8_t code_of(Format f, int e, int m) {
  const CodeFields c = code_fields(f);
  int field = e + c.bias;
  if (field < 1) field = 1;
  int code = (field << c.man_bits) | (m & ((1 << c.man_bits) - 1));
  return std::uint8_t(code > c.max_code ? c.max_code : code);
}

// One operand's codes of class `v`, n of them, from `seed`.
inline std::vector<std::uint8_t> fill_codes(Format f, ValueClass v, std::int64_t n,
                                            std::uint64_t seed) {
  const CodeFields c = code_fields(f);
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> out(std::size_t(n > 0 ? n : 0));
  const int mmask = (1 << c.man_bits) - 1;
  const int emax = f == Format::e4m3 ? 8 : 15;
  auto sign = [&rng] { return std::uint8_t((rng() & 1) ? 0x80 : 0); };
  auto normal = [&] { return code_of(f, int(rng() % 17) - 8, int(rng() & std::uint64_t(mmask))); };
  for (auto& x : out) {
    std::uint8_t m = 0;
    switch (v) {
      case ValueClass::normal: m = normal(); break;
      case ValueClass::outliers:
        m = rng() % 64 == 0 ? std::uint8_t(c.max_code - rng() % 4)
                            : code_of(f, -int(rng() % 6), int(rng() & std::uint64_t(mmask)));
        break;
      case ValueClass::subnormal_heavy:
        m = (rng() & 1) ? std::uint8_t(rng() % std::uint64_t(mmask + 1)) : normal();
        break;
      case ValueClass::near_max:
        m = (rng() % 4) ? std::uint8_t(c.max_code - rng() % 3) : code_of(f, emax - 2, 0);
        break;
      case ValueClass::integer: {
        const int k = int(rng() % 9);  // 0..8: exact in both formats
        m = k == 0 ? 0
                   : code_of(f, std::bit_width(unsigned(k)) - 1,
                             (k << c.man_bits >> (std::bit_width(unsigned(k)) - 1)) & mmask);
        break;
      }
      case ValueClass::nan_inf:
        m = normal();
        if (rng() % 97 == 0)
          m = (c.inf_code >= 0 && (rng() & 1)) ? std::uint8_t(c.inf_code) : c.nan_code;
        break;
    }
    x = std::uint8_t(m | sign());
  }
  return out;
}

// f32 source values of class `v` (for quantizers), as bit patterns, around 2^scale_exp.
inline std::vector<std::uint32_t> fill_f32(ValueClass v, std::int64_t n, int scale_exp,
                                           std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> out(std::size_t(n > 0 ? n : 0));
  auto unit = [&rng] { return double(rng() >> 11) * 0x1.0p-53; };
  auto sgn = [&rng] { return (rng() & 1) ? -1.0 : 1.0; };
  auto normal = [&] { return sgn() * std::ldexp(1.0 + unit(), scale_exp + int(rng() % 17) - 8); };
  for (auto& x : out) {
    double d = 0;
    switch (v) {
      case ValueClass::normal: d = normal(); break;
      case ValueClass::outliers:
        d = rng() % 64 == 0 ? sgn() * std::ldexp(1.0 + unit(), scale_exp + 12) : normal();
        break;
      case ValueClass::subnormal_heavy:
        d = (rng() & 1) ? sgn() * std::ldexp(unit(), scale_exp - 20) : normal();
        break;
      case ValueClass::near_max:
        d = sgn() * std::ldexp(1.0 - unit() * 0x1.0p-20, scale_exp + 8);
        break;
      case ValueClass::integer: d = double(std::int64_t(rng() % 17) - 8); break;
      case ValueClass::nan_inf:
        d = normal();
        if (rng() % 97 == 0) d = (rng() & 1) ? std::nan("") : sgn() * INFINITY;
        break;
    }
    x = std::bit_cast<std::uint32_t>(float(d));
  }
  return out;
}

}  // namespace fp8ref::cases
