// The wgrad pairs' tile schedule (gpu/grouped_wgrad_schedule.h; docs/gpu_gemm.md §2).
#include "gpu/grouped_wgrad_schedule.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace fp8ref::gpu::detail {

bool build_wgrad_schedule(const WgradKernelArgs& a, std::int64_t per_group, std::int64_t tiles,
                          int slots, WgradSchedule& out) {
  if (tiles <= 0 || tiles > kWgradSchedUnits || slots <= 0 || slots > kWgradSchedSlots)
    return false;
  std::vector<std::int64_t> end(static_cast<std::size_t>(slots), 0);
  std::vector<int> heap(static_cast<std::size_t>(slots));  // slots by (end, slot), least first
  for (int i = 0; i < slots; ++i) heap[std::size_t(i)] = i;
  const auto before = [&](int x, int y) {
    const std::int64_t ex = end[std::size_t(x)], ey = end[std::size_t(y)];
    return ex != ey ? ex < ey : x < y;
  };
  std::vector<std::uint16_t> slot_of(static_cast<std::size_t>(tiles));
  std::vector<int> count(static_cast<std::size_t>(slots) + 1, 0);
  for (std::int64_t t = 0; t < tiles; ++t) {
    std::uint32_t i;
    const int g = wgrad_pair_tile_group(a, std::uint32_t(per_group), std::uint32_t(t), i);
    const std::int64_t nkb = (std::int64_t(a.end[g]) - a.start[g] + 127) / 128;
    const int slot = heap[0];
    slot_of[std::size_t(t)] = std::uint16_t(slot);
    ++count[std::size_t(slot) + 1];
    end[std::size_t(slot)] += wgrad_tile_cost(nkb);
    for (std::size_t i = 0;;) {  // sift the slot down
      const std::size_t l = 2 * i + 1, rr = l + 1;
      std::size_t m = i;
      if (l < heap.size() && before(heap[l], heap[m])) m = l;
      if (rr < heap.size() && before(heap[rr], heap[m])) m = rr;
      if (m == i) break;
      std::swap(heap[i], heap[m]);
      i = m;
    }
  }
  for (int i = 0; i < slots; ++i) count[std::size_t(i) + 1] += count[std::size_t(i)];
  for (int i = 0; i <= slots; ++i) out.first[i] = std::uint16_t(count[std::size_t(i)]);
  for (std::int64_t t = 0; t < tiles; ++t)
    out.unit[count[slot_of[std::size_t(t)]]++] = std::uint16_t(t);
  return true;
}

}  // namespace fp8ref::gpu::detail
