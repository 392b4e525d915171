// Every profile x format x rounding (sr excluded) from f32 and from f64 against the table oracle
// on sampled inputs: the complement of the one-profile-per-format 2^32 sweeps. f32 inputs are
// uniform bit patterns and class-weighted values moved by 0 / +-1 f32 ulp; f64 inputs are
// class-weighted, and the library profiles' f64 -> f32 RNE step is done here by the hardware.
#include <rapidcheck.h>

#include <bit>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"
#include "proptests/numerics/codec/input_classes.h"

namespace {

using namespace fp8ref;

constexpr int kBatch = 1 << 15;

std::vector<ProfileCodec> all_casts(Source s) {
  std::vector<ProfileCodec> v;
  for (Profile p : kAllProfiles)
    for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0})
      for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn}) try {
          v.push_back(make_codec(p, f, s, r));
        } catch (const std::invalid_argument&) {
        }
  return v;
}

std::uint8_t table_oracle(const ProfileCodec& pc, std::uint64_t d) {
  return pc.format == Format::e8m0 ? oracle::table_oracle_encode_e8m0(d, pc.e8m0)
                                   : oracle::table_oracle_encode(pc.format, d, pc.fp8);
}

// The f64 value the profile rounds: the input itself, or its f32 RNE rounding (hardware cast).
std::uint64_t as_rounded_by_profile(const ProfileCodec& pc, std::uint64_t d) {
  if (!pc.via_f32) return d;
  return std::bit_cast<std::uint64_t>(double(static_cast<float>(std::bit_cast<double>(d))));
}

void check_batch(const ProfileCodec& pc, const std::vector<std::uint64_t>& inputs) {
  test::SweepLog log;
  for (std::uint64_t x : inputs) {
    const std::uint64_t d =
        pc.source == Source::f32
            ? std::bit_cast<std::uint64_t>(double(std::bit_cast<float>(std::uint32_t(x))))
            : as_rounded_by_profile(pc, x);
    const std::uint8_t ref_z = table_oracle(pc, d);
    const std::uint8_t got_z = pc.encode(x);
    if (got_z != ref_z) log.add(x, 0, ref_z, got_z);
  }
  test::rc_assert_batch_clean("sampled_" + std::string(to_string(pc.source)) + "_vs_table_oracle",
                              inputs.size(), log,
                              {test::config_name("codec", pc.profile, pc.format, pc.rounding)});
}

FP8REF_RC_PROP(CodecSampled, EveryProfileMatchesTableOracleOnSampledF32, 100, ()) {
  static const std::vector<ProfileCodec> casts = all_casts(Source::f32);
  const ProfileCodec pc = *rc::gen::elementOf(casts);
  const test::InputClass cls = *test::gen_input_class();
  RC_CLASSIFY(true, std::string(to_string(pc.format)) + " " + std::string(test::to_string(cls)));
  test::SplitMix64 r{*test::gen_batch_seed()};
  std::vector<std::uint64_t> inputs(kBatch);
  for (std::uint64_t& x : inputs) {
    if (r.below(2)) {
      x = std::uint32_t(r.next());
      continue;
    }
    const double v = std::bit_cast<double>(test::draw_input(pc.format, cls, r));
    const std::uint32_t u = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    const bool finite = (u & 0x7F800000u) != 0x7F800000u;
    x = finite && (u & 0x7FFFFFFFu) != 0 ? std::uint32_t(u + std::uint32_t(r.below(3)) - 1) : u;
  }
  check_batch(pc, inputs);
}

FP8REF_RC_PROP(CodecSampled, EveryProfileMatchesTableOracleOnClassWeightedF64, 100, ()) {
  static const std::vector<ProfileCodec> casts = all_casts(Source::f64);
  const ProfileCodec pc = *rc::gen::elementOf(casts);
  const test::InputClass cls = *test::gen_input_class();
  RC_CLASSIFY(true, std::string(to_string(pc.format)) + " " + std::string(test::to_string(cls)));
  test::SplitMix64 r{*test::gen_batch_seed()};
  std::vector<std::uint64_t> inputs(kBatch);
  for (std::uint64_t& x : inputs) x = test::draw_input(pc.format, cls, r);
  check_batch(pc, inputs);
}

}  // namespace
