// Accumulation models of one output element (docs/design.md §10): `exact` equals a Boost
// cpp_rational dot product rounded once; every other model lies within its documented bound of it;
// and the identities between models that follow from their definitions.
#include "numerics/models.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <vector>

#include "proptests/common/oracle.h"
#include "proptests/common/test_level.h"

namespace fp8ref {
namespace {

struct Case {
  Format fa, fb;
  std::int64_t K;
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb;  // length 1 (constant) or ceil(K/block) (per block)
  std::int64_t block = 128;   // 128, or 32 for MX
  ElementScales scales() const { return {sa.data(), sb.data(), sa.size() > 1, block}; }
};

// per_block scales: 1×128 blocks, or MX 1×32 blocks of powers of two when `mx`.
Case gen_case(bool per_block, bool mx = false) {
  Case c;
  c.fa = *test::gen_format();
  c.fb = *test::gen_format();
  c.K = *rc::gen::weightedOneOf<std::int64_t>({{1, rc::gen::just<std::int64_t>(0)},
                                               {4, rc::gen::inRange<std::int64_t>(1, 130)},
                                               {4, rc::gen::inRange<std::int64_t>(130, 700)}});
  c.a = *test::gen_codes(c.fa, c.K);
  c.b = *test::gen_codes(c.fb, c.K);
  c.block = per_block && mx ? 32 : 128;
  const std::size_t ns =
      per_block ? std::size_t(std::max<std::int64_t>(1, ceil_div(c.K, c.block))) : 1;
  const bool unit = *rc::gen::arbitrary<bool>() && !per_block;
  for (std::size_t i = 0; i < ns; ++i) {
    c.sa.push_back(unit ? 1.0f : mx ? *test::gen_pow2_scale() : *test::gen_scale());
    c.sb.push_back(unit ? 1.0f : mx ? *test::gen_pow2_scale() : *test::gen_scale());
  }
  if (per_block && ns == 1) {  // keep per_block: a second (unused) entry
    const float sa0 = c.sa[0], sb0 = c.sb[0];
    c.sa.push_back(sa0), c.sb.push_back(sb0);
  }
  return c;
}

test::Rational exact_of(const Case& c) {
  std::vector<float> sa = c.sa, sb = c.sb;
  if (sa.size() > 1 && c.K <= c.block)
    sa.erase(sa.begin() + 1, sa.end()), sb.erase(sb.begin() + 1, sb.end());
  return test::exact_dot_rational(c.a.data(), c.b.data(), c.K, c.fa, c.fb, sa, sb, c.block);
}

Case gen_any_case() {
  const int kind = *rc::gen::inRange(0, 3);  // constant, 1×128, MX 1×32
  return gen_case(kind > 0, kind == 2);
}

FP8REF_RC_PROP(AccumulationModels, ExactIsRationalRoundedOnce, 100, ()) {
  const Case c = gen_any_case();
  const OutDtype d = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  const double z = exact_dot(c.a.data(), c.b.data(), c.K, c.fa, c.fb, c.scales(), d);
  RC_CLASSIFY(c.block == 32, "mx");
  if (d == OutDtype::f16) {
    RC_ASSERT(out_value(out_bits(z, d), d) == z || std::isnan(z));
    RC_ASSERT(test::is_nearest_even_f16(exact_of(c), std::uint16_t(out_bits(z, d))));
    return;
  }
  RC_ASSERT(double(float(z)) == z);
  if (d == OutDtype::bf16) RC_ASSERT((std::bit_cast<std::uint32_t>(float(z)) & 0xFFFF) == 0u);
  RC_ASSERT(test::is_nearest_even(exact_of(c), float(z), d == OutDtype::bf16));
}

void check_within_bound(const Case& c, const Bounded& got) {
  RC_ASSERT(std::isfinite(got.z));
  const test::Rational err = abs(test::to_rational(double(got.z)) - exact_of(c));
  RC_ASSERT(err <= test::to_rational(got.bound));
}

FP8REF_RC_PROP(AccumulationModels, Fp32SequentialWithinBound, 100, ()) {
  const Case c = gen_any_case();
  check_within_bound(c, fp32_sequential_dot(c.a.data(), c.b.data(), c.K, c.fa, c.fb, c.scales()));
}

FP8REF_RC_PROP(AccumulationModels, HopperUnpromotedWithinBound, 100, ()) {
  const Case c = gen_case(false);
  const int s = *rc::gen::inRange(1, 5);
  check_within_bound(
      c, hopper_unpromoted_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s));
}

FP8REF_RC_PROP(AccumulationModels, HopperPromotedBlockwiseWithinBound, 100, ()) {
  const Case c = gen_any_case();
  const int s = *rc::gen::inRange(1, 5);
  check_within_bound(
      c, hopper_promoted_blockwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s));
}

FP8REF_RC_PROP(AccumulationModels, HopperPromotedTensorwiseWithinBound, 100, ()) {
  const Case c = gen_case(false);
  const int s = *rc::gen::inRange(1, 5);
  check_within_bound(
      c, hopper_promoted_tensorwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s));
}

FP8REF_RC_PROP(AccumulationModels, HopperPromotedRowwiseWithinBound, 100, ()) {
  const Case c = gen_case(false);
  const int s = *rc::gen::inRange(1, 5);
  check_within_bound(
      c, hopper_promoted_rowwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s));
}

FP8REF_RC_PROP(AccumulationModels, HopperMmaSyncWithinBound, 100, ()) {
  const Case c = gen_any_case();
  const int s = *rc::gen::inRange(1, 5);
  check_within_bound(c,
                     hopper_mma_sync_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s));
}

// With power-of-two scales every scale product is exact, so RN(sa·RN(sb·acc)) = RN(acc·RN(sa·sb))
// (both are RN of acc·sa·sb): rowwise and tensorwise promotion agree.
FP8REF_RC_PROP(AccumulationModels, Pow2ScalesRowwiseEqualsTensorwise, 100, ()) {
  Case c = gen_case(false);
  c.sa = {*test::gen_pow2_scale()}, c.sb = {*test::gen_pow2_scale()};
  const float rw =
      hopper_promoted_rowwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), 1).z;
  const float tw =
      hopper_promoted_tensorwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), 1).z;
  RC_PRE(std::isfinite(rw) && std::fabs(rw) >= 0x1p-126f);  // no double rounding in subnormals
  RC_ASSERT(std::bit_cast<std::uint32_t>(rw) == std::bit_cast<std::uint32_t>(tw));
}

// With unit scales fmaf(1, T, acc) = RN(acc + T), so blockwise and tensorwise promotion agree.
FP8REF_RC_PROP(AccumulationModels, UnitScalesPromotionOrdersAgree, 100, ()) {
  Case c = gen_case(false);
  c.sa = {1.0f}, c.sb = {1.0f};
  const int s = *rc::gen::inRange(1, 4);
  const float bw =
      hopper_promoted_blockwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s).z;
  const float tw =
      hopper_promoted_tensorwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), s).z;
  RC_ASSERT(std::bit_cast<std::uint32_t>(bw) == std::bit_cast<std::uint32_t>(tw));
}

// Slices of one block each are added in f32 in order: the same additions as no split.
FP8REF_RC_PROP(AccumulationModels, TensorwiseSplitIntoSingleBlocksEqualsUnsplit, 100, ()) {
  const Case c = gen_case(false);
  const int nb = int(std::max<std::int64_t>(1, ceil_div(c.K, 128)));
  const float one =
      hopper_promoted_tensorwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), 1).z;
  const float split =
      hopper_promoted_tensorwise_dot({c.a.data(), c.b.data(), c.fa, c.fb}, c.K, c.scales(), nb).z;
  RC_ASSERT(std::bit_cast<std::uint32_t>(one) == std::bit_cast<std::uint32_t>(split));
}

// Split-K by slice length (SplitK::of_length(L), cuBLASLt's blockwise split-K): the same as
// evaluating each L-block slice from +0 and adding the slice results in f32 in order; L >= nb is
// no split; L dividing nb is S = nb / L equal slices.
FP8REF_RC_PROP(AccumulationModels, SliceLengthSplitIsSlicesAddedInOrder, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const std::int64_t K = *rc::gen::inRange<std::int64_t>(1, 128 * 9 + 1);
  const auto a = *test::gen_codes(fa, K);
  const auto b = *test::gen_codes(fb, K);
  const std::int64_t L = *rc::gen::inRange<std::int64_t>(1, 6);
  const float one = 1.0f;
  const ElementScales ones{&one, &one, false};
  const std::int64_t nb = std::max<std::int64_t>(1, ceil_div(K, 128));
  float manual = 0.0f;
  for (std::int64_t k0 = 0, s = 0; k0 < K || s == 0; k0 += 128 * L, ++s) {
    const std::int64_t len = std::min(K - k0, 128 * L);
    const float part =
        hopper_promoted_tensorwise_dot({a.data() + k0, b.data() + k0, fa, fb}, len, ones, 1).z;
    manual = s == 0 ? part : manual + part;
    if (len <= 0) break;
  }
  const float z =
      hopper_promoted_tensorwise_dot({a.data(), b.data(), fa, fb}, K, ones, SplitK::of_length(L)).z;
  RC_ASSERT(std::bit_cast<std::uint32_t>(z) == std::bit_cast<std::uint32_t>(manual));
  if (nb % L == 0) {
    const float eq =
        hopper_promoted_tensorwise_dot({a.data(), b.data(), fa, fb}, K, ones, SplitK(int(nb / L)))
            .z;
    RC_ASSERT(std::bit_cast<std::uint32_t>(z) == std::bit_cast<std::uint32_t>(eq));
  }
  const float big =
      hopper_promoted_tensorwise_dot({a.data(), b.data(), fa, fb}, K, ones, SplitK::of_length(nb))
          .z;
  const float unsplit = hopper_promoted_tensorwise_dot({a.data(), b.data(), fa, fb}, K, ones, 1).z;
  RC_ASSERT(std::bit_cast<std::uint32_t>(big) == std::bit_cast<std::uint32_t>(unsplit));
}

// Epilogue orders: the same accumulator, the scalar scales applied in the named order. Each order
// reproduces the model that has it as its own; a_then_b is b_then_a with the scales swapped.
FP8REF_RC_PROP(AccumulationModels, EpilogueOrdersReproduceTheModelsThatOwnThem, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const std::int64_t K = *rc::gen::inRange<std::int64_t>(1, 128 * 4 + 1);
  const auto a = *test::gen_codes(fa, K);
  const auto b = *test::gen_codes(fb, K);
  const float sa = *test::gen_scale(), sb = *test::gen_scale();
  const ElementScales sc{&sa, &sb, false}, swapped{&sb, &sa, false};
  const SplitK split(*rc::gen::inRange(1, 4));
  auto bits = [](float x) { return std::bit_cast<std::uint32_t>(x); };
  using M = AccumulationModel;
  const float tw =
      model_dot(M::hopper_promoted_tensorwise, a.data(), b.data(), K, fa, fb, sc, split).z;
  const float rw =
      model_dot(M::hopper_promoted_rowwise, a.data(), b.data(), K, fa, fb, sc, split).z;
  RC_ASSERT(bits(model_dot(M::hopper_promoted_tensorwise, a.data(), b.data(), K, fa, fb, sc, split,
                           Epilogue::b_then_a)
                     .z) == bits(rw));
  RC_ASSERT(bits(model_dot(M::hopper_promoted_rowwise, a.data(), b.data(), K, fa, fb, sc, split,
                           Epilogue::scale_product)
                     .z) == bits(tw));
  RC_ASSERT(bits(model_dot(M::hopper_promoted_rowwise, a.data(), b.data(), K, fa, fb, sc, split,
                           Epilogue::model)
                     .z) == bits(rw));
  const Bounded ab = model_dot(M::hopper_promoted_rowwise, a.data(), b.data(), K, fa, fb, sc, split,
                               Epilogue::a_then_b);
  const Bounded ba = model_dot(M::hopper_promoted_rowwise, a.data(), b.data(), K, fa, fb, swapped,
                               split, Epilogue::b_then_a);
  RC_ASSERT(bits(ab.z) == bits(ba.z));
  RC_ASSERT(ab.bound == ba.bound);
  const float un = model_dot(M::hopper_unpromoted, a.data(), b.data(), K, fa, fb, sc, split).z;
  RC_ASSERT(bits(model_dot(M::hopper_unpromoted, a.data(), b.data(), K, fa, fb, sc, split,
                           Epilogue::scale_product)
                     .z) == bits(un));
}

TEST(AccumulationModels, EpiloguesRejectPerBlockScalesAndOtherModels) {
  const std::vector<std::uint8_t> a(256, 0x38);
  const float s[2] = {1.0f, 2.0f};
  EXPECT_THROW(model_dot(AccumulationModel::hopper_promoted_blockwise, a.data(), a.data(), 256,
                         Format::e4m3, Format::e4m3, {s, s, false}, 1, Epilogue::a_then_b),
               std::invalid_argument);
  EXPECT_THROW(model_dot(AccumulationModel::hopper_mma_sync, a.data(), a.data(), 256, Format::e4m3,
                         Format::e4m3, {s, s, true}, 1, Epilogue::a_then_b),
               std::invalid_argument);
}

// Within one 128-block, unscaled promotion is the bare tensor-core chain from +0.
FP8REF_RC_PROP(AccumulationModels, SingleBlockPromotionIsTheChain, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const std::int64_t K = *rc::gen::inRange<std::int64_t>(1, 129);
  const auto a = *test::gen_codes(fa, K);
  const auto b = *test::gen_codes(fb, K);
  const float one = 1.0f;
  const float z =
      hopper_promoted_blockwise_dot({a.data(), b.data(), fa, fb}, K, {&one, &one, false}, 1).z;
  const float t = hopper_wgmma_chain(a.data(), b.data(), K, fa, fb, {0.0f, 0.0}).z;
  RC_ASSERT(std::bit_cast<std::uint32_t>(z) == std::bit_cast<std::uint32_t>(t));
}

TEST(AccumulationModels, ModelsRejectWhatTheyCannotModel) {
  const std::vector<std::uint8_t> a(256, 0x38);
  const float s[2] = {1.0f, 2.0f};
  const ElementScales blocks{s, s, true};
  EXPECT_THROW(
      hopper_unpromoted_dot({a.data(), a.data(), Format::e4m3, Format::e4m3}, 256, blocks, 1),
      std::invalid_argument);
  EXPECT_THROW(model_dot(AccumulationModel::fp32_sequential, a.data(), a.data(), 256, Format::e4m3,
                         Format::e4m3, {s, s, false}, 2),
               std::invalid_argument);
  EXPECT_THROW(hopper_promoted_blockwise_dot({a.data(), a.data(), Format::e4m3, Format::e4m3}, 256,
                                             blocks, 0),
               std::invalid_argument);
  SplitK both = SplitK::of_length(2);
  both.slices = 2;  // a count and a length at once
  EXPECT_THROW(hopper_promoted_blockwise_dot({a.data(), a.data(), Format::e4m3, Format::e4m3}, 256,
                                             blocks, both),
               std::invalid_argument);
  EXPECT_THROW(model_dot(AccumulationModel::fp32_sequential, a.data(), a.data(), 256, Format::e4m3,
                         Format::e4m3, {s, s, false}, SplitK::of_length(1)),
               std::invalid_argument);
}

// Hand-checked: 256 products 1·1 (e4m3) sum to 256 under every model and exactly.
TEST(AccumulationModels, SmallIntegerSumsAreExactEverywhere) {
  const std::vector<std::uint8_t> a(256, 0x38);
  const float one = 1.0f;
  const ElementScales sc{&one, &one, false};
  EXPECT_EQ(exact_dot(a.data(), a.data(), 256, Format::e4m3, Format::e4m3, sc, OutDtype::bf16),
            256.0);
  for (AccumulationModel m : kAllAccumulationModels) {
    if (m == AccumulationModel::exact) continue;
    EXPECT_EQ(model_dot(m, a.data(), a.data(), 256, Format::e4m3, Format::e4m3, sc, 1).z, 256.0f)
        << to_string(m);
  }
}

}  // namespace
}  // namespace fp8ref
