// Internal interface between gpu/pad_permute.cpp (plans, argument checks) and its kernels
// (gpu/pad_permute_kernels.cu). Not a public header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp8ref::gpu::detail {

// out row o = map[o] >= 0 ? in row map[o] : zero bytes, for o < rows.
void launch_gather_rows(const void* in, std::int64_t row_bytes, const std::int64_t* map,
                        std::int64_t rows, void* out, int max_blocks, cudaStream_t stream);
// out[c * out_stride + p] = p < rows ? in[c * in_stride + map[p]] : 0, for p < out_stride.
void launch_gather_columns(const std::uint32_t* in, std::int64_t in_stride, std::int64_t cols,
                           const std::int64_t* map, std::int64_t rows, std::uint32_t* out,
                           std::int64_t out_stride, int max_blocks, cudaStream_t stream);
// Weighted combine: row_of (tokens, k) permuted rows or -1.
void launch_combine(const float* y, std::int64_t H, const std::int64_t* row_of, const float* prob,
                    std::int64_t tokens, std::int64_t k, bool fma, float* out, int max_blocks,
                    cudaStream_t stream);

}  // namespace fp8ref::gpu::detail
