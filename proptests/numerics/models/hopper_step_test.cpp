// Properties of the hopper_wgmma step model (docs/design.md §10) that follow from its definition
// independently of the implementation: exactness when nothing is cut, dropping of tiny terms,
// C-only truncation, sign symmetry, specials, hand-derived raw-exponent vectors, and the bound.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "numerics/models.h"
#include "proptests/common/oracle.h"
#include "proptests/common/test_level.h"

namespace fp8ref {
namespace {

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// |x| truncated to 14 significant bits (RZ), x a double holding an exactly known value.
double truncate14(double x) {
  if (x == 0.0) return 0.0;
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const double q = std::ldexp(1.0, e - 14);
  return std::trunc(x / q) * q;
}

// All operands normal with one exponent field, C = 0: every aligned product keeps its 6 (or fewer)
// fraction bits, so the only cut is the final truncation to 14 significant bits.
FP8REF_RC_PROP(HopperWgmmaStep, CommonExponentIsExactUpToFinalTruncation, 100, ()) {
  const Format f = *rc::gen::element(Format::e4m3, Format::e5m2);
  const int p = f == Format::e4m3 ? 3 : 2;
  const int field = *rc::gen::inRange(1, f == Format::e4m3 ? 15 : 31);
  auto code = rc::gen::apply(
      [&](int man, bool s) { return std::uint8_t((s ? 0x80 : 0) | (field << p) | man); },
      rc::gen::inRange(0, (1 << p) - (field == 15 && p == 3 ? 1 : 0)), rc::gen::arbitrary<bool>());
  const auto a = *rc::gen::container<std::vector<std::uint8_t>>(32, code);
  const auto b = *rc::gen::container<std::vector<std::uint8_t>>(32, code);
  double exact = 0.0;  // exact: 32 products of 4-bit significands on one exponent
  for (int k = 0; k < 32; ++k) exact += decode_f64(f, a[k]) * decode_f64(f, b[k]);
  const float got = hopper_wgmma_step(a.data(), b.data(), 32, f, f, 0.0f);
  RC_CLASSIFY(truncate14(exact) != exact, "final truncation cut bits");
  RC_ASSERT(double(got) == truncate14(exact));
  if (exact == 0.0) RC_ASSERT(bits(got) == 0u);
}

// A term below 2^(E-13), E the largest raw exponent, is truncated to nothing: whatever its sign.
FP8REF_RC_PROP(HopperWgmmaStep, TermBelowQuantumIsDropped, 100, ()) {
  const Format f = *test::gen_format();
  auto a = *test::gen_codes(f, 32);
  auto b = *test::gen_codes(f, 32);
  a[0] = f == Format::e4m3 ? 0x38 : 0x3C;  // 1.0, raw exponent 0
  b[0] = a[0];
  // Every product has raw exponent <= 0 only if operands are <= 1.75: clamp magnitudes.
  for (int k = 1; k < 32; ++k) {
    const std::uint8_t lim = f == Format::e4m3 ? 0x3F : 0x3F;
    a[k] = std::uint8_t((a[k] & 0x80) | std::min<std::uint8_t>(a[k] & 0x7F, lim));
    b[k] = std::uint8_t((b[k] & 0x80) | std::min<std::uint8_t>(b[k] & 0x7F, lim));
  }
  const float tiny =
      *rc::gen::map(rc::gen::inRange(-149, -13), [](int e) { return std::ldexp(1.0f, e); });
  const float c = *rc::gen::arbitrary<bool>() ? tiny : -tiny;
  const float with_c = hopper_wgmma_step(a.data(), b.data(), 32, f, f, c);
  const float without = hopper_wgmma_step(a.data(), b.data(), 32, f, f, 0.0f);
  RC_ASSERT(bits(with_c) == bits(without));
}

// With every product zero the step is C with its significand cut to 14 bits (f32 subnormals:
// to multiples of 2^-139), i.e. the low 10 stored bits cleared; a zero result is +0.
FP8REF_RC_PROP(HopperWgmmaStep, OnlyCIsTruncatedTo14Bits, 100, (std::uint32_t cbits)) {
  const float c = std::bit_cast<float>(cbits);
  RC_PRE(std::isfinite(c));
  const std::vector<std::uint8_t> zeros(32, 0);
  const float got =
      hopper_wgmma_step(zeros.data(), zeros.data(), 32, Format::e4m3, Format::e4m3, c);
  std::uint32_t want = cbits & ~0x3FFu;
  if ((want & 0x7FFFFFFF) == 0) want = 0;
  RC_ASSERT(bits(got) == want);
}

// Truncation is toward zero on magnitudes, so negating every input negates the result.
FP8REF_RC_PROP(HopperWgmmaStep, NegatingInputsNegatesResult, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  auto a = *test::gen_codes(fa, 32);
  const auto b = *test::gen_codes(fb, 32);
  const float c =
      *rc::gen::map(rc::gen::inRange(-30, 30), [](int e) { return std::ldexp(1.375f, e); });
  const float z = hopper_wgmma_step(a.data(), b.data(), 32, fa, fb, c);
  for (auto& x : a) x ^= 0x80;
  const float zn = hopper_wgmma_step(a.data(), b.data(), 32, fa, fb, -c);
  RC_ASSERT(bits(zn) == (z == 0.0f ? 0u : bits(-z)));
}

// Zero tokens past the end of a 128-token block change no chain: the chain over the block's
// first `len` tokens (a short last step) equals the chain over all 128 with the rest zero in both
// operands, whose steps past the end have no product term and give back the value the step before
// formed (14 significant bits already; a NaN the canonical one). The GPU wgrad kernel relies on it
// twice: the tokens past a group's end zeroed in shared memory, and in the group's last block the
// 32-token steps wholly past the end not issued (docs/gpu_gemm.md §2, §3).
FP8REF_RC_PROP(HopperWgmmaStep, ZeroTokensPastTheEndChangeNoChain, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const int len = *rc::gen::inRange(1, 129);
  auto a = *test::gen_codes(fa, len);
  auto b = *test::gen_codes(fb, len);
  if (*rc::gen::inRange(0, 4) == 0) {  // now and then a NaN or an infinity among the products
    const std::uint8_t special =
        fa == Format::e4m3 ? 0x7F : *rc::gen::element<std::uint8_t>(0x7C, 0xFC, 0x7E);
    a[std::size_t(*rc::gen::inRange(0, len))] = special;
  }
  const Bounded start{0.0f, 0.0};  // a block's chain starts from +0 (scale-d = 0)
  const float shorter = hopper_wgmma_chain(a.data(), b.data(), len, fa, fb, start).z;
  a.resize(128, 0x00), b.resize(128, 0x00);
  const float padded = hopper_wgmma_chain(a.data(), b.data(), 128, fa, fb, start).z;
  // The steps the kernel issues: whole steps up to the one holding the end.
  const int issued = (len + 31) / 32 * 32;
  const float steps = hopper_wgmma_chain(a.data(), b.data(), issued, fa, fb, start).z;
  RC_ASSERT(bits(padded) == bits(shorter));
  RC_ASSERT(bits(steps) == bits(shorter));
}

// Every step is within t·2^(E-13) + 2^-13·|z| of the exact sum of its products and C.
FP8REF_RC_PROP(HopperWgmmaStep, WithinBoundOfExact, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const auto a = *test::gen_codes(fa, 32);
  const auto b = *test::gen_codes(fb, 32);
  const float c = *rc::gen::weightedOneOf<float>(
      {{1, rc::gen::just(0.0f)},
       {3, rc::gen::map(rc::gen::inRange<std::uint32_t>(0x2F800000u, 0x4F800000u),
                        [](std::uint32_t u) { return std::bit_cast<float>(u); })}});
  const Bounded z = hopper_wgmma_step_bounded(a.data(), b.data(), 32, fa, fb, c);
  const test::Rational exact =
      test::exact_dot_rational(a.data(), b.data(), 32, fa, fb, {1.0f}, {1.0f}) +
      test::to_rational(double(c));
  RC_ASSERT(abs(test::to_rational(double(z.z)) - exact) <= test::to_rational(z.bound));
}

// Hand-derived: 1.5·1.5 has raw exponent 0 and significand 2.25 (not renormalised), so C =
// 1.5·2^-13 aligns to quantum 2^-13 and keeps 2^-13; with -1·1 the sum 1.25 + 2^-13 is kept.
// A renormalising model (quantum 2^-12) would give 1.25.
TEST(HopperWgmmaStep, ProductsAreNotRenormalised) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[0] = 0x3C, b[0] = 0x3C;  // e4m3 1.5
  a[1] = 0xB8, b[1] = 0x38;  // -1 · 1
  const float c = std::ldexp(1.5f, -13);
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e4m3, Format::e4m3, c),
            1.25f + std::ldexp(1.0f, -13));
}

// Hand-derived: e4m3 0x01 = 2^-9 has raw exponent emin = -6 (significand 1/8), so the step's
// quantum is 2^-19 and C = 1.5·2^-19 keeps only 2^-19: result 2^-9 + 2^-19. A model using the
// normalised exponent -9 would keep 1.5·2^-19.
TEST(HopperWgmmaStep, SubnormalOperandsUseEmin) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[0] = 0x01, b[0] = 0x38;  // 2^-9 · 1
  const float c = std::ldexp(1.5f, -19);
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e4m3, Format::e4m3, c),
            std::ldexp(1.0f, -9) + std::ldexp(1.0f, -19));
}

TEST(HopperWgmmaStep, SpecialValues) {
  std::vector<std::uint8_t> a(32, 0), b(32, 0);
  a[3] = 0x7F, b[3] = 0x38;  // e4m3 NaN · 1
  EXPECT_EQ(bits(hopper_wgmma_step(a.data(), b.data(), 32, Format::e4m3, Format::e4m3, 1.0f)),
            0x7FFFFFFFu);
  a[3] = 0x7C, b[3] = 0x00;  // e5m2 Inf · 0 = NaN
  EXPECT_EQ(bits(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 0.0f)),
            0x7FFFFFFFu);
  b[3] = 0xBC;  // Inf · -1 = -Inf
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, 0.0f), -INFINITY);
  a[3] = 0, b[3] = 0;
  EXPECT_EQ(bits(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, -0.0f)), 0u);
  EXPECT_EQ(hopper_wgmma_step(a.data(), b.data(), 32, Format::e5m2, Format::e5m2, INFINITY),
            INFINITY);
}

// A chain from C carries C through every step: chaining K = 64 equals two explicit steps.
FP8REF_RC_PROP(HopperWgmmaStep, ChainIsRepeatedSteps, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const auto a = *test::gen_codes(fa, 64);
  const auto b = *test::gen_codes(fb, 64);
  const float c =
      *rc::gen::map(rc::gen::inRange(-20, 20), [](int e) { return std::ldexp(-1.625f, e); });
  const float s1 = hopper_wgmma_step(a.data(), b.data(), 32, fa, fb, c);
  const float s2 = hopper_wgmma_step(a.data() + 32, b.data() + 32, 32, fa, fb, s1);
  RC_ASSERT(bits(hopper_wgmma_chain(a.data(), b.data(), 64, fa, fb, {c, 0.0}).z) == bits(s2));
}

}  // namespace
}  // namespace fp8ref
