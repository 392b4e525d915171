// numerics/encode_table.h against the generic codec (ProfileCodec::encode, itself checked against
// the rational and table oracles and the peers), for every profile x format x non-stochastic
// rounding the profile has: every bf16 and f16 pattern; for f32 every (top 16 bits, sticky) class
// of the exactness argument, each through ten members with different low 16 bits. The 2^32 f32
// sweeps are in encode_table_f32_exhaustive_test.cpp.
#include "numerics/encode_table.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"

namespace {

using namespace fp8ref;

struct Casts {
  std::vector<ProfileCodec> codecs;
  std::vector<EncodeTable> tables;
  std::vector<std::string> names;
};

Casts every_cast(Source s) {
  Casts c;
  for (Profile p : kAllProfiles)
    for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0})
      for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
        try {
          c.codecs.push_back(make_codec(p, f, s, r));
        } catch (const std::invalid_argument&) {
          continue;
        }
        c.tables.emplace_back(c.codecs.back());
        c.names.push_back(test::config_name("table", p, f, r) + " from " +
                          std::string(to_string(s)));
      }
  std::cout << c.codecs.size() << " profile x format x rounding casts from " << to_string(s)
            << std::endl;
  return c;
}

// Batch and single-element paths are both checked; a mismatch of either is reported with the
// table's code that differs.
// Low halves that put the round and sticky decisions below bit 16 in every state: zero, the
// lowest and highest bit alone, all ones, the half-way patterns, and one that varies with hi.
std::array<std::uint32_t, 10> low_halves(std::uint32_t hi) {
  return {0x0000, 0x0001, 0x0002, 0x00FF, 0x0100,
          0x7FFF, 0x8000, 0x8001, 0xFFFF, (hi * 0x9E37u + 0x79B9u) & 0xFFFF};
}

TEST(EncodeTable, EqualsGenericCodecOnEveryF32Class) {
  const Casts c = every_cast(Source::f32);
  const test::SweepLog log = test::parallel_sweep(
      std::uint64_t{1} << 16,
      [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        std::vector<std::uint32_t> a;
        for (std::uint64_t hi = b; hi < e; ++hi)
          for (std::uint32_t lo : low_halves(std::uint32_t(hi)))
            a.push_back(std::uint32_t(hi << 16) | lo);
        std::vector<std::uint8_t> got(a.size());
        for (std::size_t k = 0; k < c.codecs.size(); ++k) {
          c.tables[k].encode_f32(a, got);
          for (std::size_t i = 0; i < a.size(); ++i) {
            const std::uint8_t ref_z = c.codecs[k].encode(a[i]);
            const std::uint8_t one_z = c.tables[k].encode(a[i]);
            if (got[i] != ref_z || one_z != ref_z)
              l.add(a[i], int(k), ref_z, got[i] != ref_z ? got[i] : one_z);
          }
        }
      },
      1 << 10);
  test::report_sweep("encode_table_f32_classes_vs_generic_codec",
                     (std::uint64_t{1} << 16) * 10 * c.codecs.size(), log, c.names, 8);
}

void sweep_16bit(Source s) {
  const Casts c = every_cast(s);
  std::vector<std::uint16_t> a(std::size_t{1} << 16);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint16_t(i);
  std::vector<std::uint8_t> got(a.size());
  test::SweepLog log;
  for (std::size_t k = 0; k < c.codecs.size(); ++k) {
    c.tables[k].encode_16(a, got);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::uint8_t ref_z = c.codecs[k].encode(a[i]);
      const std::uint8_t one_z = c.tables[k].encode16(a[i]);
      if (got[i] != ref_z || one_z != ref_z)
        log.add(a[i], int(k), ref_z, got[i] != ref_z ? got[i] : one_z);
    }
  }
  test::report_sweep("encode_table_every_" + std::string(to_string(s)) + "_vs_generic_codec",
                     a.size() * c.codecs.size(), log, c.names, 4);
}

TEST(EncodeTable, EqualsGenericCodecOnEveryBf16) { sweep_16bit(Source::bf16); }

TEST(EncodeTable, EqualsGenericCodecOnEveryF16) { sweep_16bit(Source::f16); }

// The message must say why, so that a caller knows to use ProfileCodec::encode instead.
void expect_invalid(const ProfileCodec& codec, const std::string& because) {
  try {
    EncodeTable t(codec);
    ADD_FAILURE() << "EncodeTable accepted "
                  << test::config_name("", codec.profile, codec.format, codec.rounding);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(because), std::string::npos) << e.what();
  }
}

TEST(EncodeTable, RejectsStochasticRoundingAndF64Sources) {
  expect_invalid(make_codec(Profile::ocp_sat, Format::e4m3, Source::f32, Rounding::sr),
                 "stochastic");
  expect_invalid(make_codec(Profile::ocp_nosat, Format::e5m2, Source::bf16, Rounding::sr),
                 "stochastic");
  expect_invalid(make_codec(Profile::ocp_sat, Format::e4m3, Source::f64, Rounding::rne), "f64");
  expect_invalid(make_codec(Profile::ml_dtypes_0_6, Format::e8m0, Source::f64, Rounding::rne),
                 "f64");
}

TEST(EncodeTable, BatchRejectsSizeMismatchAndWrongSource) {
  const EncodeTable f32(make_codec(Profile::ocp_sat, Format::e4m3, Source::f32, Rounding::rne));
  const EncodeTable bf16(make_codec(Profile::ocp_sat, Format::e4m3, Source::bf16, Rounding::rne));
  std::vector<std::uint32_t> a32(5);
  std::vector<std::uint16_t> a16(5);
  std::vector<std::uint8_t> z4(4), z5(5);
  EXPECT_THROW(f32.encode_f32(a32, z4), std::invalid_argument);
  EXPECT_THROW(bf16.encode_16(a16, z4), std::invalid_argument);
  EXPECT_THROW(f32.encode_16(a16, z5), std::invalid_argument);
  EXPECT_THROW(bf16.encode_f32(a32, z5), std::invalid_argument);
  EXPECT_NO_THROW(f32.encode_f32(a32, z5));
  EXPECT_NO_THROW(bf16.encode_16(a16, z5));
  EXPECT_NO_THROW(f32.encode_f32({}, {}));
}

}  // namespace
