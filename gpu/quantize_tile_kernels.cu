// Single-pass quantize kernels for bf16 sources with 16-byte access (device code; the launcher
// gpu/quantize.cpp checks the arguments): every block is read once into registers, its amax
// reduced by warp shuffles (and shared memory across warps, an integer max of |x| patterns, so the
// order never matters), the scale derived as gpu/quantize_device.cuh defines it per recipe kind
// (a template parameter, no switch per block) and the codes cast from the same registers.
// docs/recipes.md "GPU kernels" lists which calls take these kernels.
#include <algorithm>
#include <cstdint>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kTileChunks = 8;  // the largest staged block: kThreads * kTileChunks chunks (32 KiB)

__device__ __forceinline__ uint4 load_chunk(const void* x, std::int64_t i) {
  return __ldcs(reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i));
}

// Eight bf16 of a 16-byte chunk as f32 patterns (element k of the chunk in f[k]).
__device__ __forceinline__ void unpack_bf16(const uint4& u, std::uint32_t (&f)[8]) {
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) f[2 * k] = w[k] << 16, f[2 * k + 1] = w[k] & 0xFFFF0000u;
}

__device__ __forceinline__ std::int32_t chunk_amax(const uint4& u, bool ignore_nan) {
  std::uint32_t f[8];
  unpack_bf16(u, f);
  std::int32_t m = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) m = max(m, abs_bits(f[k], ignore_nan));
  return m;
}

__device__ __forceinline__ void store_codes(std::uint8_t* codes, std::int64_t i, const uint4& u,
                                            const RecipeParams& p, const DevScale& d) {
  std::uint32_t f[8];
  unpack_bf16(u, f);
  __stcs(reinterpret_cast<uint2*>(codes + i), cast8(p, d, f));
}

// Scale of flat block index b (row-major over the grid): the row-major layouts need no division.
__device__ __forceinline__ void store_flat_scale(const ScaleSink& s, std::int64_t b,
                                                 const DevScale& d) {
  if (s.layout == 0 || s.layout == 10)
    store_scale(s, 0, b, d);
  else
    store_scale(s, b / s.cols, b % s.cols, d);
}

// 1xW blocks with cols % W == 0, so block b is the flat elements [b * W, b * W + W): W / 8 lanes
// per block, one 16-byte chunk a lane per step, kSteps steps loaded before any is cast (16 kSteps
// bytes a lane in flight); the warp's chunk of the tensor is contiguous.
template <int W, ScaleKind K, int kSteps>
__global__ void __launch_bounds__(kThreads) row_blocks_bf16_kernel(QuantizeLaunch q) {
  static_assert(W == 32 || W == 128, "1x32 or 1x128 blocks");
  constexpr int kLanes = W / 8;
  constexpr std::int64_t kStep = 32 * 8, kWarpElems = kStep * kSteps;
  const std::int64_t n = q.rows * q.cols;
  const int lane = threadIdx.x & 31;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t base = warp * kWarpElems; base < n; base += nwarps * kWarpElems) {
    uint4 v[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const std::int64_t e = base + s * kStep + lane * 8;
      v[s] = e < n ? load_chunk(q.x, e) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const std::int64_t e = base + s * kStep + lane * 8;
      std::int32_t m = chunk_amax(v[s], q.recipe.ignore_nan);
#pragma unroll
      for (int off = kLanes / 2; off > 0; off >>= 1)
        m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      if (e >= n) continue;  // whole blocks are live or not: n % W == 0
      const DevScale d = block_scale_of<K>(q.recipe, m);
      if (lane % kLanes == 0) store_flat_scale(q.scales, e / W, d);
      store_codes(q.codes, e, v[s], q.recipe, d);
    }
  }
}

// SwiGLU of eight gate / up elements (bf16 chunks) as f32 patterns, docs/recipes.md "SwiGLU":
// silu(g) = RN(g / RN(1 + exp(-g))) with exp(-g) = RN_f32(f64 exp), which is the correctly rounded
// f32 exp for every bf16 g (CUDA's f64 exp is within 1 ulp, and reference/swiglu.h checks that no
// bf16 input's f64 exp comes within 2 ulps of an f32 rounding boundary); h = RN(silu(g) * up).
__device__ __forceinline__ void swiglu8(const uint4& gate, const uint4& up, std::uint32_t (&h)[8]) {
  std::uint32_t g[8], u[8];
  unpack_bf16(gate, g);
  unpack_bf16(up, u);
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float gv = __uint_as_float(g[k]);
    const float ex = __double2float_rn(exp(-double(gv)));
    const float silu = __fdiv_rn(gv, __fadd_rn(1.0f, ex));
    h[k] = __float_as_uint(__fmul_rn(silu, __uint_as_float(u[k])));
  }
}

// SwiGLU then 1xW quantize: q describes the (rows, H = q.cols) f32 result; q.x is the merged
// (rows, 2H) bf16 gate/up (H % W == 0). The row_blocks_bf16_kernel mapping over output elements,
// each lane reading its gate chunk and the up chunk H columns further.
template <int W, ScaleKind K>
__global__ void __launch_bounds__(kThreads) swiglu_blocks_kernel(QuantizeLaunch q) {
  constexpr int kLanes = W / 8, kSteps = 2;
  constexpr std::int64_t kStep = 32 * 8, kWarpElems = kStep * kSteps;
  const std::int64_t n = q.rows * q.cols;
  const int lane = threadIdx.x & 31;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t base = warp * kWarpElems; base < n; base += nwarps * kWarpElems) {
    uint4 g[kSteps], u[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const std::int64_t e = base + s * kStep + lane * 8, r = e / q.cols;
      const std::int64_t i = r * 2 * q.cols + (e - r * q.cols);
      g[s] = e < n ? load_chunk(q.x, i) : make_uint4(0, 0, 0, 0);
      u[s] = e < n ? load_chunk(q.x, i + q.cols) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const std::int64_t e = base + s * kStep + lane * 8;
      std::uint32_t h[8];
      swiglu8(g[s], u[s], h);
      std::int32_t m = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) m = max(m, abs_bits(h[k], q.recipe.ignore_nan));
#pragma unroll
      for (int off = kLanes / 2; off > 0; off >>= 1)
        m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      if (e >= n) continue;  // whole blocks are live or not: n % W == 0
      const DevScale d = block_scale_of<K>(q.recipe, m);
      if (lane % kLanes == 0) store_flat_scale(q.scales, e / W, d);
      __stcs(reinterpret_cast<uint2*>(q.codes + e), cast8(q.recipe, d, h));
    }
  }
}

// Where block blk lies: rows [r0, r1) x columns [c0, c0 + 8 chunks); items = rows x chunks.
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

// Block blk's chunks into buf (chunk t = row t / chunks, column chunk t % chunks), one group.
__device__ __forceinline__ void stage_block(const QuantizeLaunch& q, std::int64_t nbc,
                                            std::int64_t blk, uint4* buf) {
  const BlockSpan b = block_span(q, nbc, blk);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  for (int t = int(threadIdx.x); t < b.items; t += kThreads)
    copy_chunk(buf + t, x + (b.r0 + t / b.chunks) * q.cols + b.c0 + (t % b.chunks) * 8, true);
  commit_copies();
}

// Persistent CTAs over blocks of at most `cap` chunks (rowwise, 128x128, per-group row blocks),
// two blocks in shared memory (cp.async): the CTA's next block loads while this one is reduced and
// cast from shared memory.
template <ScaleKind K>
__global__ void __launch_bounds__(kThreads) tile_blocks_staged_kernel(QuantizeLaunch q, int cap) {
  extern __shared__ uint4 stages[];  // 2 x cap chunks
  __shared__ std::int32_t red[kThreads / 32];
  const std::int64_t nbc = (q.cols + q.block_w - 1) / q.block_w, nblocks = q.block_rows * nbc;
  if (blockIdx.x < nblocks) stage_block(q, nbc, blockIdx.x, stages);
  int k = 0;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x, ++k) {
    const uint4* buf = stages + (k % 2) * cap;
    if (blk + gridDim.x < nblocks)
      stage_block(q, nbc, blk + gridDim.x, stages + ((k + 1) % 2) * cap);
    else
      commit_copies();                            // an empty group keeps the count uniform
    asm volatile("cp.async.wait_group 1;\n" ::);  // block blk has landed
    __syncthreads();
    const BlockSpan b = block_span(q, nbc, blk);
    std::int32_t m = 0;
    for (int t = int(threadIdx.x); t < b.items; t += kThreads)
      m = max(m, chunk_amax(buf[t], q.recipe.ignore_nan));
    m = cta_max(m, red);
    const DevScale d = block_scale_of<K>(q.recipe, m);
    if (threadIdx.x == 0) store_scale(q.scales, b.br, b.bc, d);
    for (int t = int(threadIdx.x); t < b.items; t += kThreads)
      store_codes(q.codes, (b.r0 + t / b.chunks) * q.cols + b.c0 + (t % b.chunks) * 8, buf[t],
                  q.recipe, d);
    __syncthreads();  // buf is rewritten two blocks on
  }
}

// Column blocks of at most 128 rows (128x1, 32x1, per-group column blocks): a CTA per block row
// x 64 columns; thread (cg = tid % 8, rg = tid / 8) holds the chunk of columns [8 cg, 8 cg + 8)
// in rows rg, rg + 32, rg + 64, rg + 96 of the block. Column maxima: shuffles over the warp's
// four row lanes, then shared memory over the eight warps.
template <ScaleKind K>
__global__ void __launch_bounds__(kThreads) column_blocks_bf16_kernel(QuantizeLaunch q) {
  static_assert(kThreads == 256, "8 column chunks x 32 row lanes");
  __shared__ std::int32_t colmax[kThreads / 32][64];
  __shared__ DevScale scale[64];
  const int cg = int(threadIdx.x % 8), rg = int(threadIdx.x / 8), warp = int(threadIdx.x / 32);
  const std::int64_t ncc = (q.cols + 63) / 64, n = q.block_rows * ncc;
  for (std::int64_t it = blockIdx.x; it < n; it += gridDim.x) {
    const std::int64_t br = it / ncc, c = (it % ncc) * 64 + cg * 8;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::int64_t r = r0 + rg + 32 * k;
      v[k] = r < r1 && c < q.cols ? load_chunk(q.x, r * q.cols + c) : make_uint4(0, 0, 0, 0);
    }
    std::int32_t m[8] = {};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      std::uint32_t f[8];
      unpack_bf16(v[k], f);
#pragma unroll
      for (int e = 0; e < 8; ++e) m[e] = max(m[e], abs_bits(f[e], q.recipe.ignore_nan));
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      m[e] = max(m[e], __shfl_xor_sync(0xFFFFFFFFu, m[e], 8));
      m[e] = max(m[e], __shfl_xor_sync(0xFFFFFFFFu, m[e], 16));
      if (threadIdx.x % 32 < 8) colmax[warp][cg * 8 + e] = m[e];
    }
    __syncthreads();
    if (threadIdx.x < 64) {
      std::int32_t mm = 0;
#pragma unroll
      for (int w = 0; w < kThreads / 32; ++w) mm = max(mm, colmax[w][threadIdx.x]);
      const DevScale d = block_scale_of<K>(q.recipe, mm);
      scale[threadIdx.x] = d;
      const std::int64_t col = (it % ncc) * 64 + threadIdx.x;
      if (col < q.cols) store_scale(q.scales, br, col, d);
    }
    __syncthreads();
    DevScale d[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) d[e] = scale[cg * 8 + e];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::int64_t r = r0 + rg + 32 * k;
      if (r >= r1 || c >= q.cols) continue;
      std::uint32_t f[8];
      unpack_bf16(v[k], f);
      __stcs(reinterpret_cast<uint2*>(q.codes + r * q.cols + c), cast8_each(q.recipe, d, f));
    }
    __syncthreads();  // colmax and scale are reused by the next block row
  }
}

bool bf16_vec(const QuantizeLaunch& q) { return q.bf16 && q.vec && q.cols % 8 == 0; }

}  // namespace

template <int W, ScaleKind K, int kSteps>
void launch_rows(const QuantizeLaunch& q) {
  const std::int64_t per_cta = (kThreads / 32) * 32 * 8 * kSteps;  // elements a CTA takes a step
  const unsigned grid = grid_of((q.rows * q.cols + per_cta - 1) / per_cta, q.max_blocks);
  row_blocks_bf16_kernel<W, K, kSteps><<<grid, kThreads, 0, q.stream>>>(q);
}

template <int W, ScaleKind K>
void launch_rows_steps(const QuantizeLaunch& q) {
  if (q.chunks_per_lane == 2)
    launch_rows<W, K, 2>(q);
  else if (q.chunks_per_lane == 8)
    launch_rows<W, K, 8>(q);
  else
    launch_rows<W, K, 4>(q);
}

bool launch_row_blocks_bf16(const QuantizeLaunch& q) {
  const std::int64_t w = q.block_w;
  if (!bf16_vec(q) || q.block_h != 1 || (w != 32 && w != 128) || q.cols % w != 0 || q.starts)
    return false;
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (w == 32)
      launch_rows_steps<32, decltype(kind)::value>(q);
    else
      launch_rows_steps<128, decltype(kind)::value>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

template <ScaleKind K>
void launch_staged(const QuantizeLaunch& q, int cap) {
  const auto kernel = tile_blocks_staged_kernel<K>;
  const int smem = 2 * cap * int(sizeof(uint4));
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int device = 0, sms = 0, per_sm = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  FP8REF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FP8REF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  const std::int64_t nblocks = q.block_rows * ((q.cols + q.block_w - 1) / q.block_w);
  const std::int64_t resident = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  kernel<<<grid_of(nblocks < resident ? nblocks : resident, q.max_blocks), kThreads, smem,
           q.stream>>>(q, cap);
}

bool launch_tile_blocks_bf16(const QuantizeLaunch& q) {
  if (!bf16_vec(q) || q.block_w % 8 != 0 || q.block_h * (q.block_w / 8) > kThreads * kTileChunks)
    return false;
  // Staged through shared memory: the largest block's chunks (block_h rows of the block width).
  const int cap = int(q.block_h * ((std::min(q.cols, q.block_w) + 7) / 8));
  with_scale_kind(q.recipe.kind, [&](auto kind) { launch_staged<decltype(kind)::value>(q, cap); });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

bool launch_column_blocks_bf16(const QuantizeLaunch& q) {
  if (!bf16_vec(q) || q.block_w != 1 || q.block_h > 128) return false;
  const std::int64_t n = q.block_rows * ((q.cols + 63) / 64);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    column_blocks_bf16_kernel<decltype(kind)::value>
        <<<grid_of(n, q.max_blocks), kThreads, 0, q.stream>>>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

void launch_swiglu_bf16(const QuantizeLaunch& q) {
  const std::int64_t w = q.block_w;
  const std::int64_t per_cta = (kThreads / 32) * 32 * 8 * 2;  // elements a CTA takes per step
  const unsigned grid = grid_of((q.rows * q.cols + per_cta - 1) / per_cta, q.max_blocks);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (w == 32)
      swiglu_blocks_kernel<32, decltype(kind)::value><<<grid, kThreads, 0, q.stream>>>(q);
    else
      swiglu_blocks_kernel<128, decltype(kind)::value><<<grid, kThreads, 0, q.stream>>>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
