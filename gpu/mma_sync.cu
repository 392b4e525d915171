// mma.sync FP8 tiles (mma_sync.h). Fragment layout of m16n8k32 with 8-bit A/B (PTX ISA "Matrix
// Fragments for mma.m16n8k32"), lane = 4·group + tig:
//   A: a[0..3] row g,   k 4·tig + 0..3      a[4..7]  row g+8, k 4·tig + 0..3
//      a[8..11] row g,  k 16 + 4·tig + 0..3 a[12..15] row g+8, k 16 + 4·tig + 0..3
//   B: b[0..3] n g, k 4·tig + 0..3          b[4..7] n g, k 16 + 4·tig + 0..3
//   C/D: c0 (g, 2·tig), c1 (g, 2·tig+1), c2 (g+8, 2·tig), c3 (g+8, 2·tig+1)
// Four consecutive codes pack into one 32-bit register, the lowest k in the lowest byte.
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/mma_sync.h"

namespace fp8ref::gpu {

namespace {

__device__ __forceinline__ std::uint32_t load4(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

template <int FA, int FB>  // 0 = e4m3, 1 = e5m2
__global__ void mma_sync_tiles_kernel(const std::uint8_t* __restrict__ a,
                                      const std::uint8_t* __restrict__ b,
                                      const float* __restrict__ c, float* __restrict__ d,
                                      std::size_t tiles) {
  const std::size_t t = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (t >= tiles) return;  // whole warps only: blockDim.x is a multiple of 32
  const int lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  const std::uint8_t* A = a + t * (kMmaSyncM * kMmaSyncKDepth);
  const std::uint8_t* B = b + t * (kMmaSyncN * kMmaSyncKDepth);
  const float* C = c + t * (kMmaSyncM * kMmaSyncN);
  float* D = d + t * (kMmaSyncM * kMmaSyncN);
  const std::uint32_t a0 = load4(A + g * 32 + 4 * tig), a1 = load4(A + (g + 8) * 32 + 4 * tig);
  const std::uint32_t a2 = load4(A + g * 32 + 16 + 4 * tig),
                      a3 = load4(A + (g + 8) * 32 + 16 + 4 * tig);
  const std::uint32_t b0 = load4(B + g * 32 + 4 * tig), b1 = load4(B + g * 32 + 16 + 4 * tig);
  const float c0 = C[g * 8 + 2 * tig], c1 = C[g * 8 + 2 * tig + 1];
  const float c2 = C[(g + 8) * 8 + 2 * tig], c3 = C[(g + 8) * 8 + 2 * tig + 1];
  float d0, d1, d2, d3;
#define FP8REF_MMA(TA, TB)                                                                        \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB                                 \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"                 \
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)                                           \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), \
                 "f"(c3))
  if constexpr (FA == 0 && FB == 0)
    FP8REF_MMA("e4m3", "e4m3");
  else if constexpr (FA == 0 && FB == 1)
    FP8REF_MMA("e4m3", "e5m2");
  else if constexpr (FA == 1 && FB == 0)
    FP8REF_MMA("e5m2", "e4m3");
  else
    FP8REF_MMA("e5m2", "e5m2");
#undef FP8REF_MMA
  D[g * 8 + 2 * tig] = d0;
  D[g * 8 + 2 * tig + 1] = d1;
  D[(g + 8) * 8 + 2 * tig] = d2;
  D[(g + 8) * 8 + 2 * tig + 1] = d3;
}

}  // namespace

void mma_sync_fp8_tiles(Format fa, Format fb, const std::uint8_t* a, const std::uint8_t* b,
                        const float* c, float* d, std::size_t tiles, cudaStream_t stream) {
  if ((fa != Format::e4m3 && fa != Format::e5m2) || (fb != Format::e4m3 && fb != Format::e5m2))
    throw std::invalid_argument("mma_sync_fp8_tiles: operands must be e4m3 or e5m2");
  if (tiles == 0) return;
  constexpr int kWarps = 4;
  const std::size_t blocks = (tiles + kWarps - 1) / kWarps;
  const dim3 grid(static_cast<unsigned>(blocks)), block(32 * kWarps);
  const int key = (fa == Format::e5m2 ? 2 : 0) + (fb == Format::e5m2 ? 1 : 0);
  switch (key) {
    case 0: mma_sync_tiles_kernel<0, 0><<<grid, block, 0, stream>>>(a, b, c, d, tiles); break;
    case 1: mma_sync_tiles_kernel<0, 1><<<grid, block, 0, stream>>>(a, b, c, d, tiles); break;
    case 2: mma_sync_tiles_kernel<1, 0><<<grid, block, 0, stream>>>(a, b, c, d, tiles); break;
    default: mma_sync_tiles_kernel<1, 1><<<grid, block, 0, stream>>>(a, b, c, d, tiles); break;
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("mma_sync_fp8_tiles launch: ") + cudaGetErrorString(err));
}

}  // namespace fp8ref::gpu
