// Row-major wgrad operands (docs/gpu_gemm.md §1, §2): dY (M, N) and X (M, K) become the
// token-contiguous dYᵀ and Xᵀ the wgrad kernel reads, straight in the aligned per-group layout
// (every group at a multiple of 128 tokens; gpu/grouped_wgrad_transpose.h says which byte goes
// where), in one pass over the tokens of groups. A byte transpose: exact, every code as it was.
// Each CTA moves a 64 × 64 byte tile through shared memory: 16-byte loads of input rows (a row is N
// or K bytes, multiples of 128, so any token's row is 16-byte aligned), 16-byte stores of output
// rows; the columns past a group's tokens are written as zeros (every scratch byte the kernel's
// TMA boxes read is written: the wgrad kernel zeroes those tokens anyway, zero_tail).
#include <algorithm>
#include <cstdint>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/grouped_wgrad_transpose.h"

namespace fp8ref::gpu::detail {
namespace {

static_assert(kWgradTransposeMaxGroups == kGemmMaxGroups);
static_assert(kWgradTransposeThreads == kWgradTransposeTile * kWgradTransposeTile / 16);

// Output column tile blockIdx.x; output row tiles blockIdx.y, + gridDim.y, ...
__global__ void __launch_bounds__(kWgradTransposeThreads)
    wgrad_transpose_kernel(const __grid_constant__ WgradTransposeArgs p) {
  __shared__ __align__(16) std::uint8_t tile[kWgradTransposeTile][kWgradTransposePitch];
  const std::int64_t row_tiles = (p.N + p.K) / kWgradTransposeTile;
  for (std::int64_t tf = blockIdx.y; tf < row_tiles; tf += gridDim.y) {
    wgrad_transpose_load(p, blockIdx.x, tf, int(threadIdx.x), tile);
    __syncthreads();
    wgrad_transpose_store(p, blockIdx.x, tf, int(threadIdx.x), tile);
    __syncthreads();  // the tile is rewritten by the next row tile's loads
  }
}

}  // namespace

void launch_wgrad_transpose(const WgradTransposeArgs& args, cudaStream_t stream) {
  const std::int64_t col_tiles = args.m_out / kWgradTransposeTile;
  const std::int64_t row_tiles = (args.N + args.K) / kWgradTransposeTile;
  if (col_tiles == 0 || row_tiles == 0) return;
  const dim3 grid(unsigned(col_tiles), unsigned(std::min<std::int64_t>(row_tiles, 65535)));
  wgrad_transpose_kernel<<<grid, kWgradTransposeThreads, 0, stream>>>(args);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
