// Chains of the Blackwell steps (numerics/models/blackwell_chain.h) against the exact scaled sum
// (Boost cpp_rational, decode of every code and scale), class-weighted finite operands and scales:
// every chain lies within its bound, and a chain over one step is that step. The steps themselves
// are held to MMA-Sim bitwise by the golden vectors (blackwell_golden_test.cpp).
#include "numerics/models/blackwell_chain.h"

#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "proptests/numerics/codec/input_classes.h"
#include "proptests/common/test_level.h"

namespace {

using namespace fp8ref;
using boost::multiprecision::cpp_rational;

constexpr Format kElems[] = {Format::e4m3, Format::e5m2, Format::e3m2, Format::e2m3, Format::e2m1};

std::uint8_t finite_code(Format f, test::SplitMix64& r) {
  for (;;) {
    const std::uint8_t c = std::uint8_t(r.below(1u << format_bits(f)));
    if (r.below(5) == 0) return std::uint8_t(c & (1u << (format_bits(f) - 1)));  // a signed zero
    if (std::isfinite(decode_f64(f, c))) return c;
  }
}

cpp_rational exact(double x) { return cpp_rational(x); }

void expect_within(const Bounded& z, const cpp_rational& want, const char* what, long& checked) {
  ++checked;
  const cpp_rational err = abs(cpp_rational(double(z.z)) - want);
  ASSERT_TRUE(std::isfinite(z.z)) << what;
  EXPECT_LE(err, cpp_rational(z.bound)) << what << ": z " << z.z << " bound " << z.bound;
}

TEST(BlackwellChain, EveryKindStaysWithinItsBoundOfTheExactScaledSum) {
  test::SplitMix64 r{20261125};
  long checked = 0;
  const int cases = 300 * test::level_factor();
  for (int i = 0; i < cases; ++i) {
    const std::int64_t len = 1 + std::int64_t(r.below(300));
    const Format fa = kElems[r.below(5)], fb = kElems[r.below(5)];
    std::vector<std::uint8_t> a(len), b(len), a4(len), b4(len);
    for (std::int64_t k = 0; k < len; ++k) {
      a[k] = finite_code(fa, r), b[k] = finite_code(fb, r);
      a4[k] = finite_code(Format::e2m1, r), b4[k] = finite_code(Format::e2m1, r);
    }
    const float c = float(std::ldexp(double(r.below(2000)) - 1000.0, int(r.below(20)) - 10));
    // kind::f8f6f4
    cpp_rational want = exact(c);
    for (std::int64_t k = 0; k < len; ++k)
      want += exact(decode_f64(fa, a[k])) * exact(decode_f64(fb, b[k]));
    expect_within(blackwell_f8f6f4_chain(a.data(), b.data(), len, fa, fb, {c, 0.0}), want, "f8f6f4",
                  checked);
    // kind::mxf8f6f4, ue8m0 scales 2^-20 .. 2^20 per 32
    std::vector<std::uint8_t> sa((len + 31) / 32), sb((len + 31) / 32);
    for (auto& s : sa) s = std::uint8_t(107 + r.below(41));
    for (auto& s : sb) s = std::uint8_t(107 + r.below(41));
    want = exact(c);
    for (std::int64_t k = 0; k < len; ++k)
      want += exact(decode_f64(fa, a[k])) * exact(decode_f64(fb, b[k])) *
              exact(decode_f64(Format::e8m0, sa[k / 32])) *
              exact(decode_f64(Format::e8m0, sb[k / 32]));
    expect_within(
        blackwell_mxf8f6f4_chain(a.data(), b.data(), len, fa, fb, sa.data(), sb.data(), {c, 0.0}),
        want, "mxf8f6f4", checked);
    // kind::mxf4nvf4 block16 ue4m3 (positive finite scales, zero included)
    std::vector<std::uint8_t> qa((len + 15) / 16), qb((len + 15) / 16);
    for (auto& s : qa) s = std::uint8_t(r.below(0x7F));
    for (auto& s : qb) s = std::uint8_t(r.below(0x7F));
    want = exact(c);
    for (std::int64_t k = 0; k < len; ++k)
      want += exact(decode_f64(Format::e2m1, a4[k])) * exact(decode_f64(Format::e2m1, b4[k])) *
              exact(decode_f64(Format::ue4m3, qa[k / 16])) *
              exact(decode_f64(Format::ue4m3, qb[k / 16]));
    expect_within(blackwell_mxf4_chain(a4.data(), b4.data(), len, qa.data(), qb.data(),
                                       Format::ue4m3, 16, {c, 0.0}),
                  want, "mxf4nvf4 block16 ue4m3", checked);
  }
  std::cout << checked << " chains within their bounds" << std::endl;
}

TEST(BlackwellChain, AChainOfOneStepIsThatStep) {
  test::SplitMix64 r{7};
  for (int i = 0; i < 2000; ++i) {
    std::uint8_t a[64], b[64], sa[4], sb[4];
    for (int k = 0; k < 64; ++k)
      a[k] = finite_code(Format::e2m1, r), b[k] = finite_code(Format::e2m1, r);
    for (int j = 0; j < 4; ++j)
      sa[j] = std::uint8_t(r.below(255)), sb[j] = std::uint8_t(r.below(255));
    const float c = float(r.below(100)) - 50.0f;
    EXPECT_EQ(blackwell_mxf4_chain(a, b, 64, sa, sb, Format::e8m0, 16, {c, 0.0}).z,
              blackwell_mxf4_step(a, b, 64, sa, sb, Format::e8m0, 16, c));
    EXPECT_EQ(blackwell_mxf8f6f4_chain(a, b, 32, Format::e2m1, Format::e2m1, sa, sb, {c, 0.0}).z,
              blackwell_mxf8f6f4_step(a, b, 32, Format::e2m1, Format::e2m1, sa[0], sb[0], c));
  }
}

}  // namespace
