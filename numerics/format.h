// FP8 and E8M0 formats: one traits struct per format, strong value types, policy enums.
// Implements docs/design.md §4 (formats) and names the policy tokens of §5 (rounding, overflow).
// Bit layouts follow the OCP 8-bit Floating Point Specification v1.0 and OCP MX v1.0 (E8M0).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fp8ref {

enum class Format : std::uint8_t { e4m3, e5m2, e8m0 };
enum class Rounding : std::uint8_t { rne, rtz, rup, rdn, sr };
enum class Overflow : std::uint8_t { sat, nonsat };
enum class Source : std::uint8_t { f32, f64, bf16, f16 };

// OCP E4M3 ("e4m3fn"): bias 7, no infinity, NaN = S.1111.111, max 0b0'1111'110 = 1.75 * 2^8 = 448.
struct E4m3Traits {
  static constexpr Format kFormat = Format::e4m3;
  static constexpr int kExpBits = 4;
  static constexpr int kManBits = 3;
  static constexpr int kBias = 7;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^-6
  static constexpr int kMaxExp = 8;                // exponent of the largest binade
  static constexpr bool kHasInf = false;
  static constexpr std::uint8_t kMaxFinite = 0b0'1111'110;     // 448
  static constexpr std::uint8_t kMinSubnormal = 0b0'0000'001;  // 2^-9
  static constexpr std::uint8_t kQuietNan = 0b0'1111'111;
  static constexpr std::uint8_t kInf = kQuietNan;  // no infinity: overflow goes to NaN
};

// OCP E5M2: IEEE-like, bias 15, Inf = S.11111.00, NaN = S.11111.{01,10,11},
// max 0b0'11110'11 = 1.75 * 2^15 = 57344.
struct E5m2Traits {
  static constexpr Format kFormat = Format::e5m2;
  static constexpr int kExpBits = 5;
  static constexpr int kManBits = 2;
  static constexpr int kBias = 15;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^-14
  static constexpr int kMaxExp = 15;
  static constexpr bool kHasInf = true;
  static constexpr std::uint8_t kMaxFinite = 0b0'11110'11;     // 57344
  static constexpr std::uint8_t kMinSubnormal = 0b0'00000'01;  // 2^-16
  static constexpr std::uint8_t kQuietNan = 0b0'11111'11;
  static constexpr std::uint8_t kInf = 0b0'11111'00;
};

// OCP MX E8M0 ("e8m0fnu"): unsigned power of two 2^(e-127), e in 0..254, 0xFF = NaN,
// no sign, no zero, no infinity.
struct E8m0Traits {
  static constexpr Format kFormat = Format::e8m0;
  static constexpr int kExpBits = 8;
  static constexpr int kManBits = 0;
  static constexpr int kBias = 127;
  static constexpr int kMinExp = -127;  // code 0x00
  static constexpr int kMaxExp = 127;   // code 0xFE
  static constexpr std::uint8_t kMaxFinite = 0xFE;
  static constexpr std::uint8_t kNan = 0xFF;
};

// Strong value types: a code plus its format, so an e4m3 byte cannot be decoded as e5m2.
struct e4m3_t {
  std::uint8_t bits;
  friend constexpr bool operator==(e4m3_t, e4m3_t) = default;
};
struct e5m2_t {
  std::uint8_t bits;
  friend constexpr bool operator==(e5m2_t, e5m2_t) = default;
};
struct e8m0_t {
  std::uint8_t bits;
  friend constexpr bool operator==(e8m0_t, e8m0_t) = default;
};

constexpr std::string_view to_string(Format f) {
  switch (f) {
    case Format::e4m3: return "e4m3";
    case Format::e5m2: return "e5m2";
    case Format::e8m0: return "e8m0";
  }
  return "?";
}
constexpr std::string_view to_string(Rounding r) {
  switch (r) {
    case Rounding::rne: return "rne";
    case Rounding::rtz: return "rtz";
    case Rounding::rup: return "rup";
    case Rounding::rdn: return "rdn";
    case Rounding::sr: return "sr";
  }
  return "?";
}
constexpr std::string_view to_string(Overflow o) { return o == Overflow::sat ? "sat" : "nonsat"; }
constexpr std::string_view to_string(Source s) {
  switch (s) {
    case Source::f32: return "f32";
    case Source::f64: return "f64";
    case Source::bf16: return "bf16";
    case Source::f16: return "f16";
  }
  return "?";
}

constexpr std::optional<Format> parse_format(std::string_view s) {
  for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0})
    if (to_string(f) == s) return f;
  return std::nullopt;
}
constexpr std::optional<Rounding> parse_rounding(std::string_view s) {
  for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::sr})
    if (to_string(r) == s) return r;
  return std::nullopt;
}
constexpr std::optional<Source> parse_source(std::string_view s) {
  for (Source x : {Source::f32, Source::f64, Source::bf16, Source::f16})
    if (to_string(x) == s) return x;
  return std::nullopt;
}

// Width in bits of a source type's bit pattern.
constexpr int source_bits(Source s) {
  switch (s) {
    case Source::f32: return 32;
    case Source::f64: return 64;
    case Source::bf16: return 16;
    case Source::f16: return 16;
  }
  return 0;
}

}  // namespace fp8ref
