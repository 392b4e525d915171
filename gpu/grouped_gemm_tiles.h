// The tile widths the grouped GEMM launcher picks (gpu/grouped_gemm.cpp), with no CUDA include:
// the fuzz campaign names its `wgrad_tile:*` classes by them also in builds without the GPU
// library (tools/campaign/gpu_gemm_case.cpp).
#pragma once

#include <cstdint>

namespace fp8ref::gpu {

// The columns of dW[g] one wgrad tile spans at this K (docs/gpu_gemm.md §2): 256 where K is a
// multiple of 256 (two 128-column halves a block, fewer bytes loaded per product than 192); else
// 192 where K is a multiple of 192 or large enough that the masked columns of the last tile cost
// less than the wider tile saves; else 128. The same bits whichever.
constexpr int grouped_gemm_wgrad_block_k(std::int64_t K) {
  return K % 256 == 0 ? 256 : K % 192 == 0 || K >= 2048 ? 192 : 128;
}

}  // namespace fp8ref::gpu
