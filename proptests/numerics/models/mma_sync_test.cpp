// Properties of the hopper_mma_sync step model (docs/design.md §10,
// numerics/models/mma_sync_step.h):
// agreement with a rational transcription of the written interpretation (a second implementation:
// exact rationals and f64 exponents instead of integer shifts), and properties that follow from the
// interpretation alone: the k mod 4 split, C added last in RN, zero products give C, order
// independence inside one HMMA, sign symmetry, specials and the error bound.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "numerics/codec.h"
#include "numerics/models.h"
#include "proptests/common/oracle.h"
#include "proptests/common/test_level.h"

namespace fp8ref {
namespace {

using test::Rational;
std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

Rational pow2(int e) {
  Rational r(1);
  if (e >= 0)
    r *= Rational(boost::multiprecision::cpp_int(1) << e);
  else
    r /= Rational(boost::multiprecision::cpp_int(1) << -e);
  return r;
}

// Exponent of x as a binary16 (emin -14) or binary32 (emin -126) operand: floor(log2 |x|),
// at least emin.
int exponent_of(double x, int emin) {
  int e = 0;
  std::frexp(x, &e);
  return std::max(e - 1, emin);
}

// floor(|x| / q)·q with x's sign (truncation toward zero to a multiple of q).
Rational truncate_to(const Rational& x, const Rational& q) {
  const Rational m = abs(x) / q;
  const boost::multiprecision::cpp_int n = numerator(m) / denominator(m);
  const Rational t = Rational(n) * q;
  return x < 0 ? Rational(-t) : t;
}

// One HMMA of the interpretation, transcribed with rationals: products of the selected k and c.
float hmma_rational(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                    Format fa, Format fb, int half, float c) {
  std::vector<std::pair<Rational, int>> terms;
  if (c != 0.0f) terms.push_back({test::to_rational(double(c)), exponent_of(double(c), -126)});
  for (std::size_t k = 0; k < a.size(); ++k) {
    if ((k % 4) / 2 != std::size_t(half)) continue;
    const double x = decode_f64(fa, a[k]), y = decode_f64(fb, b[k]);
    if (x == 0.0 || y == 0.0) continue;
    terms.push_back(
        {test::to_rational(x) * test::to_rational(y), exponent_of(x, -14) + exponent_of(y, -14)});
  }
  if (terms.empty()) return 0.0f;
  int e_max = terms[0].second;
  for (const auto& t : terms) e_max = std::max(e_max, t.second);
  Rational s = 0;
  for (const auto& t : terms) s += truncate_to(t.first, pow2(e_max - 25));
  if (s == 0) return 0.0f;
  const double approx = double(s);  // only for the exponent: s has at most ~40 significant bits
  const int e = exponent_of(approx, -1000);
  const Rational kept = truncate_to(s, pow2(e >= -126 ? e - 23 : -149));
  if (e > 127) return s > 0 ? INFINITY : -INFINITY;
  return float(double(kept));
}

float mma_sync_rational(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                        Format fa, Format fb, float c) {
  const float t1 = hmma_rational(a, b, fa, fb, 0, 0.0f);
  const float t2 = hmma_rational(a, b, fa, fb, 1, t1);
  return c + t2;
}

rc::Gen<float> gen_c() {
  return rc::gen::weightedOneOf<float>(
      {{1, rc::gen::just(0.0f)},
       {1, rc::gen::just(-0.0f)},
       {4, rc::gen::map(rc::gen::inRange<std::uint32_t>(0x2F800000u, 0x4F800000u),
                        [](std::uint32_t u) { return std::bit_cast<float>(u); })},
       {2, rc::gen::map(rc::gen::inRange<std::uint32_t>(0xAF800000u, 0xCF800000u),
                        [](std::uint32_t u) { return std::bit_cast<float>(u); })}});
}

FP8REF_RC_PROP(HopperMmaSyncStep, MatchesRationalTranscription, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const int n =
      *rc::gen::weightedOneOf<int>({{4, rc::gen::just(32)}, {1, rc::gen::inRange(0, 32)}});
  const auto a = *test::gen_codes(fa, n);
  const auto b = *test::gen_codes(fb, n);
  const float c = *gen_c();
  const float got = hopper_mma_sync_step(a.data(), b.data(), n, fa, fb, c);
  RC_ASSERT(bits(got) == bits(mma_sync_rational(a, b, fa, fb, c)));
}

FP8REF_RC_PROP(HopperMmaSyncStep, WithinBoundOfExact, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const auto a = *test::gen_codes(fa, 32);
  const auto b = *test::gen_codes(fb, 32);
  const float c = *gen_c();
  const Bounded z = hopper_mma_sync_step_bounded(a.data(), b.data(), 32, fa, fb, c);
  const Rational exact = test::exact_dot_rational(a.data(), b.data(), 32, fa, fb, {1.0f}, {1.0f}) +
                         test::to_rational(double(c));
  RC_ASSERT(abs(test::to_rational(double(z.z)) - exact) <= test::to_rational(z.bound));
}

// Both HMMAs run from +0 on zero products, so the step is RN(c + 0) = c (and -0 + +0 = +0),
// unlike wgmma, which truncates C to 14 bits.
FP8REF_RC_PROP(HopperMmaSyncStep, ZeroProductsGiveC, 100, (std::uint32_t cbits)) {
  const float c = std::bit_cast<float>(cbits);
  RC_PRE(std::isfinite(c));
  const std::vector<std::uint8_t> zeros(32, 0);
  const float got =
      hopper_mma_sync_step(zeros.data(), zeros.data(), 32, Format::e4m3, Format::e4m3, c);
  RC_ASSERT(bits(got) == (c == 0.0f ? 0u : cbits));
}

// One HMMA fuses its 16 products exactly before truncating, so their order inside the k mod 4
// in {0,1} set (and inside the {2,3} set) does not matter.
FP8REF_RC_PROP(HopperMmaSyncStep, OrderInsideOneHmmaDoesNotMatter, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  auto a = *test::gen_codes(fa, 32);
  auto b = *test::gen_codes(fb, 32);
  const float c = *gen_c();
  const float z = hopper_mma_sync_step(a.data(), b.data(), 32, fa, fb, c);
  const int half = *rc::gen::inRange(0, 2);
  const int i = *rc::gen::inRange(0, 16), j = *rc::gen::inRange(0, 16);
  auto index = [half](int m) { return (m / 2) * 4 + 2 * half + m % 2; };  // m-th k of the set
  std::swap(a[std::size_t(index(i))], a[std::size_t(index(j))]);
  std::swap(b[std::size_t(index(i))], b[std::size_t(index(j))]);
  RC_ASSERT(bits(hopper_mma_sync_step(a.data(), b.data(), 32, fa, fb, c)) == bits(z));
}

// Truncation acts on magnitudes and RN is symmetric: negating A and C negates the result.
FP8REF_RC_PROP(HopperMmaSyncStep, NegatingInputsNegatesResult, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  auto a = *test::gen_codes(fa, 32);
  const auto b = *test::gen_codes(fb, 32);
  const float c = *gen_c();
  const float z = hopper_mma_sync_step(a.data(), b.data(), 32, fa, fb, c);
  for (auto& x : a) x ^= 0x80;
  const float zn = hopper_mma_sync_step(a.data(), b.data(), 32, fa, fb, -c);
  if (z == 0.0f)
    RC_ASSERT(zn == 0.0f);
  else
    RC_ASSERT(bits(zn) == bits(-z));
}

// Hand-derived, e5m2 (1 = 0x3C, 2^-12 = 0x0C, 2^-13 = 0x08): products 1 (k=0), 2^-25 (k=1, 4, 2,
// 3). HMMA #1 {k=0,1,4}: 1 + 2^-24, truncated to 24 bits: 1. HMMA #2 {k=2,3} with C = 1:
// 1 + 2^-24 -> 1. A model fusing k < 16 first (or all 32) keeps 1 + 2^-23 exactly.
TEST(HopperMmaSyncStep, ProductsSplitByKMod4) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[0] = b[0] = 0x3C;
  for (int k : {1, 2, 3, 4}) a[std::size_t(k)] = 0x0C, b[std::size_t(k)] = 0x08;
  EXPECT_EQ(hopper_mma_sync_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 0.0f), 1.0f);
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 0.0f), 1.0f);
  // The same products with the small ones all in the {0,1} set: 1 + 2^-23 is kept.
  std::vector<std::uint8_t> a2(32, 0), b2(32, 0);
  a2[0] = b2[0] = 0x3C;
  for (int k : {1, 4, 5, 8}) a2[std::size_t(k)] = 0x0C, b2[std::size_t(k)] = 0x08;
  EXPECT_EQ(hopper_mma_sync_step(a2.data(), b2.data(), 32, Format::e5m2, Format::e5m2, 0.0f),
            1.0f + std::ldexp(1.0f, -23));
}

// Hand-derived: C = 1 and products 2^-24 + 2^-25 (e5m2 2^-12·2^-12, 2^-12·2^-13). T = 3·2^-25
// exactly, D = RN(1 + 3·2^-25) = 1 + 2^-23. Fusing C into the truncating sum would give 1.
TEST(HopperMmaSyncStep, CIsAddedLastInRoundToNearest) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[0] = b[0] = 0x0C;
  a[1] = 0x0C, b[1] = 0x08;
  EXPECT_EQ(hopper_mma_sync_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 1.0f),
            1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 1.0f), 1.0f);
}

// Hand-derived: e4m3 0x01 = 2^-9 becomes a normal f16 (exponent -9), so 2^-9·1 and 1·1 align
// with no loss: 1 + 2^-9 exactly (wgmma, which uses emin -6, keeps it too: a control).
TEST(HopperMmaSyncStep, E4m3SubnormalsAreNormalF16) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[0] = 0x01, b[0] = 0x38;
  a[1] = 0x38, b[1] = 0x38;
  EXPECT_EQ(hopper_mma_sync_step(a.data(), b.data(), 32, Format::e4m3, Format::e4m3, 0.0f),
            1.0f + std::ldexp(1.0f, -9));
  const detail::F16Parts h = detail::fp8_as_f16(Format::e4m3, 0x01);
  EXPECT_EQ(h.sig, 1024);
  EXPECT_EQ(h.exp, -9);
  const detail::F16Parts s = detail::fp8_as_f16(Format::e5m2, 0x01);  // 2^-16: f16 subnormal
  EXPECT_EQ(s.sig, 256);
  EXPECT_EQ(s.exp, -14);
}

TEST(HopperMmaSyncStep, SpecialValues) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[3] = 0x7F, b[3] = 0x38;  // e4m3 NaN in the {2,3} set
  EXPECT_EQ(bits(hopper_mma_sync_step(a.data(), b.data(), 32, Format::e4m3, Format::e4m3, 1.0f)),
            0x7FFFFFFFu);
  std::vector<std::uint8_t> c(32, 0), d(32, 0);
  c[0] = 0x7C, d[0] = 0x3C;  // e5m2 Inf·1 in the {0,1} set
  EXPECT_EQ(hopper_mma_sync_step(c.data(), d.data(), 32, Format::e5m2, Format::e5m2, 1.0f),
            INFINITY);
  EXPECT_EQ(
      bits(hopper_mma_sync_step(c.data(), d.data(), 32, Format::e5m2, Format::e5m2, -INFINITY)),
      0x7FFFFFFFu);
}

FP8REF_RC_PROP(HopperMmaSyncStep, ChainIsRepeatedSteps, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const auto a = *test::gen_codes(fa, 80);
  const auto b = *test::gen_codes(fb, 80);
  float acc = 0.0f;
  for (int k = 0; k < 80; k += 32)
    acc = hopper_mma_sync_step(a.data() + k, b.data() + k, std::min(32, 80 - k), fa, fb, acc);
  RC_ASSERT(bits(hopper_mma_sync_chain(a.data(), b.data(), 80, fa, fb, {0.0f, 0.0}).z) ==
            bits(acc));
}

}  // namespace
}  // namespace fp8ref
