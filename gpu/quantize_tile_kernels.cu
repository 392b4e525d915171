// Single-pass quantize kernels for bf16 sources with 16-byte access (device code; the launcher
// gpu/quantize.cpp checks the arguments): every block is read once into registers (streaming
// 16-byte loads, several in flight a lane), its amax reduced as packed 16-bit |bf16| patterns
// (max.u16x2), then across lanes by shuffles and across warps through shared memory (an integer
// max, so the order never matters), the scale derived as gpu/quantize_device.cuh defines it per
// recipe kind (a template parameter, no switch per block) and the codes cast from the same
// registers. docs/recipes.md "GPU kernels" lists which calls take these kernels.
#include <cstdint>

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

// Codes of one chunk, stored with the streaming hint (st.global.cs): the 1xW kernel and the
// one-row block kernel were measured with it (docs/benchmarks.md "GPU data path").
__device__ __forceinline__ void store_codes_cs(std::uint8_t* codes, std::int64_t i, const uint4& u,
                                               const RecipeParams& p, const DevScale& d) {
  std::uint32_t f[8];
  unpack_bf16(u, f);
  __stcs(reinterpret_cast<uint2*>(codes + i), cast8(p, d, f));
}

// 1xW blocks with cols % W == 0, so block b is the flat elements [b * W, b * W + W). G lanes per
// block (4 for W = 128, 2 for W = 32), each holding C = W / 8 / G chunks of it: lane `sub` of the
// block holds chunks sub, sub + G, ..., so one load instruction of the warp reads G * 16
// contiguous bytes of each block (whole 32-byte sectors) and one store writes G * 8. A warp takes
// 32 / G blocks a round and kRounds rounds, every load issued before any is used (C * kRounds
// chunks a lane in flight); one scale per lane per block (per 32 or 16 elements).
template <int W, ScaleKind K, int kRounds>
__global__ void __launch_bounds__(kThreads) row_blocks_bf16_kernel(QuantizeLaunch q) {
  static_assert(W == 32 || W == 128, "1x32 or 1x128 blocks");
  constexpr int G = W == 128 ? 4 : 2, C = W / 8 / G;
  constexpr std::int64_t kRoundElems = (32 / G) * W, kWarpElems = kRoundElems * kRounds;
  const std::int64_t n = q.rows * q.cols;
  const int lane = threadIdx.x & 31, sub = lane % G;
  const std::int64_t own = (lane / G) * W;  // this lane's block within a round
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  for (std::int64_t base = warp * kWarpElems; base < n; base += nwarps * kWarpElems) {
    uint4 v[kRounds][C];
#pragma unroll
    for (int rd = 0; rd < kRounds; ++rd)
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const std::int64_t e = base + rd * kRoundElems + own + (j * G + sub) * 8;
        v[rd][j] = e < n ? load_stream16(x + e) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
    for (int rd = 0; rd < kRounds; ++rd) {
      const std::int64_t b0 = base + rd * kRoundElems + own;  // whole blocks: n % W == 0
      std::uint32_t m = chunks_max16(v[rd], q.recipe.ignore_nan);
#pragma unroll
      for (int off = G / 2; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      if (b0 >= n) continue;
      const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(m << 16));
      if (sub == 0) store_flat_scale(q.scales, b0 / W, d);
#pragma unroll
      for (int j = 0; j < C; ++j)
        store_codes_cs(q.codes, b0 + (j * G + sub) * 8, v[rd][j], q.recipe, d);
    }
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

// Blocks one row high (rowwise): non-persistent CTAs, one block a CTA step loaded straight into
// registers (the staged kernel above keeps only one such row in flight a CTA, and two CTAs an
// SM; this one runs three CTAs an SM).
template <ScaleKind K>
__global__ void __launch_bounds__(kThreads, 3) row_span_blocks_bf16_kernel(QuantizeLaunch q) {
  __shared__ std::uint32_t red[2][kThreads / 32];
  const std::int64_t nbc = (q.cols + q.block_w - 1) / q.block_w, nblocks = q.block_rows * nbc;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  int parity = 0;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x, parity ^= 1) {
    const BlockSpan b = block_span(q, nbc, blk);
    std::int64_t i[kTileChunks];
    block_offsets(q, b, i);
    uint4 v[kTileChunks];
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      v[k] = int(threadIdx.x) + k * kThreads < b.items ? load_stream16(x + i[k])
                                                       : make_uint4(0, 0, 0, 0);
    const std::uint32_t m = cta_max16(chunks_max16(v, q.recipe.ignore_nan), red[parity]);
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(m << 16));
    if (threadIdx.x == 0) store_scale(q.scales, b.br, b.bc, d);
#pragma unroll
    for (int k = 0; k < kTileChunks; ++k)
      if (int(threadIdx.x) + k * kThreads < b.items)
        store_codes_cs(q.codes, i[k], v[k], q.recipe, d);
  }
}

bool bf16_vec(const QuantizeLaunch& q) { return q.bf16 && q.vec && q.cols % 8 == 0; }

}  // namespace

template <int W, ScaleKind K, int kRounds>
void launch_rows(const QuantizeLaunch& q) {
  constexpr int G = W == 128 ? 4 : 2;
  const std::int64_t per_cta = (kThreads / 32) * (32 / G) * W * kRounds;  // elements a CTA step
  const unsigned grid = grid_of((q.rows * q.cols + per_cta - 1) / per_cta, q.max_blocks);
  row_blocks_bf16_kernel<W, K, kRounds><<<grid, kThreads, 0, q.stream>>>(q);
}

// chunks_per_lane (4, 8 or 16; 0: 8) = C * kRounds, C = 4 chunks a block-lane for W = 128, 2 for
// W = 32.
template <int W, ScaleKind K>
void launch_rows_chunks(const QuantizeLaunch& q) {
  constexpr int C = W == 128 ? 4 : 2;
  if (q.chunks_per_lane == 4)
    launch_rows<W, K, 4 / C>(q);
  else if (q.chunks_per_lane == 16)
    launch_rows<W, K, 16 / C>(q);
  else
    launch_rows<W, K, 8 / C>(q);
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

bool launch_tile_blocks_bf16(const QuantizeLaunch& q) {
  if (!bf16_vec(q) || q.block_w % 8 != 0 || q.block_h * (q.block_w / 8) > kThreads * kTileChunks)
    return false;
  const std::int64_t nblocks = q.block_rows * ((q.cols + q.block_w - 1) / q.block_w);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (q.block_h == 1) {
      row_span_blocks_bf16_kernel<decltype(kind)::value>
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
