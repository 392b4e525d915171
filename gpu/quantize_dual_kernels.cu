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

// A tile of W rows x 128 columns per iteration; thread (cg = tid % 16, rg = tid / 16) holds the
// chunk [8 cg, 8 cg + 8) of rows rg, rg + 16, ... (W / 16 rows). Row blocks: W / 8 lanes of a
// half-warp; column blocks: the thread's rows, the other half-warp (xor 16), then the 8 warps.
template <int W, ScaleKind K>
__global__ void __launch_bounds__(kThreads) dual_bf16_kernel(DualLaunch dl) {
  static_assert(kThreads == 256 && (W == 128 || W == 32), "16 chunks x 16 row lanes");
  constexpr int kRows = W / 16, kLanes = W / 8;
  __shared__ std::int32_t colmax[kThreads / 32][kCols];
  __shared__ DevScale scale[kCols];
  const QuantizeLaunch& q = dl.row;
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16), warp = int(threadIdx.x / 32);
  const std::int64_t nct = q.cols / kCols, ntr = (q.rows + W - 1) / W;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  for (std::int64_t it = blockIdx.x; it < ntr * nct; it += gridDim.x) {
    const std::int64_t r0 = (it / nct) * W, c = (it % nct) * kCols + cg * 8;
    uint4 v[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const std::int64_t r = r0 + rg + 16 * i;
      v[i] = r < q.rows ? __ldcs(reinterpret_cast<const uint4*>(x + r * q.cols + c))
                        : make_uint4(0, 0, 0, 0);
    }
    std::int32_t cm[8] = {};
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const std::int64_t r = r0 + rg + 16 * i;
      std::uint32_t f[8];
      const std::uint32_t w[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) f[2 * k] = w[k] << 16, f[2 * k + 1] = w[k] & 0xFFFF0000u;
      std::int32_t m = 0;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const std::int32_t a = abs_bits(f[e], q.recipe.ignore_nan);
        m = max(m, a);
        cm[e] = max(cm[e], a);
      }
#pragma unroll
      for (int off = kLanes / 2; off > 0; off >>= 1)
        m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      if (r >= q.rows) continue;
      const DevScale d = block_scale_of<K>(q.recipe, m);
      if (cg % kLanes == 0) store_scale(q.scales, r, c / W, d);
      __stcs(reinterpret_cast<uint2*>(q.codes + r * q.cols + c), cast8(q.recipe, d, f));
    }
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
      store_scale(dl.col.scales, r0 / W, (it % nct) * kCols + threadIdx.x, d);
    }
    __syncthreads();
    DevScale d[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) d[e] = scale[cg * 8 + e];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const std::int64_t r = r0 + rg + 16 * i;
      if (r >= q.rows) continue;
      std::uint32_t w[2] = {0, 0};
      const std::uint32_t u[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        const float lo = scaled(__uint_as_float(u[e / 2] << 16), d[e]);
        const float hi = scaled(__uint_as_float(u[e / 2] & 0xFFFF0000u), d[e + 1]);
        std::uint32_t code = cvt2(q.recipe.e4m3, hi, lo);
        if (q.recipe.nonsat) code = nonsat_fix(code & 0xFF, lo) | (nonsat_fix(code >> 8, hi) << 8);
        w[e / 4] |= code << (8 * (e % 4));
      }
      __stcs(reinterpret_cast<uint2*>(dl.col.codes + r * q.cols + c), make_uint2(w[0], w[1]));
    }
    __syncthreads();  // colmax and scale are reused by the next tile
  }
}

}  // namespace

void launch_dual_bf16(const DualLaunch& dl) {
  const QuantizeLaunch& q = dl.row;
  const std::int64_t w = q.block_w;
  const std::int64_t tiles = (q.rows + w - 1) / w * (q.cols / kCols);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (w == 32)
      dual_bf16_kernel<32, decltype(kind)::value>
          <<<grid_of(tiles, q.max_blocks), kThreads, 0, q.stream>>>(dl);
    else
      dual_bf16_kernel<128, decltype(kind)::value>
          <<<grid_of(tiles, q.max_blocks), kThreads, 0, q.stream>>>(dl);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
