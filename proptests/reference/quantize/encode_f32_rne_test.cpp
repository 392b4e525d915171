// The quantize hot loop's integer RNE cast (reference/encode_f32_rne.h) against the generic codec
// (numerics/codec.h) for the four element casts recipes use (sat / nonsat x NaN signed / 0x7F),
// both formats. Level 1-2: every sign x f32 exponent x top-12 fraction bits x low 11 bits in
// {0, 1, 0x400, 0x7FF}, which holds every kept / guard / sticky combination of both formats at
// every exponent; level 3: all 2^32 patterns.
#include "reference/encode_f32_rne.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/source.h"
#include "proptests/common/sweep_report.h"
#include "proptests/common/test_level.h"

namespace fp8ref::ref {
namespace {

constexpr std::uint32_t kLow[4] = {0x000, 0x001, 0x400, 0x7FF};

// Class index -> f32 pattern: (sign, exponent field, top 12 fraction bits, low pattern).
std::uint32_t class_pattern(std::uint64_t i) {
  const std::uint32_t low = kLow[i & 3];
  const std::uint32_t top = std::uint32_t(i >> 2) & 0xFFF;
  const std::uint32_t exp = std::uint32_t(i >> 14) & 0xFF;
  const std::uint32_t sign = std::uint32_t(i >> 22) & 1;
  return sign << 31 | exp << 23 | top << 11 | low;
}

template <class T, bool kSat, bool kNanPositive>
void sweep() {
  const EncodeSpec spec{Rounding::rne, kSat ? Overflow::sat : Overflow::nonsat,
                        kNanPositive ? NanEncoding::positive_all_ones : NanEncoding::quiet_signed,
                        InfEncoding::saturate, 32};
  const bool all = test::test_level() >= 3;
  const std::uint64_t n = all ? (std::uint64_t{1} << 32) : (std::uint64_t{1} << 23);
  const test::SweepLog log =
      test::parallel_sweep(n, [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t i = b; i < e; ++i) {
          const std::uint32_t x = all ? std::uint32_t(i) : class_pattern(i);
          const std::uint8_t ref_z = encode_fp8_bits<T>(f32_to_f64_bits(x), spec);
          const std::uint8_t got_z = encode_f32_rne<T, kSat, kNanPositive>(x);
          if (got_z != ref_z) l.add(x, 0, ref_z, got_z);
        }
      });
  const std::string name = std::string(to_string(T::kFormat)) + (kSat ? " sat" : " nonsat") +
                           (kNanPositive ? " nan_0x7f" : " nan_signed");
  test::report_sweep("encode_f32_rne_" + std::string(to_string(T::kFormat)), n, log, {name}, 8);
}

TEST(EncodeF32Rne, E4m3MatchesGenericCodecOnEveryRoundingClass) {
  sweep<E4m3Traits, true, true>();
  sweep<E4m3Traits, true, false>();
  sweep<E4m3Traits, false, true>();
  sweep<E4m3Traits, false, false>();
}

TEST(EncodeF32Rne, E5m2MatchesGenericCodecOnEveryRoundingClass) {
  sweep<E5m2Traits, true, true>();
  sweep<E5m2Traits, true, false>();
  sweep<E5m2Traits, false, true>();
  sweep<E5m2Traits, false, false>();
}

}  // namespace
}  // namespace fp8ref::ref
