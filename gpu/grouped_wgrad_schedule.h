// The 2-CTA wgrad pairs' tile schedule (docs/gpu_gemm.md §2 "The pairs' schedule"): computed by
// the launcher on the host and handed to the kernel in its launch parameters. Internal to gpu/.
#pragma once

#include <cstdint>

#include "gpu/grouped_gemm_kernels.h"

#if defined(__CUDACC__)
#define FP8REF_WS_HD __host__ __device__ __forceinline__
#else
#define FP8REF_WS_HD inline
#endif

namespace fp8ref::gpu::detail {

// The pair tiles of each cluster (slot), in the order it runs them: slot s's tiles are
// unit[first[s] .. first[s + 1]). At most kWgradSchedUnits tiles and kWgradSchedSlots clusters
// (25 KiB: the kernel parameters stay below the 32,764 bytes CUDA 12.1+ allows).
constexpr int kWgradSchedUnits = 12288, kWgradSchedSlots = 256;
struct WgradSchedule {
  std::uint16_t first[kWgradSchedSlots + 1];
  std::uint16_t unit[kWgradSchedUnits];
};

// The cost of a tile of `nkb` 128-token blocks in quarter blocks: its blocks, and its epilogue
// with the next tile's first load (3.75 blocks, measured on the H200).
constexpr std::int64_t wgrad_tile_cost(std::int64_t nkb) { return 4 * nkb + 15; }

// The group of pair tile `tile` in the walk, the one mapping of the kernel's walk
// (wgrad_pair_tile) and of the host's schedule: the groups of a.order one after another,
// `per_group` tiles a group; `i` is set to the tile's index among its group's. One group at a time
// (since the twentieth session, as the one-CTA walk), not two whose tiles alternate: with the
// schedule evening out the clusters' ends, the alternation no longer pays, and the clusters then
// read one group's operands at a time (docs/gpu_gemm.md §2: +1.9% Zipf, +0.7% two-empty, +1.2%
// shift16 against two). 32-bit: the launcher takes the pairs only below 2^31 tiles.
FP8REF_WS_HD int wgrad_pair_tile_group(const WgradKernelArgs& a, std::uint32_t per_group,
                                       std::uint32_t tile, std::uint32_t& i) {
  i = tile % per_group;
  return a.order[tile / per_group];
}

// The walk's group order of an out-of-place launch with a schedule (the pairs): a.order, by
// descending token count, rearranged so that each of the first min(busy, empty) groups with tokens
// is followed by an empty group (b1 e1 b2 e2 …, then the other groups with tokens, then the other
// empty ones). So an empty group's tiles (dW = C copied through the ring, bandwidth and no
// tensor-core work) come in the walk after a busy group's, and each cluster runs its copies among
// its busy tiles instead of all clusters together at the launch's end (docs/gpu_gemm.md §2: +3.2%
// on the benchmark's two-empty load, measured with the walk's two groups at a time). The groups
// with tokens keep their order, the empty ones theirs.
void interleave_empty_groups(WgradKernelArgs& a);

// Greedy list scheduling of the walk's `tiles` pair tiles on `slots` clusters, in two passes: the
// tiles of groups with tokens, then the empty groups' copy tiles, each in walk order to the cluster
// whose tiles end first under wgrad_tile_cost (ties to the lower cluster). The copies so go to the
// clusters the busy tiles left a tile short (docs/gpu_gemm.md §2); each cluster still runs its
// tiles in walk order.
// False, `out` untouched, where there are no tiles or the table does not hold them (the kernel then
// walks the snake).
bool build_wgrad_schedule(const WgradKernelArgs& a, std::int64_t per_group, std::int64_t tiles,
                          int slots, WgradSchedule& out);

}  // namespace fp8ref::gpu::detail
