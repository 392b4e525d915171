// Recipe edge classes with expected values written from the libraries' formulas by hand
// (docs/recipes.md): zero blocks, subnormal amax, powers of two, NaN / Inf amax, element casts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "numerics/scale_recipe.h"

namespace fp8ref {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

Recipe rec(RecipeKind k, Runtime rt, bool p = false, Format f = Format::e4m3, float eps = 0.0f) {
  return {k, f, rt, p, eps};
}

TEST(RecipeEdges, DeepGemm) {
  const auto cpu = rec(RecipeKind::deepgemm, Runtime::torch_cpu),
             cuda = rec(RecipeKind::deepgemm, Runtime::torch_cuda);
  EXPECT_EQ(block_scale(cpu, 0.0f, Source::f32).s, 1e-4f / 448.0f);  // clamp(1e-4)
  EXPECT_EQ(block_scale(cuda, 0.0f, Source::f32).s, 1e-4f * (1.0f / 448.0f));
  EXPECT_EQ(block_scale(cpu, 448.0f, Source::f32).s, 1.0f);
  // ue8m0: 2^-9 * (1 + 2^-23) rounds up to 2^-8; an exact power stays.
  const auto ue = rec(RecipeKind::deepgemm, Runtime::torch_cpu, true);
  EXPECT_EQ(block_scale(ue, 448.0f * 0.0078125f, Source::f32).s, 0.0078125f);
  EXPECT_EQ(block_scale(ue, std::nextafter(448.0f, kInf), Source::f32).s, 2.0f);
  EXPECT_EQ(bits(block_scale(ue, kNan, Source::f32).s), 254u << 23);  // NaN exponent clamps to 254
  EXPECT_TRUE(std::isnan(block_scale(cpu, kNan, Source::f32).s));
  // Non-saturating element cast: Inf * (1/sf) -> NaN code.
  const auto b = block_scale(cpu, 1.0f, Source::f32);
  EXPECT_EQ(quantize_element(cpu, element_spec(cpu), b, kInf), 0x7F);
  EXPECT_EQ(quantize_element(cpu, element_spec(cpu), b, 1.0f), 0x7E);
  EXPECT_EQ(quantize_element(cpu, element_spec(cpu), b, -kNan), 0xFF);    // CPU keeps the NaN sign
  EXPECT_EQ(quantize_element(cuda, element_spec(cuda), b, -kNan), 0x7F);  // CUDA canonical NaN
}

TEST(RecipeEdges, Torchao) {
  const auto r = rec(RecipeKind::torchao, Runtime::torch_cpu);
  const BlockScale z = block_scale(r, 0.0f, Source::f32);  // clamp(1e-12) in f64
  EXPECT_EQ(z.factor, float(448.0 * (1.0 / 1e-12)));
  EXPECT_EQ(z.s, 1.0f / z.factor);
  const BlockScale inf = block_scale(r, kInf, Source::f32);
  EXPECT_EQ(inf.factor, 0.0f);
  EXPECT_EQ(inf.s, kInf);
  const auto p2 = rec(RecipeKind::torchao, Runtime::torch_cpu, true);
  EXPECT_EQ(block_scale(p2, 3.0f, Source::f32).factor, 128.0f);  // 149.33 rounds down to 128
  // Saturating element cast.
  EXPECT_EQ(quantize_element(r, element_spec(r), block_scale(r, 1.0f, Source::f32), kInf), 0x7E);
}

TEST(RecipeEdges, TransformerEngine) {
  const auto r = rec(RecipeKind::te, Runtime::cuda_kernel);
  EXPECT_EQ(block_scale(r, 0.0f, Source::f32).factor, 1.0f);  // all-zero block -> scale 1
  EXPECT_EQ(block_scale(r, kInf, Source::f32).factor, 1.0f);
  EXPECT_EQ(block_scale(r, kNan, Source::f32).factor, 1.0f);
  const float tiny = std::bit_cast<float>(1u);  // 448 / 2^-149 overflows -> value_for_inf
  EXPECT_EQ(block_scale(r, tiny, Source::f32).factor, std::numeric_limits<float>::max());
  EXPECT_EQ(block_scale(r, tiny, Source::bf16).factor, std::bit_cast<float>(0x7F7F0000u));
  const auto p2 = rec(RecipeKind::te, Runtime::cuda_kernel, true);
  EXPECT_EQ(block_scale(p2, tiny, Source::f32).factor, std::ldexp(1.0f, 127));
  EXPECT_EQ(block_scale(p2, 3.0f, Source::f32).factor, 128.0f);
  const auto eps = rec(RecipeKind::te, Runtime::cuda_kernel, false, Format::e4m3, 1.0f);
  EXPECT_EQ(block_scale(eps, 0.0f, Source::f32).factor, 448.0f);
  EXPECT_EQ(amax_fold(AmaxNan::ignore, 2.0f, kNan), 2.0f);
}

TEST(RecipeEdges, MxTorchao) {
  const auto fl = rec(RecipeKind::mx_floor, Runtime::torch_cpu);
  EXPECT_EQ(block_scale(fl, 448.0f, Source::f32).e8m0, 127 + 8 - 8);  // floor(log2 448) = 8
  EXPECT_EQ(block_scale(fl, 512.0f, Source::f32).e8m0, 127 + 1);
  EXPECT_EQ(block_scale(fl, 0.0f, Source::f32).e8m0, 0);  // eps 2^-126 -> clamp
  EXPECT_EQ(block_scale(fl, 0.0f, Source::f32).factor, std::ldexp(1.0f, -126));  // F32_MIN_NORMAL
  EXPECT_EQ(block_scale(fl, kNan, Source::f32).e8m0, 0xFF);
  EXPECT_EQ(block_scale(fl, kInf, Source::f32).e8m0, 127 + 128 - 8);
  const auto ce = rec(RecipeKind::mx_ceil, Runtime::torch_cpu),
             ev = rec(RecipeKind::mx_even, Runtime::torch_cpu);
  EXPECT_EQ(block_scale(ce, 448.0f, Source::f32).e8m0, 127 + 9 - 8);
  EXPECT_EQ(block_scale(ce, 256.0f, Source::f32).e8m0, 127);
  EXPECT_EQ(block_scale(ev, 496.0f, Source::f32).e8m0, 127 + 1);  // 1.9375 * 2^8 carries at 3 bits
  EXPECT_EQ(block_scale(ev, 495.0f, Source::f32).e8m0, 127);
  EXPECT_EQ(block_scale(rec(RecipeKind::mx_floor, Runtime::torch_cpu, false, Format::e5m2), 1.0f,
                        Source::f32)
                .e8m0,
            127 - 15);
}

TEST(RecipeEdges, MxRceil) {
  const auto te = rec(RecipeKind::mx_rceil, Runtime::cuda_kernel),
             ao = rec(RecipeKind::mx_rceil, Runtime::torch_cpu);
  EXPECT_EQ(block_scale(te, 448.0f, Source::f32).e8m0, 127);
  EXPECT_EQ(block_scale(te, 449.0f, Source::f32).e8m0, 128);
  EXPECT_EQ(block_scale(te, 0.0f, Source::f32).e8m0, 0);
  EXPECT_EQ(block_scale(te, 0.0f, Source::f32).factor, 1.0f);
  EXPECT_EQ(block_scale(te, kInf, Source::f32).e8m0, 0xFE);
  EXPECT_EQ(block_scale(te, kInf, Source::f32).factor, 0.0f);  // exp2f_rcp(254) = 0
  EXPECT_EQ(block_scale(ao, kInf, Source::f32).e8m0, 0xFE);
  EXPECT_EQ(block_scale(ao, kInf, Source::f32).factor, std::ldexp(1.0f, -127));
  EXPECT_EQ(block_scale(ao, kNan, Source::f32).e8m0, 0xFF);
  EXPECT_TRUE(std::isnan(block_scale(ao, kNan, Source::f32).factor));  // rcp = descale: all NaN
  // torchao 0.18 casts max_abs to f32 first: a bf16 input's descale is an f32 (no bf16 rounding).
  const float a = 448.0f + 0.875f;
  EXPECT_EQ(block_scale(ao, a, Source::f32).e8m0, 128);
  EXPECT_EQ(block_scale(ao, a, Source::bf16).e8m0, 128);
}

// torch_cpu NaN signs (scale_element): a NaN factor gives its own, else a NaN x keeps its sign,
// else Inf * 0 gives the negative default NaN.
TEST(RecipeEdges, TorchCpuNanSigns) {
  const auto cpu = rec(RecipeKind::deepgemm, Runtime::torch_cpu);
  const EncodeSpec spec = element_spec(cpu);
  const BlockScale nan_block = block_scale(cpu, kNan, Source::f32);
  EXPECT_EQ(quantize_element(cpu, spec, nan_block, -kNan), 0x7F);  // the factor's +NaN
  EXPECT_EQ(quantize_element(cpu, spec, nan_block, kNan), 0x7F);
  EXPECT_EQ(quantize_element(cpu, spec, nan_block, -1.0f), 0x7F);
  const BlockScale one = block_scale(cpu, 448.0f, Source::f32);
  EXPECT_EQ(quantize_element(cpu, spec, one, -kNan), 0xFF);          // x's sign
  const BlockScale inf_block = block_scale(cpu, kInf, Source::f32);  // factor 1 / Inf = 0
  EXPECT_EQ(inf_block.factor, 0.0f);
  EXPECT_EQ(quantize_element(cpu, spec, inf_block, kInf), 0xFF);
  EXPECT_EQ(quantize_element(cpu, spec, inf_block, -2.0f), 0x80);
}

TEST(RecipeEdges, InvalidRecipesThrow) {
  EXPECT_THROW(validate(rec(RecipeKind::deepgemm, Runtime::torch_cpu, false, Format::e5m2)),
               std::invalid_argument);
  EXPECT_THROW(validate(rec(RecipeKind::te, Runtime::torch_cpu)), std::invalid_argument);
  EXPECT_THROW(validate(rec(RecipeKind::mx_floor, Runtime::cuda_kernel)), std::invalid_argument);
  EXPECT_THROW(validate(rec(RecipeKind::mx_floor, Runtime::torch_cpu, true)),
               std::invalid_argument);
  EXPECT_THROW(validate(rec(RecipeKind::torchao, Runtime::torch_cpu, false, Format::e4m3, 1.0f)),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
