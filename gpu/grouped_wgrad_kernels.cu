// The K-grouped wgrad kernel on Hopper tensor cores (sm_90a): dW[g] = C[g] + dY_gᵀ·X_g with the
// tokens of group g as the reduction, read by TMA from token-contiguous dYᵀ and Xᵀ (the K-major
// operands FP8 wgmma takes) through the warp-specialised pipeline of gpu/tma_pipeline_sm90.cuh.
// Persistent CTAs walk the 128 × BK tiles of every dW[g] (BK = 128, 192 or 256 columns of K,
// docs/gpu_gemm.md §2), the groups with most tokens first, one group at a time, K-tile outer, in a
// snake over waves (the 2-CTA pairs: in the launch's schedule);
// 128-token blocks from the group's start (a multiple of 16: the TMA box's start, see
// WgradKernelArgs), the tokens of the last one past the group's end (any token) zeroed in shared
// memory before the tensor cores read them (at BK = 256 its k32 steps wholly past the end not
// issued: product_half's kShort); per block T = four chained wgmma k32 steps from +0,
// at BK = 256 in two 128-column halves of one partial, each promoted before the other runs (as
// the forward's 256-wide tiles: a 256-column partial would not fit beside the accumulators);
// promoted as hopper_promoted_blockwise (acc = fmaf(RN(sdy·sx), T, acc), a scale per row and
// column of the tile, loaded into the stage by TMA and read by ld.shared; at BK = 256 the products
// of each half's first columns formed while its wgmma runs: early_products) or
// hopper_promoted_tensorwise; then dW = RN_out(RN(C + acc)), C read and dW written as streaming
// data (evict first), at BK = 256 through the ring (C loaded by TMA into three stages behind the
// tile's last block, dW stored by TMA: ring_epilogue); an empty group gives C (docs/gpu_gemm.md
// §3). Where a quarter of the tokens lie in groups starting 16 mod 32 (their rows start
// mid-sector), 256-wide tiles run as 2-CTA pairs sharing each block's X tile by multicast
// (walk_pairs; cluster_pays), their pair tiles given to the clusters by a greedy schedule the
// launcher computes (gpu/grouped_wgrad_schedule.h). The epilogue's f32 shared-memory accesses
// take odd rows' column groups in another order so that a half-warp's rows fall on distinct banks
// (ring_epilogue). The block loop is cut to few instructions per block (the kernel is bound by the
// instructions it issues, docs/gpu_gemm.md §7): scales by TMA and ld.shared, the stage,
// phase, wgmma descriptors and scale addresses formed once per CTA, the epilogue's choices once
// per tile.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/grouped_wgrad_schedule.h"
#include "gpu/tensor_map.h"
#include "gpu/tma_pipeline_sm90.cuh"

namespace fp8ref::gpu::detail {
namespace {

using namespace sm90;

struct WgradTmaParams {
  CUtensorMap map_dy, map_x;    // dYᵀ (N, M), Xᵀ (K, M): rows of tokens
  CUtensorMap map_c, map_dw;    // C and dW as (G·N, K), boxes of 32 columns × 64 rows (BK = 256)
  CUtensorMap map_sdy, map_sx;  // blockwise scales (rows, N), (rows, K): boxes of 128 and BK × 1
  WgradKernelArgs args;
  int sched_on;         // the pair kernels walk `sched` (build_wgrad_schedule), else the snake
  WgradSchedule sched;  // in the launch parameters: 32,764 bytes at most (CUDA 12.1+)
};
static_assert(sizeof(WgradTmaParams) <= 32764);

// The epilogue of 256-wide tiles (ring_epilogue): C read by TMA into three stages as chunks of
// 96, 96 and 64 columns, in each warpgroup w's 64 rows as boxes of 32 columns at w·kEpiWg +
// b·kEpiBox (f32, 128-byte swizzle: 48 KiB, one stage, for 96 columns); dW written back over them
// (bf16 boxes at w·kEpiWg + b·kEpiBox / 2, 64-byte swizzle; f32 in place) and stored by TMA.
constexpr int kEpiChunks = 3, kEpiChunkCols = 96, kEpiBox = 32 * 64 * 4, kEpiWg = 3 * kEpiBox;

// Stages of a 128 (n) × 128 token dYᵀ tile, a BK (k) × 128 token Xᵀ tile, and the block's
// scales: 128 of dY (the tile's rows) then BK of X (its columns). BK = 128, 192 or 256 (6, 5 and 4
// stages; 203,840 bytes of shared memory at 256).
template <int BK>
using Ring = StageRing<128 * 128, BK * 128,
                       BK == 128   ? 6
                       : BK == 192 ? 5
                                   : 4,
                       128 + BK>;

struct WgradTile {
  int g;
  std::int32_t n0, k0;  // first row (n) and column (k) of the tile in dW[g]
  std::int32_t tok0, tok_end;
  int nkb;
};

// Tile `tile` of the walk: the groups in p.order (most tokens first) taken kWalk at a time, the
// tiles of a set alternating between its groups. kWalk = 1 since the twentieth session, one group
// at a time, so that the CTAs read one group's token ranges at once (docs/gpu_gemm.md §2: +1.7%
// balanced, +1.6% shift32 against two groups, +1.1 / +1.4% on Zipf / two-empty loads with aligned
// starts; the ninth session's two had gained +3.7% Zipf and +7.9% two-empty over one on the
// kernel of that time). The general form stays: with the walk written as `order[tile /
// per_group]` (and kernels split by walk, docs/benchmarks.md "twentieth session", call 5's `ks`)
// the one-CTA kernel compiled to other code that ran 1.3% slower on balanced. Within a group the K
// tiles outer and the n tiles inner, so that the CTAs of a wave share each X tile (the larger
// operand) in L2 and read fewer distinct bytes per token block (docs/benchmarks.md: +4% on skewed
// loads).
template <int BK>
__device__ __forceinline__ WgradTile wgrad_tile(const WgradKernelArgs& p, std::int64_t tile) {
  const std::int64_t kt = (p.K + BK - 1) / BK, per_group = (p.N / 128) * kt;
  WgradTile t;
  constexpr int kWalk = 1;  // groups whose tiles alternate
  const std::int64_t set = tile / (kWalk * per_group), r = tile % (kWalk * per_group);
  const std::int64_t in_set = min(std::int64_t(kWalk), std::int64_t(p.groups) - set * kWalk);
  t.g = p.order[set * kWalk + r % in_set];
  const std::int64_t i = r / in_set;
  const std::int64_t nt = p.N / 128;
  t.k0 = std::int32_t(i / nt) * BK, t.n0 = std::int32_t(i % nt) * 128;
  t.tok0 = p.start[t.g], t.tok_end = p.end[t.g];
  t.nkb = (t.tok_end - t.tok0 + 127) / 128;
  return t;
}

// The CTA's i-th tile: waves of gridDim.x tiles, CTA b taking tile b of even waves and tile
// gridDim.x - 1 - b of odd ones (a snake), so that with the groups by descending token count the
// CTA that took a wave's longest reduction takes the next wave's shortest (docs/gpu_gemm.md §2);
// >= the tile count past the CTA's last.
__device__ __forceinline__ std::int64_t walk(std::int64_t i) {
  const std::int64_t b = blockIdx.x, grid = gridDim.x;
  return i * grid + (i & 1 ? grid - 1 - b : b);
}

// 2-CTA pairs (kMc, 256-wide tiles; docs/gpu_gemm.md §2): a cluster of two CTAs runs two
// n-adjacent tiles of one group and K range, so the same token blocks and the same X tile; each
// CTA loads its own dY tile and one half of the X tile, multicast into both CTAs' stage, so a
// block costs each CTA 32 KiB from L2 instead of 48. The pairs walk the groups one at a time
// (wgrad_pair_tile_group; K tiles outer, n pairs inner), in the launch's schedule or else a snake
// over clusters; pair i's tile for the CTA of rank r has n0 = (2·(i's n pair) + r)·128. 32-bit
// arithmetic (the launcher takes this path only below 2^31 tiles): fewer registers for the
// producer's 40, which still spill 60 bytes in the pair kernels (ptxas; docs/gpu_gemm.md §2).
__device__ __forceinline__ std::uint32_t walk_pairs(std::uint32_t i) {
  const std::uint32_t b = blockIdx.x / 2, grid = gridDim.x / 2;
  return i * grid + (i & 1 ? grid - 1 - b : b);
}
template <int BK>
__device__ __forceinline__ WgradTile wgrad_pair_tile(const WgradKernelArgs& p, std::uint32_t tile,
                                                     int rank) {
  const std::uint32_t kt = std::uint32_t((p.K + BK - 1) / BK), nt = std::uint32_t(p.N / 256),
                      per_group = nt * kt;
  WgradTile t;
  std::uint32_t i;  // the tile's index among its group's: k tiles outer, n pairs inner
  t.g = wgrad_pair_tile_group(p, per_group, tile, i);
  t.k0 = std::int32_t(i / nt) * BK, t.n0 = std::int32_t((i % nt) * 2 + rank) * 128;
  t.tok0 = p.start[t.g], t.tok_end = p.end[t.g];
  t.nkb = (t.tok_end - t.tok0 + 127) / 128;
  return t;
}
// The CTA's (kMc: its cluster's) w-th tile from the launch's schedule: false past its last.
__device__ __forceinline__ bool sched_unit(const WgradTmaParams& p, bool kmc, std::uint32_t w,
                                           std::uint32_t& tile) {
  const int slot = kmc ? int(blockIdx.x / 2) : int(blockIdx.x);
  const std::uint32_t j = p.sched.first[slot] + w;
  if (j >= p.sched.first[slot + 1]) return false;
  tile = p.sched.unit[j];
  return true;
}
// The w-th tile of the CTA (kMc: of its cluster), the same for the producer and the consumers:
// the launch's schedule where the pair kernels have one, else the snake; false past the last.
template <bool kMc>
__device__ __forceinline__ bool next_tile(const WgradTmaParams& p, std::int64_t w,
                                          std::int64_t total, std::int64_t& tile) {
  if (kMc && p.sched_on) {
    std::uint32_t u;
    if (!sched_unit(p, kMc, std::uint32_t(w), u)) return false;
    tile = u;
  } else {
    tile = kMc ? std::int64_t(walk_pairs(std::uint32_t(w))) : walk(w);
    if (tile >= total) return false;
  }
  return true;
}
// Whether the producer loads the scales by TMA (map_sdy, map_sx), which needs 16-byte aligned
// tensors (the rows' strides, N·4 and K·4 bytes, are multiples of 16): cudaMalloc returns 256-byte
// aligned memory; a pointer into the middle of a buffer may not be. Otherwise the producer's lanes
// copy them 4 bytes each by cp.async (produce). The launcher encodes the maps under the same test.
__host__ __device__ inline bool tma_scales(const WgradKernelArgs& a) {
  const auto at =
      reinterpret_cast<std::uintptr_t>(a.scale_dy) | reinterpret_cast<std::uintptr_t>(a.scale_x);
  return a.blockwise && at % 16 == 0;
}

// The producer warp (C is not prefetched into L2: the prefetch cost 1.6-2.8% on the skewed loads,
// docs/gpu_gemm.md §7): per token block, lane 0 loads both tiles by TMA (tokens past M, and columns
// past K of a 192-wide tile, read zeros; tokens of the next group are zeroed by the consumers);
// blockwise, lane 0 also loads the block's 128 dY scales and its BK columns' X scales (zero past
// K), each a row of its scale tensor, by two TMA boxes on the stage's `full` barrier (one arrival:
// lane 0's expect_tx of the tiles and scale boxes). By TMA rather than by the plain bulk copy
// (cp.async.bulk): compute-sanitizer racecheck attributes a bulk copy's shared-memory
// writes to the issuing lane and does not take the `full` / `empty` barriers' order between it
// and the consumers' reads of the slot once a CTA runs a second tile (two hazards a launch,
// docs/gpu_gemm.md §2); a TMA box's writes are the copy engine's.
// Unaligned scale tensors (tma_scales): the 32 lanes copy the scales 4 bytes each by cp.async
// (zero past K) and each arrives on `full` when its copies land (33 arrivals, s.init).
// The walk: next_tile.
template <int BK, bool kMc>
__device__ void produce(const WgradTmaParams& p, const Ring<BK>& s, std::int64_t total) {
  const WgradKernelArgs& a = p.args;
  const int lane = int(threadIdx.x % 32);
  const bool scales_tma = tma_scales(a);
  if (lane == 0) tma_prefetch_map(&p.map_dy), tma_prefetch_map(&p.map_x);
  if (lane == 0 && scales_tma) tma_prefetch_map(&p.map_sdy), tma_prefetch_map(&p.map_sx);
  const int rank = kMc ? int(cta_rank()) : 0;
  std::uint32_t it = 0;  // the ring position
  for (std::int64_t w = 0;; ++w) {
    std::int64_t tile;
    if (!next_tile<kMc>(p, w, total, tile)) break;
    const WgradTile t =
        kMc ? wgrad_pair_tile<BK>(a, std::uint32_t(tile), rank) : wgrad_tile<BK>(a, tile);
    // The bytes a stage's `full` phase waits for: the tiles' and the two scale boxes' (whole boxes,
    // columns past K read as zeros).
    constexpr std::uint32_t tx_scaled = Ring<BK>::kStageBytes + 4 * (128 + BK);
    const std::uint32_t tx = scales_tma ? tx_scaled : std::uint32_t(Ring<BK>::kStageBytes);
    for (int kb = 0; kb < t.nkb; ++kb, ++it) {
      const int st = s.stage(it);
      const std::int32_t tok = t.tok0 + kb * 128;
      s.wait_empty(it);
      if (lane == 0) {
        mbar_arrive_expect_tx(s.full(st), tx);
        tma_load_2d(s.a_tile(st), &p.map_dy, tok, t.n0, s.full(st));
        if (BK == 256 && kMc)  // this CTA's half of the X tile, into both CTAs
          tma_load_2d_multicast(s.b_tile(st) + rank * 128 * 128, &p.map_x, tok, t.k0 + rank * 128,
                                s.full(st), 0x3);
        else
          tma_load_2d(s.b_tile(st), &p.map_x, tok, t.k0, s.full(st));
        if (scales_tma) {  // the block's row of scales: blk0 + kb
          const std::int32_t row = a.blk0[t.g] + kb;
          tma_load_2d(smem_u32(s.scales(st)), &p.map_sdy, t.n0, row, s.full(st));
          tma_load_2d(smem_u32(s.scales(st) + 128), &p.map_sx, t.k0, row, s.full(st));
        }
      }
      if (!a.blockwise || scales_tma) continue;
      // Unaligned scale tensors: 4-byte copies by every lane.
      const std::int64_t row = a.blk0[t.g] + kb;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = lane + 32 * i;
        cp_async4(smem_u32(s.scales(st) + j), a.scale_dy + row * a.N + t.n0 + j, true);
      }
#pragma unroll
      for (int i = 0; i < BK / 32; ++i) {
        const int j = lane + 32 * i;
        const bool ok = t.k0 + j < a.K;
        cp_async4(smem_u32(s.scales(st) + 128 + j), a.scale_x + row * a.K + (ok ? t.k0 + j : 0),
                  ok);
      }
      cp_async_arrive_noinc(s.full(st));
    }
    if constexpr (BK != 256) continue;
    // The tile's C into the next three stages (ring_epilogue), once they are free: loaded while
    // the consumers still run the tile's last blocks. Where the lanes copy scales, `full` counts
    // 33 arrivals: lane 0's expect_tx and one of every lane.
    const std::int32_t row0 = std::int32_t(t.g * a.N + t.n0);
    for (int c = 0; c < kEpiChunks; ++c, ++it) {
      const int st = s.stage(it);
      const int boxes = min(kEpiChunkCols, BK - c * kEpiChunkCols) / 32;
      s.wait_empty(it);
      if (lane == 0) {
        const std::uint64_t evict_first = l2_evict_first_policy();  // C is read once
        mbar_arrive_expect_tx(s.full(st), 2 * boxes * kEpiBox);
        for (int w = 0; w < 2; ++w)
          for (int b = 0; b < boxes; ++b)
            tma_load_2d_hint(s.a_tile(st) + w * kEpiWg + b * kEpiBox, &p.map_c,
                             std::int32_t(t.k0) + c * kEpiChunkCols + 32 * b, row0 + 64 * w,
                             s.full(st), evict_first);
      }
      if (a.blockwise && !scales_tma) mbar_arrive(s.full(st));
    }
  }
}

// The last block of a group that ends inside it: zero its tokens past the end in both tiles
// (they hold the next group's tokens or padding), at token (byte) granularity: the 16-token
// chunks wholly past the end are stored zero, the chunk holding the end is read, its bytes from
// the end on masked off and written back (ends are any token, docs/gpu_gemm.md §1); then make the
// writes visible to the tensor cores (async proxy) and wait for both consumer warpgroups. Threads
// 0..127 take the dY tile's rows, threads 128..255 the X tile's; each thread its own rows.
template <int BK>
__device__ __forceinline__ void zero_tail(const Ring<BK>& s, int st, int valid_tokens) {
  const bool dy = threadIdx.x < 128;
  const std::uint32_t tile = dy ? s.a_tile(st) : s.b_tile(st);
  const int part = valid_tokens / 16, kept = valid_tokens % 16;  // the end's chunk, its tokens
  for (int r = threadIdx.x % 128; r < (dy ? 128 : BK); r += 128) {
    const std::uint32_t row = tile + r * 128;
    const int swz = r & 7;  // 128-byte swizzle: chunk c of row r at r·128 + ((c ^ (r & 7)) << 4)
    if (kept > 0) {
      const std::uint32_t at = row + ((part ^ swz) << 4);
      std::uint32_t v[4];
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                   : "r"(at)
                   : "memory");
#pragma unroll
      for (int w = 0; w < 4; ++w) {  // word w holds tokens 4w .. 4w + 3 of the chunk, low first
        const int keep = min(max(kept - 4 * w, 0), 4);
        v[w] &= keep == 4 ? 0xFFFFFFFFu : (1u << (8 * keep)) - 1u;
      }
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "r"(v[0]), "r"(v[1]),
                   "r"(v[2]), "r"(v[3])
                   : "memory");
    }
    for (int chunk = part + (kept > 0); chunk < 8; ++chunk)
      asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(row + ((chunk ^ swz) << 4)),
                   "r"(0)
                   : "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

// The lane's two column scales of 8-column group j of the stage's scales (`cols`: the lane's
// first column's shared-window address; a group's 8 scales are 32 bytes).
__device__ __forceinline__ void column_scales(std::uint32_t cols, int j, float (&x)[2]) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x[0]), "=f"(x[1]) : "r"(cols + j * 32));
}

// promote_blockwise's columns: acc[kOff + i] += RN(r·sx)·t[i] over the BN columns of t from the
// lane's first column at `cols` (r0 for row local_row, r1 for local_row + 8).
template <int BN, int kOff, int NA>
__device__ __forceinline__ void promote_columns(float r0, float r1, std::uint32_t cols,
                                                const float (&t)[BN / 2], float (&acc)[NA]) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    float x[2];  // x[e]: column j·8 + (lane % 4)·2 + e
    column_scales(cols, j, x);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      acc[kOff + j * 4 + e] = __fmaf_rn(__fmul_rn(r0, x[e]), t[j * 4 + e], acc[kOff + j * 4 + e]);
      acc[kOff + j * 4 + 2 + e] =
          __fmaf_rn(__fmul_rn(r1, x[e]), t[j * 4 + 2 + e], acc[kOff + j * 4 + 2 + e]);
    }
  }
}

// The 8-column groups of a 256-wide tile's half whose scale products are formed while the half's
// wgmma runs (early_products): the warp would wait there, and the promotion after the wait, the
// block loop's critical path, then has 16 FMUL and 4 LDS fewer (docs/gpu_gemm.md §7: +1.6 to
// +2.6% on every wgrad row of the benchmark; 5, 6 or 7 groups gained less, ptxas then leaving
// some of the products after the wait; the next groups' scales read there as well lost).
constexpr int kEarlyGroups = 4;

// The products RN(sdy·sx) of the half's first kEarlyGroups groups, pre[j] = {RN(r0·x0),
// RN(r0·x1), RN(r1·x0), RN(r1·x1)} for group j (x: the lane's two column scales of the group, at
// `cols` + 32j), as volatile asm so that they stay before the wait in the PTX (ptxas keeps them
// there at this count: cuobjdump -sass). The same RN products promote_columns forms.
__device__ __forceinline__ void early_products(float r0, float r1, std::uint32_t cols,
                                               float (&pre)[kEarlyGroups][4]) {
#pragma unroll
  for (int j = 0; j < kEarlyGroups; ++j) {
    float x[2];
    column_scales(cols, j, x);
    asm volatile("mul.rn.f32 %0, %1, %2;" : "=f"(pre[j][0]) : "f"(r0), "f"(x[0]));
    asm volatile("mul.rn.f32 %0, %1, %2;" : "=f"(pre[j][1]) : "f"(r0), "f"(x[1]));
    asm volatile("mul.rn.f32 %0, %1, %2;" : "=f"(pre[j][2]) : "f"(r1), "f"(x[0]));
    asm volatile("mul.rn.f32 %0, %1, %2;" : "=f"(pre[j][3]) : "f"(r1), "f"(x[1]));
  }
}

// promote_columns of a 256-wide tile's half (BN = 128) with its first kEarlyGroups groups'
// products from early_products.
template <int kOff>
__device__ __forceinline__ void promote_half(float r0, float r1, std::uint32_t cols,
                                             const float (&pre)[kEarlyGroups][4],
                                             const float (&t)[64], float (&acc)[128]) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    float m[4];
    if (j < kEarlyGroups) {
#pragma unroll
      for (int e = 0; e < 4; ++e) m[e] = pre[j < kEarlyGroups ? j : 0][e];
    } else {
      float x[2];
      column_scales(cols, j, x);
      m[0] = __fmul_rn(r0, x[0]), m[1] = __fmul_rn(r0, x[1]);
      m[2] = __fmul_rn(r1, x[0]), m[3] = __fmul_rn(r1, x[1]);
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      acc[kOff + j * 4 + e] = __fmaf_rn(m[e], t[j * 4 + e], acc[kOff + j * 4 + e]);
      acc[kOff + j * 4 + 2 + e] = __fmaf_rn(m[2 + e], t[j * 4 + 2 + e], acc[kOff + j * 4 + 2 + e]);
    }
  }
}

// acc += RN(sdy[row]·sx[col]) · T elementwise, rows local_row and local_row + 8, from the stage's
// scales at shared-window addresses: rows = &sdy[local_row], cols = &sx[(lane % 4)·2], the lane's
// first column. Read by ld.shared on 32-bit addresses: through a generic pointer (the ring's base
// is an aligned-up generic address) they were generic LD.E on 64-bit addresses, with 64-bit
// address arithmetic per block (docs/gpu_gemm.md §7). The loads are volatile asm so that they
// stay between the stage's `full` wait and its release (asm volatile statements keep their
// order).
template <int BK>
__device__ __forceinline__ void promote_blockwise(std::uint32_t rows, std::uint32_t cols,
                                                  const float (&t)[BK / 2], float (&acc)[BK / 2]) {
  float r0, r1;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(r0) : "r"(rows));
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(r1) : "r"(rows + 32));  // local_row + 8
  promote_columns<BK, 0>(r0, r1, cols, t, acc);
}

// Rows local_row (h = 0) and local_row + 8 (h = 1) of the tile's dW = RN_out(RN(C + acc)), or
// C itself for an empty group (kAdd false; f32: every bit of C, -0 and NaN payloads included),
// dW in bf16 (kBf16) or f32; columns past K (a 192-wide tile) are neither read nor written.
// 16 bytes a lane: for each pair of 8-column groups (2i, 2i + 1) of the wgmma D layout, the two
// lanes q, q ^ 1 of a pair (q = lane % 4) swap two values, so that even q holds columns
// 16i + 2q .. + 3 and odd q columns 16i + 8 + 2(q - 1) .. + 3, four contiguous floats at base +
// 16i (base: the thread's column 8(q & 1) + 4(q >> 1)); C is read and dW written 16 bytes a lane
// (bf16 dW: 8), a warp instruction touching 64 bytes of each of its 8 rows: half the L2 requests
// of 8-byte accesses, which the L2's request rate, not bytes, makes worth +4-5% on the skewed and
// misaligned loads (docs/gpu_gemm.md §7). All of the thread's values of C (both rows: up to 96
// registers, free once the last block is promoted) are loaded before the first store, so that the
// loads are in flight together (a load after a store to dW, which might alias, would wait for
// it). Both as streaming accesses (ld/st .cs: evict first), each byte being used once, so that C
// and dW leave L2 to the tiles of dYᵀ and Xᵀ other CTAs read. The choices are template
// parameters, taken once per tile by store_wgrad, not per element. The tile's accumulators are
// acc[0 .. BK / 2).
template <int BK, bool kBf16, bool kAdd>
__device__ __forceinline__ void store_rows(const WgradKernelArgs& p, std::int64_t base,
                                           std::int32_t cols, const float (&acc)[BK / 2]) {
  const bool odd = (threadIdx.x & 1) != 0;
  float4 c[2][BK / 16];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4* row = reinterpret_cast<const float4*>(p.c + base + 8 * h * p.K);
#pragma unroll
    for (int i = 0; i < BK / 16; ++i)  // cols % 64 == 0: all of the 16 columns or none
      c[h][i] = BK == 128 || i * 16 < cols ? __ldcs(row + i * 4) : make_float4(0, 0, 0, 0);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const std::int64_t at = base + 8 * h * p.K;  // element index of the thread's first column
#pragma unroll
    for (int i = 0; i < BK / 16; ++i) {
      if (BK > 128 && i * 16 >= cols) continue;
      float4 v = c[h][i];
      if constexpr (kAdd) {
        // groups 2i, 2i + 1
        const int e0 = (2 * i) * 4 + h * 2, e1 = (2 * i + 1) * 4 + h * 2;
        const float s0 = odd ? acc[e0] : acc[e1], s1 = odd ? acc[e0 + 1] : acc[e1 + 1];
        const float r0 = __shfl_xor_sync(0xffffffffu, s0, 1);
        const float r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
        const float k0 = odd ? acc[e1] : acc[e0], k1 = odd ? acc[e1 + 1] : acc[e0 + 1];
        v.x = __fadd_rn(v.x, odd ? r0 : k0), v.y = __fadd_rn(v.y, odd ? r1 : k1);
        v.z = __fadd_rn(v.z, odd ? k0 : r0), v.w = __fadd_rn(v.w, odd ? k1 : r1);
      }
      if constexpr (kBf16) {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y),
                             hi = __floats2bfloat162_rn(v.z, v.w);
        uint2 u;
        u.x = *reinterpret_cast<const std::uint32_t*>(&lo);
        u.y = *reinterpret_cast<const std::uint32_t*>(&hi);
        __stcs(reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(p.dw) + at + i * 16), u);
      } else {
        __stcs(reinterpret_cast<float4*>(static_cast<float*>(p.dw) + at + i * 16), v);
      }
    }
  }
}

// The epilogues' acc': acc (blockwise) or, for a tile with blocks, RN(acc·RN(sdy·sx))
// (tensorwise: formed in place before the epilogue's fadd).
template <int NA>
__device__ __forceinline__ void scale_tensorwise(const WgradKernelArgs& p, const WgradTile& t,
                                                 float (&acc)[NA]) {
  if (p.blockwise || t.nkb == 0) return;
  const float ts = __fmul_rn(p.scale_dy[0], p.scale_x[0]);
#pragma unroll
  for (int i = 0; i < NA; ++i) acc[i] = __fmul_rn(acc[i], ts);
}

// The tile's epilogue: dW = RN_out(RN(C + acc')) (scale_tensorwise) by one of four store_rows;
// BK columns from t.k0 (BK = 128 or 192; 256-wide tiles: ring_epilogue).
template <int BK>
__device__ __forceinline__ void store_wgrad(const WgradKernelArgs& p, const WgradTile& t,
                                            float (&acc)[BK / 2], int local_row) {
  const int lane = threadIdx.x % 32;
  // The thread's first column of its rows (store_rows): 8(q & 1) + 4(q >> 1), q = lane % 4.
  const std::int64_t base = std::int64_t(t.g) * p.N * p.K + (t.n0 + local_row) * p.K + t.k0 +
                            8 * (lane & 1) + 4 * ((lane >> 1) & 1);
  const std::int32_t cols = std::int32_t(min(std::int64_t(BK), p.K - t.k0));
  scale_tensorwise(p, t, acc);
  if (p.out_bf16)
    t.nkb > 0 ? store_rows<BK, true, true>(p, base, cols, acc)
              : store_rows<BK, true, false>(p, base, cols, acc);
  else
    t.nkb > 0 ? store_rows<BK, false, true>(p, base, cols, acc)
              : store_rows<BK, false, false>(p, base, cols, acc);
}

// Barrier of the consumer warpgroup wg's 128 threads (named barriers 2 and 3; 1 is zero_tail's).
__device__ __forceinline__ void warpgroup_sync(int wg) {
  if (wg == 0)
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 3, 128;\n" ::: "memory");
}

// The epilogue of a 256-wide tile, through the ring (docs/gpu_gemm.md §2): the producer loads the
// tile's C into the three stages after its last block (kEpiChunks chunks of kEpiChunkCols columns,
// each warpgroup's 64 rows as 32-column boxes), while the consumers still run the tile's last
// blocks, so that the epilogue does not wait for C in global memory. Per chunk each thread reads
// its values of C (ld.shared at the wgmma D layout's rows local_row, + 8 and columns 8J +
// 2(lane % 4) + {0, 1} of 8-column group J: acc[4J ..]; the 128-byte swizzle puts the 8 rows of a
// warp's access on distinct banks), forms dW = RN_out(RN(C + acc)) (C itself for an empty group:
// kAdd false), writes it back into the chunk (f32 in place; bf16 once the whole warpgroup has read
// its C, as 32-column boxes with the 64-byte swizzle) and one thread per warpgroup stores the
// warpgroup's boxes by TMA; the same fadd and rounding as store_rows. That thread hands a chunk's
// stage back to the producer (an arrival for its 4 warps) once the stores have read it, the
// chunk before the last while the last is formed. C and dW pass through L2 at evict_first.
template <bool kBf16, bool kAdd, bool kMc>
__device__ __forceinline__ void ring_epilogue(const WgradTmaParams& p, const Ring<256>& s,
                                              const WgradTile& t, const float (&acc)[128], int wg_u,
                                              int& st, std::uint32_t& phase) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, q = lane % 4;
  const bool leader = threadIdx.x % 128 == 0;  // the warpgroup's thread issuing its stores
  const std::uint32_t row = (warp * 16 + lane / 4) * 128;  // byte offset of row local_row in a box
  const std::uint32_t cx = (q >> 1) ^ (lane >> 2);         // 128-byte swizzle: chunk 2j' ^ cx
  const std::uint32_t brow = (warp * 16 + lane / 4) * 64 + 4 * q, bx = (lane >> 3) & 3;
  const std::int32_t row0 = std::int32_t(t.g * p.args.N + t.n0) + 64 * wg_u;
  int used[kEpiChunks];
#pragma unroll
  for (int c = 0; c < kEpiChunks; ++c) {
    constexpr int kGroups = kEpiChunkCols / 8;
    const int groups = min(kGroups, 32 - c * kGroups);  // 12, 12, 8
    used[c] = st;
    mbar_wait(s.full(st), phase);
    const std::uint32_t region = s.a_tile(st) + wg_u * kEpiWg;
    // Where C and f32 dW hold the thread's pair of the chunk's i-th 8-column group, row local_row
    // + 8rr: box i / 4, group i % 4 of its row (a chunk holds whole boxes).
    // Rows r and r ^ 1 of a half-warp would hit the same banks (the chunk pair 2j ^ (r & ~1)):
    // odd rows take their box's 8-column groups in the order j ^ 2, so that a half-warp's four
    // rows touch four distinct pairs (f32 only; the accumulators picked by a select).
    const std::uint32_t odd = kBf16 ? 0u : (lane >> 2) & 1u, cxp = cx ^ (odd << 2);
    const auto f32_at = [&](int i, int rr) {
      return region + (i / 4) * kEpiBox + row + rr * 1024 + (((2 * (i % 4)) ^ cxp) << 4) +
             8 * (q & 1);
    };
    const auto pick = [&](int J, int k) { return odd ? acc[4 * (J ^ 2) + k] : acc[4 * J + k]; };
    float v[kGroups][4];
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      if (i >= groups) break;
      const int J = c * kGroups + i;
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];"
                     : "=f"(v[i][2 * rr]), "=f"(v[i][2 * rr + 1])
                     : "r"(f32_at(i, rr))
                     : "memory");
        if constexpr (kAdd) {
          v[i][2 * rr] = __fadd_rn(v[i][2 * rr], pick(J, 2 * rr));
          v[i][2 * rr + 1] = __fadd_rn(v[i][2 * rr + 1], pick(J, 2 * rr + 1));
        }
      }
    }
    if constexpr (kBf16) {
      // Every thread of the warpgroup has read its C before any bf16 overwrites the chunk.
      warpgroup_sync(wg_u);
#pragma unroll
      for (int i = 0; i < kGroups; ++i) {
        if (i >= groups) break;
        const int J = c * kGroups + i, b = i / 4, jj = J % 4;
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
          const __nv_bfloat162 h = __floats2bfloat162_rn(v[i][2 * rr], v[i][2 * rr + 1]);
          const std::uint32_t at = region + b * (kEpiBox / 2) + brow + rr * 512 + ((jj ^ bx) << 4);
          asm volatile("st.shared.b32 [%0], %1;" ::"r"(at),
                       "r"(*reinterpret_cast<const std::uint32_t*>(&h))
                       : "memory");
        }
      }
    } else if constexpr (kAdd) {
#pragma unroll
      for (int i = 0; i < kGroups; ++i) {
        if (i >= groups) break;
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(f32_at(i, rr)), "f"(v[i][2 * rr]),
                       "f"(v[i][2 * rr + 1])
                       : "memory");
        }
      }
    }
    // The writes visible to the async proxy, then the warpgroup's stores.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    warpgroup_sync(wg_u);
    if (leader) {
      const std::uint64_t evict_first = l2_evict_first_policy();  // dW is written once
      for (int b = 0; b < groups / 4; ++b)
        tma_store_2d_hint(&p.map_dw, std::int32_t(t.k0) + c * kEpiChunkCols + 32 * b, row0,
                          region + b * (kBf16 ? kEpiBox / 2 : kEpiBox), evict_first);
      bulk_commit_group();
      if (c > 0) {  // the previous chunk's stores have read it: its stage back to the producer
        bulk_wait_group_read<1>();
        mbar_arrive_count(s.empty(used[c - 1]), 4);
        if (kMc) arrive_peer(s.empty(used[c - 1]), cta_rank() ^ 1u, 4);
      }
    }
    if (++st == Ring<256>::kStages) st = 0, phase ^= 1;
  }
  if (leader) {  // the last chunk's stage, once its stores have read it
    bulk_wait_group_read<0>();
    mbar_arrive_count(s.empty(used[kEpiChunks - 1]), 4);
    if (kMc) arrive_peer(s.empty(used[kEpiChunks - 1]), cta_rank() ^ 1u, 4);
  }
}

// A 256-wide tile's T per token block (BK = 256): two 128-column halves into the one 64-register
// partial d, each run (four chained wgmma k32 steps from +0) and promoted into its half of acc
// before the other: half h reads the X tile's rows 128h.. (16 KiB further: 1024 in the
// descriptor's address field). The row scales are read while half 0 runs, and each half's first
// products (early_products) while it runs. kShort: the block of a group's end (steps = its
// 32-token steps holding a token of the group, 1 to 4), whose later steps are not issued: their
// tokens are zeros (zero_tail), and a step without a non-zero product gives back the chain's
// value unchanged (it truncates to 14 significant bits a value that a step formed, hence has
// them; +0 for +0; a NaN or infinity as is: docs/gpu_gemm.md §3), so T keeps its bits.
template <int H, bool AE5, bool BE5, bool kShort = false>
__device__ __forceinline__ void product_half(bool blockwise, std::uint64_t desc_a,
                                             std::uint64_t desc_b, std::uint32_t rows,
                                             std::uint32_t cols, float& r0, float& r1,
                                             float (&d)[64], float (&acc)[128], int steps = 4) {
  fence_regs(d);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (!kShort || j == 0 || j < steps)  // ptxas injects an arrive here (C7519)
      wgmma_k32<128, AE5, BE5>(d, desc_a + j * 2, desc_b + H * 1024 + j * 2, j);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  if (H == 0 && blockwise) {
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(r0) : "r"(rows));
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(r1) : "r"(rows + 32));  // local_row + 8
  }
  float pre[kEarlyGroups][4];
  if (blockwise) early_products(r0, r1, cols + H * 512, pre);
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  fence_regs(d);
  if (blockwise) {
    promote_half<64 * H>(r0, r1, cols + H * 512, pre, d, acc);
  } else {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[64 * H + i] = __fadd_rn(acc[64 * H + i], d[i]);
  }
}

// The consumer warpgroups: per tile (the producer's walk), per token block, wait for the stage,
// zero a group's tail, run T on it, promote (reading the stage's scales) and free it; the
// epilogue stores the tile while the producer already loads the next one. Everything the block loop
// needs besides the stage is formed once per CTA, so that a block costs few instructions beyond its
// 2·(BK/2) FMUL/FFMA and 4 wgmma (docs/gpu_gemm.md §7).
template <int BK, bool AE5, bool BE5, bool kMc>
__device__ void consume(const WgradTmaParams& p, const Ring<BK>& s, std::int64_t total) {
  const WgradKernelArgs& a = p.args;
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;
  // Stage 0's wgmma descriptors, offset per stage: smem_desc is linear in a shared address below
  // 256 KiB (its start address field, bits 0..13, takes the address >> 4 and never carries into
  // the next field; the ring lies below 228 KiB), so desc(stage st, k32 step j) = desc(stage 0) +
  // st·kStageBytes/16 + 2j. The warpgroup index is broadcast from lane 0, so that the compiler
  // sees it warp-uniform and keeps the descriptors in uniform registers (no R2UR per wgmma).
  const int wg_u = __shfl_sync(0xffffffffu, wg, 0);
  const std::uint64_t desc_a0 = smem_desc(s.a_tile(0) + wg_u * 64 * 128),
                      desc_b0 = smem_desc(s.b_tile(0));
  // The opaque moves (here and below) pin values in registers: without them the compiler
  // recomputes them from the thread index (S2R) in every block.
  std::uint32_t leader = lane == 0;  // the warp's lane releasing a stage (s.release)
  asm volatile("mov.b32 %0, %0;" : "+r"(leader));
  int st = 0;  // the producer's s.stage(it) and s.parity(it), stepped per block (no division)
  std::uint32_t phase = 0;
  constexpr std::uint32_t kScaleStride = (128 + BK) * 4;  // bytes of a stage's scales
  static_assert(Ring<BK>::kBars - Ring<BK>::kScales == Ring<BK>::kStages * int(kScaleStride));
  // Stage 0's scale addresses of the thread (promote_blockwise), offset per stage.
  std::uint32_t rows0 = smem_u32(s.scales(0) + local_row),
                cols0 = smem_u32(s.scales(0) + 128 + (lane % 4) * 2);
  asm volatile("mov.b32 %0, %0;" : "+r"(rows0));
  asm volatile("mov.b32 %0, %0;" : "+r"(cols0));
  const std::uint32_t peer = kMc ? cta_rank() ^ 1u : 0u;
  for (std::int64_t w = 0;; ++w) {
    std::int64_t tile;
    if (!next_tile<kMc>(p, w, total, tile)) break;
    const WgradTile t =
        kMc ? wgrad_pair_tile<BK>(a, std::uint32_t(tile), int(peer ^ 1u)) : wgrad_tile<BK>(a, tile);
    // d: written by the first k32 step of each block (scale-d 0); at BK = 256 one half's
    float acc[BK / 2], d[BK == 256 ? 64 : BK / 2];
#pragma unroll
    for (int i = 0; i < BK / 2; ++i) acc[i] = 0.0f;
    for (int kb = 0; kb < t.nkb; ++kb) {
      const int valid = t.tok_end - (t.tok0 + kb * 128);
      mbar_wait(s.full(st), phase);
      if (valid < 128) zero_tail<BK>(s, st, valid);
      const std::uint64_t step = std::uint32_t(st) * (Ring<BK>::kStageBytes >> 4);
      const std::uint64_t desc_a = desc_a0 + step, desc_b = desc_b0 + step;
      if constexpr (BK == 256) {
        const std::uint32_t rows = rows0 + st * kScaleStride, cols = cols0 + st * kScaleStride;
        float r0 = 0.0f, r1 = 0.0f;
        if (valid < 128) {  // a group's last block: the steps past its end are not issued
          const int steps = (valid + 31) / 32;
          product_half<0, AE5, BE5, true>(a.blockwise, desc_a, desc_b, rows, cols, r0, r1, d, acc,
                                          steps);
          product_half<1, AE5, BE5, true>(a.blockwise, desc_a, desc_b, rows, cols, r0, r1, d, acc,
                                          steps);
        } else {
          product_half<0, AE5, BE5>(a.blockwise, desc_a, desc_b, rows, cols, r0, r1, d, acc);
          product_half<1, AE5, BE5>(a.blockwise, desc_a, desc_b, rows, cols, r0, r1, d, acc);
        }
      } else {
        fence_regs(d);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < 4; ++j)
          wgmma_k32<BK, AE5, BE5>(d, desc_a + j * 2, desc_b + j * 2, j);  // + 32 bytes
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs(d);
        if (a.blockwise) {
          promote_blockwise<BK>(rows0 + st * kScaleStride, cols0 + st * kScaleStride, d, acc);
        } else {
#pragma unroll
          for (int i = 0; i < BK / 2; ++i) acc[i] = __fadd_rn(acc[i], d[i]);
        }
      }
      __syncwarp();  // s.release
      if (leader) {
        mbar_arrive(s.empty(st));
        if (kMc) arrive_peer(s.empty(st), peer, 1);
      }
      if (++st == Ring<BK>::kStages) st = 0, phase ^= 1;
    }
    if constexpr (BK == 256) {  // through the ring
      scale_tensorwise(a, t, acc);
      if (a.out_bf16)
        t.nkb > 0 ? ring_epilogue<true, true, kMc>(p, s, t, acc, wg_u, st, phase)
                  : ring_epilogue<true, false, kMc>(p, s, t, acc, wg_u, st, phase);
      else
        t.nkb > 0 ? ring_epilogue<false, true, kMc>(p, s, t, acc, wg_u, st, phase)
                  : ring_epilogue<false, false, kMc>(p, s, t, acc, wg_u, st, phase);
    } else {
      store_wgrad<BK>(a, t, acc, local_row);
    }
  }
}

template <int BK, bool AE5, bool BE5, bool kMc>
__global__ void __launch_bounds__(kPipelineThreads, 1)
    grouped_wgrad_kernel(const __grid_constant__ WgradTmaParams p) {
  extern __shared__ std::uint8_t smem_raw[];
  const Ring<BK> s = Ring<BK>::at(smem_raw);
  // Tiles, or a pair's tiles (kMc: two n-adjacent 128-row tiles).
  const std::int64_t total =
      std::int64_t(p.args.groups) * (p.args.N / (kMc ? 256 : 128)) * ((p.args.K + BK - 1) / BK);
  // 33 arrivals per `full` phase when the lanes copy the scales themselves, else lane 0's one; a
  // pair's `empty` counts both CTAs' consumer warps (each stage's X tile is written into both).
  if (threadIdx.x == 0) s.init(p.args.blockwise && !tma_scales(p.args), kMc ? 2 : 1);
  if constexpr (kMc)
    cluster_sync_all();  // both CTAs' barriers initialised before either's first multicast
  else
    __syncthreads();
  if (threadIdx.x >= kConsumerThreads) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x < kConsumerThreads + 32) produce<BK, kMc>(p, s, total);
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    consume<BK, AE5, BE5, kMc>(p, s, total);
  }
  if constexpr (kMc)  // no CTA exits while its peer may still write its shared memory or arrive
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// Whether a launch of 256-wide tiles takes the 2-CTA pairs (kMc): N a multiple of 256 (a pair's two
// n tiles), tokens to read, and at least a quarter of them in groups that start 16 mod 32 tokens,
// whose blocks' rows start mid-sector and halve the load path's rate, where reading 32 KiB a block
// and CTA instead of 48 pays (docs/gpu_gemm.md §2: +5.5% on the Zipf load, +3.6% two-empty, +24%
// with every start 16 mod 32, -0.6% with none).
bool cluster_pays(const WgradKernelArgs& a) {
  if (a.N % 256 != 0 || a.M <= 0) return false;
  std::int64_t odd16 = 0;
  for (int g = 0; g < a.groups; ++g)
    if (a.end[g] > a.start[g] && a.start[g] % 32 == 16) odd16 += a.end[g] - a.start[g];
  return 4 * odd16 >= a.M;
}

// A launch of `grid` CTAs in clusters of two (the pair kernels' launches and their occupancy
// query); the attribute lives in the struct, which cfg.attrs points into.
struct PairLaunch {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg{};
  PairLaunch(unsigned grid, int smem_bytes, cudaStream_t stream) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(kPipelineThreads);
    cfg.dynamicSmemBytes = std::size_t(smem_bytes), cfg.stream = stream;
    cfg.attrs = attr, cfg.numAttrs = 1;
  }
  PairLaunch(const PairLaunch&) = delete;
  PairLaunch& operator=(const PairLaunch&) = delete;
};

// The 2-CTA clusters of `kernel` co-resident on the current device (0: none, or the device has no
// room for one), asked once per device: the four operand-format pair kernels share one function
// type, hence this cache, and have the same shared memory and launch bounds, hence the same count.
template <class Kernel>
int co_resident_pairs(Kernel kernel, int smem_bytes) {
  static std::atomic<int> known[64];  // per device: 1 + the count, 0 until asked
  int device = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>& slot = known[device >= 0 && device < 64 ? device : 63];
  if (const int k = slot.load(); k > 0) return k - 1;
  const PairLaunch query(2, smem_bytes, nullptr);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &query.cfg) != cudaSuccess) {
    (void)cudaGetLastError();  // no cluster launch here: the one-CTA kernel
    clusters = 0;
  }
  slot.store(clusters + 1);
  return clusters;
}

template <int BK, bool AE5, bool BE5>
void launch_wgrad_typed(const WgradKernelArgs& args, cudaStream_t stream) {
  WgradTmaParams p{};
  p.args = args;
  // f32 dW into C itself: an empty group's dW is C already, so the walk leaves the empty groups
  // out (they come last in args.order); p.args.groups counts the walk's groups, the tensor maps
  // span every group's rows.
  if (!args.out_bf16 && args.c == args.dw)
    while (p.args.groups > 0 &&
           args.end[args.order[p.args.groups - 1]] == args.start[args.order[p.args.groups - 1]])
      --p.args.groups;
  if (args.M > 0) {  // with no tokens no block is loaded: the maps stay empty
    p.map_dy = fp8_tile_map(args.dy_t, args.M, args.N, 128);
    p.map_x = fp8_tile_map(args.x_t, args.M, args.K, BK);
    if (tma_scales(args) && args.scale_rows > 0) {
      p.map_sdy = f32_row_map(args.scale_dy, args.N, args.scale_rows, 128);
      p.map_sx = f32_row_map(args.scale_x, args.K, args.scale_rows, BK);
    }
  }
  // 256-wide tiles store through the ring (ring_epilogue): the launcher checked C and dW 16-byte
  // aligned (the rows' strides, K·4 and K·2 bytes, are multiples of 16 with K % 128 == 0), and the
  // G·N rows fit TMA's 32-bit coordinates (C holds G·N·K >= 128·G·N floats in device memory).
  if (BK == 256 && args.groups > 0) {
    const std::int64_t rows = std::int64_t(args.groups) * args.N;
    p.map_c = out_tile_map(args.c, false, args.K, rows, 64);
    p.map_dw = out_tile_map(args.dw, args.out_bf16, args.K, rows, 64);
  }
  const std::int64_t tiles =
      std::int64_t(p.args.groups) * (args.N / 128) * ((args.K + BK - 1) / BK);
  if (tiles == 0) return;  // every group empty, in place: nothing to write
  if constexpr (BK == 256) {
    if (cluster_pays(args) && tiles < (std::int64_t(1) << 31)) {
      const auto pair_kernel = grouped_wgrad_kernel<BK, AE5, BE5, true>;
      FP8REF_CUDA_CHECK(cudaFuncSetAttribute(
          pair_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Ring<BK>::kBytes));
      if (const int clusters = co_resident_pairs(pair_kernel, Ring<BK>::kBytes); clusters > 0) {
        p.map_x = fp8_tile_map(args.x_t, args.M, args.K, 128);  // half an X tile a CTA
        const unsigned slots = unsigned(std::min<std::int64_t>(tiles / 2, clusters));
        // The empty groups' tiles among the busy groups' (in place the walk has no empty group:
        // nothing moves).
        interleave_empty_groups(p.args);
        p.sched_on = build_wgrad_schedule(p.args, (args.N / 256) * ((args.K + BK - 1) / BK),
                                          tiles / 2, int(slots), p.sched);
        const PairLaunch launch(2 * slots, Ring<BK>::kBytes, stream);
        FP8REF_CUDA_CHECK(cudaLaunchKernelEx(&launch.cfg, pair_kernel, p));
        FP8REF_CUDA_CHECK(cudaGetLastError());
        return;
      }
    }
  }
  const auto kernel = grouped_wgrad_kernel<BK, AE5, BE5, false>;
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Ring<BK>::kBytes));
  const unsigned grid = unsigned(std::min<std::int64_t>(tiles, current_device_sm_count()));
  kernel<<<grid, kPipelineThreads, Ring<BK>::kBytes, stream>>>(p);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

template <int BK>
void launch_wgrad_tile(const WgradKernelArgs& args, cudaStream_t stream) {
  if (!args.dy_e5m2 && !args.x_e5m2) return launch_wgrad_typed<BK, false, false>(args, stream);
  if (!args.dy_e5m2 && args.x_e5m2) return launch_wgrad_typed<BK, false, true>(args, stream);
  if (args.dy_e5m2 && !args.x_e5m2) return launch_wgrad_typed<BK, true, false>(args, stream);
  launch_wgrad_typed<BK, true, true>(args, stream);
}

}  // namespace

void launch_grouped_wgrad(const WgradKernelArgs& args, int block_k, cudaStream_t stream) {
  if (block_k == 256) return launch_wgrad_tile<256>(args, stream);
  if (block_k == 192) return launch_wgrad_tile<192>(args, stream);
  launch_wgrad_tile<128>(args, stream);
}

}  // namespace fp8ref::gpu::detail
