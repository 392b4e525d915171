// The K-grouped wgrad kernel on Hopper tensor cores (sm_90a): dW[g] = C[g] + dY_gᵀ·X_g with the
// tokens of group g as the reduction, read by TMA from token-contiguous dYᵀ and Xᵀ (the K-major
// operands FP8 wgmma takes) through the warp-specialised pipeline of gpu/tma_pipeline_sm90.cuh.
// Persistent CTAs walk the 128×128 tiles of every dW[g], the groups with most tokens first;
// 128-token blocks from the group's start, the 16-token chunks of the last one past the group's
// end zeroed in shared memory before the tensor cores read them; per block T = four chained wgmma
// k32 steps from +0, promoted as hopper_promoted_blockwise (acc = fmaf(RN(sdy·sx), T, acc), a
// scale per row and column of the tile) or hopper_promoted_tensorwise; then dW = RN_out(RN(C +
// acc)); an empty group gives C (docs/gpu_gemm.md §3).
#include <cuda_bf16.h>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/tensor_map.h"
#include "gpu/tma_pipeline_sm90.cuh"

namespace fp8ref::gpu::detail {
namespace {

using namespace sm90;

struct WgradTmaParams {
  CUtensorMap map_dy, map_x;  // dYᵀ (N, M), Xᵀ (K, M): rows of tokens
  WgradKernelArgs args;
};

// Stages of a 128 (n) × 128 token dYᵀ tile, a 128 (k) × 128 token Xᵀ tile, and the block's
// scales: 128 of dY (the tile's rows) then 128 of X (its columns).
using Ring = StageRing<128 * 128, 128 * 128, 6, 256>;

struct WgradTile {
  int g;
  std::int32_t n0, k0;  // first row (n) and column (k) of the tile in dW[g]
  std::int32_t tok0, tok_end;
  int nkb;
};

__device__ __forceinline__ WgradTile wgrad_tile(const WgradKernelArgs& p, std::int64_t tile) {
  const std::int64_t kt = p.K / 128, per_group = (p.N / 128) * kt;
  WgradTile t;
  t.g = p.order[tile / per_group];
  const std::int64_t i = tile % per_group;
  t.n0 = std::int32_t(i / kt) * 128, t.k0 = std::int32_t(i % kt) * 128;
  t.tok0 = p.start[t.g], t.tok_end = p.end[t.g];
  t.nkb = (t.tok_end - t.tok0 + 127) / 128;
  return t;
}

// The producer warp: at a tile's start the lanes prefetch its 128 rows of C into L2 (the epilogue
// reads them); per token block, lane 0 loads both tiles by TMA (tokens past M read zeros; tokens
// of the next group are zeroed by the consumers); blockwise, the lanes copy the block's 128 dY
// scales and 128 X scales.
__device__ void produce(const WgradTmaParams& p, const Ring& s, std::int64_t total) {
  const WgradKernelArgs& a = p.args;
  const int lane = int(threadIdx.x % 32);
  if (lane == 0) tma_prefetch_map(&p.map_dy), tma_prefetch_map(&p.map_x);
  std::uint32_t it = 0;
  for (std::int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const WgradTile t = wgrad_tile(a, tile);
#pragma unroll
    for (int i = 0; i < 4; ++i)  // 128 f32 = 512 contiguous bytes per row
      prefetch_l2(a.c + (std::int64_t(t.g) * a.N + t.n0 + lane + 32 * i) * a.K + t.k0, 512);
    for (int kb = 0; kb < t.nkb; ++kb, ++it) {
      const int st = s.stage(it);
      const std::int32_t tok = t.tok0 + kb * 128;
      s.wait_empty(it);
      if (lane == 0) {
        mbar_arrive_expect_tx(s.full(st), Ring::kStageBytes);
        tma_load_2d(s.a_tile(st), &p.map_dy, tok, t.n0, s.full(st));
        tma_load_2d(s.b_tile(st), &p.map_x, tok, t.k0, s.full(st));
      }
      if (!a.blockwise) continue;
      const std::int64_t row = a.blk0[t.g] + kb;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = lane + 32 * i;
        cp_async4(smem_u32(s.scales(st) + j), a.scale_dy + row * a.N + t.n0 + j, true);
        cp_async4(smem_u32(s.scales(st) + 128 + j), a.scale_x + row * a.K + t.k0 + j, true);
      }
      cp_async_arrive_noinc(s.full(st));
    }
  }
}

// The last block of a group that ends inside it: zero the 16-token chunks past the end in both
// tiles (they hold the next group's tokens or padding), then make the writes visible to the
// tensor cores (async proxy) and wait for both consumer warpgroups.
__device__ __forceinline__ void zero_tail(const Ring& s, int st, int valid_tokens) {
  const int r = threadIdx.x % 128;
  const std::uint32_t tile = threadIdx.x < 128 ? s.a_tile(st) : s.b_tile(st);
  for (int chunk = valid_tokens / 16; chunk < 8; ++chunk)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(tile + r * 128 +
                                                                    ((chunk ^ (r & 7)) << 4)),
                 "r"(0)
                 : "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

// acc += RN(sdy[row]·sx[col]) · T elementwise, rows local_row and local_row + 8.
__device__ __forceinline__ void promote_blockwise(const float* s, const float (&t)[64],
                                                  float (&acc)[64], int local_row) {
  const int lane = threadIdx.x % 32;
  const float r0 = s[local_row], r1 = s[local_row + 8];
  const float2* sx2 = reinterpret_cast<const float2*>(s + 128 + (lane % 4) * 2);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float2 x = sx2[j * 4];  // columns j·8 + (lane % 4)·2 + {0, 1}
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float sx = e ? x.y : x.x;
      acc[j * 4 + e] = __fmaf_rn(__fmul_rn(r0, sx), t[j * 4 + e], acc[j * 4 + e]);
      acc[j * 4 + 2 + e] = __fmaf_rn(__fmul_rn(r1, sx), t[j * 4 + 2 + e], acc[j * 4 + 2 + e]);
    }
  }
}

// dW = RN_out(RN(C + acc')), acc' = acc (blockwise) or RN(acc·RN(sdy·sx)); C itself for an
// empty group (f32: every bit of C, -0 and NaN payloads included). The thread's 64 values of C are
// loaded before the first store, so that the loads are in flight together (a load after a store
// to dW, which might alias, would wait for it).
__device__ __forceinline__ void store_wgrad(const WgradKernelArgs& p, const WgradTile& t,
                                            const float (&acc)[64], int local_row) {
  const int lane = threadIdx.x % 32;
  const float ts = p.blockwise ? 1.0f : __fmul_rn(p.scale_dy[0], p.scale_x[0]);
  const std::int64_t base =
      std::int64_t(t.g) * p.N * p.K + (t.n0 + local_row) * p.K + t.k0 + (lane % 4) * 2;
  float2 c[2][16];
#pragma unroll
  for (int half = 0; half < 2; ++half)
#pragma unroll
    for (int j = 0; j < 16; ++j)
      c[half][j] = *reinterpret_cast<const float2*>(p.c + base + 8 * half * p.K + j * 8);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const std::int64_t idx = base + 8 * half * p.K + j * 8;
      float v[2] = {c[half][j].x, c[half][j].y};
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

// The consumer warpgroups: per token block, wait for the stage, zero a group's tail, run T on
// it, promote (reading the stage's scales) and free it; the epilogue stores the tile while the
// producer already loads the next one.
template <bool AE5, bool BE5>
__device__ void consume(const WgradTmaParams& p, const Ring& s, std::int64_t total) {
  const WgradKernelArgs& a = p.args;
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;
  std::uint32_t it = 0;
  for (std::int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const WgradTile t = wgrad_tile(a, tile);
    float acc[64], d[64];  // d: written by the first k32 step of each block (scale-d 0)
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    for (int kb = 0; kb < t.nkb; ++kb, ++it) {
      const int st = s.stage(it), valid = t.tok_end - (t.tok0 + kb * 128);
      mbar_wait(s.full(st), s.parity(it));
      if (valid < 128) zero_tail(s, st, valid);
      const std::uint32_t a_base = s.a_tile(st) + wg * 64 * 128, b_base = s.b_tile(st);
      fence_regs(d);
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int j = 0; j < 4; ++j)
        wgmma_k32<128, AE5, BE5>(d, smem_desc(a_base + j * 32), smem_desc(b_base + j * 32), j);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      fence_regs(d);
      if (a.blockwise) {
        promote_blockwise(s.scales(st), d, acc, local_row);
      } else {
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = __fadd_rn(acc[i], d[i]);
      }
      s.release(it);
    }
    store_wgrad(a, t, acc, local_row);
  }
}

template <bool AE5, bool BE5>
__global__ void __launch_bounds__(kPipelineThreads, 1)
    grouped_wgrad_kernel(const __grid_constant__ WgradTmaParams p) {
  extern __shared__ std::uint8_t smem_raw[];
  const Ring s = Ring::at(smem_raw);
  const std::int64_t total = std::int64_t(p.args.groups) * (p.args.N / 128) * (p.args.K / 128);
  if (threadIdx.x == 0) s.init(p.args.blockwise);
  __syncthreads();
  if (threadIdx.x >= kConsumerThreads) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x < kConsumerThreads + 32) produce(p, s, total);
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    consume<AE5, BE5>(p, s, total);
  }
}

template <bool AE5, bool BE5>
void launch_wgrad_typed(const WgradKernelArgs& args, cudaStream_t stream) {
  WgradTmaParams p{};
  p.args = args;
  if (args.M > 0) {  // with no tokens no block is loaded: the maps stay empty
    p.map_dy = fp8_tile_map(args.dy_t, args.M, args.N, 128);
    p.map_x = fp8_tile_map(args.x_t, args.M, args.K, 128);
  }
  const auto kernel = grouped_wgrad_kernel<AE5, BE5>;
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Ring::kBytes));
  const std::int64_t tiles = std::int64_t(args.groups) * (args.N / 128) * (args.K / 128);
  const unsigned grid = unsigned(std::min<std::int64_t>(tiles, current_device_sm_count()));
  kernel<<<grid, kPipelineThreads, Ring::kBytes, stream>>>(p);
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
