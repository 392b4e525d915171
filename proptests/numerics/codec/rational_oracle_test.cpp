// The codec (through the ocp_* profiles and directly with every NaN / Inf / E8M0 policy) and the
// table oracle against the rational oracle on class-weighted f64 inputs (docs/numerics.md
// "Verification"), at level 1 10^6 inputs per format, each under every rounding x overflow (rne rtz
// rup rdn x sat nonsat), so 10^6 per combination. Each RapidCheck case is one input class and one
// batch.
#include "numerics/oracle/rational_oracle.h"

#include <rapidcheck.h>

#include <bit>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"
#include "proptests/numerics/codec/input_classes.h"

namespace {

using namespace fp8ref;
using test::SweepLog;

constexpr int kBatch = 2000;  // inputs per case, checked on every thread
constexpr int kCases = 500;   // level 1: 500 x 2000 = 10^6 inputs per format

constexpr Rounding kRoundings[] = {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn};
constexpr NanEncoding kNanEncodings[] = {NanEncoding::quiet_signed, NanEncoding::ml_dtypes,
                                         NanEncoding::positive_all_ones,
                                         NanEncoding::double_payload};

std::vector<std::uint64_t> draw_batch(Format f) {
  const test::InputClass cls = *test::gen_input_class();
  const std::uint64_t seed = *test::gen_batch_seed();
  RC_CLASSIFY(true, std::string(test::to_string(cls)));
  test::SplitMix64 r{seed};
  std::vector<std::uint64_t> inputs(kBatch);
  for (std::uint64_t& x : inputs) x = test::draw_input(f, cls, r);
  return inputs;
}

// ---- e4m3 / e5m2 ------------------------------------------------------------------------------

struct Fp8Checks {
  std::vector<ProfileCodec> profiles;  // ocp_sat / ocp_nosat x 4 roundings, from f64
  std::vector<EncodeSpec> specials;    // NaN x Inf encodings x overflow, for NaN / Inf inputs
  std::vector<std::string> names;      // codec ones, then table oracle ones, then specials
};

Fp8Checks make_fp8_checks(Format f) {
  Fp8Checks c;
  for (Rounding r : kRoundings)
    for (Profile p : {Profile::ocp_sat, Profile::ocp_nosat})
      c.profiles.push_back(make_codec(p, f, Source::f64, r));
  for (const ProfileCodec& pc : c.profiles)
    c.names.push_back(test::config_name("codec", pc.profile, f, pc.rounding));
  for (const ProfileCodec& pc : c.profiles)
    c.names.push_back(test::config_name("table_oracle", pc.profile, f, pc.rounding));
  for (NanEncoding n : kNanEncodings)
    for (InfEncoding i : {InfEncoding::keep, InfEncoding::saturate})
      for (Overflow o : {Overflow::sat, Overflow::nonsat}) {
        c.specials.push_back({Rounding::rne, o, n, i, 32});
        c.names.push_back(test::spec_name("codec", f, c.specials.back()));
      }
  return c;
}

template <class T>
void check_fp8_input(const Fp8Checks& c, std::uint64_t bits, SweepLog& log) {
  const oracle::Fp8Input in = oracle::prepare_fp8(T::kFormat, bits);
  const int n = int(c.profiles.size());
  for (int k = 0; k < n; ++k) {
    const ProfileCodec& pc = c.profiles[k];
    // the policy the profile's name promises: ocp_sat saturates, ocp_nosat does not
    const Overflow o = pc.profile == Profile::ocp_sat ? Overflow::sat : Overflow::nonsat;
    const EncodeSpec spec{pc.rounding, o, pc.fp8.nan, pc.fp8.inf, 32};
    const std::uint8_t ref_z = oracle::rational_oracle_encode(in, spec);
    const std::uint8_t got_z = pc.encode(bits);
    if (got_z != ref_z) log.add(bits, k, ref_z, got_z);
    const std::uint8_t tab_z = oracle::table_oracle_encode(T::kFormat, bits, spec);
    if (tab_z != ref_z) log.add(bits, n + k, ref_z, tab_z);
  }
  if (in.v.kind == oracle::ValueKind::finite) return;
  for (std::size_t k = 0; k < c.specials.size(); ++k) {
    const std::uint8_t ref_z = oracle::rational_oracle_encode(in, c.specials[k]);
    const std::uint8_t got_z = encode_fp8_bits<T>(bits, c.specials[k]);
    if (got_z != ref_z) log.add(bits, 2 * n + int(k), ref_z, got_z);
  }
}

template <class T>
void check_fp8_batch() {
  static const Fp8Checks c = make_fp8_checks(T::kFormat);
  const std::vector<std::uint64_t> inputs = draw_batch(T::kFormat);
  const SweepLog log = test::parallel_sweep(
      inputs.size(),
      [&](std::uint64_t b, std::uint64_t e, SweepLog& l) {
        for (std::uint64_t i = b; i < e; ++i) check_fp8_input<T>(c, inputs[i], l);
      },
      64);
  test::rc_assert_batch_clean("codec_" + std::string(to_string(T::kFormat)) + "_vs_rational_oracle",
                              inputs.size(), log, c.names);
}

FP8REF_RC_PROP(CodecE4m3, MatchesRationalOracleOnClassWeightedF64, kCases, ()) {
  check_fp8_batch<E4m3Traits>();
}

FP8REF_RC_PROP(CodecE5m2, MatchesRationalOracleOnClassWeightedF64, kCases, ()) {
  check_fp8_batch<E5m2Traits>();
}

// ---- e8m0 -------------------------------------------------------------------------------------

struct E8m0Checks {
  std::vector<E8m0Spec> specs;         // every rounding x saturate x zero_is_nan x negative_is_nan
  std::vector<ProfileCodec> profiles;  // ocp_sat / ocp_nosat x rtz rup rne, from f64
  std::vector<std::string> names;      // codec specs, table oracle specs, profiles
};

E8m0Checks make_e8m0_checks() {
  E8m0Checks c;
  for (E8m0Rounding r : {E8m0Rounding::floor, E8m0Rounding::ceil, E8m0Rounding::nearest_ties_up,
                         E8m0Rounding::nearest_ties_even, E8m0Rounding::nearest_f32_field})
    for (int flags = 0; flags < 8; ++flags)
      c.specs.push_back({r, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0});
  for (const E8m0Spec& s : c.specs) c.names.push_back(test::e8m0_spec_name("codec", s));
  for (const E8m0Spec& s : c.specs) c.names.push_back(test::e8m0_spec_name("table_oracle", s));
  for (Profile p : {Profile::ocp_sat, Profile::ocp_nosat})
    for (Rounding r : {Rounding::rtz, Rounding::rup, Rounding::rne}) {
      c.profiles.push_back(make_codec(p, Format::e8m0, Source::f64, r));
      c.names.push_back(test::config_name("codec", p, Format::e8m0, r));
    }
  return c;
}

void check_e8m0_input(const E8m0Checks& c, std::uint64_t bits, SweepLog& log) {
  const oracle::E8m0Input in = oracle::prepare_e8m0(bits);
  const int n = int(c.specs.size());
  for (int k = 0; k < n; ++k) {
    const std::uint8_t ref_z = oracle::rational_oracle_encode_e8m0(in, c.specs[k]);
    const std::uint8_t got_z = encode_e8m0_bits(bits, c.specs[k]);
    if (got_z != ref_z) log.add(bits, k, ref_z, got_z);
    const std::uint8_t tab_z = oracle::table_oracle_encode_e8m0(bits, c.specs[k]);
    if (tab_z != ref_z) log.add(bits, n + k, ref_z, tab_z);
  }
  for (std::size_t k = 0; k < c.profiles.size(); ++k) {
    const ProfileCodec& pc = c.profiles[k];
    // ocp_*: rtz = floor, rup = ceil, rne = nearest with ties to the even exponent
    const E8m0Rounding mode = pc.rounding == Rounding::rtz   ? E8m0Rounding::floor
                              : pc.rounding == Rounding::rup ? E8m0Rounding::ceil
                                                             : E8m0Rounding::nearest_ties_even;
    const E8m0Spec spec{mode, pc.profile == Profile::ocp_sat, pc.e8m0.zero_is_nan,
                        pc.e8m0.negative_is_nan};
    const std::uint8_t ref_z = oracle::rational_oracle_encode_e8m0(in, spec);
    const std::uint8_t got_z = pc.encode(bits);
    if (got_z != ref_z) log.add(bits, 2 * n + int(k), ref_z, got_z);
  }
}

FP8REF_RC_PROP(CodecE8m0, MatchesRationalOracleOnClassWeightedF64, kCases, ()) {
  static const E8m0Checks c = make_e8m0_checks();
  const std::vector<std::uint64_t> inputs = draw_batch(Format::e8m0);
  const SweepLog log = test::parallel_sweep(
      inputs.size(),
      [&](std::uint64_t b, std::uint64_t e, SweepLog& l) {
        for (std::uint64_t i = b; i < e; ++i) check_e8m0_input(c, inputs[i], l);
      },
      64);
  test::rc_assert_batch_clean("codec_e8m0_vs_rational_oracle", inputs.size(), log, c.names);
}

}  // namespace
