// The FP8 grouped GEMM kernel on Hopper tensor cores (sm_90a), a warp-specialised persistent
// pipeline (docs/gpu_gemm.md §2): one producer warp loads 128×128 A and BN×128 B tiles by TMA
// (128-byte swizzle) into a ring of stages guarded by full / empty mbarriers; two consumer
// warpgroups run wgmma.mma_async m64nBNk32 (f32 accumulate) and promote into an f32 accumulator
// after every 128 of K in the order of the declared models (docs/gpu_gemm.md §3): blockwise
//   acc = fmaf(RN(sa·sb), T_kb, acc)   (hopper_promoted_blockwise),
// rowwise / tensorwise acc = acc + T_kb, scales in the epilogue (hopper_promoted_rowwise a_then_b,
// hopper_promoted_tensorwise). T_kb = four chained wgmma k32 steps from +0; the block scales are
// loaded by the consumers from global memory two blocks ahead, or, on 256-wide tiles with
// MN-major A scales, staged in shared memory by the producer warp. 256-wide tiles run T_kb one
// 128-column half at a time (consume_halves). One CTA per SM walks the tiles
// statically; no atomics, no split-K. Per K block the warps do as little as they can: stage and
// phase stepped, wgmma descriptors and shared addresses formed once per CTA and offset per stage
// (docs/gpu_gemm.md §2, §7).
#include <cuda_bf16.h>

#include "gpu/device.h"
#include "gpu/grouped_gemm_groups.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/tensor_map.h"
#include "gpu/tma_pipeline_sm90.cuh"

namespace fp8ref::gpu::detail {
namespace {

using namespace sm90;

static_assert(kGemmBlockK == 128, "one 128-byte swizzle row is one K block of FP8 codes");

// The kernel's parameters: the tensor maps of A (M, K) and of B seen as (G·N, K), then the rest.
struct GemmTmaParams {
  CUtensorMap map_a, map_b;
  GemmKernelArgs args;
};

// A stage's scale slot when the scales are staged (256-wide blockwise tiles on MN-major A scales,
// docs/gpu_gemm.md §2): floats 0..127 the A scales of the tile's 128 rows for the stage's K block,
// 128 and 129 the B scales of the two 128-column halves, stored by the producer warp; 160 floats
// keep every slot 128-byte aligned.
constexpr int kSlotFloats = 160, kSlotB = 128;

// Stages of a 128 × 128 A tile and a BN × 128 B tile, as many as fit in shared memory. Unstaged,
// the block scales are loaded by the consumers from global memory two blocks ahead; Staged (256
// only), each stage also holds its K block's scale slot, and the ring drops its alignment slack
// to stay inside the 196 KB carveout (199,232 bytes; the carveout above it costs ~1% even on
// rowwise, docs/gpu_gemm.md §7).
template <int BN, bool Staged = false>
using Ring = StageRing<kGemmBlockM * kGemmBlockK, BN * kGemmBlockK,
                       BN == 128   ? 7
                       : BN == 192 ? 5
                                   : 4,
                       Staged ? kSlotFloats : 0, Staged>;
static_assert(Ring<128>::kBytes <= 227 * 1024 && Ring<192>::kBytes <= 227 * 1024 &&
                  Ring<256>::kBytes <= 227 * 1024,
              "sm_90's opt-in shared memory per block");
static_assert(Ring<256, true>::kBytes + 1024 <= 196 * 1024, "inside the 196 KB carveout");

// The tile: group g, rows [row0, row_end) of A and Y, columns [n0, n0 + BN) (those < N).
struct TileCoord {
  int g, n0;
  std::int32_t row0, row_end;
};
// An entry of the group table: the kernel parameter's as it is, or (DevTable: the table the
// prologue wrote in global memory, constant while the kernel runs) through the read-only cache
// (the producer's binary search; the consumers look a tile up with the whole warp,
// tile_coord_warp).
template <bool DevTable>
__device__ __forceinline__ std::int32_t table_at(const std::int32_t& x) {
  if constexpr (DevTable)
    return __ldg(&x);
  else
    return x;
}
template <bool DevTable>
__device__ __forceinline__ const GemmGroupTable& group_table(const GemmKernelArgs& a) {
  if constexpr (DevTable)
    return *a.device_groups;
  else
    return a.groups;
}
// The device-side table's lookup by the whole warp (every lane calls it): lane l loads entry
// 32r + l of tile_prefix, start and end in round r, all independent, so that a tile pays one
// global-load latency (G <= 32) instead of the binary search's chain of dependent loads, which
// the consumers waited for at the start of every tile (dgrad on device-side groups +2.8%,
// docs/gpu_gemm.md §1; whether the chain's loads missed L1 was not measured);
// the largest g with tile_prefix[g] <= mt is the last lane of the ballot (tile_prefix ascends),
// its entries taken by shuffles. G: the host's group count (the table's is G, or 0 for a bad
// table, whose tile count 0 leaves no tile to look up).
template <int BN>
__device__ __forceinline__ TileCoord tile_coord_warp(const GemmKernelArgs& a, std::int64_t tile,
                                                     int n_tiles) {
  const GemmGroupTable& t = *a.device_groups;
  const int lane = int(threadIdx.x % 32), mt = int(tile / n_tiles), groups = a.groups.count;
  int g = 0;
  std::int32_t prefix = 0, start = 0, end = 0;
  for (int base = 0; base < groups; base += 32) {
    const int j = base + lane;
    const bool in = j < groups;
    const std::int32_t pj = in ? __ldg(&t.tile_prefix[j]) : INT32_MAX;
    const std::int32_t sj = in ? __ldg(&t.start[j]) : 0, ej = in ? __ldg(&t.end[j]) : 0;
    const std::uint32_t le = __ballot_sync(0xffffffffu, pj <= mt);
    if (le == 0) break;  // round r's first group starts past mt: the answer is the last round's
    const int last = 31 - __clz(le);
    g = base + last;
    prefix = __shfl_sync(0xffffffffu, pj, last), start = __shfl_sync(0xffffffffu, sj, last);
    end = __shfl_sync(0xffffffffu, ej, last);
    if (last < 31) break;
  }
  TileCoord c;
  c.g = g, c.n0 = int(tile % n_tiles) * BN;
  c.row0 = start + (mt - prefix) * kGemmBlockM;
  c.row_end = min(c.row0 + kGemmBlockM, end);
  return c;
}

// Warp: every lane of the warp calls it (the consumers; the producer's tiles are looked up by its
// lane 0 alone, ahead of the consumers, so its lookup's latency hides behind the ring).
template <int BN, bool DevTable, bool Warp = false>
__device__ __forceinline__ TileCoord tile_coord(const GemmKernelArgs& a, std::int64_t tile,
                                                int n_tiles) {
  if constexpr (DevTable && Warp) return tile_coord_warp<BN>(a, tile, n_tiles);
  const GemmGroupTable& t = group_table<DevTable>(a);
  const auto at = [](const std::int32_t& x) { return table_at<DevTable>(x); };
  const int mt = int(tile / n_tiles);
  int lo = 0, hi = at(t.count);  // largest g with tile_prefix[g] <= mt: the non-empty group of mt
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (at(t.tile_prefix[mid]) <= mt ? lo : hi) = mid;
  }
  TileCoord c;
  c.g = lo, c.n0 = int(tile % n_tiles) * BN;
  c.row0 = at(t.start[lo]) + (mt - at(t.tile_prefix[lo])) * kGemmBlockM;
  c.row_end = min(c.row0 + kGemmBlockM, at(t.end[lo]));
  return c;
}

// A float into shared memory by its 32-bit address (as ld_shared_f32 below: a 32-bit address,
// and the store stays in order with the barrier asm around it).
__device__ __forceinline__ void st_shared_f32(std::uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}

// The producer warp: for each tile of this CTA and each K block, wait until the consumers freed
// the stage, then lane 0 issues the TMA copies of the A tile (rows row0.. : rows past the group's
// end are other rows of A, never stored, or zeros past M) and the B tile (rows g·N + n0.. of B
// seen as (G·N, K)).
// Staged (docs/gpu_gemm.md §2): the whole warp also fills the stage's scale slot. Each lane loads
// 4 of the 128 A-row scales of the block from the MN-major copy (rows row0 + lane + 32j:
// contiguous, so the warp's loads are four 128-byte lines; rows past the group's end are other
// rows' scales or the layout's padding, zeros past it: they reach only rows never stored) and
// lane 0 the two halves' B scales (half 1 past N takes half 0's: its columns are never stored),
// all before the wait for the stage, so that their latency hides behind it; after the wait each
// lane stores its values and arrives on `full` (32 arrivals, lane 0's with the TMA bytes), which
// releases them to the consumers.
// Per block as little as possible (docs/gpu_gemm.md §7): the stage and phase are stepped, the
// scale pointers advance by one K block, and the barrier, tile and slot addresses of stage 0 are
// held in registers (an opaque move keeps the compiler from recomputing them every block) and
// offset per stage. produce_blocks: its loop over the CTA's tiles and their K blocks.
template <int BN, bool Staged, bool DevTable>
__device__ __forceinline__ void produce_blocks(const GemmTmaParams& p, const Ring<BN, Staged>& s,
                                               std::int64_t total, int n_tiles, int lane, int nkb) {
  using R = Ring<BN, Staged>;
  const GemmKernelArgs& a = p.args;
  std::uint32_t full0 = s.full(0), tile0 = s.a_tile(0), slot0 = smem_u32(s.scales(0)) + 4 * lane;
  asm volatile("mov.b32 %0, %0;" : "+r"(full0));
  asm volatile("mov.b32 %0, %0;" : "+r"(tile0));
  asm volatile("mov.b32 %0, %0;" : "+r"(slot0));
  int st = 0;
  std::uint32_t phase = 0;
  for (std::int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const TileCoord c = tile_coord<BN, DevTable>(a, tile, n_tiles);
    const std::int32_t b_row = c.g * std::int32_t(a.N) + c.n0;
    const float* sb = a.scale_b + c.g * a.sb_group + (c.n0 / 128) * a.sb_ntile;
    const std::int64_t sb_hi = c.n0 + 128 < a.N ? a.sb_ntile : 0;
    const std::int64_t r_lane = c.row0 + lane;
    const float* sa = a.scale_a + r_lane;  // this lane's row of K block kb, stepped
    bool in[4];                            // rows inside the MN-major copy
#pragma unroll
    for (int j = 0; j < 4; ++j) in[j] = r_lane + 32 * j < a.sa_mn_ld;
    for (int kb = 0; kb < nkb; ++kb) {
      float av[4] = {0.0f, 0.0f, 0.0f, 0.0f}, b0 = 0.0f, b1 = 0.0f;
      if constexpr (Staged) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (in[j]) av[j] = sa[32 * j];
        if (lane == 0) b0 = sb[0], b1 = sb[sb_hi];
        sa += a.sa_kb, sb += a.sb_kblock;
      }
      const std::uint32_t full = full0 + 8 * st;
      mbar_wait(full + 8 * R::kStages, phase ^ 1);  // s.wait_empty(it)
      if constexpr (Staged) {
        const std::uint32_t slot = slot0 + st * (kSlotFloats * 4);
#pragma unroll
        for (int j = 0; j < 4; ++j) st_shared_f32(slot + 128 * j, av[j]);
        if (lane == 0)
          st_shared_f32(slot + 4 * kSlotB, b0), st_shared_f32(slot + 4 * kSlotB + 4, b1);
        else
          mbar_arrive(full);
      }
      if (!Staged || lane == 0) {
        const std::uint32_t at = tile0 + st * R::kStageBytes;
        mbar_arrive_expect_tx(full, R::kStageBytes);
        tma_load_2d(at, &p.map_a, kb * kGemmBlockK, c.row0, full);
        tma_load_2d(at + kGemmBlockM * kGemmBlockK, &p.map_b, kb * kGemmBlockK, b_row, full);
      }
      if (++st == R::kStages) st = 0, phase ^= 1;
    }
  }
}
template <int BN, bool Staged, bool DevTable>
__device__ void produce(const GemmTmaParams& p, const Ring<BN, Staged>& s, std::int64_t total,
                        int n_tiles) {
  const int lane = int(threadIdx.x % 32), nkb = int(p.args.K / kGemmBlockK);
  if (!Staged && lane != 0) return;
  if (lane == 0) tma_prefetch_map(&p.map_a), tma_prefetch_map(&p.map_b);
  produce_blocks<BN, Staged, DevTable>(p, s, total, n_tiles, lane, nkb);
}

// One of four values by a lane-dependent index, with selects (a dynamic index into a register
// array would go through local memory).
__device__ __forceinline__ std::uint32_t pick4(const std::uint32_t (&v)[4], int i) {
  return i == 0 ? v[0] : i == 1 ? v[1] : i == 2 ? v[2] : v[3];
}
// Lane q of a quad (q = lane % 4) holds u[m] = the bf16 pair of columns 8m + 2q, 8m + 2q + 1 of
// four 8-column groups (the wgmma D layout); afterwards it holds group q's 8 columns in order, so
// that one 16-byte store writes them.
__device__ __forceinline__ uint4 quad_transpose(const std::uint32_t (&u)[4]) {
  const int lane = int(threadIdx.x % 32), q = lane % 4;
  std::uint32_t got[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)  // lane s sends u[(s - k) & 3]: lane q gets u[q] of lane (q + k) & 3
    got[k] = __shfl_sync(0xffffffffu, pick4(u, (q - k) & 3), (lane & ~3) | ((q + k) & 3));
  return make_uint4(pick4(got, (0 - q) & 3), pick4(got, (1 - q) & 3), pick4(got, (2 - q) & 3),
                    pick4(got, (3 - q) & 3));  // pair i came from lane i, in round (i - q) & 3
}

// The stores of store_tile: value(j, half) = the thread's scaled columns 8j + 2q, 8j + 2q + 1
// (q = lane % 4) of row row0 + 8 * half, stored where store[half]. N % 128 == 0 and n0 % 64 == 0:
// the 32 columns of four groups j0 .. j0 + 3 are all < N or all past it, the same for the warp.
template <int BN, class Value>
__device__ __forceinline__ void store_rows_bf16(const GemmKernelArgs& p, const TileCoord& c,
                                                std::int64_t row0, const bool (&store)[2],
                                                const Value& value) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j0 = 0; j0 < BN / 8; j0 += 4) {
    if (BN > 128 && c.n0 + j0 * 8 >= p.N) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      std::uint32_t u[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const float2 v = value(j0 + m, half);
        const __nv_bfloat162 b = __floats2bfloat162_rn(v.x, v.y);
        u[m] = *reinterpret_cast<const std::uint32_t*>(&b);
      }
      const uint4 w = quad_transpose(u);
      const std::int64_t at = (row0 + 8 * half) * p.N + c.n0 + (j0 + lane % 4) * 8;
      if (store[half]) reinterpret_cast<uint4*>(p.y)[at / 8] = w;
    }
  }
}
// Y = the promoted f32 accumulator after the epilogue scales, rounded to bf16 or stored as f32;
// rows past the group end and columns past N are not written. f32 goes out in 8-byte column
// pairs. bf16: the halves of 256-wide tiles (Wide16) in 16-byte stores of 8 columns
// (store_rows_bf16), the 128- and 192-wide tiles in 4-byte column pairs: each measured the faster
// there (blockwise forward and dgrad, rowwise 256-wide; docs/gpu_gemm.md §7, docs/benchmarks.md).
template <int BN, bool Wide16 = false>
__device__ __forceinline__ void store_cols(const GemmKernelArgs& p, const TileCoord& c,
                                           const float (&acc)[BN / 2], int local_row) {
  const int lane = threadIdx.x % 32;
  const std::int64_t col0 = c.n0 + (lane % 4) * 2, row0 = c.row0 + local_row;
  const bool rowwise = p.mode == GemmScaleMode::rowwise;
  const bool store[2] = {row0 < c.row_end, row0 + 8 < c.row_end};
  float ts = 0.0f, sa[2] = {0.0f, 0.0f};
  if (p.mode == GemmScaleMode::tensorwise) ts = __fmul_rn(p.scale_a[0], p.scale_b[c.g]);
  if (rowwise)
    sa[0] = store[0] ? p.scale_a[row0] : 0.0f, sa[1] = store[1] ? p.scale_a[row0 + 8] : 0.0f;
  // Rowwise: every column scale of the thread is loaded before the first store, so that the
  // loads are in flight together (a load after a store to Y, which might alias, waits for it:
  // one L2 round trip per 8 columns, docs/benchmarks.md).
  float2 sb[BN / 8];  // scalar loads: scale_b need only be 4-byte aligned
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const std::int64_t col = col0 + j * 8;
    sb[j] = make_float2(0.0f, 0.0f);
    if (rowwise && (BN == 128 || col < p.N))
      sb[j] = make_float2(p.scale_b[c.g * p.N + col], p.scale_b[c.g * p.N + col + 1]);
  }
  if constexpr (Wide16) {
    if (p.out_bf16) {
      store_rows_bf16<BN>(p, c, row0, store, [&](int j, int half) {
        float2 v = make_float2(acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1]);
        if (p.mode == GemmScaleMode::tensorwise) v.x = __fmul_rn(v.x, ts), v.y = __fmul_rn(v.y, ts);
        if (rowwise)  // a_then_b: RN(RN(acc·sa)·sb)
          v.x = __fmul_rn(__fmul_rn(v.x, sa[half]), sb[j].x),
          v.y = __fmul_rn(__fmul_rn(v.y, sa[half]), sb[j].y);
        return v;
      });
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const std::int64_t col = col0 + j * 8;
    if (BN > 128 && col >= p.N) continue;  // N % 128 == 0: col + 1 < N too
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if (!store[half]) continue;
      float v[2] = {acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1]};
      if (p.mode == GemmScaleMode::tensorwise)
        v[0] = __fmul_rn(v[0], ts), v[1] = __fmul_rn(v[1], ts);
      if (rowwise)  // a_then_b: RN(RN(acc·sa)·sb)
        v[0] = __fmul_rn(__fmul_rn(v[0], sa[half]), sb[j].x),
        v[1] = __fmul_rn(__fmul_rn(v[1], sa[half]), sb[j].y);
      const std::int64_t at = ((row0 + 8 * half) * p.N + col) / 2;
      if (p.out_bf16)
        static_cast<__nv_bfloat162*>(p.y)[at] = __floats2bfloat162_rn(v[0], v[1]);
      else
        reinterpret_cast<float2*>(p.y)[at] = make_float2(v[0], v[1]);
    }
  }
}

// The epilogue of a tile. A 256-wide tile is stored as two 128-column halves, each with its own
// rowwise column scales (64 registers of scales for the whole tile beside the 128 of the
// accumulator would spill); N % 128 == 0, so the second half is all < N or all past it.
template <int BN>
__device__ __forceinline__ void store_tile(const GemmKernelArgs& p, const TileCoord& c,
                                           const float (&acc)[BN / 2], int local_row) {
  if constexpr (BN == 256) {
    store_cols<128, true>(p, c, *reinterpret_cast<const float(*)[64]>(&acc[0]), local_row);
    TileCoord hi = c;
    hi.n0 += 128;
    if (hi.n0 < p.N)
      store_cols<128, true>(p, hi, *reinterpret_cast<const float(*)[64]>(&acc[64]), local_row);
  } else {
    store_cols<BN>(p, c, acc, local_row);
  }
}

// The block scales of K block kb a thread promotes with: a0, a1 of its rows local_row and
// local_row + 8 (0 past the group's end: those rows are not stored, their scales not read); of
// B, `lo` for the 128-column block holding n0, `hi` for the next one (BN = 192 tiles straddle
// two; 0 past N, whose columns are not stored); columns n0 + 8j with j >= split use `hi`.
struct BlockScalesB {
  float a0, a1, lo, hi;
  int split;
};
// The thread's two rows of A scales, rows local_row and local_row + 8 of the tile (nullptr past
// the group's end).
struct ScaleRowsA {
  const float* r0;
  const float* r1;
};
__device__ __forceinline__ ScaleRowsA scale_rows_a(const GemmKernelArgs& a, const TileCoord& c,
                                                   int local_row) {
  const std::int64_t row = c.row0 + local_row;
  const float* r0 = a.scale_a + row * a.sa_row;
  return {row < c.row_end ? r0 : nullptr, row + 8 < c.row_end ? r0 + 8 * a.sa_row : nullptr};
}
// MnA: A's scales MN-major (sa_row = 1, block kb at kb·sa_kb), the index computed only then.
template <int BN, bool MnA>
__device__ __forceinline__ BlockScalesB block_scales(const GemmKernelArgs& a, const TileCoord& c,
                                                     const ScaleRowsA& ra, int kb) {
  const int nb = c.n0 / 128;
  const float* sb = a.scale_b + c.g * a.sb_group + nb * a.sb_ntile + kb * a.sb_kblock;
  const std::int64_t ka = MnA ? kb * a.sa_kb : kb;
  BlockScalesB r{ra.r0 ? ra.r0[ka] : 0.0f, ra.r1 ? ra.r1[ka] : 0.0f, sb[0], 0.0f, BN / 8};
  if (BN > 128) {
    r.split = (128 - c.n0 % 128) / 8;
    if ((nb + 1) * 128 < a.N) r.hi = sb[a.sb_ntile];
  }
  return r;
}

// acc = fmaf(RN(sa·sb), T, acc) elementwise (rows local_row, local_row + 8: D layout of wgmma).
template <int BN>
__device__ __forceinline__ void promote_blockwise(const BlockScalesB& b, const float (&t)[BN / 2],
                                                  float (&acc)[BN / 2]) {
  const float s0 = __fmul_rn(b.a0, b.lo), s1 = __fmul_rn(b.a1, b.lo);
  const float h0 = BN > 128 ? __fmul_rn(b.a0, b.hi) : s0;
  const float h1 = BN > 128 ? __fmul_rn(b.a1, b.hi) : s1;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) {
    const bool hi = BN > 128 && i / 4 >= b.split;
    acc[i] = __fmaf_rn((i & 2) ? (hi ? h1 : s1) : (hi ? h0 : s0), t[i], acc[i]);
  }
}

// The block scales of a 256-wide tile's halves, addressed once per tile (docs/gpu_gemm.md §2):
// the thread's A scale rows local_row and local_row + 8, and one B scale column per lane, even
// lanes that of half 0's 128-column block, odd lanes that of half 1's. A row past the group's
// end reads the scale of the group's last row instead, and a half past N the B scale of half 0:
// those rows and columns are never stored, so the loads need no predicate and stay inside the
// group's scales. Per K block each load is then one index. Why (Nsight Compute profile and
// A/B, docs/gpu_gemm.md §7, docs/benchmarks.md): the per-block address arithmetic sat between
// the last promotion of a block and the next block's wgmma, and ptxas moved a warp-uniform
// B-scale load into a uniform register right where it was issued, waiting there for the load;
// addressed per tile, the blockwise forward ran 6% faster.
struct HalfScales {
  const float* a;  // row min(local_row, last) of A's scales
  const float* b;  // this lane's column of B's scales
  int a8;          // elements from that row to row min(local_row + 8, last): <= K / 16, an int
                   // for every K that the kernel's 32-bit TMA coordinates reach
};
__device__ __forceinline__ HalfScales half_scales(const GemmKernelArgs& a, const TileCoord& c,
                                                  int local_row) {
  const std::int32_t last = c.row_end - 1;
  const std::int64_t r0 = min(c.row0 + local_row, last), r1 = min(c.row0 + local_row + 8, last);
  const int nb = c.n0 / 128 + ((threadIdx.x % 2) != 0 && c.n0 + 128 < a.N ? 1 : 0);
  return {a.scale_a + r0 * a.sa_row, a.scale_b + c.g * a.sb_group + nb * a.sb_ntile,
          int((r1 - r0) * a.sa_row)};
}
// K block kb's scales as loaded: a0, a1 of A; `b`, this lane's B scale (see HalfScales).
struct HalfScalesLoaded {
  float a0, a1, b;
};
__device__ __forceinline__ HalfScalesLoaded load_half_scales(const GemmKernelArgs& a,
                                                             const HalfScales& h, int kb) {
  return {h.a[kb], h.a[h.a8 + kb], h.b[kb * a.sb_kblock]};
}

// A consumer thread's warpgroup (its 64 rows of the tile's A) and its first row of the wgmma D
// layout in the 128-row tile (the other is local_row + 8).
struct ConsumerThread {
  int wg, local_row;
};
__device__ __forceinline__ ConsumerThread consumer_thread() {
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  return {wg, wg * 64 + warp * 16 + lane / 4};
}

// A float of the stage's scale slot by its shared-memory address (32-bit: a generic pointer made
// ptxas emit generic loads with 64-bit address arithmetic, docs/gpu_gemm.md §7). Volatile with a
// memory clobber, it stays where it is written relative to the wgmma and barrier asm around it.
__device__ __forceinline__ float ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// Consumers of 256-wide tiles: the 64 × 256 f32 accumulator is 128 registers, so T_kb is
// computed one 128-column half at a time into a 64-register t (a 64 × 256 t beside the
// accumulator would not fit the 232 registers): per K block, half 0's four k32 steps, wait, then
// its promotion on columns 0..127, then half 1 on columns 128..255 (B rows 128.. of the stage).
// Rowwise / tensorwise promote acc += t; blockwise acc = fmaf(RN(sa·sb), t, acc) with the B scale
// of the half's own 128-column block. Unstaged, the scales are loaded two blocks ahead as in
// consume (B from lane 0 for half 0, lane 1 for half 1: HalfScales); Staged, they are read from
// the stage's slot (A rows local_row and local_row + 8, the halves' B scales) once `full` has
// completed. The same operations on every element in the same order as the 128-wide tiles
// (docs/gpu_gemm.md §2, §3).
template <bool AE5, bool BE5, bool Staged, bool DevTable>
__device__ void consume_halves(const GemmTmaParams& p, const Ring<256, Staged>& s,
                               std::int64_t total, int n_tiles) {
  const GemmKernelArgs& a = p.args;
  const auto [wg, local_row] = consumer_thread();
  const int nkb = int(a.K / kGemmBlockK);
  const bool blockwise = Staged || a.mode == GemmScaleMode::blockwise;
  using R = Ring<256, Staged>;
  // Stage 0's descriptors (low halves, smem_desc_lo: linear, offset per stage and k step), the
  // warpgroup broadcast from lane 0 so that the compiler sees it warp-uniform and keeps the A
  // descriptor in uniform registers; the thread's A-scale address in stage 0's slot and its
  // warp's release flag, held through an opaque move so that they are not recomputed from the
  // thread index in every block; the stage and phase of s.stage(it), s.parity(it), stepped.
  const int wg_u = __shfl_sync(0xffffffffu, wg, 0);
  const std::uint32_t desc_a0 = smem_desc_lo(s.a_tile(0) + wg_u * 64 * 128);
  std::uint32_t desc_b0 = smem_desc_lo(s.b_tile(0)), full0 = s.full(0),
                slot_b0 = smem_u32(s.scales(0)) + 4 * kSlotB,
                slot_a0 = smem_u32(s.scales(0)) + 4 * local_row, leader = threadIdx.x % 32 == 0;
  asm volatile("mov.b32 %0, %0;" : "+r"(desc_b0));
  asm volatile("mov.b32 %0, %0;" : "+r"(full0));
  asm volatile("mov.b32 %0, %0;" : "+r"(slot_b0));
  asm volatile("mov.b32 %0, %0;" : "+r"(slot_a0));
  asm volatile("mov.b32 %0, %0;" : "+r"(leader));
  int st = 0;
  std::uint32_t phase = 0;
  for (std::int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const TileCoord c = tile_coord<256, DevTable, true>(a, tile, n_tiles);
    float acc[128], t[64];  // acc: columns 8j.. at acc[4j..]; t: one half, from +0 per block
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    HalfScales hs{};
    HalfScalesLoaded sb_next{}, sb_next2{};
    if constexpr (!Staged) {
      hs = half_scales(a, c, local_row);
      if (blockwise) sb_next = load_half_scales(a, hs, 0);
      if (blockwise && nkb > 1) sb_next2 = load_half_scales(a, hs, 1);
    }
    for (int kb = 0; kb < nkb; ++kb) {
      HalfScalesLoaded sb{};
      if constexpr (!Staged) {
        sb = sb_next;
        sb_next = sb_next2;
        if (blockwise && kb + 2 < nkb) sb_next2 = load_half_scales(a, hs, kb + 2);
      }
      mbar_wait(full0 + 8 * st, phase);
      const std::uint32_t step = std::uint32_t(st) * (R::kStageBytes >> 4);
      const std::uint32_t slot_a = slot_a0 + st * (kSlotFloats * 4),
                          slot_b = slot_b0 + st * (kSlotFloats * 4);
      float b_half[2] = {0.0f, 0.0f};  // the B scales of the halves
      if constexpr (Staged) {  // right after the wait (after half 0's wgmma: 0.0-0.6% slower, §7)
        sb.a0 = ld_shared_f32(slot_a), sb.a1 = ld_shared_f32(slot_a + 32);
        b_half[0] = ld_shared_f32(slot_b), b_half[1] = ld_shared_f32(slot_b + 4);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        fence_regs(t);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < kGemmBlockK / 32; ++j)  // T_kb of the half: four k32 steps from +0
          wgmma_k32<128, AE5, BE5>(t, smem_desc_of(desc_a0 + step + j * 2),
                                   smem_desc_of(desc_b0 + step + h * (128 * 128 >> 4) + j * 2),
                                   j);  // + 32 bytes a k step, 16 KiB a half
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if (!Staged && blockwise && h == 0)  // while half 0's wgmma runs; every lane takes part
          b_half[0] = __shfl_sync(0xffffffffu, sb.b, 0),
          b_half[1] = __shfl_sync(0xffffffffu, sb.b, 1);
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs(t);
        if (h == 1) {  // s.release(it)
          __syncwarp();
          if (leader) mbar_arrive(full0 + 8 * (R::kStages + st));
        }
        float(&acc_h)[64] = *reinterpret_cast<float(*)[64]>(&acc[h * 64]);
        if (blockwise) {  // one 128-column block of B scales per half: no split
          promote_blockwise<128>({sb.a0, sb.a1, b_half[h], 0.0f, 16}, t, acc_h);
        } else {
#pragma unroll
          for (int i = 0; i < 64; ++i) acc_h[i] = __fadd_rn(acc_h[i], t[i]);
        }
      }
      if (++st == R::kStages) st = 0, phase ^= 1;
    }
    store_tile<256>(a, c, acc, local_row);
  }
}

// The consumer warpgroups: per K block, wait for the stage, run T_kb on it, free it and promote;
// after the last block, the epilogue stores the tile while the producer already loads the next.
template <int BN, bool AE5, bool BE5, bool MnA, bool DevTable>
__device__ void consume(const GemmTmaParams& p, const Ring<BN>& s, std::int64_t total,
                        int n_tiles) {
  const GemmKernelArgs& a = p.args;
  const auto [wg, local_row] = consumer_thread();
  const int nkb = int(a.K / kGemmBlockK);
  const bool blockwise = a.mode == GemmScaleMode::blockwise;
  // Per CTA, as in consume_halves: the descriptors of stage 0, the barrier address, the release
  // flag; the stage and phase stepped per block.
  using R = Ring<BN>;
  const int wg_u = __shfl_sync(0xffffffffu, wg, 0);
  const std::uint32_t desc_a0 = smem_desc_lo(s.a_tile(0) + wg_u * 64 * 128);
  std::uint32_t desc_b0 = smem_desc_lo(s.b_tile(0)), full0 = s.full(0),
                leader = threadIdx.x % 32 == 0;
  asm volatile("mov.b32 %0, %0;" : "+r"(desc_b0));
  asm volatile("mov.b32 %0, %0;" : "+r"(full0));
  asm volatile("mov.b32 %0, %0;" : "+r"(leader));
  int st = 0;
  std::uint32_t phase = 0;
  for (std::int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const TileCoord c = tile_coord<BN, DevTable, true>(a, tile, n_tiles);
    float acc[BN / 2], t[BN / 2];  // t: written by the first k32 step of each block (scale-d 0)
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
    // The scales of block kb + 2 are loaded while block kb runs: their latency hides behind two
    // blocks (a load of block kb's own scales would stall its promotion).
    const ScaleRowsA ra = scale_rows_a(a, c, local_row);
    BlockScalesB sb_next = blockwise ? block_scales<BN, MnA>(a, c, ra, 0) : BlockScalesB{};
    BlockScalesB sb_next2 =
        blockwise && nkb > 1 ? block_scales<BN, MnA>(a, c, ra, 1) : BlockScalesB{};
    for (int kb = 0; kb < nkb; ++kb) {
      const BlockScalesB sb = sb_next;
      sb_next = sb_next2;
      if (blockwise && kb + 2 < nkb) sb_next2 = block_scales<BN, MnA>(a, c, ra, kb + 2);
      mbar_wait(full0 + 8 * st, phase);
      const std::uint32_t step = std::uint32_t(st) * (R::kStageBytes >> 4);
      fence_regs(t);
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int j = 0; j < kGemmBlockK / 32; ++j)  // T_kb: four k32 steps chained from +0
        wgmma_k32<BN, AE5, BE5>(t, smem_desc_of(desc_a0 + step + j * 2),
                                smem_desc_of(desc_b0 + step + j * 2), j);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      fence_regs(t);
      __syncwarp();  // s.release(it)
      if (leader) mbar_arrive(full0 + 8 * (R::kStages + st));
      if (blockwise) {
        promote_blockwise<BN>(sb, t, acc);
      } else {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = __fadd_rn(acc[i], t[i]);
      }
      if (++st == R::kStages) st = 0, phase ^= 1;
    }
    store_tile<BN>(a, c, acc, local_row);
  }
}

// MnA: A's block scales are MN-major (GemmKernelArgs::sa_mn_ld); 256-wide tiles then stage the
// scales (Staged), 128-wide ones index them by K block. DevTable: the group table is the one in
// global memory (GemmKernelArgs::device_groups), its tile count read by every CTA.
template <int BN, bool AE5, bool BE5, bool MnA, bool DevTable>
__device__ __forceinline__ void grouped_gemm_body(const GemmTmaParams& p) {
  constexpr bool Staged = MnA && BN == 256;
  extern __shared__ __align__(1024) std::uint8_t smem_raw[];
  const Ring<BN, Staged> s = Ring<BN, Staged>::at(smem_raw);
  const int n_tiles = int((p.args.N + BN - 1) / BN);
  const GemmGroupTable& t = group_table<DevTable>(p.args);
  const std::int64_t total =
      std::int64_t(table_at<DevTable>(t.tile_prefix[table_at<DevTable>(t.count)])) * n_tiles;
  if (threadIdx.x == 0) Staged ? s.init_full(32) : s.init(false);
  __syncthreads();
  if (threadIdx.x >= kConsumerThreads) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x < kConsumerThreads + 32) produce<BN, Staged, DevTable>(p, s, total, n_tiles);
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    if constexpr (BN == 256)
      consume_halves<AE5, BE5, Staged, DevTable>(p, s, total, n_tiles);
    else
      consume<BN, AE5, BE5, MnA, DevTable>(p, s, total, n_tiles);
  }
}
// The kernel on the host-built table in its parameters, and on the device-side groups' table
// (two names, so that the first keeps its symbol and SASS, docs/gpu_gemm.md §7).
template <int BN, bool AE5, bool BE5, bool MnA>
__global__ void __launch_bounds__(kPipelineThreads, 1)
    grouped_gemm_kernel(const __grid_constant__ GemmTmaParams p) {
  grouped_gemm_body<BN, AE5, BE5, MnA, false>(p);
}
template <int BN, bool AE5, bool BE5, bool MnA>
__global__ void __launch_bounds__(kPipelineThreads, 1)
    grouped_gemm_kernel_device_groups(const __grid_constant__ GemmTmaParams p) {
  grouped_gemm_body<BN, AE5, BE5, MnA, true>(p);
}

template <int BN, bool AE5, bool BE5, bool MnA>
void launch_typed(const GemmKernelArgs& args, cudaStream_t stream) {
  constexpr bool Staged = MnA && BN == 256;
  constexpr int kBytes = Ring<BN, Staged>::kBytes;
  // Device-side groups: the tiles are not known here, only bounded (the CTAs past the table's
  // tiles exit at once).
  const bool dev = args.device_groups != nullptr;
  const std::int64_t row_tiles =
      dev ? args.row_tiles_bound : args.groups.tile_prefix[args.groups.count];
  const std::int64_t tiles = row_tiles * ((args.N + BN - 1) / BN);
  if (tiles == 0) return;
  GemmTmaParams p{};
  p.args = args;
  p.map_a = fp8_tile_map(args.a, args.K, args.M, kGemmBlockM);
  p.map_b = fp8_tile_map(args.b, args.K, std::int64_t(args.groups.count) * args.N, BN);
  const auto kernel = dev ? grouped_gemm_kernel_device_groups<BN, AE5, BE5, MnA>
                          : grouped_gemm_kernel<BN, AE5, BE5, MnA>;
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
  const unsigned grid = unsigned(std::min<std::int64_t>(tiles, current_device_sm_count()));
  kernel<<<grid, kPipelineThreads, kBytes, stream>>>(p);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

// MnA (GemmKernelArgs::sa_mn_ld > 0, blockwise forward only) on 128- and 256-wide tiles.
template <int BN, bool MnA = false>
void launch_tile(const GemmKernelArgs& args, cudaStream_t stream) {
  if constexpr (BN != 192 && !MnA) {
    if (args.sa_mn_ld > 0) return launch_tile<BN, true>(args, stream);
  }
  if (!args.a_e5m2 && !args.b_e5m2) return launch_typed<BN, false, false, MnA>(args, stream);
  if (!args.a_e5m2 && args.b_e5m2) return launch_typed<BN, false, true, MnA>(args, stream);
  if (args.a_e5m2 && !args.b_e5m2) return launch_typed<BN, true, false, MnA>(args, stream);
  launch_typed<BN, true, true, MnA>(args, stream);
}

// out[kb·ld + r] = in[r·nkb + kb] for r < M, 0 for M <= r < ld: one 32 × 32 tile of (row, K
// block) a CTA of 32 × 8 threads, through shared memory so that both sides are coalesced.
__global__ void scales_mn_major_kernel(const float* in, float* out, std::int64_t M, int nkb,
                                       std::int64_t ld) {
  __shared__ float tile[32][33];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * 32;
  const int k0 = int(blockIdx.y) * 32, x = int(threadIdx.x);
  for (int i = int(threadIdx.y); i < 32; i += 8) {
    const std::int64_t r = r0 + i;
    tile[i][x] = r < M && k0 + x < nkb ? in[r * nkb + k0 + x] : 0.0f;
  }
  __syncthreads();
  for (int i = int(threadIdx.y); i < 32; i += 8)
    if (k0 + i < nkb && r0 + x < ld) out[std::int64_t(k0 + i) * ld + r0 + x] = tile[x][i];
}

// The device-side groups' prologue (launch_group_table): one block stages the G entries in shared
// memory (coalesced), thread 0 builds the table there (build_group_table, serial in g: at most 256
// steps on shared memory), then the block writes it out and thread 0 the status. The table is
// zeroed first, so that the bytes past G are those of the host launcher's zero-initialised one.
__global__ void __launch_bounds__(256)
    group_table_kernel(const std::int32_t* desc, int G, bool masked, std::int64_t limit,
                       GemmGroupTable* table, std::int32_t* status) {
  __shared__ std::int32_t entries[kGemmMaxGroups];
  __shared__ GemmGroupTable t;
  constexpr int kWords = int(sizeof(GemmGroupTable) / 4);
  auto* words = reinterpret_cast<std::int32_t*>(&t);
  for (int i = int(threadIdx.x); i < kWords; i += int(blockDim.x)) words[i] = 0;
  for (int i = int(threadIdx.x); i < G; i += int(blockDim.x)) entries[i] = desc[i];
  __syncthreads();
  if (threadIdx.x == 0) *status = build_group_table(t, entries, G, masked, limit);
  __syncthreads();
  auto* out = reinterpret_cast<std::int32_t*>(table);
  for (int i = int(threadIdx.x); i < kWords; i += int(blockDim.x)) out[i] = words[i];
}
static_assert(sizeof(GemmGroupTable) % 4 == 0, "the table copies out in 32-bit words");

}  // namespace

void launch_group_table(const std::int32_t* desc, int G, bool masked, std::int64_t limit,
                        GemmGroupTable* table, std::int32_t* status, cudaStream_t stream) {
  group_table_kernel<<<1, 256, 0, stream>>>(desc, G, masked, limit, table, status);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_scales_mn_major(const float* in, float* out, std::int64_t M, int nkb, std::int64_t ld,
                            cudaStream_t stream) {
  if (ld == 0 || nkb == 0) return;
  const dim3 grid(unsigned((ld + 31) / 32), unsigned((nkb + 31) / 32)), block(32, 8);
  scales_mn_major_kernel<<<grid, block, 0, stream>>>(in, out, M, nkb, ld);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_grouped_gemm(const GemmKernelArgs& args, int block_n, cudaStream_t stream) {
  if (block_n == 256) return launch_tile<256>(args, stream);
  if (block_n == 192) return launch_tile<192>(args, stream);
  launch_tile<128>(args, stream);
}

}  // namespace fp8ref::gpu::detail
