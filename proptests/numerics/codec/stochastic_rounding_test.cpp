// Stochastic rounding (docs/design.md §5, codec.h EncodeSpec::sr_bits): the result is
// always one of the two neighbours the rational oracle gives (toward and away from zero), and
// enumerating all 2^R random values rounds away exactly floor(frac * 2^R) times, frac computed
// rationally. Each random value's outcome also matches the table oracle's reading of the rule.
#include <rapidcheck.h>

#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/oracle/rational_oracle.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"
#include "proptests/numerics/codec/input_classes.h"

namespace {

using namespace fp8ref;
using test::SweepLog;

// Finite inputs only: NaN and Inf do not round.
std::vector<std::uint64_t> draw_finite_batch(Format f, int n) {
  const test::InputClass cls = *rc::gen::suchThat(test::gen_input_class(), [](test::InputClass c) {
    return c != test::InputClass::nan && c != test::InputClass::inf;
  });
  const std::uint64_t seed = *test::gen_batch_seed();
  RC_CLASSIFY(true, std::string(test::to_string(cls)));
  test::SplitMix64 r{seed};
  std::vector<std::uint64_t> inputs(static_cast<std::size_t>(n));
  for (std::uint64_t& x : inputs) x = test::draw_input(f, cls, r);
  return inputs;
}

std::uint8_t encode_sr(Format f, std::uint64_t bits, const EncodeSpec& s, std::uint32_t rand) {
  return f == Format::e4m3 ? encode_fp8_bits<E4m3Traits>(bits, s, rand)
                           : encode_fp8_bits<E5m2Traits>(bits, s, rand);
}

const std::vector<std::string> kConfigNames = {
    "codec sr: result not one of the two neighbours (ref_z = toward zero)",
    "codec sr: round-away count over all 2^R random values (ref_z/got_z = count mod 256)",
    "codec sr: differs from the table oracle at this random value (ref_z = table oracle)"};

// All 2^R random values for each input: neighbours, exact count, and per-value agreement.
void check_enumerated(Format f, int sr_bits, int batch) {
  const Overflow o = *rc::gen::element(Overflow::sat, Overflow::nonsat);
  const std::vector<std::uint64_t> inputs = draw_finite_batch(f, batch);
  const EncodeSpec spec{Rounding::sr, o, NanEncoding::quiet_signed, InfEncoding::saturate, sr_bits};
  const SweepLog log = test::parallel_sweep(
      inputs.size(),
      [&](std::uint64_t b, std::uint64_t e, SweepLog& l) {
        for (std::uint64_t i = b; i < e; ++i) {
          const std::uint64_t bits = inputs[i];
          const oracle::Fp8Input in = oracle::prepare_fp8(f, bits);
          const oracle::SrOutcomes want = oracle::sr_outcomes(in.b, o, sr_bits);
          std::uint64_t away = 0;
          for (std::uint32_t r = 0; r < (std::uint32_t{1} << sr_bits); ++r) {
            const std::uint8_t got_z = encode_sr(f, bits, spec, r);
            if (got_z != want.toward_zero && got_z != want.away_from_zero) {
              l.add(bits, 0, want.toward_zero, got_z);
              break;
            }
            away += got_z == want.away_from_zero;
            const std::uint8_t tab_z = oracle::table_oracle_encode(f, bits, spec, r);
            if (tab_z != got_z) {
              l.add(bits, 2, tab_z, got_z);
              break;
            }
          }
          // the count is observable when the outcomes differ (not when saturation makes the
          // overflow outcome equal to max)
          const bool distinct = want.away_from_zero != want.toward_zero;
          if (distinct && away != want.away_count)
            l.add(bits, 1, std::uint8_t(want.away_count), std::uint8_t(away));
        }
      },
      1);
  test::rc_assert_batch_clean(
      "codec_sr_" + std::string(to_string(f)) + "_r" + std::to_string(sr_bits), inputs.size(), log,
      kConfigNames);
}

FP8REF_RC_PROP(CodecSr, EnumeratingAll2Pow8RandomValuesRoundsAwayFloorFracTimes, 100, ()) {
  check_enumerated(*rc::gen::element(Format::e4m3, Format::e5m2), 8, 200);
}

FP8REF_RC_PROP(CodecSr, EnumeratingAll2Pow12RandomValuesRoundsAwayFloorFracTimes, 100, ()) {
  check_enumerated(*rc::gen::element(Format::e4m3, Format::e5m2), 12, 20);
}

FP8REF_RC_PROP(CodecSr, EnumeratingAll2Pow16RandomValuesRoundsAwayFloorFracTimes, 50, ()) {
  check_enumerated(*rc::gen::element(Format::e4m3, Format::e5m2), 16, 4);
}

// Any R in 1..32 and any random value, through the profiles too: always a neighbour.
FP8REF_RC_PROP(CodecSr, ResultIsAlwaysOneOfTheTwoNeighbours, 200, ()) {
  const Format f = *rc::gen::element(Format::e4m3, Format::e5m2);
  const Profile p = *rc::gen::element(Profile::ocp_sat, Profile::ocp_nosat);
  const int sr_bits = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(1, 33));
  const std::uint64_t rand_seed = *test::gen_batch_seed();
  const std::vector<std::uint64_t> inputs = draw_finite_batch(f, 1000);
  const Overflow o = p == Profile::ocp_sat ? Overflow::sat : Overflow::nonsat;
  const ProfileCodec pc = make_codec(p, f, Source::f64, Rounding::sr);  // 32 random bits
  const EncodeSpec spec{Rounding::sr, o, NanEncoding::quiet_signed, InfEncoding::saturate, sr_bits};
  test::SplitMix64 rng{rand_seed};
  SweepLog log;
  for (std::uint64_t bits : inputs) {
    const oracle::Fp8Input in = oracle::prepare_fp8(f, bits);
    const std::uint32_t rand = std::uint32_t(rng.next());
    for (int width : {sr_bits, pc.fp8.sr_bits}) {
      const oracle::SrOutcomes want = oracle::sr_outcomes(in.b, o, width);
      const std::uint8_t got_z =
          width == sr_bits ? encode_sr(f, bits, spec, rand) : pc.encode(bits, rand);
      if (got_z != want.toward_zero && got_z != want.away_from_zero)
        log.add(bits, 0, want.toward_zero, got_z);
    }
  }
  test::rc_assert_batch_clean("codec_sr_neighbours", inputs.size(), log, kConfigNames);
}

}  // namespace
