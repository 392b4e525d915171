// Test strength and the adversarial classes of the grouped-GEMM suites (docs/fuzz.md "Test
// strength", "Generators"): the candidate set counted by hand, choices that compute the same
// arithmetic sharing a key (by hand, and as equal bits on drawn cases), cases whose strength
// follows from the arithmetic (a tiny term that only `exact` keeps; integer data every
// configuration sums exactly; an all-zero operand), and each adversarial class's defining
// property on drawn cases.
#include "campaign/strength.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "campaign/gemm_case.h"
#include "campaign/gen/choices.h"
#include "campaign/wgrad_case.h"
#include "proptests/common/test_level.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {
namespace {

using AM = AccumulationModel;
using ref::Scaling;

// One group, M rows, N = 1, B `nk`, unscaled; codes given per row of A and for B.
GemmCase tiny_case(const std::vector<std::vector<std::uint8_t>>& rows,
                   const std::vector<std::uint8_t>& b, ref::ModelChoice model) {
  GemmCase c;
  c.gs.sizes = {std::int64_t(rows.size())};
  c.G = 1, c.N = 1, c.K = std::int64_t(b.size());
  c.group_of = cases::rows_of(c.gs, Desc::offs, 0, c.M);
  for (const auto& r : rows) c.a.insert(c.a.end(), r.begin(), r.end());
  c.b = b;
  c.model = model;
  return c;
}

TEST(Strength, CandidateCountsByHand) {
  // Scalar scales, one 128-block: exact, fp32_sequential; promoted (unpromoted's one chain and
  // promoted_blockwise's one fmaf are the same computation) and mma_sync under three epilogue
  // orders: 2 + 3 + 3.
  EXPECT_EQ(strength_candidates(Scaling::tensorwise, 128).size(), 8u);
  // Three blocks: the partitions [3], [2, 3], [1, 2, 3] (S = 2 cuts ceil(3/2) = 2 blocks; slices
  // of 1, 2, 3 blocks repeat them); promoted_tensorwise's one-block slices merge, so its three are
  // one: 2 + unpromoted 3·3 + promoted 3 + blockwise 3 + mma_sync 3·3.
  EXPECT_EQ(strength_candidates(Scaling::rowwise, 384).size(), 26u);
  // Block scales: promoted_blockwise and mma_sync, the model's own order only: 2 + 2 · 3.
  EXPECT_EQ(strength_candidates(Scaling::blockwise, 384).size(), 8u);
  // No scales, two blocks: every order is one, promoted_blockwise is promoted_tensorwise, whose
  // [1, 2] merges into [2]: 2 + unpromoted 2 + promoted 1 + mma_sync 2.
  EXPECT_EQ(strength_candidates(Scaling::none, 256).size(), 7u);
  for (Scaling s :
       {Scaling::none, Scaling::tensorwise, Scaling::rowwise, Scaling::blockwise, Scaling::mx}) {
    std::set<std::string> keys;
    for (const auto& m : strength_candidates(s, 640)) keys.insert(configuration_key(m, s, 640));
    EXPECT_EQ(keys.size(), strength_candidates(s, 640).size()) << ref::to_string(s);
  }
}

TEST(Strength, KeysJoinTheSameArithmetic) {
  const auto key = [](ref::ModelChoice m, Scaling s, std::int64_t k) {
    return configuration_key(m, s, k);
  };
  // promoted_rowwise's own order is b_then_a, on promoted_tensorwise's accumulator.
  EXPECT_EQ(key({AM::hopper_promoted_rowwise, 1}, Scaling::rowwise, 256),
            key({AM::hopper_promoted_tensorwise, 1, 0, Epilogue::b_then_a}, Scaling::rowwise, 256));
  EXPECT_NE(key({AM::hopper_promoted_rowwise, 1}, Scaling::rowwise, 256),
            key({AM::hopper_promoted_tensorwise, 1}, Scaling::rowwise, 256));
  // One block: split-K cannot cut it.
  EXPECT_EQ(key({AM::hopper_unpromoted, 3}, Scaling::tensorwise, 128),
            key({AM::hopper_unpromoted, 1, 2}, Scaling::tensorwise, 128));
  // One block: unpromoted's chain is the block's T; promoted_blockwise's fmaf(RN(sa·sb), T, +0)
  // is the scale_product epilogue. Without scales promoted_blockwise adds RN(acc + T).
  EXPECT_EQ(key({AM::hopper_unpromoted, 1}, Scaling::tensorwise, 100),
            key({AM::hopper_promoted_tensorwise, 1}, Scaling::tensorwise, 100));
  EXPECT_EQ(
      key({AM::hopper_promoted_blockwise, 1}, Scaling::rowwise, 128),
      key({AM::hopper_promoted_rowwise, 1, 0, Epilogue::scale_product}, Scaling::rowwise, 128));
  EXPECT_NE(
      key({AM::hopper_promoted_blockwise, 1}, Scaling::rowwise, 256),
      key({AM::hopper_promoted_rowwise, 1, 0, Epilogue::scale_product}, Scaling::rowwise, 256));
  EXPECT_EQ(key({AM::hopper_promoted_blockwise, 2}, Scaling::none, 512),
            key({AM::hopper_promoted_tensorwise, 2}, Scaling::none, 512));
  // promoted_tensorwise: slices of one block merge ([2, 3] is [3]); [2, 4] stays.
  EXPECT_EQ(key({AM::hopper_promoted_tensorwise, 2}, Scaling::tensorwise, 384),
            key({AM::hopper_promoted_tensorwise, 1}, Scaling::tensorwise, 384));
  EXPECT_NE(key({AM::hopper_promoted_tensorwise, 2}, Scaling::tensorwise, 512),
            key({AM::hopper_promoted_tensorwise, 1}, Scaling::tensorwise, 512));
  EXPECT_NE(key({AM::hopper_unpromoted, 2}, Scaling::tensorwise, 384),
            key({AM::hopper_unpromoted, 1}, Scaling::tensorwise, 384));
  // Three blocks: S = 3 and slices of one block are [1, 2, 3]; S = 2 is [2, 3].
  EXPECT_EQ(key({AM::hopper_mma_sync, 3}, Scaling::blockwise, 384),
            key({AM::hopper_mma_sync, 1, 1}, Scaling::blockwise, 384));
  EXPECT_NE(key({AM::hopper_mma_sync, 2}, Scaling::blockwise, 384),
            key({AM::hopper_mma_sync, 3}, Scaling::blockwise, 384));
}

// e4m3: 0x7E = 448, 0xFE = -448, 0x01 = 2^-9 (the least subnormal). Row 448·448 + 2^-18 −
// 448·448: the exact sum 2^-18 is an f32; fp32_sequential adds 2^-18 to 200704 (ulp 2^-6) and
// loses it, the tensor-core models align products to the largest exponent and truncate it away,
// so every configuration but `exact` gives +0.
TEST(Strength, OnlyExactKeepsTheTinyTerm) {
  const std::vector<std::uint8_t> row{0x7E, 0x01, 0x7E}, b{0x7E, 0x01, 0xFE};
  const Strength exact = measure_strength(tiny_case({row}, b, {AM::exact, 1}));
  ASSERT_TRUE(exact.measured);
  EXPECT_EQ(exact.matching, 1);
  EXPECT_FALSE(exact.zero_output);
  EXPECT_EQ(strength_tags(exact), std::vector<std::string>{"strength:1"});
  const Strength other = measure_strength(tiny_case({row}, b, {AM::hopper_unpromoted, 1}));
  EXPECT_EQ(other.matching, other.candidates - 1);
  EXPECT_TRUE(other.zero_output);
}

// Small integers (1, 2, 3 as e4m3 0x38, 0x40, 0x44): every partial sum is an exact small
// integer, so every configuration reproduces the output: vacuous for accumulation orders.
TEST(Strength, IntegerDataEveryConfigurationAgrees) {
  std::vector<std::uint8_t> row(256, 0x38), b(256, 0x40);
  row[7] = 0x44;
  const Strength s = measure_strength(tiny_case({row, row}, b, {AM::hopper_mma_sync, 2}));
  EXPECT_EQ(s.matching, s.candidates);
  const auto t = strength_tags(s);
  EXPECT_NE(std::find(t.begin(), t.end(), "vacuous:all_agree"), t.end());
  const Strength z = measure_strength(
      tiny_case({std::vector<std::uint8_t>(256, 0)}, b, {AM::hopper_promoted_tensorwise, 1}));
  EXPECT_TRUE(z.zero_operand && z.zero_output && z.matching == z.candidates);
  GemmCase none = tiny_case({row}, b, {AM::exact, 1});
  none.gs.sizes = {0}, none.gs.tail = 1;
  none.group_of = cases::rows_of(none.gs, Desc::offs, 0, none.M);
  EXPECT_EQ(strength_tags(measure_strength(none)), std::vector<std::string>{"vacuous:no_rows"});
}

// One K-grouped wgrad group of the given tokens, N = K = 1, unscaled, C = 0: dY's and X's codes.
WgradCase tiny_wgrad(const std::vector<std::uint8_t>& dy, const std::vector<std::uint8_t>& x,
                     ref::ModelChoice model) {
  WgradCase w;
  w.gs.sizes = {std::int64_t(dy.size())};
  w.M = std::int64_t(dy.size()), w.N = 1, w.K = 1, w.G = 1;
  w.dy = dy, w.x = x, w.c = {0.0f};
  w.model = model;
  return w;
}

// wgrad's dW = 448·448 + 2^-18 − 448·448 over three tokens: as in OnlyExactKeepsTheTinyTerm,
// only `exact` keeps 2^-18; integer data every configuration sums exactly; no tokens, nothing
// measured.
TEST(Strength, WgradTinyTermAndVacuousData) {
  const std::vector<std::uint8_t> dy{0x7E, 0x01, 0x7E}, x{0x7E, 0x01, 0xFE};
  const Strength exact = measure_wgrad_strength(tiny_wgrad(dy, x, {AM::exact, 1}));
  ASSERT_TRUE(exact.measured);
  EXPECT_EQ(exact.matching, 1);
  EXPECT_EQ(exact.rows, 3);
  EXPECT_EQ(strength_tags(exact), std::vector<std::string>{"strength:1"});
  const Strength other = measure_wgrad_strength(tiny_wgrad(dy, x, {AM::hopper_unpromoted, 1}));
  EXPECT_EQ(other.matching, other.candidates - 1);
  EXPECT_TRUE(other.zero_output);
  const Strength ints =
      measure_wgrad_strength(tiny_wgrad({0x38, 0x40, 0x44}, {0x40, 0x40, 0x38}, {AM::exact, 1}));
  EXPECT_EQ(ints.matching, ints.candidates);
  EXPECT_GT(ints.candidates, 1);
  WgradCase none = tiny_wgrad(dy, x, {AM::exact, 1});
  none.gs.sizes = {0}, none.gs.tail = 3;
  EXPECT_EQ(strength_tags(measure_wgrad_strength(none)),
            std::vector<std::string>{"vacuous:no_rows"});
}

// Two groups of 1 and 2 blocks of tokens: a configuration is one computation only when it is one
// for both lengths (S = 2 cuts the 2-block group but not the 1-block one).
TEST(Strength, WgradKeyJoinsEveryGroupLength) {
  WgradCase w = tiny_wgrad(std::vector<std::uint8_t>(384, 0x38),
                           std::vector<std::uint8_t>(384, 0x38), {AM::exact, 1});
  w.gs.sizes = {128, 256}, w.G = 2, w.c = {0.0f, 0.0f};
  EXPECT_EQ(wgrad_configuration_key({AM::hopper_unpromoted, 2}, w),
            configuration_key({AM::hopper_unpromoted, 2}, Scaling::none, 128) + ";" +
                configuration_key({AM::hopper_unpromoted, 2}, Scaling::none, 256) + ";");
  EXPECT_NE(wgrad_configuration_key({AM::hopper_unpromoted, 2}, w),
            wgrad_configuration_key({AM::hopper_unpromoted, 1}, w));
}

// The identities configuration_key joins hold on drawn cases: every pair of the campaign's
// choices (model × epilogue × split-K S 1–3 or slices of 1–3 blocks) with one key gives the same
// bits on every row of a group.
FP8REF_RC_PROP(Strength, EqualKeysGiveEqualBits, 40, ()) {
  const GemmCase c = draw_gemm(DrawOptions{});
  RC_PRE(c.M * c.N * c.K <= (std::int64_t(1) << 16));  // ~170 forwards per case
  std::map<std::string, std::vector<std::uint32_t>> seen;
  for (AM m : kAllAccumulationModels)
    for (Epilogue e : kAllEpilogues)
      for (int v = 0; v < 6; ++v) {
        const ref::ModelChoice x =
            v < 3 ? ref::ModelChoice{m, v + 1, 0, e} : ref::ModelChoice{m, 1, v - 2, e};
        const std::size_t n = std::size_t(c.M * c.N);
        std::vector<float> f(c.out == OutDtype::f32 ? n : 0);
        std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n);
        try {
          ref::grouped_gemm_forward(c.operands(), c.group_of, x, ref::RowPolicy::zero,
                                    {c.out, f, h, {}});
        } catch (const std::invalid_argument&) {
          continue;
        }
        std::vector<std::uint32_t> bits(n);
        for (std::size_t i = 0; i < n; ++i)
          bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
        for (std::size_t i = 0; i < n; ++i)  // NaN payloads are not compared
          if (c.out == OutDtype::f32 ? std::isnan(f[i]) : (h[i] & 0x7fff) > 0x7c00) bits[i] = 1;
        const std::string k = configuration_key(x, c.scaling, c.K);
        const auto [it, fresh] = seen.emplace(k, bits);
        if (!fresh) RC_ASSERT(it->second == bits);
      }
}

// Each adversarial class has its defining property on the cases drawn with it.
FP8REF_RC_PROP(Adversarial, ClassesHoldTheirProperty, 400, ()) {
  DrawOptions o;
  o.adversarial = true;
  const GemmCase c = draw_gemm(o);
  RC_TAG(std::string(cases::to_string(c.adversarial)), c.moe_shape ? "moe" : "small");
  if (c.moe_shape) {  // every class at MoE-like shapes, within the MoE work bound
    const gen::MoeShapeLimits lim;
    RC_ASSERT(std::max<std::int64_t>(c.gs.total(), 1) * c.N * c.K <= lim.max_work);
  }
  if (c.adversarial == cases::Adversarial::exact_128)
    RC_ASSERT(std::count(c.gs.sizes.begin(), c.gs.sizes.end(), 128) >= 1);
  if (c.adversarial == cases::Adversarial::poison_past_end) {
    RC_ASSERT(c.desc != Desc::masked && c.gs.tail >= 1 && c.group_of.back() < 0);
    for (std::int64_t r = 0; r < c.M; ++r)
      if (c.group_of[std::size_t(r)] < 0)
        RC_ASSERT(std::all_of(c.a.begin() + r * c.K, c.a.begin() + (r + 1) * c.K,
                              [](std::uint8_t x) { return x == 0x7F; }));
  }
  if (c.adversarial == cases::Adversarial::zero_channel) {
    bool k_zero = false;
    for (std::int64_t k = 0; k < c.K && !k_zero; ++k) {
      k_zero = true;
      for (std::int64_t r = 0; r < c.M; ++r) k_zero = k_zero && c.a[std::size_t(r * c.K + k)] == 0;
    }
    RC_ASSERT(k_zero);
  }
  if (c.adversarial == cases::Adversarial::separating) {
    // K = 4 blocks (MoE-like: 56 blocks over at most 8 tokens and 8 groups, else at least 4),
    // f32 out; in each 128-block of A the codes' exponents span at most 3 values.
    const bool long_k = c.moe_shape && c.gs.total() <= 8 && c.G <= 8;
    RC_ASSERT(c.out == OutDtype::f32);
    const bool k_ok = long_k        ? c.K == 7168
                      : c.moe_shape ? c.K >= 512 && c.K % 128 == 0
                                    : c.K == 512;
    RC_ASSERT(k_ok);
    const int mb = c.fa == Format::e4m3 ? 3 : 2;
    for (std::int64_t kb = 0; kb < c.K / 128; ++kb) {
      int lo = 99, hi = -1;
      for (std::int64_t r = 0; r < c.M; ++r)
        for (std::int64_t k = kb * 128; k < (kb + 1) * 128; ++k) {
          const int e = (c.a[std::size_t(r * c.K + k)] & 0x7F) >> mb;
          lo = std::min(lo, e), hi = std::max(hi, e);
        }
      RC_ASSERT(hi - lo <= 2);
    }
  }
  if (c.adversarial == cases::Adversarial::pow2_bands) {
    // Valid rows in two 128-row bands; A's first scale per row a power of two, one value per band
    // and different between the bands; N spans 2-4 tiles, B's first scale of each tile a power of
    // two, different between the tiles.
    std::map<std::int64_t, std::set<float>> band;
    const std::int64_t per_row = cases::sa_count(c) / c.M;
    for (std::int64_t r = 0; r < c.M; ++r)
      if (c.group_of[std::size_t(r)] >= 0) band[r / 128].insert(c.sa[std::size_t(r * per_row)]);
    RC_ASSERT(band.size() >= 2u && c.N > 128);
    std::set<float> firsts;
    for (const auto& [b, v] : band) {
      RC_ASSERT(v.size() == 1u);
      int e = 0;
      RC_ASSERT(std::frexp(*v.begin(), &e) == 0.5f);
      firsts.insert(*v.begin());
    }
    RC_ASSERT(firsts.size() == band.size());
    const std::int64_t tiles = (c.N + 127) / 128, per_n = cases::sb_count(c) / c.G;
    const bool bw = c.scaling == Scaling::blockwise;
    const std::int64_t per_col = bw ? per_n / tiles : per_n / c.N;  // scales per column (K blocks)
    RC_ASSERT(tiles >= 2 && tiles <= 4);
    RC_TAG("pow2_bands tiles " + std::to_string(tiles));
    std::set<float> tile_scales;
    for (std::int64_t t = 0; t < tiles; ++t) {
      const float s = c.sb[std::size_t((bw ? t : t * 128) * per_col)];
      int e = 0;
      RC_ASSERT(std::frexp(s, &e) == 0.5f);
      tile_scales.insert(s);
    }
    RC_ASSERT(tile_scales.size() == std::size_t(tiles));
  }
}

}  // namespace
}  // namespace fp8ref::fuzz
