// The K-grouped wgrad kernel on Hopper tensor cores (sm_90a): dW[g] = C[g] + dY_gᵀ·X_g with the
// tokens of group g as the reduction, read from token-contiguous dYᵀ and Xᵀ (the K-major operands
// FP8 wgmma takes). One CTA per 128×128 tile of dW[g]; 128-token blocks from the group's start,
// the last one zero-filled past the group's end; per block T = four chained wgmma k32 steps from
// +0, promoted as hopper_promoted_blockwise (acc = fmaf(RN(sdy·sx), T, acc), a scale per row and
// column of the tile) or hopper_promoted_tensorwise; then dW = RN_out(RN(C + acc)); an empty
// group gives C (docs/gpu_gemm.md §3).
#include <cuda_bf16.h>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/wgmma_sm90.cuh"

namespace fp8ref::gpu::detail {
namespace {

using namespace sm90;

constexpr int kStages = 5;
constexpr int kThreads = 256;
constexpr int kTileBytes = 128 * 128;
constexpr int kStageBytes = 2 * kTileBytes;
constexpr int kScaleFloats =
    2 * 128;  // the dY scales of the tile's rows, the X scales of its columns
constexpr int kSmemBytes = kStages * (kStageBytes + kScaleFloats * 4) + 1024;

struct WgradTile {
  int g;
  std::int64_t n0, k0;  // first row (n) and column (k) of the tile in dW[g]
  std::int64_t tok0, tok_end;
  int nkb;
};

__device__ __forceinline__ WgradTile wgrad_tile(const WgradKernelArgs& p) {
  const std::int64_t kt = p.K / 128, per_group = (p.N / 128) * kt;
  WgradTile t;
  t.g = int(blockIdx.x / per_group);
  const std::int64_t i = blockIdx.x % per_group;
  t.n0 = (i / kt) * 128, t.k0 = (i % kt) * 128;
  t.tok0 = p.start[t.g], t.tok_end = p.end[t.g];
  t.nkb = int((t.tok_end - t.tok0 + 127) / 128);
  return t;
}

// Token block kb of dYᵀ rows n0.. and Xᵀ rows k0.. into `stage` (16-token chunks past the group's
// end zero-filled), with the block's scales.
__device__ __forceinline__ void load_wgrad_stage(const WgradKernelArgs& p, const WgradTile& t,
                                                 std::uint8_t* smem, float* scales, int kb,
                                                 int stage) {
  std::uint8_t* sa = smem + stage * kStageBytes;
  std::uint8_t* sb = sa + kTileBytes;
  const std::int64_t tok = t.tok0 + std::int64_t(kb) * 128;
#pragma unroll
  for (int i = 0; i < kTileBytes / 16 / kThreads; ++i) {
    const int q = int(threadIdx.x) + i * kThreads, r = q >> 3, chunk = q & 7;
    const int swz = r * 128 + ((chunk ^ (r & 7)) << 4);
    const bool ok = tok + chunk * 16 < t.tok_end;
    const std::int64_t col = ok ? tok + chunk * 16 : 0;
    cp_async16(smem_u32(sa + swz), p.dy_t + (t.n0 + r) * p.M + col, ok);
    cp_async16(smem_u32(sb + swz), p.x_t + (t.k0 + r) * p.M + col, ok);
  }
  if (p.blockwise) {
    const std::int64_t row = p.blk0[t.g] + kb;
    const int j = int(threadIdx.x);  // 0..127: dY scales of rows n0 + j; 128..255: X scales
    const float* src =
        j < 128 ? p.scale_dy + row * p.N + t.n0 + j : p.scale_x + row * p.K + t.k0 + (j - 128);
    cp_async4(smem_u32(scales + stage * kScaleFloats + j), src, true);
  }
}

// acc += RN(sdy[row]·sx[col]) · T elementwise, rows local_row and local_row + 8.
__device__ __forceinline__ void promote_blockwise(const float* s, const float (&t)[64],
                                                  float (&acc)[64], int local_row) {
  const int lane = threadIdx.x % 32;
  const float r0 = s[local_row], r1 = s[local_row + 8];
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float sx = s[128 + j * 8 + (lane % 4) * 2 + e];
      acc[j * 4 + e] = __fmaf_rn(__fmul_rn(r0, sx), t[j * 4 + e], acc[j * 4 + e]);
      acc[j * 4 + 2 + e] = __fmaf_rn(__fmul_rn(r1, sx), t[j * 4 + 2 + e], acc[j * 4 + 2 + e]);
    }
}

// dW = RN_out(RN(C + acc')), acc' = acc (blockwise) or RN(acc·RN(sdy·sx)); C itself for an
// empty group (f32: every bit of C, -0 and NaN payloads included).
__device__ __forceinline__ void store_wgrad(const WgradKernelArgs& p, const WgradTile& t,
                                            const float (&acc)[64], int local_row) {
  const int lane = threadIdx.x % 32;
  const float ts = p.blockwise ? 1.0f : __fmul_rn(p.scale_dy[0], p.scale_x[0]);
  const std::int64_t base = std::int64_t(t.g) * p.N * p.K;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::int64_t row = t.n0 + local_row + 8 * half;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const std::int64_t idx = base + row * p.K + t.k0 + j * 8 + (lane % 4) * 2;
      const float2 c = *reinterpret_cast<const float2*>(p.c + idx);
      float v[2] = {c.x, c.y};
      if (t.nkb > 0)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float a = acc[j * 4 + half * 2 + e];
          v[e] = __fadd_rn(v[e], p.blockwise ? a : __fmul_rn(a, ts));
        }
      if (p.out_bf16)
        static_cast<__nv_bfloat162*>(p.dw)[idx / 2] = __floats2bfloat162_rn(v[0], v[1]);
      else
        reinterpret_cast<float2*>(p.dw)[idx / 2] = make_float2(v[0], v[1]);
    }
  }
}

template <bool AE5, bool BE5>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_wgrad_kernel(const __grid_constant__ WgradKernelArgs p) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  float* scales = reinterpret_cast<float*>(smem + kStages * kStageBytes);
  const WgradTile t = wgrad_tile(p);
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < t.nkb) load_wgrad_stage(p, t, smem, scales, s, s);
    cp_async_commit();
  }
  float acc[64], d[64];  // d: written by the first k32 step of each block (scale-d 0)
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  for (int kb = 0; kb < t.nkb; ++kb) {
    const int stage = kb % kStages;
    cp_async_wait<kStages - 2>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const std::uint32_t a_base = smem_u32(smem + stage * kStageBytes) + wg * 64 * 128;
    const std::uint32_t b_base = smem_u32(smem + stage * kStageBytes + kTileBytes);
    fence_regs(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wgmma_k32<128, AE5, BE5>(d, smem_desc(a_base + j * 32), smem_desc(b_base + j * 32), j);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // While the tensor cores run: refill the stage every warp finished reading at kb - 1.
    if (kb + kStages - 1 < t.nkb)
      load_wgrad_stage(p, t, smem, scales, kb + kStages - 1, (kb + kStages - 1) % kStages);
    cp_async_commit();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_regs(d);
    if (p.blockwise) {
      promote_blockwise(scales + stage * kScaleFloats, d, acc, local_row);
    } else {
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = __fadd_rn(acc[i], d[i]);
    }
  }
  store_wgrad(p, t, acc, local_row);
}

template <bool AE5, bool BE5>
void launch_wgrad_typed(const WgradKernelArgs& args, cudaStream_t stream) {
  const auto kernel = grouped_wgrad_kernel<AE5, BE5>;
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const std::int64_t blocks = std::int64_t(args.groups) * (args.N / 128) * (args.K / 128);
  kernel<<<dim3(unsigned(blocks)), kThreads, kSmemBytes, stream>>>(args);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_grouped_wgrad(const WgradKernelArgs& args, cudaStream_t stream) {
  if (!args.dy_e5m2 && !args.x_e5m2) return launch_wgrad_typed<false, false>(args, stream);
  if (!args.dy_e5m2 && args.x_e5m2) return launch_wgrad_typed<false, true>(args, stream);
  if (args.dy_e5m2 && !args.x_e5m2) return launch_wgrad_typed<true, false>(args, stream);
  launch_wgrad_typed<true, true>(args, stream);
}

}  // namespace fp8ref::gpu::detail
