// Every bf16 and every f16 input under every profile x format x rounding the profile has (sr
// left to the stochastic suite): the codec equals the table oracle applied to the exactly widened
// value with the profile's declared policy (docs/design.md §14: small domains are checked
// exhaustively).
#include <gtest/gtest.h>

#include <bit>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/common/sweep_report.h"

namespace {

using namespace fp8ref;

// Exact widening by the hardware's own conversions (independent of source.h).
std::uint64_t widen(Source s, std::uint16_t h) {
  if (s == Source::bf16)
    return std::bit_cast<std::uint64_t>(double(std::bit_cast<float>(std::uint32_t(h) << 16)));
  return std::bit_cast<std::uint64_t>(double(std::bit_cast<_Float16>(h)));
}

std::uint8_t table_oracle(const ProfileCodec& pc, std::uint64_t d) {
  return pc.format == Format::e8m0 ? oracle::table_oracle_encode_e8m0(d, pc.e8m0)
                                   : oracle::table_oracle_encode(pc.format, d, pc.fp8);
}

void sweep_16bit(Source s) {
  std::vector<ProfileCodec> codecs;
  std::vector<std::string> names;
  for (Profile p : kAllProfiles)
    for (Format f : kAllFormats)
      for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
        try {
          codecs.push_back(make_codec(p, f, s, r));
        } catch (const std::invalid_argument&) {
          continue;
        }
        names.push_back(std::string(to_string(f)) + " " + std::string(to_string(p)) + " " +
                        std::string(to_string(r)));
      }
  const test::SweepLog log = test::parallel_sweep(
      std::uint64_t{1} << 16,
      [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t x = b; x < e; ++x) {
          const std::uint64_t d = widen(s, std::uint16_t(x));
          for (std::size_t k = 0; k < codecs.size(); ++k) {
            const std::uint8_t ref_z = table_oracle(codecs[k], d);
            const std::uint8_t got_z = codecs[k].encode(x);
            if (got_z != ref_z) l.add(x, int(k), ref_z, got_z);
          }
        }
      },
      1 << 12);
  std::cout << codecs.size() << " profile x format x rounding casts" << std::endl;
  test::report_sweep("every_" + std::string(to_string(s)) + "_vs_table_oracle",
                     (std::uint64_t{1} << 16) * codecs.size(), log, names, 4);
}

TEST(CodecExhaustive16Bit, EveryProfileMatchesTableOracleOnEveryBf16) { sweep_16bit(Source::bf16); }

TEST(CodecExhaustive16Bit, EveryProfileMatchesTableOracleOnEveryF16) { sweep_16bit(Source::f16); }

}  // namespace
