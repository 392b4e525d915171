// Dual-orientation quantize (device code; the launcher gpu/quantize.cpp checks the arguments):
// one read of a bf16 tile gives both the 1xW row blocks and the Wx1 column blocks of the same
// recipe (W = 128, or 32 for MX), each bitwise equal to its own single-orientation call (the dgrad
// operand and the wgrad operand of one tensor). Amax reductions are integer maxima of |x| patterns
// (shuffles, then shared memory across warps): no order to depend on.
#include <cstdint>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kCols = 128;  // tile columns: 16 chunks of eight
// Tiles in shared memory: kStages - 1 load ahead while one is cast (32 KiB tiles for W = 128,
// 8 KiB for W = 32).
template <int W>
constexpr int kStages = W == 128 ? 2 : 4;

// Tile `it` (W rows x 128 columns) into buf: thread (cg, rg) copies chunk cg of rows rg + 16 i.
template <int W>
__device__ __forceinline__ void load_tile(const QuantizeLaunch& q, std::int64_t it, uint4* buf) {
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const std::int64_t nct = q.cols / kCols, r0 = (it / nct) * W, c = (it % nct) * kCols + cg * 8;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
#pragma unroll
  for (int i = 0; i < W / 16; ++i) {
    const std::int64_t r = r0 + rg + 16 * i;
    copy_chunk(buf + (rg + 16 * i) * 16 + cg, x + (r < q.rows ? r * q.cols + c : 0), r < q.rows);
  }
  commit_copies();
}

__device__ __forceinline__ void unpack(const uint4& v, std::uint32_t (&f)[8]) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) f[2 * k] = w[k] << 16, f[2 * k + 1] = w[k] & 0xFFFF0000u;
}

// Row blocks of tile it from buf: thread (cg, rg) casts chunk cg of rows rg + 16 i with the amax
// of its W / 8 lanes (a half-warp holds one row); returns the thread's column maxima in cm.
template <int W, ScaleKind K>
__device__ __forceinline__ void row_pass(const QuantizeLaunch& q, std::int64_t it, const uint4* buf,
                                         std::int32_t (&cm)[8]) {
  constexpr int kLanes = W / 8;
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const std::int64_t nct = q.cols / kCols, r0 = (it / nct) * W, c = (it % nct) * kCols + cg * 8;
#pragma unroll
  for (int i = 0; i < W / 16; ++i) {
    const std::int64_t r = r0 + rg + 16 * i;
    std::uint32_t f[8];
    unpack(buf[(rg + 16 * i) * 16 + cg], f);
    std::int32_t m = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const std::int32_t a = abs_bits(f[e], q.recipe.ignore_nan);
      m = max(m, a), cm[e] = max(cm[e], a);
    }
#pragma unroll
    for (int off = kLanes / 2; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    if (r >= q.rows) continue;
    const DevScale d = block_scale_of<K>(q.recipe, m);
    if (cg % kLanes == 0) store_scale(q.scales, r, c / W, d);
    __stcs(reinterpret_cast<uint2*>(q.codes + r * q.cols + c), cast8(q.recipe, d, f));
  }
}

// Column blocks of tile it: the scales from `scale` (one per tile column), the elements from buf.
template <int W>
__device__ __forceinline__ void column_cast(const QuantizeLaunch& q, std::int64_t it,
                                            const uint4* buf, const DevScale* scale) {
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const std::int64_t nct = q.cols / kCols, r0 = (it / nct) * W, c = (it % nct) * kCols + cg * 8;
  DevScale d[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) d[e] = scale[cg * 8 + e];
#pragma unroll
  for (int i = 0; i < W / 16; ++i) {
    const std::int64_t r = r0 + rg + 16 * i;
    if (r >= q.rows) continue;
    std::uint32_t f[8];
    unpack(buf[(rg + 16 * i) * 16 + cg], f);
    __stcs(reinterpret_cast<uint2*>(q.codes + r * q.cols + c), cast8_each(q.recipe, d, f));
  }
}

// Persistent CTAs over tiles of W rows x 128 columns, kStages<W> tiles in shared memory
// (cp.async): the next kStages<W> - 1 tiles of the CTA load while tile it is cast. Row blocks: W /
// 8 lanes of a half-warp; column blocks: the thread's rows, the other half-warp (xor 16), then the
// 8 warps in shared memory.
template <int W, ScaleKind K>
__global__ void __launch_bounds__(kThreads) dual_bf16_kernel(DualLaunch dl) {
  static_assert(kThreads == 256 && (W == 128 || W == 32), "16 chunks x 16 row lanes");
  extern __shared__ uint4 tiles[];  // kStages<W> x W x 16 chunks
  __shared__ std::int32_t colmax[kThreads / 32][kCols];
  __shared__ DevScale scale[kCols];
  const QuantizeLaunch& q = dl.row;
  const int cg = int(threadIdx.x % 16), warp = int(threadIdx.x / 32);
  const std::int64_t nct = q.cols / kCols, n = (q.rows + W - 1) / W * nct;
  constexpr int S = kStages<W>;
  const auto load_or_skip = [&](std::int64_t tile, int slot) {
    if (tile < n)
      load_tile<W>(q, tile, tiles + slot * W * 16);
    else
      commit_copies();  // an empty group keeps the count uniform
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) load_or_skip(blockIdx.x + std::int64_t(s) * gridDim.x, s);
  int k = 0;
  for (std::int64_t it = blockIdx.x; it < n; it += gridDim.x, ++k) {
    const uint4* buf = tiles + (k % S) * W * 16;
    load_or_skip(it + std::int64_t(S - 1) * gridDim.x, (k + S - 1) % S);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 1));  // tile it has landed
    __syncthreads();
    std::int32_t cm[8] = {};
    row_pass<W, K>(q, it, buf, cm);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      cm[e] = max(cm[e], __shfl_xor_sync(0xFFFFFFFFu, cm[e], 16));
      if (threadIdx.x % 32 < 16) colmax[warp][cg * 8 + e] = cm[e];
    }
    __syncthreads();
    if (threadIdx.x < kCols) {
      std::int32_t mm = 0;
#pragma unroll
      for (int w = 0; w < kThreads / 32; ++w) mm = max(mm, colmax[w][threadIdx.x]);
      const DevScale d = block_scale_of<K>(dl.col.recipe, mm);
      scale[threadIdx.x] = d;
      store_scale(dl.col.scales, (it / nct), (it % nct) * kCols + threadIdx.x, d);
    }
    __syncthreads();
    column_cast<W>(dl.col, it, buf, scale);
    __syncthreads();  // buf, colmax and scale are rewritten by the next iteration
  }
}

template <int W, ScaleKind K>
void launch_dual_kernel(const DualLaunch& dl) {
  const QuantizeLaunch& q = dl.row;
  const auto kernel = dual_bf16_kernel<W, K>;
  const int smem = kStages<W> * W * 16 * int(sizeof(uint4));
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int device = 0, sms = 0, per_sm = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  FP8REF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FP8REF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  const std::int64_t tiles = (q.rows + W - 1) / W * (q.cols / kCols);
  const std::int64_t resident = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  kernel<<<grid_of(tiles < resident ? tiles : resident, q.max_blocks), kThreads, smem, q.stream>>>(
      dl);
}

}  // namespace

void launch_dual_bf16(const DualLaunch& dl) {
  with_scale_kind(dl.row.recipe.kind, [&](auto kind) {
    if (dl.row.block_w == 32)
      launch_dual_kernel<32, decltype(kind)::value>(dl);
    else
      launch_dual_kernel<128, decltype(kind)::value>(dl);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
