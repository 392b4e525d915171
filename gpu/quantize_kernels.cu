// Quantize kernels (device code; the launcher gpu/quantize.cpp checks the arguments): an amax
// pass and a cast pass per block, the recipe's scale arithmetic as IEEE f32 / f64 operations
// (no contraction: every product and quotient is an explicit __fmul_rn / __fdiv_rn), E8M0
// exponents by integer operations on the f32 pattern (cvt.rp.satfinite.ue8m0x2.f32 is sm_100+),
// elements by cvt.rn.satfinite.{e4m3,e5m2}x2.f32. docs/recipes.md "GPU kernels" lists the recipes.
#include <cstdint>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

// 1xW blocks (W = 32, 128): W / 16 lanes per block, sixteen elements a lane (two independent
// 16-byte loads of bf16 in flight); a warp takes 32 / (W / 16) consecutive blocks per step, all
// lanes stepping together so the shuffles see the whole warp.
template <int W, bool kBf16>
__global__ void __launch_bounds__(kThreads) small_blocks_kernel(QuantizeLaunch q) {
  constexpr int kLanes = W / 16, kPerWarp = 32 / kLanes;
  const std::int64_t nbc = (q.cols + W - 1) / W, nblocks = q.rows * nbc;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t base = warp * kPerWarp; base < nblocks; base += nwarps * kPerWarp) {
    const std::int64_t b = base + lane / kLanes;
    const std::int64_t r = b / nbc, bc = b % nbc, c = bc * W + sub * 16;
    const bool live = b < nblocks && c < q.cols;
    const std::int64_t i = r * q.cols + c, end = live ? r * q.cols + q.cols : i;
    std::uint32_t v[2][8];
    const bool vec_hi = q.vec && live && c + 8 < q.cols;  // vec: cols % 8 == 0
    load8(q.x, kBf16, q.vec && live, i, end, v[0]);
    load8(q.x, kBf16, vec_hi, i + 8, end, v[1]);
    std::int32_t m = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k)
      m = max(m,
              max(abs_bits(v[0][k], q.recipe.ignore_nan), abs_bits(v[1][k], q.recipe.ignore_nan)));
#pragma unroll
    for (int off = kLanes / 2; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    const DevScale d = block_scale(q.recipe, m);
    if (b < nblocks && sub == 0) store_scale(q.scales, r, bc, d);
    if (live) {
      store8(q.codes, q.vec, i, end, cast8(q.recipe, d, v[0]));
      store8(q.codes, vec_hi, i + 8, end, cast8(q.recipe, d, v[1]));
    }
  }
}

// One CTA per block (rowwise, 128x128, grouped blocks, any width >= 2): amax pass, scale, cast
// pass over rows [r0, r1) x columns [c0, c1) in chunks of eight.
__global__ void __launch_bounds__(kThreads) tile_blocks_kernel(QuantizeLaunch q) {
  __shared__ std::int32_t red[kThreads / 32];
  const std::int64_t nbc = (q.cols + q.block_w - 1) / q.block_w, nblocks = q.block_rows * nbc;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    const std::int64_t br = blk / nbc, bc = blk % nbc;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    const std::int64_t c0 = bc * q.block_w, c1 = min(q.cols, c0 + q.block_w);
    const std::int64_t chunks = (c1 - c0 + 7) / 8, items = (r1 - r0) * chunks;
    std::int32_t m = 0;
    for (std::int64_t t = threadIdx.x; t < items; t += blockDim.x) {
      const std::int64_t r = r0 + t / chunks, i = r * q.cols + c0 + (t % chunks) * 8;
      std::uint32_t v[8];
      load8(q.x, q.bf16, q.vec, i, r * q.cols + c1, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) m = max(m, abs_bits(v[k], q.recipe.ignore_nan));
    }
    m = cta_max(m, red);
    const DevScale d = block_scale(q.recipe, m);
    if (threadIdx.x == 0) store_scale(q.scales, br, bc, d);
    for (std::int64_t t = threadIdx.x; t < items; t += blockDim.x) {
      const std::int64_t r = r0 + t / chunks, i = r * q.cols + c0 + (t % chunks) * 8;
      std::uint32_t v[8];
      load8(q.x, q.bf16, q.vec, i, r * q.cols + c1, v);
      store8(q.codes, q.vec, i, r * q.cols + c1, cast8(q.recipe, d, v));
    }
  }
}

// One-column blocks (128x1, 32x1, per-channel): a thread per column of a block row.
__global__ void __launch_bounds__(kThreads) column_blocks_kernel(QuantizeLaunch q) {
  const std::int64_t chunks = (q.cols + kThreads - 1) / kThreads, n = q.block_rows * chunks;
  for (std::int64_t it = blockIdx.x; it < n; it += gridDim.x) {
    const std::int64_t br = it / chunks, j = (it % chunks) * kThreads + threadIdx.x;
    if (j >= q.cols) continue;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    std::int32_t m = 0;
    for (std::int64_t r = r0; r < r1; ++r)
      m = max(m, abs_bits(load_bits(q.x, q.bf16, r * q.cols + j), q.recipe.ignore_nan));
    const DevScale d = block_scale(q.recipe, m);
    store_scale(q.scales, br, j, d);
    for (std::int64_t r = r0; r < r1; ++r) {
      const float y = scaled(__uint_as_float(load_bits(q.x, q.bf16, r * q.cols + j)), d);
      std::uint32_t c = cvt2(q.recipe.e4m3, 0.0f, y) & 0xFF;
      if (q.recipe.nonsat) c = nonsat_fix(c, y);
      q.codes[r * q.cols + j] = std::uint8_t(c);
    }
  }
}

// Tensorwise passes: a warp takes kFlatSteps * 32 consecutive chunks of eight elements per
// iteration (lane l chunk base + 32 s + l), all loaded before any is used.
constexpr int kFlatSteps = 8;

struct FlatCursor {
  std::int64_t first, step;  // this lane's first chunk; chunks between a warp's iterations
};
__device__ __forceinline__ FlatCursor flat_cursor() {
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  return {warp * kFlatSteps * 32 + (threadIdx.x & 31), nwarps * kFlatSteps * 32};
}

// Tensorwise, pass 1: the amax of the whole tensor into *amax_ws (an integer max of |x|
// patterns: order-independent, so any grid gives the same word). A bf16 source with 16-byte
// access keeps kFlatSteps streaming loads a lane in flight and reduces packed |bf16| patterns.
__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(QuantizeLaunch q) {
  const std::int64_t n = q.rows * q.cols, chunks = (n + 7) / 8;
  const FlatCursor f = flat_cursor();
  std::int32_t m = 0;
  if (q.bf16 && q.vec) {
    const auto* x = static_cast<const std::uint16_t*>(q.x);
    std::uint32_t p = 0;
    for (std::int64_t t = f.first; t - (threadIdx.x & 31) < chunks; t += f.step) {
      uint4 v[kFlatSteps];
#pragma unroll
      for (int j = 0; j < kFlatSteps; ++j) {
        const std::int64_t c = t + 32 * j;
        v[j] = c < chunks ? load_stream16(x + c * 8) : make_uint4(0, 0, 0, 0);
      }
      p = max(p, chunks_max16(v, q.recipe.ignore_nan));
    }
    m = std::int32_t(p << 16);
  } else {
    for (std::int64_t t = f.first; t - (threadIdx.x & 31) < chunks; t += f.step) {
      std::uint32_t v[kFlatSteps][8];
#pragma unroll
      for (int j = 0; j < kFlatSteps; ++j) {
        const std::int64_t c = t + 32 * j;
        load8(q.x, q.bf16, q.vec && c < chunks, c * 8, c < chunks ? n : 0, v[j]);
      }
#pragma unroll
      for (int j = 0; j < kFlatSteps; ++j)
#pragma unroll
        for (int k = 0; k < 8; ++k) m = max(m, abs_bits(v[j][k], q.recipe.ignore_nan));
    }
  }
  __shared__ std::int32_t red[kThreads / 32];
  m = cta_max(m, red);
  if (threadIdx.x == 0) atomicMax(q.amax_ws, std::uint32_t(m));
}

// Tensorwise, pass 2: every thread derives the one scale from the amax and casts (bf16 with
// 16-byte access: kFlatSteps streaming loads a lane held as chunks, unpacked as each is cast).
__global__ void __launch_bounds__(kThreads) tensor_cast_kernel(QuantizeLaunch q) {
  const std::int64_t n = q.rows * q.cols, chunks = (n + 7) / 8;
  const FlatCursor f = flat_cursor();
  const DevScale d = block_scale(q.recipe, std::int32_t(*q.amax_ws));
  if (blockIdx.x == 0 && threadIdx.x == 0) store_scale(q.scales, 0, 0, d);
  const bool bf16_vec = q.bf16 && q.vec;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  for (std::int64_t t = f.first; t - (threadIdx.x & 31) < chunks; t += f.step) {
    if (bf16_vec) {
      uint4 u[kFlatSteps];
#pragma unroll
      for (int j = 0; j < kFlatSteps; ++j) {
        const std::int64_t c = t + 32 * j;
        u[j] = c < chunks ? load_stream16(x + c * 8) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < kFlatSteps; ++j) {
        const std::int64_t c = t + 32 * j;
        std::uint32_t v[8];
        unpack_bf16(u[j], v);
        if (c < chunks) *reinterpret_cast<uint2*>(q.codes + c * 8) = cast8(q.recipe, d, v);
      }
      continue;
    }
    std::uint32_t v[kFlatSteps][8];
#pragma unroll
    for (int j = 0; j < kFlatSteps; ++j) {
      const std::int64_t c = t + 32 * j;
      load8(q.x, q.bf16, q.vec && c < chunks, c * 8, c < chunks ? n : 0, v[j]);
    }
#pragma unroll
    for (int j = 0; j < kFlatSteps; ++j) {
      const std::int64_t c = t + 32 * j;
      if (c < chunks) store8(q.codes, q.vec, c * 8, n, cast8(q.recipe, d, v[j]));
    }
  }
}

__global__ void fill_words_kernel(std::uint32_t* p, std::uint32_t w, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = w;
}

}  // namespace

void launch_small_blocks(const QuantizeLaunch& q) {
  if (launch_row_blocks_bf16(q)) return;
  const std::int64_t w = q.block_w, nblocks = q.rows * ((q.cols + w - 1) / w);
  const std::int64_t per_cta = kThreads / (w / 16);
  const unsigned grid = grid_of((nblocks + per_cta - 1) / per_cta, q.max_blocks);
  if (w == 32)
    q.bf16 ? small_blocks_kernel<32, true><<<grid, kThreads, 0, q.stream>>>(q)
           : small_blocks_kernel<32, false><<<grid, kThreads, 0, q.stream>>>(q);
  else
    q.bf16 ? small_blocks_kernel<128, true><<<grid, kThreads, 0, q.stream>>>(q)
           : small_blocks_kernel<128, false><<<grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_tile_blocks(const QuantizeLaunch& q) {
  if (launch_tile_blocks_bf16(q)) return;
  const std::int64_t nblocks = q.block_rows * ((q.cols + q.block_w - 1) / q.block_w);
  tile_blocks_kernel<<<grid_of(nblocks, q.max_blocks), kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_column_blocks(const QuantizeLaunch& q) {
  if (launch_column_blocks_bf16(q)) return;
  const std::int64_t n = q.block_rows * ((q.cols + kThreads - 1) / kThreads);
  column_blocks_kernel<<<grid_of(n, q.max_blocks), kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_tensorwise(const QuantizeLaunch& q) {
  const std::int64_t chunks = (q.rows * q.cols + 7) / 8;
  const std::int64_t per_cta = std::int64_t(kThreads) * kFlatSteps;
  const unsigned grid = grid_of((chunks + per_cta - 1) / per_cta, q.max_blocks);
  const unsigned amax_grid = grid < 1024 ? grid : 1024;  // one atomic per CTA
  tensor_amax_kernel<<<amax_grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
  tensor_cast_kernel<<<grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_fill_words(void* data, std::uint32_t word, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  fill_words_kernel<<<grid_of((n + kThreads - 1) / kThreads, 0), kThreads, 0, stream>>>(
      static_cast<std::uint32_t*>(data), word, n);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
