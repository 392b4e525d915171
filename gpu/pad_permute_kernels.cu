// Data-movement kernels (device code; gpu/pad_permute.cpp checks the arguments): row gathers by
// an index map (16-byte copies when rows allow), an MN-major column gather, and the weighted
// combine with one thread per output element in the fixed slot order.
#include <cstdint>

#include "gpu/device.h"
#include "gpu/pad_permute_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kThreads = 256;

unsigned grid_of(std::int64_t want, int max_blocks) {
  std::int64_t g = want < 1 ? 1 : (want > (1 << 20) ? (1 << 20) : want);
  if (max_blocks > 0 && g > max_blocks) g = max_blocks;
  return unsigned(g);
}

// Rows as W-byte words (W = 16, 4 or 1 by the alignment of row_bytes and the pointers).
template <class Word>
__global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const Word* in, std::int64_t row_words, const std::int64_t* map,
                       std::int64_t rows, Word* out) {
  const std::int64_t n = rows * row_words;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t o = i / row_words, w = i % row_words, src = map[o];
    Word v{};
    if (src >= 0) v = in[src * row_words + w];
    out[i] = v;
  }
}

__global__ void __launch_bounds__(kThreads)
    gather_columns_kernel(const std::uint32_t* in, std::int64_t in_stride, std::int64_t cols,
                          const std::int64_t* map, std::int64_t rows, std::uint32_t* out,
                          std::int64_t out_stride) {
  const std::int64_t n = cols * out_stride;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t c = i / out_stride, p = i % out_stride;
    out[i] = p < rows ? in[c * in_stride + map[p]] : 0u;
  }
}

__global__ void __launch_bounds__(kThreads)
    combine_kernel(const float* y, std::int64_t H, const std::int64_t* row_of, const float* prob,
                   std::int64_t tokens, std::int64_t k, bool fma, float* out) {
  const std::int64_t n = tokens * H;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / H, h = i % H;
    float acc = 0.0f;
    bool first = true;
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t r = row_of[t * k + j];
      if (r < 0) continue;
      const float p = prob[t * k + j], v = y[r * H + h];
      if (first)
        acc = __fmul_rn(p, v), first = false;
      else
        acc = fma ? __fmaf_rn(p, v, acc) : __fadd_rn(acc, __fmul_rn(p, v));
    }
    out[i] = acc;
  }
}

}  // namespace

void launch_gather_rows(const void* in, std::int64_t row_bytes, const std::int64_t* map,
                        std::int64_t rows, void* out, int max_blocks, cudaStream_t stream) {
  const auto addr = reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out);
  const auto launch = [&](auto word) {
    using Word = decltype(word);
    const std::int64_t words = row_bytes / std::int64_t(sizeof(Word));
    gather_rows_kernel<Word>
        <<<grid_of((rows * words + kThreads - 1) / kThreads, max_blocks), kThreads, 0, stream>>>(
            static_cast<const Word*>(in), words, map, rows, static_cast<Word*>(out));
  };
  if (row_bytes % 16 == 0 && addr % 16 == 0)
    launch(uint4{});
  else if (row_bytes % 4 == 0 && addr % 4 == 0)
    launch(std::uint32_t{});
  else
    launch(std::uint8_t{});
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_gather_columns(const std::uint32_t* in, std::int64_t in_stride, std::int64_t cols,
                           const std::int64_t* map, std::int64_t rows, std::uint32_t* out,
                           std::int64_t out_stride, int max_blocks, cudaStream_t stream) {
  gather_columns_kernel<<<grid_of((cols * out_stride + kThreads - 1) / kThreads, max_blocks),
                          kThreads, 0, stream>>>(in, in_stride, cols, map, rows, out, out_stride);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_combine(const float* y, std::int64_t H, const std::int64_t* row_of, const float* prob,
                    std::int64_t tokens, std::int64_t k, bool fma, float* out, int max_blocks,
                    cudaStream_t stream) {
  combine_kernel<<<grid_of((tokens * H + kThreads - 1) / kThreads, max_blocks), kThreads, 0,
                   stream>>>(y, H, row_of, prob, tokens, k, fma, out);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
