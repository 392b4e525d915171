// All 2^32 f32 inputs against the table oracle (label exhaustive), one cast per
// format to stay within the CI budget, each on a path no external implementation checks: e4m3
// ocp_nosat rup and e5m2 ocp_sat rdn (directed roundings: both directions, both overflow
// policies), e8m0 ocp_sat rne (nearest, ties to the even exponent). The rne / rz / rp paths are
// swept against cuda_fp8.h itself (cuda_f32_exhaustive_test.cpp); every other profile x rounding
// is sampled (table_oracle_sampled_test.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <string>

#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/common/sweep_report.h"

namespace {

using namespace fp8ref;

constexpr std::uint64_t kAllF32 = std::uint64_t{1} << 32;

// Exact widening by the hardware conversion (independent of source.h).
std::uint64_t widen(std::uint32_t u) {
  return std::bit_cast<std::uint64_t>(double(std::bit_cast<float>(u)));
}

void sweep_f32(Profile p, Format f, Rounding r) {
  const ProfileCodec pc = make_codec(p, f, Source::f32, r);
  const auto t0 = std::chrono::steady_clock::now();
  const test::SweepLog log =
      test::parallel_sweep(kAllF32, [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t x = b; x < e; ++x) {
          const std::uint64_t d = widen(std::uint32_t(x));
          const std::uint8_t ref_z = f == Format::e8m0
                                         ? oracle::table_oracle_encode_e8m0(d, pc.e8m0)
                                         : oracle::table_oracle_encode(f, d, pc.fp8);
          const std::uint8_t got_z = pc.encode(x);
          if (got_z != ref_z) l.add(x, 0, ref_z, got_z);
        }
      });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string name =
      std::string(to_string(f)) + " " + std::string(to_string(p)) + " " + std::string(to_string(r));
  std::cout << name << ": " << s << " s on " << test::sweep_threads() << " threads" << std::endl;
  test::report_sweep(
      "f32_" + std::string(to_string(f)) + "_" + std::string(to_string(p)) + "_vs_table_oracle",
      kAllF32, log, {name}, 8);
}

TEST(CodecExhaustiveF32, E4m3OcpNosatRupMatchesTableOracleOnEveryF32) {
  sweep_f32(Profile::ocp_nosat, Format::e4m3, Rounding::rup);
}

TEST(CodecExhaustiveF32, E5m2OcpSatRdnMatchesTableOracleOnEveryF32) {
  sweep_f32(Profile::ocp_sat, Format::e5m2, Rounding::rdn);
}

TEST(CodecExhaustiveF32, E8m0OcpSatNearestEvenMatchesTableOracleOnEveryF32) {
  sweep_f32(Profile::ocp_sat, Format::e8m0, Rounding::rne);
}

}  // namespace
