// FP8, FP6, FP4 and scale formats: one traits struct per format, strong value types, policy
// enums. Implements docs/design.md §4 (formats) and names the policy tokens of §5 (rounding, overflow).
// Bit layouts follow the OCP 8-bit Floating Point Specification v1.0 and OCP MX v1.0 (E8M0, FP6
// E2M3 / E3M2, FP4 E2M1); UE4M3 is NVFP4's block scale (E4M3 with the sign bit ignored).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fp8ref {

enum class Format : std::uint8_t { e4m3, e5m2, e8m0, e2m1, e2m3, e3m2, ue4m3 };
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
  static constexpr bool kHasNan = true;
  static constexpr std::uint8_t kSignMask = 0x80;
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
  static constexpr bool kHasNan = true;
  static constexpr std::uint8_t kSignMask = 0x80;
  static constexpr std::uint8_t kMaxFinite = 0b0'11110'11;     // 57344
  static constexpr std::uint8_t kMinSubnormal = 0b0'00000'01;  // 2^-16
  static constexpr std::uint8_t kQuietNan = 0b0'11111'11;
  static constexpr std::uint8_t kInf = 0b0'11111'00;
};

// The OCP MX element formats below have neither infinity nor NaN: a value past max finite can
// only saturate, and what a NaN becomes is the profile's choice (docs/numerics.md). Codes are
// held one per byte in the low bits (FP4 in bits 3:0, FP6 in bits 5:0), the sign at the top.
// kQuietNan and kInf name the code an overflow or a NaN falls back to: max finite.

// OCP MX FP4 E2M1: bias 1, max 0b0'11'1 = 1.5 * 2^2 = 6, min subnormal 0b0'00'1 = 0.5.
struct E2m1Traits {
  static constexpr Format kFormat = Format::e2m1;
  static constexpr int kExpBits = 2;
  static constexpr int kManBits = 1;
  static constexpr int kBias = 1;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^0
  static constexpr int kMaxExp = 2;
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNan = false;
  static constexpr std::uint8_t kSignMask = 0b1'00'0;
  static constexpr std::uint8_t kMaxFinite = 0b0'11'1;     // 6
  static constexpr std::uint8_t kMinSubnormal = 0b0'00'1;  // 0.5
  static constexpr std::uint8_t kQuietNan = kMaxFinite;
  static constexpr std::uint8_t kInf = kMaxFinite;
};

// OCP MX FP6 E2M3: bias 1, max 0b0'11'111 = 1.875 * 2^2 = 7.5, min subnormal 0b0'00'001 = 2^-3.
struct E2m3Traits {
  static constexpr Format kFormat = Format::e2m3;
  static constexpr int kExpBits = 2;
  static constexpr int kManBits = 3;
  static constexpr int kBias = 1;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^0
  static constexpr int kMaxExp = 2;
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNan = false;
  static constexpr std::uint8_t kSignMask = 0b1'00'000;
  static constexpr std::uint8_t kMaxFinite = 0b0'11'111;     // 7.5
  static constexpr std::uint8_t kMinSubnormal = 0b0'00'001;  // 0.125
  static constexpr std::uint8_t kQuietNan = kMaxFinite;
  static constexpr std::uint8_t kInf = kMaxFinite;
};

// OCP MX FP6 E3M2: bias 3, max 0b0'111'11 = 1.75 * 2^4 = 28, min subnormal 0b0'000'01 = 2^-4.
struct E3m2Traits {
  static constexpr Format kFormat = Format::e3m2;
  static constexpr int kExpBits = 3;
  static constexpr int kManBits = 2;
  static constexpr int kBias = 3;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^-2
  static constexpr int kMaxExp = 4;
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNan = false;
  static constexpr std::uint8_t kSignMask = 0b1'000'00;
  static constexpr std::uint8_t kMaxFinite = 0b0'111'11;     // 28
  static constexpr std::uint8_t kMinSubnormal = 0b0'000'01;  // 0.0625
  static constexpr std::uint8_t kQuietNan = kMaxFinite;
  static constexpr std::uint8_t kInf = kMaxFinite;
};

// UE4M3, the NVFP4 block scale: the E4M3 layout with the sign bit ignored (cuBLAS and MMA-Sim
// read bit 7 as zero; MMA-Sim truncate_e4m3_to_ue4m3 clears it). Encoding writes the code of |x|
// (bit 7 clear); decoding ignores bit 7. Max 0x7E = 448, NaN 0x7F, no infinity.
struct Ue4m3Traits {
  static constexpr Format kFormat = Format::ue4m3;
  static constexpr int kExpBits = 4;
  static constexpr int kManBits = 3;
  static constexpr int kBias = 7;
  static constexpr int kMinNormalExp = 1 - kBias;  // 2^-6
  static constexpr int kMaxExp = 8;
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNan = true;
  static constexpr std::uint8_t kSignMask = 0;  // unsigned: no sign bit is written or read
  static constexpr std::uint8_t kMaxFinite = 0b0'1111'110;     // 448
  static constexpr std::uint8_t kMinSubnormal = 0b0'0000'001;  // 2^-9
  static constexpr std::uint8_t kQuietNan = 0b0'1111'111;
  static constexpr std::uint8_t kInf = kQuietNan;
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
    case Format::e2m1: return "e2m1";
    case Format::e2m3: return "e2m3";
    case Format::e3m2: return "e3m2";
    case Format::ue4m3: return "ue4m3";
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

inline constexpr std::array<Format, 7> kAllFormats = {Format::e4m3, Format::e5m2, Format::e8m0,
                                                      Format::e2m1, Format::e2m3, Format::e3m2,
                                                      Format::ue4m3};

constexpr std::optional<Format> parse_format(std::string_view s) {
  for (Format f : kAllFormats)
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

// Width in bits of a format's code (held in the low bits of a byte): 8, 6 (FP6) or 4 (FP4).
constexpr int format_bits(Format f) {
  switch (f) {
    case Format::e2m1: return 4;
    case Format::e2m3:
    case Format::e3m2: return 6;
    default: return 8;
  }
}
// The OCP MX element formats FP6 / FP4 (no infinity, no NaN).
constexpr bool is_mx_element_format(Format f) {
  return f == Format::e2m1 || f == Format::e2m3 || f == Format::e3m2;
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
