// The wgrad pairs' tile schedule (gpu/grouped_wgrad_schedule.h; docs/gpu_gemm.md §2).
#include "gpu/grouped_wgrad_schedule.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8ref::gpu::detail {

void interleave_empty_groups(WgradKernelArgs& a) {
  // On the stack: it runs at every pair launch.
  std::int32_t busy[kGemmMaxGroups], empty[kGemmMaxGroups];
  int nb = 0, ne = 0;
  for (int i = 0; i < a.groups; ++i) {
    const std::int32_t g = a.order[i];
    if (a.end[g] > a.start[g])
      busy[nb++] = g;
    else
      empty[ne++] = g;
  }
  int b = 0, e = 0, at = 0;
  for (; b < nb && e < ne; ++b, ++e) a.order[at++] = busy[b], a.order[at++] = empty[e];
  for (; b < nb; ++b) a.order[at++] = busy[b];
  for (; e < ne; ++e) a.order[at++] = empty[e];
}

bool build_wgrad_schedule(const WgradKernelArgs& a, std::int64_t per_group, std::int64_t tiles,
                          int slots, WgradSchedule& out) {
  if (tiles <= 0 || tiles > kWgradSchedUnits || slots <= 0 || slots > kWgradSchedSlots)
    return false;
  // A min-heap of the slots keyed by (end, slot) in one integer: end << 16 | slot (slots < 2^16,
  // ends below 2^47: at most 12,288 tiles of at most 4·2^24 + 15 quarter blocks each).
  std::vector<std::uint64_t> heap(static_cast<std::size_t>(slots));
  for (int i = 0; i < slots; ++i) heap[std::size_t(i)] = std::uint64_t(i);
  std::vector<std::uint16_t> slot_of(static_cast<std::size_t>(tiles));
  std::vector<int> count(static_cast<std::size_t>(slots) + 1, 0);
  const std::size_t n = heap.size();
  // Two passes over the walk: the tiles of groups with tokens, then the empty groups' copy tiles
  // (nkb == 0), which so fill the clusters left a busy tile short instead of pushing busy tiles
  // onto a last, partial round (the benchmark's two-empty load: 1.9% shorter by the cost model).
  for (int pass = 0; pass < 2; ++pass)
    for (std::int64_t t = 0; t < tiles; ++t) {
      std::uint32_t i;
      const int g = wgrad_pair_tile_group(a, std::uint32_t(per_group), std::uint32_t(t), i);
      const std::int64_t nkb = (std::int64_t(a.end[g]) - a.start[g] + 127) / 128;
      if ((nkb == 0) != (pass == 1)) continue;
      const int slot = int(heap[0] & 0xFFFFu);
      slot_of[std::size_t(t)] = std::uint16_t(slot);
      ++count[std::size_t(slot) + 1];
      const std::uint64_t key = heap[0] + (std::uint64_t(wgrad_tile_cost(nkb)) << 16);
      std::size_t at = 0;  // sift the slot's new key down from the root
      for (;;) {
        const std::size_t l = 2 * at + 1;
        if (l >= n) break;
        const std::size_t m = l + 1 < n && heap[l + 1] < heap[l] ? l + 1 : l;
        if (heap[m] >= key) break;
        heap[at] = heap[m];
        at = m;
      }
      heap[at] = key;
    }
  for (int i = 0; i < slots; ++i) count[std::size_t(i) + 1] += count[std::size_t(i)];
  for (int i = 0; i <= slots; ++i) out.first[i] = std::uint16_t(count[std::size_t(i)]);
  for (std::int64_t t = 0; t < tiles; ++t)
    out.unit[count[slot_of[std::size_t(t)]]++] = std::uint16_t(t);
  return true;
}

}  // namespace fp8ref::gpu::detail
