// Token offsets at any token for the K-grouped wgrad (docs/gpu_gemm.md §1, §2): the kernel's TMA
// boxes start at a group's first token, and a box's global address must be 16-byte aligned (PTX
// ISA §5.5.3.1 "Bounding Box": "The address of the bounding Box must also be aligned to 16
// bytes"; one FP8 token is one byte of a dYᵀ / Xᵀ row; on the H200 a box at inner coordinate 1 or
// 17 stops the kernel with an illegal instruction), so where a group starts off a multiple of 16
// the launcher first copies the operands into rows where every group starts at a multiple of 16
// (128: gpu/grouped_gemm.cpp) with launch_wgrad_repack (gpu/grouped_gemm_kernels.h). Each thread
// writes one 16-byte chunk of an output row from two aligned 16-byte loads of the input row,
// funnel-shifted by the group's misalignment; the bytes past a group's end in its last chunk are
// the next group's tokens, which the wgrad kernel zeroes (zero_tail, token granularity).
#include <cstdint>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/grouped_wgrad_transpose.h"

namespace fp8ref::gpu::detail {
namespace {

// The 16 bytes of row `row` (m bytes, 16-byte aligned, m % 16 == 0) from byte `at` on, zero past m.
__device__ __forceinline__ uint4 bytes16(const std::uint8_t* row, std::int64_t at, std::int64_t m) {
  const std::int64_t a0 = at & ~std::int64_t(15);
  const int sh = int(at - a0);
  const uint4 zero{0, 0, 0, 0};
  const uint4 lo4 = a0 < m ? *reinterpret_cast<const uint4*>(row + a0) : zero;
  if (sh == 0) return lo4;
  const uint4 hi4 =
      a0 + 16 < m ? *reinterpret_cast<const uint4*>(row + a0 + 16) : uint4{0, 0, 0, 0};
  const std::uint32_t w[8] = {lo4.x, lo4.y, lo4.z, lo4.w, hi4.x, hi4.y, hi4.z, hi4.w};
  const int q = sh / 4, bits = (sh % 4) * 8;
  std::uint32_t o[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // o[i] = bytes 4i .. 4i + 3 from `at`: words q + i, q + i + 1
    std::uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (q == k) lo = w[i + k], hi = w[i + k + 1];
    o[i] = __funnelshift_r(lo, hi, bits);
  }
  return uint4{o[0], o[1], o[2], o[3]};
}

// Output chunk blockIdx.x·blockDim.x + threadIdx.x of rows blockIdx.y, + gridDim.y, ...
__global__ void wgrad_repack_kernel(const __grid_constant__ WgradRepackArgs p) {
  const std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, j = c * 16;
  if (j >= p.m_out) return;
  const int lo = aligned_group_of(p.to, p.groups, j);  // to[lo] <= j < to[lo + 1]
  const std::int64_t from = p.from[lo] + (j - p.to[lo]);
  for (std::int64_t r = blockIdx.y; r < p.rows_a + p.rows_b; r += gridDim.y) {
    const std::uint8_t* row = r < p.rows_a ? p.a + r * p.m : p.b + (r - p.rows_a) * p.m;
    *reinterpret_cast<uint4*>(p.out + r * p.m_out + j) = bytes16(row, from, p.m);
  }
}

}  // namespace

void launch_wgrad_repack(const WgradRepackArgs& args, cudaStream_t stream) {
  const std::int64_t chunks = args.m_out / 16, rows = args.rows_a + args.rows_b;
  if (chunks == 0 || rows == 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(unsigned((chunks + kThreads - 1) / kThreads),
                  unsigned(rows < 65535 ? rows : 65535));
  wgrad_repack_kernel<<<grid, kThreads, 0, stream>>>(args);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
