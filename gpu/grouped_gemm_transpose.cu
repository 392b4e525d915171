// W stored `nk` for dgrad (docs/gpu_gemm.md §1): dgrad reduces over W's N, and FP8 wgmma reads
// its shared-memory operands K-major only (the reduction dimension contiguous), so the kernel
// reads W as (G, K, N); W stored (G, N, K), the forward's layout, is first transposed by the
// launcher (gpu/grouped_gemm.cpp) into stream-ordered scratch with launch_fp8_transpose
// (gpu/grouped_gemm_kernels.h). A byte transpose: exact, every code as it was. Each CTA moves a
// 64 × 64 byte tile through shared memory: 16-byte loads of the input's rows, 16-byte stores of
// the output's.
#include <cstdint>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kTile = 64, kThreads = 256;  // a thread: 16 bytes of a tile row in and out
constexpr int kPitch = kTile + 16;         // shared row pitch: 16-byte aligned rows, banks spread

// Tile (blockIdx.y, blockIdx.x) of matrix blockIdx.z: in (rows, cols) -> out (cols, rows).
__global__ void __launch_bounds__(kThreads)
    fp8_transpose_kernel(const std::uint8_t* in, std::uint8_t* out, std::int64_t rows,
                         std::int64_t cols) {
  __shared__ __align__(16) std::uint8_t tile[kTile][kPitch];
  const int t = int(threadIdx.x), tr = t / 4, tc = (t % 4) * 16;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kTile, c0 = std::int64_t(blockIdx.x) * kTile;
  const std::int64_t mat = std::int64_t(blockIdx.z) * rows * cols;
  *reinterpret_cast<uint4*>(&tile[tr][tc]) =
      *reinterpret_cast<const uint4*>(in + mat + (r0 + tr) * cols + c0 + tc);
  __syncthreads();
  // Output row c0 + tr holds input column c0 + tr: bytes tc .. tc + 15 are input rows r0 + tc ..
  std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = std::uint32_t(tile[tc + 4 * i][tr]) | std::uint32_t(tile[tc + 4 * i + 1][tr]) << 8 |
           std::uint32_t(tile[tc + 4 * i + 2][tr]) << 16 |
           std::uint32_t(tile[tc + 4 * i + 3][tr]) << 24;
  *reinterpret_cast<uint4*>(out + mat + (c0 + tr) * rows + r0 + tc) = uint4{w[0], w[1], w[2], w[3]};
}

}  // namespace

void launch_fp8_transpose(const std::uint8_t* in, std::uint8_t* out, std::int64_t batches,
                          std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (batches == 0 || rows == 0 || cols == 0) return;
  const dim3 grid(unsigned(cols / kTile), unsigned(rows / kTile), unsigned(batches));
  fp8_transpose_kernel<<<grid, kThreads, 0, stream>>>(in, out, rows, cols);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
