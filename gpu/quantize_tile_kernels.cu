// Single-pass quantize kernels for bf16 sources with 16-byte access (device code; the launcher
// gpu/quantize.cpp checks the arguments): every block is read once into registers (16-byte loads,
// several in flight a lane), its amax reduced as packed 16-bit |bf16| patterns (max.u16x2), then
// across lanes by shuffles and, for blocks wider than a warp holds, across warps through shared
// memory (an integer max, so the order never matters), the scale derived as
// gpu/quantize_device.cuh defines it per recipe kind (a template parameter, no switch per block)
// and the codes cast from the same registers. docs/recipes.md "GPU kernels" lists which calls
// take these kernels.
#include <cstdint>
#include <type_traits>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kTileChunks = 8;  // the largest register-held block: kThreads * kTileChunks chunks

__device__ __forceinline__ void store_codes(std::uint8_t* codes, std::int64_t i, const uint4& u,
                                            const RecipeParams& p, const DevScale& d) {
  std::uint32_t f[8];
  unpack_bf16(u, f);
  *reinterpret_cast<uint2*>(codes + i) = cast8(p, d, f);
}

// 1xW blocks with cols % W == 0, so block b is the flat elements [b * W, b * W + W). A lane holds
// one 16-byte chunk a round and G = W / 8 consecutive lanes share a block, so a warp load reads
// 512 contiguous bytes (BPR = 32 / G blocks) and a warp store writes 256; round rd of warp w of
// the CTA covers elements base + (rd * kWarps + w) * 256 (the CTA's warps interleaved). A lane
// issues its R loads before it reduces any. The NB = R * BPR blocks of a warp's batch get their
// scales one a lane (S a lane when NB > 32): the block maxima move to the lane that derives the
// scale by shuffles, the scale stores of a warp are consecutive, and the factors come back by
// shuffles. docs/benchmarks.md "GPU data path" has the variants measured for this layout.
constexpr int kRowThreads = 64;

template <int W, ScaleKind K, int R>
__global__ void __launch_bounds__(kRowThreads) row_blocks_bf16_kernel(QuantizeLaunch q) {
  static_assert(W == 32 || W == 128, "1x32 or 1x128 blocks");
  constexpr int G = W / 8, BPR = 32 / G, NB = R * BPR, S = NB > 32 ? NB / 32 : 1;
  constexpr int kWarps = kRowThreads / 32;
  static_assert(R % 2 == 0 && NB % 32 % BPR == 0, "rounds in pairs, whole rounds a lane slot");
  constexpr std::int64_t kCta = std::int64_t(kRowThreads) * 8 * R;
  const std::int64_t n = q.rows * q.cols;
  const int lane = int(threadIdx.x & 31), wi = int(threadIdx.x >> 5);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  for (std::int64_t base = blockIdx.x * kCta; base < n; base += gridDim.x * kCta) {
    // first element of round rd of this warp
    const auto round0 = [&](int rd) { return base + (std::int64_t(rd) * kWarps + wi) * 256; };
    uint4 v[R];
#pragma unroll
    for (int rd = 0; rd < R; ++rd) {
      const std::int64_t e = round0(rd) + lane * 8;
      v[rd] = e < n ? load16(x + e) : make_uint4(0, 0, 0, 0);
    }
    std::uint32_t m[R];
#pragma unroll
    for (int rd = 0; rd < R; ++rd) {
      const uint4 one[1] = {v[rd]};
      m[rd] = chunks_max16(one, q.recipe.ignore_nan);
    }
#pragma unroll
    for (int rd = 0; rd < R; rd += 2) {  // two rounds a shuffle: 16-bit maxima, packed
      std::uint32_t p = m[rd] | (m[rd + 1] << 16);
#pragma unroll
      for (int off = G / 2; off > 0; off >>= 1)
        p = max_u16x2(p, __shfl_xor_sync(0xFFFFFFFFu, p, off));
      m[rd] = p & 0xFFFFu, m[rd + 1] = p >> 16;
    }
    // Block b = s * 32 + lane of the batch: round b / BPR, group b % BPR of that round.
    std::uint32_t mine[S] = {};
#pragma unroll
    for (int rd = 0; rd < R; ++rd) {
      const std::uint32_t t = __shfl_sync(0xFFFFFFFFu, m[rd], (lane % BPR) * G);
      if (lane / BPR == rd % (32 / BPR)) mine[rd * BPR / 32] = t;
    }
    float fac[S];
    int ovf = 0;  // bit s: block s * 32 + lane may pass 464 (deepgemm's non-saturating cast)
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int b = s * 32 + lane;
      const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(mine[s] << 16));
      fac[s] = d.factor;
      ovf |= int(d.may_overflow) << s;
      const std::int64_t b0 = round0(b / BPR) + (b % BPR) * W;
      if (b < NB && b0 < n) store_flat_scale(q.scales, b0 / W, d);
    }
    // The casts, with the non-saturating fix compiled in only on the path where some block of
    // the batch may need it (deepgemm, warp-uniform): the common path is the te kernel's.
    const auto cast_all = [&](auto fix) {
#pragma unroll
      for (int rd = 0; rd < R; ++rd) {
        const int s = rd * BPR / 32, owner = rd * BPR % 32 + lane / G;
        DevScale d{0.0f, __shfl_sync(0xFFFFFFFFu, fac[s], owner), false, 0, false};
        if constexpr (decltype(fix)::value)
          d.may_overflow = (__shfl_sync(0xFFFFFFFFu, ovf, owner) >> s & 1) != 0;
        const std::int64_t e = round0(rd) + lane * 8;
        if (e < n) store_codes(q.codes, e, v[rd], q.recipe, d);
      }
    };
    if (K == ScaleKind::deepgemm && __any_sync(0xFFFFFFFFu, ovf != 0))
      cast_all(std::true_type{});
    else
      cast_all(std::false_type{});
  }
}

// Where block blk lies: rows [r0, r0 + items / chunks) x chunks 16-byte chunks from column c0.
struct BlockSpan {
  std::int64_t br, bc, r0, c0;
  int chunks, items;
};
__device__ __forceinline__ BlockSpan block_span(const QuantizeLaunch& q, std::int64_t nbc,
                                                std::int64_t blk) {
  const std::int64_t br = blk / nbc, bc = blk % nbc;
  const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br), c0 = bc * q.block_w;
  const int chunks = int((min(q.cols, c0 + q.block_w) - c0) / 8);
  return {br, bc, r0, c0, chunks, int(r1 - r0) * chunks};
}

// CTA-wide max of a 16-bit pattern: shuffles, one word per warp in red, one barrier (red is two
// buffers used alternately, so the next block's writes never meet this block's reads).
__device__ __forceinline__ std::uint32_t cta_max16(std::uint32_t m, std::uint32_t* red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  m = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) m = max(m, red[w]);
  return m;
}

// Global offsets of a block's chunks held by this thread: chunk t of the block (row t / chunks,
// column chunk t % chunks) in thread t % kThreads, slot t / kThreads; the row / column of each
// slot steps by kThreads without a division.
__device__ __forceinline__ void block_offsets(const QuantizeLaunch& q, const BlockSpan& b,
                                              std::int64_t (&i)[kTileChunks]) {
  const int step_r = kThreads / b.chunks, step_c = kThreads % b.chunks;
  int r = int(threadIdx.x) / b.chunks, c = int(threadIdx.x) % b.chunks;
#pragma unroll
  for (int k = 0; k < kTileChunks; ++k) {
    i[k] = (b.r0 + r) * q.cols + b.c0 + c * 8;
    r += step_r, c += step_c;
    if (c >= b.chunks) c -= b.chunks, ++r;
  }
}

// Block blk's chunks of this thread into its own slots of `stage` (slot k at k * kThreads +
// thread; a chunk past the block fills zeros): the copying thread is the reading one, so a
// wait_group orders them.
__device__ __forceinline__ void copy_block(const QuantizeLaunch& q, std::int64_t nbc,
                                           std::int64_t blk, uint4* stage) {
  const BlockSpan b = block_span(q, nbc, blk);
  std::int64_t i[kTileChunks];
  block_offsets(q, b, i);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
#pragma unroll
  for (int k = 0; k < kTileChunks; ++k) {
    const bool live = int(threadIdx.x) + k * kThreads < b.items;
    copy_chunk(stage + k * kThreads + threadIdx.x, x + (live ? i[k] : 0), live);
  }
}

// Persistent CTAs, one block a step (128x128, per-group row blocks, any block of at most
// kThreads * kTileChunks chunks), two blocks in shared memory (cp.async): the next block loads
// while this one is reduced (one barrier) and cast from registers.
template <ScaleKind K>
__global__ void __launch_bounds__(kThreads, 2) tile_blocks_bf16_kernel(QuantizeLaunch q) {
  extern __shared__ uint4 stages[];  // 2 x kTileChunks x kThreads chunks
  __shared__ std::uint32_t red[2][kThreads / 32];
  const std::int64_t nbc = (q.cols + q.block_w - 1) / q.block_w, nblocks = q.block_rows * nbc;
  if (blockIdx.x < nblocks) copy_block(q, nbc, blockIdx.x, stages);
  commit_copies();
  int parity = 0;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x, parity ^= 1) {
    if (blk + gridDim.x < nblocks)
      copy_block(q, nbc, blk + gridDim.x, stages + (parity ^ 1) * kTileChunks * kThreads);
    commit_copies();                                        // an empty group keeps the count
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // block blk has landed
    const BlockSpan b = block_span(q, nbc, blk);
    std::int64_t i[kTileChunks];
    block_offsets(q, b, i);
    uint4 v[kTileChunks];
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      v[k] = stages[(parity * kTileChunks + k) * kThreads + threadIdx.x];
    const std::uint32_t m = cta_max16(chunks_max16(v, q.recipe.ignore_nan), red[parity]);
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(m << 16));
    if (threadIdx.x == 0) store_scale(q.scales, b.br, b.bc, d);
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      if (int(threadIdx.x) + k * kThreads < b.items) store_codes(q.codes, i[k], v[k], q.recipe, d);
  }
}

// 128x128 blocks without group starts, cols % 128 == 0: one block a CTA step, thread t holding
// chunk t % 16 of rows t / 16 + 16 k (k < 8) straight in registers (plain 16-byte loads, all
// issued before any is used; every divisor a constant, so the loads start at once), the amax
// reduced across the CTA (one barrier), three CTAs an SM.
template <ScaleKind K>
__global__ void __launch_bounds__(kThreads, 3) tile128_bf16_kernel(QuantizeLaunch q) {
  static_assert(kThreads == 256 && kTileChunks == 8, "16 chunks x 16 rows a step, 8 steps");
  __shared__ std::uint32_t red[2][kThreads / 32];
  const std::int64_t nbc = q.cols / 128, nblocks = q.block_rows * nbc;
  const int c = int(threadIdx.x % 16), rr = int(threadIdx.x / 16);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  int parity = 0;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x, parity ^= 1) {
    const std::int64_t br = blk / nbc, bc = blk % nbc, r0 = br * 128;
    const std::int64_t r1 = r0 + 128 < q.rows ? r0 + 128 : q.rows;
    const std::int64_t i0 = (r0 + rr) * q.cols + bc * 128 + c * 8;
    uint4 v[kTileChunks];
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      v[k] = r0 + rr + 16 * k < r1 ? load16(x + i0 + 16 * k * q.cols) : make_uint4(0, 0, 0, 0);
    const std::uint32_t m = cta_max16(chunks_max16(v, q.recipe.ignore_nan), red[parity]);
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(m << 16));
    if (threadIdx.x == 0) store_scale(q.scales, br, bc, d);
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      if (r0 + rr + 16 * k < r1) store_codes(q.codes, i0 + 16 * k * q.cols, v[k], q.recipe, d);
  }
}

// Blocks one row high spanning the row (rowwise) of at most 256 CH columns: a warp owns a row,
// lane l holding chunks l, l + 32, ... (CH a lane, every load issued before any is used, each
// warp load 512 contiguous bytes), the amax reduced by shuffles alone, two rows a CTA.
template <ScaleKind K, int CH>
__global__ void __launch_bounds__(kRowThreads) row_warp_bf16_kernel(QuantizeLaunch q) {
  const int lane = int(threadIdx.x & 31), chunks = int(q.cols / 8);
  const std::int64_t warp = (std::int64_t(blockIdx.x) * kRowThreads + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * kRowThreads) >> 5;
  for (std::int64_t r = warp; r < q.rows; r += nwarps) {
    const auto* row = static_cast<const std::uint16_t*>(q.x) + r * q.cols;
    uint4 v[CH];
#pragma unroll
    for (int k = 0; k < CH; ++k)
      v[k] = lane + 32 * k < chunks ? load16(row + (lane + 32 * k) * 8) : make_uint4(0, 0, 0, 0);
    std::uint32_t m = chunks_max16(v, q.recipe.ignore_nan);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(m << 16));
    if (lane == 0) store_scale(q.scales, r, 0, d);
#pragma unroll
    for (int k = 0; k < CH; ++k)
      if (lane + 32 * k < chunks)
        store_codes(q.codes, r * q.cols + (lane + 32 * k) * 8, v[k], q.recipe, d);
  }
}

bool bf16_vec(const QuantizeLaunch& q) { return q.bf16 && q.vec && q.cols % 8 == 0; }

}  // namespace

template <int W, ScaleKind K, int R>
void launch_rows(const QuantizeLaunch& q) {
  constexpr std::int64_t per_cta = std::int64_t(kRowThreads) * 8 * R;  // elements a CTA step
  const unsigned grid = grid_of((q.rows * q.cols + per_cta - 1) / per_cta, q.max_blocks);
  row_blocks_bf16_kernel<W, K, R><<<grid, kRowThreads, 0, q.stream>>>(q);
}

// chunks_per_lane: the rounds R a lane loads before it casts, 4, 8 or 16; 0: 16 for W = 128 and
// 4 for W = 32 (32 blocks a warp batch, one scale a lane: the fastest measured).
template <int W, ScaleKind K>
void launch_rows_chunks(const QuantizeLaunch& q) {
  const int r = q.chunks_per_lane != 0 ? q.chunks_per_lane : (W == 128 ? 16 : 4);
  if (r == 4)
    launch_rows<W, K, 4>(q);
  else if (r == 8)
    launch_rows<W, K, 8>(q);
  else
    launch_rows<W, K, 16>(q);
}

bool launch_row_blocks_bf16(const QuantizeLaunch& q) {
  const std::int64_t w = q.block_w;
  if (!bf16_vec(q) || q.block_h != 1 || (w != 32 && w != 128) || q.cols % w != 0 || q.starts)
    return false;
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (w == 32)
      launch_rows_chunks<32, decltype(kind)::value>(q);
    else
      launch_rows_chunks<128, decltype(kind)::value>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

// Rows of at most 256 CH columns, CH the smallest of 8, 16, 32 that holds the row.
template <ScaleKind K>
void launch_row_warps(const QuantizeLaunch& q) {
  const unsigned grid = grid_of((q.rows + kRowThreads / 32 - 1) / (kRowThreads / 32), q.max_blocks);
  const std::int64_t chunks = q.cols / 8;
  if (chunks <= 256)
    row_warp_bf16_kernel<K, 8><<<grid, kRowThreads, 0, q.stream>>>(q);
  else if (chunks <= 512)
    row_warp_bf16_kernel<K, 16><<<grid, kRowThreads, 0, q.stream>>>(q);
  else
    row_warp_bf16_kernel<K, 32><<<grid, kRowThreads, 0, q.stream>>>(q);
}

bool launch_tile_blocks_bf16(const QuantizeLaunch& q) {
  if (!bf16_vec(q) || q.block_w % 8 != 0 || q.block_h * (q.block_w / 8) > kThreads * kTileChunks)
    return false;
  const std::int64_t nblocks = q.block_rows * ((q.cols + q.block_w - 1) / q.block_w);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (q.block_h == 1 && q.block_w == q.cols && q.cols / 8 <= 1024) {
      launch_row_warps<decltype(kind)::value>(q);
      return;
    }
    if (q.block_h == 128 && q.block_w == 128 && q.cols % 128 == 0 && !q.starts) {
      tile128_bf16_kernel<decltype(kind)::value>
          <<<grid_of(nblocks, q.max_blocks), kThreads, 0, q.stream>>>(q);
      return;
    }
    const auto kernel = tile_blocks_bf16_kernel<decltype(kind)::value>;
    constexpr int smem = 2 * kTileChunks * kThreads * 16;
    FP8REF_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<resident_grid(kernel, smem, nblocks, q.max_blocks), kThreads, smem, q.stream>>>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

}  // namespace fp8ref::gpu::detail
