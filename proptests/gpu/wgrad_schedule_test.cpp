// The wgrad pairs' tile schedule (build_wgrad_schedule, gpu/grouped_wgrad_schedule.h;
// docs/gpu_gemm.md §2): on random group sizes, tile counts and cluster counts, every pair tile runs
// exactly once, each cluster takes its tiles in walk order, and each tile went to a cluster whose
// tiles ended first when it was given out (greedy list scheduling, replayed here from the cost
// model), so the longest cluster ends within the mean plus one tile; past the table's size, no
// schedule. On the benchmark's Zipf load the schedule ends before the snake (the kernel's walk
// without it). Label cpu: runs in CI without a GPU.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/grouped_wgrad_schedule.h"

namespace fp8ref::gpu::detail {
namespace {

// Groups of the given token counts, ordered as the launcher orders them (most tokens first).
WgradKernelArgs args_for(const std::vector<std::int32_t>& tokens) {
  WgradKernelArgs a{};
  a.groups = int(tokens.size());
  std::int32_t at = 0;
  for (std::size_t g = 0; g < tokens.size(); ++g) {
    a.start[g] = at, a.end[g] = at + tokens[g], at += tokens[g];
    a.order[g] = std::int32_t(g);
  }
  std::stable_sort(a.order, a.order + tokens.size(), [&](std::int32_t x, std::int32_t y) {
    return tokens[std::size_t(x)] > tokens[std::size_t(y)];
  });
  return a;
}

std::int64_t cost(const WgradKernelArgs& a, std::int64_t per_group, std::int64_t tile) {
  std::uint32_t i;
  const int g = wgrad_pair_tile_group(a, std::uint32_t(per_group), std::uint32_t(tile), i);
  return wgrad_tile_cost((std::int64_t(a.end[g]) - a.start[g] + 127) / 128);
}

// The end of the schedule's busiest cluster under the cost model: its tiles' costs summed.
std::int64_t longest_cluster(const WgradKernelArgs& a, std::int64_t per_group, int slots,
                             const WgradSchedule& s) {
  std::int64_t longest = 0;
  for (int c = 0; c < slots; ++c) {
    std::int64_t e = 0;
    for (int j = s.first[c]; j < s.first[c + 1]; ++j) e += cost(a, per_group, s.unit[j]);
    longest = std::max(longest, e);
  }
  return longest;
}

RC_GTEST_PROP(WgradSchedule, EveryTileOnceInWalkOrderToTheClusterEndingFirst, ()) {
  const auto groups = *rc::gen::inRange(1, kGemmMaxGroups + 1);
  const auto tokens = *rc::gen::container<std::vector<std::int32_t>>(
      std::size_t(groups),
      rc::gen::weightedOneOf<std::int32_t>({{1, rc::gen::just<std::int32_t>(0)},
                                            {4, rc::gen::inRange<std::int32_t>(1, 2000)},
                                            {1, rc::gen::inRange<std::int32_t>(2000, 40000)}}));
  WgradKernelArgs a = args_for(tokens);
  if (*rc::gen::arbitrary<bool>()) interleave_empty_groups(a);  // the pairs' walk out of place
  const std::int64_t per_group = *rc::gen::inRange<std::int64_t>(1, 300);
  const std::int64_t tiles = std::int64_t(groups) * per_group;
  const int slots =
      *rc::gen::weightedOneOf<int>({{1, rc::gen::element(1, 66, 132, kWgradSchedSlots)},
                                    {3, rc::gen::inRange(1, kWgradSchedSlots + 1)}});
  static WgradSchedule s;
  const bool built = build_wgrad_schedule(a, per_group, tiles, slots, s);
  RC_ASSERT(built == (tiles <= kWgradSchedUnits));
  if (!built) return;
  std::vector<int> runs(std::size_t(tiles), 0), slot_of(std::size_t(tiles), -1);
  RC_ASSERT(s.first[0] == 0);
  RC_ASSERT(std::int64_t(s.first[slots]) == tiles);
  for (int c = 0; c < slots; ++c) {
    RC_ASSERT(s.first[c] <= s.first[c + 1]);
    for (int j = s.first[c]; j < s.first[c + 1]; ++j) {
      RC_ASSERT(std::int64_t(s.unit[j]) < tiles);
      ++runs[s.unit[j]], slot_of[s.unit[j]] = c;
      if (j > s.first[c]) RC_ASSERT(s.unit[j - 1] < s.unit[j]);  // walk order
    }
  }
  for (std::int64_t t = 0; t < tiles; ++t) RC_ASSERT(runs[std::size_t(t)] == 1);
  // Replay: when tile t was given out, its cluster's tiles ended first (ties: the lower cluster).
  std::vector<std::int64_t> end(std::size_t(slots), 0);
  std::int64_t total = 0, longest_tile = 0;
  std::vector<std::int64_t> given;  // the busy groups' tiles, then the empty groups'
  for (int pass = 0; pass < 2; ++pass)
    for (std::int64_t t = 0; t < tiles; ++t)
      if ((cost(a, per_group, t) == wgrad_tile_cost(0)) == (pass == 1)) given.push_back(t);
  for (const std::int64_t t : given) {
    const int c = slot_of[std::size_t(t)];
    for (int o = 0; o < slots; ++o)
      RC_ASSERT(end[std::size_t(c)] < end[std::size_t(o)] ||
                (end[std::size_t(c)] == end[std::size_t(o)] && c <= o));
    const std::int64_t x = cost(a, per_group, t);
    end[std::size_t(c)] += x, total += x, longest_tile = std::max(longest_tile, x);
  }
  const std::int64_t longest = *std::max_element(end.begin(), end.end());
  RC_ASSERT(longest * slots <= total + longest_tile * slots);
}

// interleave_empty_groups: a permutation of the walk's order in which the groups with tokens keep
// their order and the empty ones theirs, each of the first min(busy, empty) busy groups followed by
// an empty one, then the other busy groups, then the other empty ones.
RC_GTEST_PROP(WgradSchedule, EmptyGroupsInterleavedAmongTheBusyOnes, ()) {
  const auto groups = *rc::gen::inRange(1, kGemmMaxGroups + 1);
  const auto tokens = *rc::gen::container<std::vector<std::int32_t>>(
      std::size_t(groups),
      rc::gen::weightedOneOf<std::int32_t>(
          {{1, rc::gen::just<std::int32_t>(0)}, {2, rc::gen::inRange<std::int32_t>(1, 40000)}}));
  const WgradKernelArgs a = args_for(tokens);
  WgradKernelArgs b = a;
  interleave_empty_groups(b);
  const auto busy = [](const WgradKernelArgs& x, int g) { return x.end[g] > x.start[g]; };
  std::vector<std::int32_t> busy_a, empty_a, busy_b, empty_b;
  for (int i = 0; i < groups; ++i) {
    (busy(a, a.order[i]) ? busy_a : empty_a).push_back(a.order[i]);
    (busy(b, b.order[i]) ? busy_b : empty_b).push_back(b.order[i]);
  }
  RC_ASSERT(busy_b == busy_a);
  RC_ASSERT(empty_b == empty_a);
  const int pairs = int(std::min(busy_a.size(), empty_a.size()));
  for (int i = 0; i < groups; ++i) {
    const bool want_busy = i < 2 * pairs ? i % 2 == 0 : busy_a.size() > empty_a.size();
    RC_ASSERT(busy(b, b.order[i]) == want_busy);
  }
  for (int g = 0; g < groups; ++g)  // the groups themselves untouched
    RC_ASSERT(b.start[g] == a.start[g] && b.end[g] == a.end[g]);
}

// The benchmark's two-empty load (its groups rounded to 16 tokens): b e b e b b b b.
TEST(WgradSchedule, TwoEmptyLoadPairsEachEmptyGroupWithABusyOne) {
  WgradKernelArgs a = args_for({0, 5456, 5456, 0, 5472, 5456, 5456, 5472});
  interleave_empty_groups(a);
  const std::vector<std::int32_t> order(a.order, a.order + 8);
  EXPECT_EQ(order, (std::vector<std::int32_t>{4, 0, 7, 3, 1, 2, 5, 6}));
}

// The benchmark's two-empty load (six groups of 5,456–5,472 tokens, 43 blocks, two empty; 8 × 28
// pair tiles a group) on 66 clusters, in the pairs' walk order: 1,344 busy tiles put 21 on 24
// clusters and 20 on the others, and the 448 copy tiles go to the latter, so the longest cluster
// ends with its 21 busy tiles (the greedy plan in one pass ended 75 quarter blocks later).
TEST(WgradSchedule, TwoEmptyLoadCopiesFillTheClustersABusyTileShort) {
  WgradKernelArgs a = args_for({0, 5456, 5456, 0, 5472, 5456, 5456, 5472});
  interleave_empty_groups(a);
  const std::int64_t per_group = 8 * 28, tiles = 8 * per_group;
  const int slots = 66;
  static WgradSchedule s;
  ASSERT_TRUE(build_wgrad_schedule(a, per_group, tiles, slots, s));
  EXPECT_EQ(longest_cluster(a, per_group, slots, s), 21 * wgrad_tile_cost(43));
}

TEST(WgradSchedule, NoScheduleWithoutTilesOrPastTheTable) {
  const WgradKernelArgs a = args_for({100, 0, 300});
  static WgradSchedule s;
  EXPECT_FALSE(build_wgrad_schedule(a, 4, 0, 66, s));
  EXPECT_FALSE(build_wgrad_schedule(a, 4, 12, 0, s));
  EXPECT_FALSE(build_wgrad_schedule(a, 4, 12, kWgradSchedSlots + 1, s));
  const WgradKernelArgs big = args_for(std::vector<std::int32_t>(200, 128));
  EXPECT_TRUE(
      build_wgrad_schedule(big, kWgradSchedUnits / 200, 200 * (kWgradSchedUnits / 200), 66, s));
  EXPECT_FALSE(build_wgrad_schedule(big, kWgradSchedUnits / 200 + 1,
                                    200 * (kWgradSchedUnits / 200 + 1), 66, s));
}

// The benchmark's Zipf load (8 groups of 1/rank of 32768 tokens, rounded to 16; N = 2048, K = 7168:
// 8 × 28 pair tiles a group) on the H200's 66 clusters: the longest cluster under the schedule ends
// before the longest under the snake (wave w: cluster b takes tile w·66 + b, or w·66 + 65 − b on
// odd waves), by the same cost model.
TEST(WgradSchedule, ZipfLoadEndsBeforeTheSnake) {
  std::vector<std::int32_t> tokens;
  double sum = 0, acc = 0;
  for (int e = 0; e < 8; ++e) sum += 1.0 / (e + 1);
  std::int32_t prev = 0;
  for (int e = 0; e < 8; ++e) {
    acc += 1.0 / (e + 1);
    std::int32_t end = std::int32_t(std::llround(acc / sum * 32768)) / 16 * 16;
    if (e == 7) end = 32768;
    tokens.push_back(end - prev), prev = end;
  }
  const WgradKernelArgs a = args_for(tokens);
  const std::int64_t per_group = 8 * 28, tiles = 8 * per_group;
  const int slots = 66;
  static WgradSchedule s;
  ASSERT_TRUE(build_wgrad_schedule(a, per_group, tiles, slots, s));
  const std::int64_t greedy = longest_cluster(a, per_group, slots, s);
  std::vector<std::int64_t> end(slots, 0);
  for (std::int64_t w = 0; w * slots < tiles; ++w)
    for (int b = 0; b < slots; ++b) {
      const std::int64_t t = w * slots + (w % 2 ? slots - 1 - b : b);
      if (t < tiles) end[std::size_t(b)] += cost(a, per_group, t);
    }
  EXPECT_LT(greedy, *std::max_element(end.begin(), end.end()));
}

}  // namespace
}  // namespace fp8ref::gpu::detail
