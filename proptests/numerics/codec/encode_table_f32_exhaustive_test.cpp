// All 2^32 f32 inputs: numerics/encode_table.h equals the generic codec (label exhaustive), for
// two casts whose exactness argument is finest, within a CI budget of ~20 s on 2 cores: e5m2 rne
// (round bit at fraction bit 20, ties decided by bits 16..19 plus sticky) and e8m0 nearest by
// the f32 field (torch / ml_dtypes: fraction bit 22, f32 subnormals compared with 0x00400000).
// Every other cast is checked on every (hi, sticky) class by encode_table_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "numerics/encode_table.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"

namespace {

using namespace fp8ref;

TEST(EncodeTableExhaustiveF32, EqualsGenericCodecOnEveryF32) {
  const std::vector<ProfileCodec> codecs = {
      make_codec(Profile::ml_dtypes_0_6, Format::e5m2, Source::f32, Rounding::rne),
      make_codec(Profile::torch_2_11, Format::e8m0, Source::f32, Rounding::rne)};
  std::vector<EncodeTable> tables;
  std::vector<std::string> names;
  for (const ProfileCodec& c : codecs) {
    ASSERT_FALSE(c.via_f32);
    tables.emplace_back(c);
    names.push_back(test::config_name("table", c.profile, c.format, c.rounding));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const test::SweepLog log = test::parallel_sweep(
      std::uint64_t{1} << 32, [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::size_t k = 0; k < codecs.size(); ++k) {
          const ProfileCodec& c = codecs[k];
          // ProfileCodec::encode of an f32 (no via_f32 step), its format switch hoisted.
          auto check = [&](auto encode_f64_bits) {
            for (std::uint64_t x = b; x < e; ++x) {
              const std::uint8_t ref_z = encode_f64_bits(f32_to_f64_bits(std::uint32_t(x)));
              const std::uint8_t got_z = tables[k].encode(std::uint32_t(x));
              if (got_z != ref_z) l.add(x, int(k), ref_z, got_z);
            }
          };
          if (c.format == Format::e8m0)
            check([&](std::uint64_t d) { return encode_e8m0_bits(d, c.e8m0); });
          else if (c.format == Format::e5m2)
            check([&](std::uint64_t d) { return encode_fp8_bits<E5m2Traits>(d, c.fp8); });
          else
            check([&](std::uint64_t d) { return encode_fp8_bits<E4m3Traits>(d, c.fp8); });
        }
      });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << codecs.size() << " casts: " << s << " s on " << test::sweep_threads() << " threads"
            << std::endl;
  test::report_sweep("encode_table_every_f32_vs_generic_codec",
                     (std::uint64_t{1} << 32) * codecs.size(), log, names, 8);
}

}  // namespace
