// Data-movement kernels (device code; gpu/pad_permute.cpp checks the arguments): row gathers by
// an index map (a warp per row, 16-byte copies when rows allow), an MN-major column gather, and
// the weighted combine with one thread per output element in the fixed slot order.
#include <cstdint>
#include <type_traits>

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

// Rows as W-byte words (W = 16, 4 or 1 by the alignment of row_bytes and the pointers): a warp
// per output row (grid-stride over rows), its lanes over the row's words, kBatch words a lane
// loaded before any is stored (64 bytes a lane in flight for 16-byte words).
constexpr int kBatch = 4;

template <class Word>
__global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const Word* in, std::int64_t row_words, const std::int64_t* map,
                       std::int64_t rows, Word* out) {
  const int lane = int(threadIdx.x % 32);
  const std::int64_t nwarps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t o = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; o < rows;
       o += nwarps) {
    const std::int64_t src = map[o];
    Word* dst = out + o * row_words;
    const Word* from = in + (src >= 0 ? src : 0) * row_words;
    for (std::int64_t w0 = lane; w0 < row_words; w0 += 32 * kBatch) {
      Word v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const std::int64_t w = w0 + 32 * j;
        v[j] = src >= 0 && w < row_words ? from[w] : Word{};
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        if (w0 + 32 * j < row_words) dst[w0 + 32 * j] = v[j];
    }
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

// A CTA per token (grid-stride), its threads over h in groups of V (4 with float4 access when H
// and the pointers allow, else 1); each output summed over the token's slots in ascending order,
// the slots taken kBatch at a time with their rows loaded before any is added.
template <int V>
__global__ void __launch_bounds__(kThreads)
    combine_kernel(const float* y, std::int64_t H, const std::int64_t* row_of, const float* prob,
                   std::int64_t tokens, std::int64_t k, bool fma, float* out) {
  using Vec = std::conditional_t<V == 4, float4, float>;
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    for (std::int64_t h = std::int64_t(threadIdx.x) * V; h < H; h += std::int64_t(blockDim.x) * V) {
      float acc[V] = {};
      bool first = true;
      for (std::int64_t j0 = 0; j0 < k; j0 += kBatch) {
        std::int64_t r[kBatch];
        Vec yv[kBatch];
        float p[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) r[j] = j0 + j < k ? row_of[t * k + j0 + j] : -1;
#pragma unroll
        for (int j = 0; j < kBatch; ++j)
          if (r[j] >= 0)
            yv[j] = *reinterpret_cast<const Vec*>(y + r[j] * H + h), p[j] = prob[t * k + j0 + j];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          if (r[j] < 0) continue;
          const float* v = reinterpret_cast<const float*>(&yv[j]);
#pragma unroll
          for (int e = 0; e < V; ++e)
            acc[e] = first ? __fmul_rn(p[j], v[e])
                     : fma ? __fmaf_rn(p[j], v[e], acc[e])
                           : __fadd_rn(acc[e], __fmul_rn(p[j], v[e]));
          first = false;
        }
      }
      Vec res;
      float* rv = reinterpret_cast<float*>(&res);
#pragma unroll
      for (int e = 0; e < V; ++e) rv[e] = acc[e];
      *reinterpret_cast<Vec*>(out + t * H + h) = res;
    }
  }
}

}  // namespace

void launch_gather_rows(const void* in, std::int64_t row_bytes, const std::int64_t* map,
                        std::int64_t rows, void* out, int max_blocks, cudaStream_t stream) {
  const auto addr = reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out);
  const auto launch = [&](auto word) {
    using Word = decltype(word);
    const std::int64_t words = row_bytes / std::int64_t(sizeof(Word));
    gather_rows_kernel<Word><<<grid_of((rows + 7) / 8, max_blocks), kThreads, 0, stream>>>(
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
  const auto addr = reinterpret_cast<std::uintptr_t>(y) | reinterpret_cast<std::uintptr_t>(out);
  const unsigned grid = grid_of(tokens, max_blocks);
  if (H % 4 == 0 && addr % 16 == 0)
    combine_kernel<4><<<grid, kThreads, 0, stream>>>(y, H, row_of, prob, tokens, k, fma, out);
  else
    combine_kernel<1><<<grid, kThreads, 0, stream>>>(y, H, row_of, prob, tokens, k, fma, out);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
