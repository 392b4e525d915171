// SwiGLU of a merged gate/up activation (reference/swiglu.h) against an independent oracle:
// exp_f32_correctly_rounded on every bf16 input equals exp evaluated in 50-digit binary floating
// point (Boost.Multiprecision cpp_bin_float_50) and rounded to f32 by the midpoint test; silu at
// its special values; swiglu_merged_bf16 reads the gate from the first H columns and up from the
// last H (docs/recipes.md "SwiGLU").
#include "reference/swiglu.h"

#include <gtest/gtest.h>

#include <bit>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace fp8ref {
namespace {

using Big = boost::multiprecision::cpp_bin_float_50;

// True when z is exp(x) rounded to nearest f32: the real value lies strictly between the
// midpoints to z's neighbours (an f32 exp of a nonzero f32 is never a midpoint: it is
// transcendental), overflow past the rounding threshold of the largest finite f32, underflow
// below half the smallest subnormal.
bool is_rounded_exp(float x, float z) {
  const Big e = exp(Big(x));
  const Big max_f = Big(std::numeric_limits<float>::max());
  const Big threshold = max_f + Big(std::ldexp(1.0, 103));  // max + half an ulp (2^104 / 2)
  if (std::isinf(z)) return e >= threshold;
  const float below = std::nextafter(z, 0.0f), above = std::nextafter(z, HUGE_VALF);
  const Big hi = std::isinf(above) ? threshold : (Big(z) + Big(above)) / 2;
  if (z == 0.0f) return e < hi;  // e may underflow to 0 in the 50-digit format too
  return e > (Big(z) + Big(below)) / 2 && e < hi;
}

TEST(Swiglu, ExpIsCorrectlyRoundedOnEveryBf16Input) {
  int checked = 0, normal = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float x = std::bit_cast<float>(b << 16);
    if (std::isnan(x)) continue;
    float z = 0.0f;
    ASSERT_NO_THROW(z = ref::exp_f32_correctly_rounded(x)) << "bf16 0x" << std::hex << b;
    ASSERT_TRUE(is_rounded_exp(x, z)) << "bf16 0x" << std::hex << b << ": exp = " << z;
    ++checked;
    normal += std::isnormal(z);
  }
  EXPECT_GT(normal, 30000);  // not vacuous: most results are normal numbers
  std::printf("%d bf16 inputs, %d normal results, all correctly rounded\n", checked, normal);
}

TEST(Swiglu, SiluSpecialValues) {
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ref::silu_f32(0.0f)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ref::silu_f32(-0.0f)), 0x80000000u);
  EXPECT_TRUE(std::isnan(ref::silu_f32(-HUGE_VALF)));  // -inf / (1 + inf)
  EXPECT_EQ(ref::silu_f32(HUGE_VALF), HUGE_VALF);      // inf / (1 + 0)
  EXPECT_TRUE(std::isnan(ref::silu_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(ref::silu_f32(1.0f), 1.0f / (1.0f + ref::exp_f32_correctly_rounded(-1.0f)));
}

TEST(Swiglu, MergedGateIsTheFirstHalfAndUpTheSecond) {
  // rows 2, H 3: gate 1, 2, 3 / -1, 0, 4; up 2, 2, 2 / 1, 1, 1 (bf16 patterns).
  const auto bf = [](float f) { return std::uint16_t(std::bit_cast<std::uint32_t>(f) >> 16); };
  const std::vector<std::uint16_t> gu = {bf(1),  bf(2), bf(3), bf(2), bf(2), bf(2),
                                         bf(-1), bf(0), bf(4), bf(1), bf(1), bf(1)};
  const std::vector<float> h = ref::swiglu_merged_bf16(gu, 2, 3);
  ASSERT_EQ(h.size(), 6u);
  const float g[6] = {1, 2, 3, -1, 0, 4}, u[6] = {2, 2, 2, 1, 1, 1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(h[std::size_t(i)], ref::silu_f32(g[i]) * u[i]) << i;
  EXPECT_THROW(ref::swiglu_merged_bf16(gu, 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
