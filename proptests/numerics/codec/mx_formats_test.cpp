// The OCP MX element formats FP4 E2M1, FP6 E2M3 / E3M2 and NVFP4's UE4M3 scale through the one
// generic codec (numerics/codec.h): decode of every code against the OCP MX v1.0 value tables
// (§5.3.3, written out here), and encode under every rounding x overflow x NaN x Inf policy
// against the table oracle on class-weighted f64 inputs. The ml_dtypes 0.6 profile is held to the
// ml_dtypes package over every f32 / bf16 / f16 input by proptests/numerics/codec/mx_formats_ml_dtypes.py.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "numerics/codec.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/input_classes.h"
#include "proptests/common/test_level.h"

namespace {

using namespace fp8ref;

constexpr Format kMxFormats[] = {Format::e2m1, Format::e2m3, Format::e3m2, Format::ue4m3};

// OCP MX v1.0 §5.3.3: the non-negative magnitudes, code order. FP6 E2M3: k/8 for k < 8
// (subnormals), then (1 + m/8) * 2^(e-1); FP6 E3M2: k/16 for k < 4, then (1 + m/4) * 2^(e-3).
constexpr double kE2m1Values[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

double ocp_magnitude(Format f, int m) {
  if (f == Format::e2m1) return kE2m1Values[m];
  if (f == Format::e2m3) return m < 8 ? m / 8.0 : (1 + (m % 8) / 8.0) * std::ldexp(1.0, m / 8 - 1);
  if (f == Format::e3m2) return m < 4 ? m / 16.0 : (1 + (m % 4) / 4.0) * std::ldexp(1.0, m / 4 - 3);
  // ue4m3: the E4M3 magnitudes (8 subnormals k * 2^-9, then (1 + m/8) * 2^(e-7)); 0x7F is NaN
  return m < 8 ? m * std::ldexp(1.0, -9) : (1 + (m % 8) / 8.0) * std::ldexp(1.0, m / 8 - 7);
}

TEST(MxFormats, DecodeOfEveryCodeEqualsTheOcpMxValueTable) {
  for (Format f : kMxFormats) {
    const int bits = format_bits(f);
    const int sign = f == Format::ue4m3 ? 0 : 1 << (bits - 1);
    for (int c = 0; c < 256; ++c) {
      SCOPED_TRACE(std::string(to_string(f)) + " code " + std::to_string(c));
      const int low = c & ((1 << bits) - 1);  // bits above the format's width are ignored
      const int m = f == Format::ue4m3 ? (c & 0x7F) : (low & (sign - 1));
      const double got = decode_f64(f, std::uint8_t(c));
      if (f == Format::ue4m3 && m == 0x7F) {
        EXPECT_TRUE(std::isnan(got));
        continue;
      }
      const double want = (low & sign) ? -ocp_magnitude(f, m) : ocp_magnitude(f, m);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want));
    }
  }
  EXPECT_EQ(decode_f64(Format::e2m1, 0x7), 6.0);
  EXPECT_EQ(decode_f64(Format::e2m3, 0x1F), 7.5);
  EXPECT_EQ(decode_f64(Format::e3m2, 0x1F), 28.0);
  EXPECT_EQ(decode_f64(Format::ue4m3, 0xFE), 448.0);  // the sign bit is ignored
}

// Every policy combination, class-weighted f64 inputs (10^5 per format at level 1, every class).
TEST(MxFormats, EveryRoundingOverflowNanAndInfPolicyMatchesTheTableOracle) {
  const int n = 100000 * test::level_factor();
  long checked = 0, mismatches = 0;
  test::SplitMix64 r{20261125};
  for (Format f : kMxFormats)
    for (int i = 0; i < n; ++i) {
      const test::InputClass cls =
          test::kAllInputClasses[r.below(std::size(test::kAllInputClasses))];
      const std::uint64_t x = test::draw_input(f, cls, r);
      for (Rounding rd : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::sr})
        for (Overflow o : {Overflow::sat, Overflow::nonsat})
          for (NanEncoding nan : {NanEncoding::quiet_signed, NanEncoding::ml_dtypes,
                                  NanEncoding::positive_all_ones, NanEncoding::double_payload})
            for (InfEncoding inf : {InfEncoding::keep, InfEncoding::saturate}) {
              const EncodeSpec spec{rd, o, nan, inf, int(1 + r.below(32))};
              const std::uint32_t rand = std::uint32_t(r.next());
              const std::uint8_t ref_z = oracle::table_oracle_encode(f, x, spec, rand);
              const std::uint8_t got_z = encode_minifloat_bits(f, x, spec, rand);
              ++checked;
              if (got_z != ref_z && ++mismatches <= 10)
                ADD_FAILURE() << to_string(f) << " x=0x" << std::hex << x << " class "
                              << test::to_string(cls) << " rounding " << to_string(rd) << ' '
                              << to_string(o) << " nan " << int(nan) << " inf " << int(inf)
                              << ": ref 0x" << int(ref_z) << " got 0x" << int(got_z);
            }
    }
  std::cout << checked << " encodes, " << mismatches << " mismatches" << std::endl;
  EXPECT_EQ(mismatches, 0);
}

TEST(MxFormats, NanInfAndOverflowFollowTheProfiles) {
  const auto enc = [](Profile p, Format f, double x) {
    return make_codec(p, f, Source::f64, Rounding::rne).encode(std::bit_cast<std::uint64_t>(x));
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  // ml_dtypes 0.6 (measured): +NaN -> -0, -NaN -> +0, +-Inf and overflow -> +-max.
  EXPECT_EQ(enc(Profile::ml_dtypes_0_6, Format::e2m1, nan), 0x8);
  EXPECT_EQ(enc(Profile::ml_dtypes_0_6, Format::e2m1, -nan), 0x0);
  EXPECT_EQ(enc(Profile::ml_dtypes_0_6, Format::e2m3, -inf), 0x3F);
  EXPECT_EQ(enc(Profile::ml_dtypes_0_6, Format::e3m2, 1e9), 0x1F);
  // ocp: no NaN or Inf in FP6 / FP4, so NaN and Inf saturate keeping the sign, nonsat included.
  EXPECT_EQ(enc(Profile::ocp_nosat, Format::e2m1, -nan), 0xF);
  EXPECT_EQ(enc(Profile::ocp_nosat, Format::e2m1, 7.0), 0x7);  // the tie 6 / 8 goes to 8: max
  EXPECT_EQ(enc(Profile::ocp_sat, Format::e2m1, 5.0), 0x6);    // tie 4 / 6 -> even (4)
  // ue4m3 encodes |x|: -448 -> 0x7E; nonsat overflow -> NaN 0x7F; NaN never gets a sign.
  EXPECT_EQ(enc(Profile::ocp_sat, Format::ue4m3, -448.0), 0x7E);
  EXPECT_EQ(enc(Profile::ocp_nosat, Format::ue4m3, 500.0), 0x7F);
  EXPECT_EQ(enc(Profile::cuda_satfinite, Format::ue4m3, -nan), 0x7F);
  EXPECT_THROW(make_codec(Profile::torch_2_11, Format::e2m1, Source::f32, Rounding::rne),
               std::invalid_argument);
  EXPECT_THROW(make_codec(Profile::ml_dtypes_0_6, Format::ue4m3, Source::f32, Rounding::rne),
               std::invalid_argument);
}

}  // namespace
