// The group table of the FP8 grouped GEMM (GemmGroupTable, gpu/grouped_gemm_kernels.h) built from
// G int32 descriptors, on the host or on the device (__host__ __device__): the device-side
// `offs` / `masked_m` path's prologue kernel runs it (gpu/grouped_gemm_kernels.cu), and a CPU test
// holds it to the host launcher's builder (docs/gpu_gemm.md §1, §4, §5). Internal to gpu/.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__

#include <cstdint>

#include "gpu/grouped_gemm_kernels.h"

namespace fp8ref::gpu::detail {

// What is wrong with a descriptor entry; the status word holds kind | (group << 4), 0 when all
// entries are good (docs/gpu_gemm.md §4). The kinds and their order per entry are the host
// launcher's checks: contiguous offs[g] < offs[g - 1] (offs[-1] = 0) then offs[g] > M; masked
// masked_m[g] outside [0, m_max].
enum GroupStatusKind : std::int32_t {
  kGroupsOk = 0,
  kGroupsOutOfOrder = 1,
  kGroupsPastM = 2,
  kGroupsMaskedRange = 3,
};
__host__ __device__ constexpr std::int32_t group_status(std::int32_t kind, int g) {
  return kind | std::int32_t(g << 4);
}

// Group g's rows [start, end) of descriptor entry d[g]: contiguous offs (rows [d[g-1], d[g]),
// bounded by `limit` = M) or masked_m (rows [g·limit, g·limit + d[g]), limit = m_max, G·m_max =
// M < 2^31); kind 0 when the entry is good.
struct GroupRows {
  std::int32_t start, end, kind;
};
__host__ __device__ inline GroupRows group_rows(const std::int32_t* d, int g, bool masked,
                                                std::int64_t limit) {
  if (masked) {
    const std::int64_t start = std::int64_t(g) * limit, m = d[g];
    if (m < 0 || m > limit) return {0, 0, kGroupsMaskedRange};
    return {std::int32_t(start), std::int32_t(start + m), kGroupsOk};
  }
  const std::int32_t start = g > 0 ? d[g - 1] : 0, end = d[g];
  if (end < start) return {0, 0, kGroupsOutOfOrder};
  if (end > limit) return {0, 0, kGroupsPastM};
  return {start, end, kGroupsOk};
}

// Fills t from the G entries of d (1 <= G <= kGemmMaxGroups) and returns the status: 0 and the
// table (start, end and the 128-row tile prefix of each group, as the host launcher's), or the
// first bad entry's status and an empty table (count 0, tile_prefix[0] = 0: no tiles, so the GEMM
// writes nothing). Serial in g (one thread on the device: at most 256 steps, docs/gpu_gemm.md §2).
__host__ __device__ inline std::int32_t build_group_table(GemmGroupTable& t, const std::int32_t* d,
                                                          int G, bool masked, std::int64_t limit) {
  for (int g = 0; g < G; ++g) {
    const std::int32_t kind = group_rows(d, g, masked, limit).kind;
    if (kind != kGroupsOk) {
      t.count = 0, t.tile_prefix[0] = 0;
      return group_status(kind, g);
    }
  }
  t.count = G, t.tile_prefix[0] = 0;
  for (int g = 0; g < G; ++g) {
    const GroupRows r = group_rows(d, g, masked, limit);
    t.start[g] = r.start, t.end[g] = r.end;
    const std::int64_t tiles = (std::int64_t(r.end) - r.start + kGemmBlockM - 1) / kGemmBlockM;
    t.tile_prefix[g + 1] = std::int32_t(t.tile_prefix[g] + tiles);
  }
  return kGroupsOk;
}

}  // namespace fp8ref::gpu::detail
