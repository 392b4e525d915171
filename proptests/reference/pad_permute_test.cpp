// Padding, permutation and unpermute (docs/design.md §13): unpad∘pad = id with padding rows exactly
// zero and the static capacity formula; a GEMM on the padded buffer equals the GEMM on the
// unpadded rows; unpermute∘permute = id for top-1 with unit probs; expert-major order with
// ascending tokens; scale rows travel with their rows and 2D-scaled activations are rejected;
// unpermute's fixed f32 order, independent of the thread count.
#include "reference/pad_permute.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "proptests/common/test_level.h"
#include "proptests/reference/gemm_problem.h"

namespace fp8ref::ref {
namespace {

std::vector<std::uint8_t> random_bytes(std::int64_t n) {
  return *rc::gen::container<std::vector<std::uint8_t>>(std::size_t(n),
                                                        rc::gen::inRange<std::uint8_t>(1, 255));
}

EmptyGroupPolicy gen_policy() {
  return *rc::gen::element(EmptyGroupPolicy::keep_empty, EmptyGroupPolicy::one_block);
}

FP8REF_RC_PROP(Padding, UnpadOfPadIsIdentityAndPaddingIsZero, 100, ()) {
  const auto sizes = *test::gen_sizes();
  const std::int64_t align = *rc::gen::element<std::int64_t>(16, 32, 128);
  const EmptyGroupPolicy pol = gen_policy();
  const PadPlan plan = plan_padding(sizes, align, pol);
  const std::int64_t G = std::int64_t(sizes.size()),
                     row_bytes = *rc::gen::inRange<std::int64_t>(1, 9);
  RC_ASSERT(plan.capacity == (plan.rows_in + G * align + align - 1) / align * align);
  RC_ASSERT(plan.used <= plan.capacity);
  const auto in = random_bytes(plan.rows_in * row_bytes);  // no zero bytes: padding is visible
  std::vector<std::uint8_t> padded(std::size_t(plan.capacity * row_bytes), 0xEE);
  pad_rows(plan, {in, plan.rows_in, row_bytes}, {padded, plan.capacity, row_bytes});
  const auto map = padded_row_map(plan);
  for (std::int64_t r = 0; r < plan.capacity; ++r) {
    const bool zero =
        std::all_of(padded.begin() + r * row_bytes, padded.begin() + (r + 1) * row_bytes,
                    [](std::uint8_t b) { return b == 0; });
    RC_ASSERT(zero == (map[std::size_t(r)] < 0));
  }
  for (std::int64_t g = 0; g < G; ++g) {
    RC_ASSERT(plan.starts[std::size_t(g)] % align == 0);
    const std::int64_t want = sizes[std::size_t(g)] == 0 && pol == EmptyGroupPolicy::one_block
                                  ? align
                                  : (sizes[std::size_t(g)] + align - 1) / align * align;
    RC_ASSERT(plan.padded_sizes[std::size_t(g)] == want);
  }
  RC_ASSERT(row_map_from_aligned(padded_layout(plan), plan.capacity) == map);
  std::vector<std::uint8_t> back(in.size());
  unpad_rows(plan, {padded, plan.capacity, row_bytes}, {back, plan.rows_in, row_bytes});
  RC_ASSERT(back == in);
}

// The forward on the padded buffer (its row map, or its padded end offsets with zero rows
// inside the groups), unpadded, equals the forward on the unpadded rows.
FP8REF_RC_PROP(Padding, GemmOnPaddedRowsEqualsGemmOnRows, 100, ()) {
  auto sizes = *test::gen_sizes();
  RC_PRE(!sizes.empty());
  const std::int64_t G = std::int64_t(sizes.size());
  const auto offs = offsets_from_sizes(sizes);
  test::Problem p = test::gen_problem(row_map_from_offsets(offs, offs.back()), G, 20, 140);
  RC_PRE(p.scaling != Scaling::rowwise && p.scaling != Scaling::blockwise &&
         p.scaling != Scaling::mx);
  const ModelChoice m = test::gen_model(p.scaling);
  const PadPlan plan =
      plan_padding(sizes, *rc::gen::element<std::int64_t>(16, 32, 128), gen_policy());
  test::Problem q = p;
  q.M = plan.capacity;
  q.a.assign(std::size_t(q.M * p.K), 0);
  pad_rows(plan, {p.a, p.M, p.K}, {q.a, q.M, p.K});
  const bool by_offsets = *rc::gen::arbitrary<bool>();
  q.group_of = by_offsets ? row_map_from_offsets(padded_offsets(plan), q.M) : padded_row_map(plan);
  const OutDtype d = *rc::gen::element(OutDtype::f32, OutDtype::bf16);
  const auto y = test::run_bits(p, m, RowPolicy::zero, d),
             yq = test::run_bits(q, m, RowPolicy::zero, d);
  const std::int64_t w = d == OutDtype::f32 ? 4 : 2;
  std::vector<std::uint8_t> yq_bytes(yq.size() * std::size_t(w)), back(y.size() * std::size_t(w));
  for (std::size_t i = 0; i < yq.size(); ++i)
    std::memcpy(yq_bytes.data() + i * std::size_t(w), &yq[i], std::size_t(w));
  unpad_rows(plan, {yq_bytes, q.M, p.N * w}, {back, p.M, p.N * w});
  for (std::size_t i = 0; i < y.size(); ++i) {
    std::uint32_t v = 0;
    std::memcpy(&v, back.data() + i * std::size_t(w), std::size_t(w));
    RC_ASSERT(v == y[i]);
  }
}

Routing routing_of(std::int64_t T, std::int64_t k, std::int64_t E, std::vector<std::int32_t>& ids,
                   std::vector<float>& probs) {
  ids.clear();
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<std::int32_t> experts(static_cast<std::size_t>(E));
    for (std::int64_t e = 0; e < E; ++e) experts[std::size_t(e)] = std::int32_t(e);
    experts = test::shuffled(experts);
    for (std::int64_t j = 0; j < k; ++j)
      ids.push_back(
          *rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {6, rc::gen::just(false)}})
              ? -1
              : experts[std::size_t(j)]);
  }
  return {T, k, E, ids, probs};
}

FP8REF_RC_PROP(Permute, OrderIsExpertMajorWithAscendingTokens, 100, ()) {
  const std::int64_t E = *rc::gen::inRange(1, 6), k = *rc::gen::inRange<std::int64_t>(1, E + 1),
                     T = *rc::gen::inRange(0, 30);
  std::vector<std::int32_t> ids;
  std::vector<float> probs;
  const PermutePlan plan = plan_permute(routing_of(T, k, E, ids, probs));
  std::int64_t row = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    std::int64_t prev = -1;
    for (std::int64_t i = 0; i < plan.expert_sizes[std::size_t(e)]; ++i, ++row) {
      const std::int64_t t = plan.source_token[std::size_t(row)];
      RC_ASSERT(t > prev);
      RC_ASSERT(ids[std::size_t(t * k + plan.source_slot[std::size_t(row)])] == e);
      RC_ASSERT(plan.row_of[std::size_t(t * k + plan.source_slot[std::size_t(row)])] == row);
      prev = t;
    }
  }
  RC_ASSERT(row == std::int64_t(plan.source_token.size()));
  RC_ASSERT(std::int64_t(std::count(ids.begin(), ids.end(), -1)) + row == T * k);
}

// Top-1 with unit probs: the combine is RN(1·y) = y, so unpermute(permute(x)) = x bitwise
// (dropped tokens come back as +0), including -0 and subnormals.
FP8REF_RC_PROP(Permute, UnpermuteOfPermuteIsIdentityForTop1UnitProbs, 100, ()) {
  const std::int64_t E = *rc::gen::inRange(1, 6), T = *rc::gen::inRange(0, 30),
                     H = *rc::gen::inRange(1, 9);
  std::vector<std::int32_t> ids;
  std::vector<float> probs(std::size_t(T), 1.0f);
  const Routing r = routing_of(T, 1, E, ids, probs);
  const PermutePlan plan = plan_permute(r);
  const auto x = *rc::gen::container<std::vector<float>>(
      std::size_t(T * H), rc::gen::map(rc::gen::arbitrary<std::uint32_t>(), [](std::uint32_t u) {
        const float f = std::bit_cast<float>(u);
        return std::isfinite(f) ? f : -0.0f;
      }));
  const std::int64_t P = std::int64_t(plan.source_token.size());
  std::vector<float> xp(std::size_t(P * H)), back(x.size());
  permute_rows(plan, {{reinterpret_cast<const std::uint8_t*>(x.data()), x.size() * 4}, T, H * 4},
               {{reinterpret_cast<std::uint8_t*>(xp.data()), xp.size() * 4}, P, H * 4});
  for (auto m : {CombineRounding::mul_then_add, CombineRounding::fma}) {
    unpermute_combine(plan, r, xp, H, m, back);
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < H; ++h) {
        const std::uint32_t want =
            ids[std::size_t(t)] < 0 ? 0u : std::bit_cast<std::uint32_t>(x[std::size_t(t * H + h)]);
        RC_ASSERT(std::bit_cast<std::uint32_t>(back[std::size_t(t * H + h)]) == want);
      }
  }
}

// Scale rows of rowwise, 1×128 and 1×32 activations follow their data rows; shared tensorwise
// scales are left alone; scales whose blocks span rows are rejected.
FP8REF_RC_PROP(Permute, ScaleRowsTravelWithTheirRows, 100, ()) {
  const std::int64_t E = *rc::gen::inRange(1, 5), k = *rc::gen::inRange<std::int64_t>(1, E + 1),
                     T = *rc::gen::inRange(1, 20);
  std::vector<std::int32_t> ids;
  std::vector<float> probs;
  const PermutePlan plan = plan_permute(routing_of(T, k, E, ids, probs));
  const BlockGeometry geo =
      *rc::gen::element(BlockGeometry::rowwise, BlockGeometry::b1x128, BlockGeometry::b1x32);
  const std::int64_t cols = geo == BlockGeometry::rowwise  ? 4
                            : geo == BlockGeometry::b1x128 ? 4 * 3
                                                           : 1 * 9;  // f32 / e8m0
  const auto scales = random_bytes(T * cols);
  std::vector<std::uint8_t> storage;
  const RowsView out = permuted_scale_rows(plan, geo, {scales, T, cols}, storage);
  RC_ASSERT(out.rows == std::int64_t(plan.source_token.size()));
  for (std::int64_t p = 0; p < out.rows; ++p)
    RC_ASSERT(std::memcmp(out.bytes.data() + p * cols,
                          scales.data() + plan.source_token[std::size_t(p)] * cols,
                          std::size_t(cols)) == 0);
  const std::vector<std::uint8_t> one(4, 0x3F);
  RC_ASSERT(
      permuted_scale_rows(plan, BlockGeometry::tensorwise, {one, 1, 4}, storage).bytes.data() ==
      one.data());
  for (BlockGeometry bad : {BlockGeometry::b128x128, BlockGeometry::b128x1, BlockGeometry::b32x1,
                            BlockGeometry::per_channel})
    RC_ASSERT_THROWS_AS(permuted_scale_rows(plan, bad, {scales, T, cols}, storage),
                        std::invalid_argument);
}

// The combine is the written f32 sequence over the token's routed slots in ascending j, and
// its bits do not depend on the thread count.
FP8REF_RC_PROP(Permute, UnpermuteIsTheFixedOrderF32Sum, 100, ()) {
  const std::int64_t E = *rc::gen::inRange(2, 7),
                     k = *rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(E, 4) + 1),
                     T = *rc::gen::inRange(1, 16), H = *rc::gen::inRange(1, 6);
  std::vector<std::int32_t> ids;
  std::vector<float> probs =
      *rc::gen::container<std::vector<float>>(std::size_t(T * k), test::gen_scale());
  const Routing r = routing_of(T, k, E, ids, probs);
  const PermutePlan plan = plan_permute(r);
  const std::int64_t P = std::int64_t(plan.source_token.size());
  const auto y = *rc::gen::container<std::vector<float>>(std::size_t(P * H), test::gen_scale());
  const CombineRounding mode =
      *rc::gen::element(CombineRounding::mul_then_add, CombineRounding::fma);
  std::vector<float> out1(std::size_t(T * H)), out2(out1.size());
  omp_set_num_threads(1);
  unpermute_combine(plan, r, y, H, mode, out1);
  omp_set_num_threads(2);
  unpermute_combine(plan, r, y, H, mode, out2);
  RC_ASSERT(out1 == out2);
  const std::int64_t t = *rc::gen::inRange<std::int64_t>(0, T),
                     h = *rc::gen::inRange<std::int64_t>(0, H);
  float want = 0.0f;
  bool first = true;
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t row = plan.row_of[std::size_t(t * k + j)];
    if (row < 0) continue;
    const volatile float prod =
        probs[std::size_t(t * k + j)] * y[std::size_t(row * H + h)];  // no contraction
    want = first ? float(prod)
           : mode == CombineRounding::fma
               ? std::fmaf(probs[std::size_t(t * k + j)], y[std::size_t(row * H + h)], want)
               : want + float(prod);
    first = false;
  }
  RC_ASSERT(std::bit_cast<std::uint32_t>(out1[std::size_t(t * H + h)]) ==
            std::bit_cast<std::uint32_t>(want));
}

TEST(Permute, BadRoutingIsRejectedClearly) {
  const std::vector<std::int32_t> twice{0, 0}, outside{0, 3};
  const std::vector<float> probs(2, 1.0f);
  EXPECT_THROW(plan_permute({1, 2, 3, twice, probs}), std::invalid_argument);
  EXPECT_THROW(plan_permute({1, 2, 3, outside, probs}), std::invalid_argument);
  EXPECT_THROW(plan_permute({2, 2, 3, twice, probs}), std::invalid_argument);  // wrong size
  EXPECT_THROW(plan_padding(std::vector<std::int64_t>{1, -1}, 16, EmptyGroupPolicy::keep_empty),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref::ref
