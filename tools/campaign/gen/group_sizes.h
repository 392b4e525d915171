// Tokens-per-group generators (docs/design.md §14, docs/fuzz.md "Generators"): the distributions
// that found real grouped-GEMM bugs, as RapidCheck generators that CPU and GPU suites share. A draw
// is a small set of parameters (distribution, group count, total, alignment, a seed) from which the
// sizes are computed, so RapidCheck shrinks a failing case toward few groups and few tokens.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cases/group_sizes.h"

namespace fp8ref::gen {

using cases::GroupSizes;
using cases::kSizeDists;
using cases::make_sizes;
using cases::size_tags;
using cases::SizeDist;
using cases::to_string;

struct SizeLimits {
  int max_groups = 256;          // G is drawn in [1, max_groups], mostly small
  std::int64_t max_total = 256;  // tokens over all groups (cost control of the suite), except
                                 // align_edges: at least one group of 2·align + 1 tokens
  std::int64_t max_tail = 8;     // padding rows after the last group
  std::vector<std::int64_t> aligns = {1, 4, 16, 32, 128};
};

// A GroupSizes draw; the total stays within limits.max_total (sizes are scaled down if needed),
// except align_edges: its sizes are the edges themselves (scaling would move them off the edges),
// so its G is capped instead, and its cap is raised to one group of 2·align + 1 tokens (align 128:
// 255, 256, 257) when max_total is smaller.
inline rc::Gen<GroupSizes> group_sizes(SizeLimits lim = {}) {
  return rc::gen::exec([lim] {
    GroupSizes gs;
    // The two distributions with no row in any group (all_empty, zero_total) one draw in ten
    // between them, each of the six others three in twenty: drawn as often as the others, the
    // two made a quarter of every suite's cases compare nothing (the strength report's
    // `no_rows`), and these edges need no more draws than the others to be covered.
    static_assert(kSizeDists.size() == 8, "a new SizeDist needs its weight here");
    gs.dist = *rc::gen::weightedElement<SizeDist>({{1, SizeDist::all_empty},
                                                   {1, SizeDist::zero_total},
                                                   {3, SizeDist::one_hot},
                                                   {3, SizeDist::interleaved_empty},
                                                   {3, SizeDist::align_edges},
                                                   {3, SizeDist::jitter},
                                                   {3, SizeDist::zipf},
                                                   {3, SizeDist::uniform}});
    gs.align = *rc::gen::elementOf(lim.aligns);
    // Mostly few groups (MoE layers with 8..64 experts are the common case), sometimes many.
    std::int64_t G = *rc::gen::weightedOneOf<std::int64_t>(
        {{6, rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(9, lim.max_groups + 1))},
         {2, rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(65, lim.max_groups + 1))},
         {1, rc::gen::inRange<std::int64_t>(1, std::int64_t(lim.max_groups) + 1)}});
    const std::int64_t edge_max = 2 * gs.align + 1;  // largest align_edges size
    if (gs.dist == SizeDist::align_edges)
      G = std::max<std::int64_t>(1, std::min(G, std::max(lim.max_total, edge_max) / edge_max));
    const std::int64_t total = *rc::gen::inRange<std::int64_t>(0, lim.max_total + 1);
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    gs.sizes = make_sizes(gs.dist, G, total, gs.align, seed);
    // Scale down to the limit, keeping the shape of the distribution.
    const std::int64_t t = gs.total();
    if (t > lim.max_total && gs.dist != SizeDist::align_edges) {
      for (auto& x : gs.sizes) x = x * lim.max_total / t;
    }
    gs.tail = gs.dist == SizeDist::zero_total ? 0
              : gs.dist == SizeDist::all_empty
                  ? *rc::gen::inRange<std::int64_t>(1, lim.max_tail + 1)
                  : *rc::gen::inRange<std::int64_t>(0, lim.max_tail + 1);
    return gs;
  });
}

}  // namespace fp8ref::gen
