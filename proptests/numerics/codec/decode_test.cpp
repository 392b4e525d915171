// Decode over all 256 codes per format (docs/design.md §4): decode_f64 / decode_f32 equal the
// rational oracle's value of each code, and encode(decode(c)) == c for every non-NaN code under
// every profile, source type and rounding the profile has (Inf: == c unless the profile saturates
// it).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "numerics/codec.h"
#include "numerics/oracle/rational_oracle.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"

namespace {

using namespace fp8ref;

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};

TEST(CodecDecode, DecodeF64AndF32EqualTheRationalOracleValueOfEveryCode) {
  for (Format f : kFormats) {
    for (int c = 0; c < 256; ++c) {
      SCOPED_TRACE(std::string(to_string(f)) + " code " + std::to_string(c));
      const oracle::ExactValue want = oracle::code_value(f, std::uint8_t(c));
      const double got = decode_f64(f, std::uint8_t(c));
      const float got32 = decode_f32(f, std::uint8_t(c));
      const oracle::ExactValue have = oracle::f64_value(std::bit_cast<std::uint64_t>(got));
      ASSERT_EQ(int(have.kind), int(want.kind));
      if (want.kind == oracle::ValueKind::nan) {
        EXPECT_TRUE(std::isnan(got32));
        continue;
      }
      EXPECT_EQ(have.negative, want.negative);  // -0 decodes to -0.0, -Inf to -Inf
      if (want.kind == oracle::ValueKind::finite) {
        EXPECT_TRUE(have.value == want.value);
      }
      EXPECT_EQ(std::bit_cast<std::uint64_t>(double(got32)), std::bit_cast<std::uint64_t>(got));
    }
  }
}

// The value of a non-NaN code from the table oracle's table (not from decode under test).
std::optional<double> table_value(Format f, std::uint8_t c) {
  using namespace oracle::table_detail;
  if (f == Format::e8m0) return c == 0xFF ? std::nullopt : std::optional(kE8m0Table.value[c]);
  const MagnitudeTable& t = f == Format::e4m3 ? kE4m3Table : kE5m2Table;
  const double sign = (c & 0x80) ? -1.0 : 1.0;
  const int m = c & 0x7F;
  if (m < t.count) return sign * t.value[m];
  if (f == Format::e5m2 && m == 0x7C) return sign * INFINITY;
  return std::nullopt;  // NaN
}

// The source bit pattern of x when x is exact in that source type.
std::optional<std::uint64_t> source_bits_of(Source s, double x) {
  const float x32 = static_cast<float>(x);
  const bool f32_exact = std::isinf(x) || double(x32) == x;
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x32);
  switch (s) {
    case Source::f64: return std::bit_cast<std::uint64_t>(x);
    case Source::f32: return f32_exact ? std::optional<std::uint64_t>(u) : std::nullopt;
    case Source::bf16:
      return f32_exact && (u & 0xFFFF) == 0 ? std::optional<std::uint64_t>(u >> 16) : std::nullopt;
    case Source::f16: {
      const _Float16 h = static_cast<_Float16>(x);
      if (!(std::isinf(x) || double(h) == x)) return std::nullopt;
      return std::bit_cast<std::uint16_t>(h);
    }
  }
  return std::nullopt;
}

TEST(CodecDecode, EncodeOfDecodeIsIdentityForEveryNonNanCodeUnderEveryProfile) {
  long checked = 0;
  for (Profile p : kAllProfiles)
    for (Format f : kFormats)
      for (Source s : {Source::f32, Source::f64, Source::bf16, Source::f16})
        for (Rounding r :
             {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::sr}) {
          std::optional<ProfileCodec> pc;
          try {
            pc = make_codec(p, f, s, r);
          } catch (const std::invalid_argument&) {
            continue;  // the profile has no such cast
          }
          for (int c = 0; c < 256; ++c) {
            const std::optional<double> v = table_value(f, std::uint8_t(c));
            if (!v) continue;
            const std::optional<std::uint64_t> bits = source_bits_of(s, *v);
            if (!bits) continue;  // e8m0's extremes are not f16 values
            const bool inf = std::isinf(*v);
            const bool saturates_inf =
                pc->fp8.overflow == Overflow::sat && pc->fp8.inf == InfEncoding::saturate;
            const std::uint8_t max_code = f == Format::e4m3 ? 0x7E : 0x7B;
            const std::uint8_t want =
                inf && saturates_inf ? std::uint8_t(max_code | (c & 0x80)) : std::uint8_t(c);
            for (std::uint32_t rand : {0u, 0xFFFFFFFFu}) {
              const std::uint8_t got = pc->encode(*bits, rand);
              ++checked;
              if (got != want)
                ADD_FAILURE() << to_string(p) << ' ' << to_string(f) << " from " << to_string(s)
                              << ' ' << to_string(r) << ": code 0x" << std::hex << c
                              << " -> source 0x" << *bits << " -> 0x" << int(got) << ", want 0x"
                              << int(want);
            }
          }
        }
  std::cout << checked << " round trips checked" << std::endl;
  EXPECT_GT(checked, 0);
}

}  // namespace
