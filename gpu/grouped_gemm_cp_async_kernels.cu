// The FP8 grouped GEMM kernel on Hopper tensor cores (sm_90a): cp.async into 128-byte-swizzled
// shared memory, a 5-stage pipeline with per-stage mbarriers, two warpgroups of wgmma.mma_async
// m64n128k32 (f32 accumulate) per 128×128 tile, and promotion into an f32 accumulator after every
// 128 of K in the order of the declared models (docs/gpu_gemm.md §3, docs/models.md): blockwise
//   acc = fmaf(RN(sa·sb), T_kb, acc)   (hopper_promoted_blockwise),
// rowwise / tensorwise acc = acc + T_kb, scales in the epilogue (hopper_promoted_rowwise a_then_b,
// hopper_promoted_tensorwise). T_kb = four chained wgmma k32 steps from +0. No atomics, no split-K.
#include <cuda_bf16.h>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/wgmma_sm90.cuh"

namespace fp8ref::gpu::detail {
namespace {
// (the previous pipeline, kept selectable until the TMA kernel passes the GPU suites)

using namespace sm90;

constexpr int kStages = 5;
constexpr int kThreads = 256;                           // two consumer warpgroups
constexpr int kTileBytes = kGemmBlockM * kGemmBlockK;   // one e4m3/e5m2 operand tile, 16 KiB
constexpr int kStageBytes = 2 * kTileBytes;             // A tile then B tile
constexpr int kScaleBytes = kStages * kGemmBlockM * 4;  // the A scales of each stage
// Per stage two mbarriers: `full` (every thread's copies landed), `empty` (every thread's
// warpgroup finished reading the stage).
constexpr int kSmemBytes = kStages * kStageBytes + kScaleBytes + 2 * kStages * 8 + 1024;
static_assert(kGemmBlockM == kGemmBlockN, "A and B tiles share one load loop");
static_assert(kGemmBlockK == 128, "one 128-byte swizzle row is one K block of FP8 codes");

// The tile of this CTA: group g, rows [row0, row_end) of A and Y, columns [n0, n0 + 128).
struct TileCoord {
  int g, tile_n;
  std::int64_t row0, row_end;
};
__device__ __forceinline__ bool find_tile(const GemmGroupTable& t, std::int64_t n_tiles,
                                          TileCoord& c) {
  const std::int64_t mt = blockIdx.x / n_tiles;
  c.tile_n = int(blockIdx.x % n_tiles);
  if (mt >= t.tile_prefix[t.count]) return false;
  int lo = 0, hi = t.count;  // largest g with tile_prefix[g] <= mt: the non-empty group holding mt
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (t.tile_prefix[mid] <= mt ? lo : hi) = mid;
  }
  c.g = lo;
  c.row0 = t.start[lo] + (mt - t.tile_prefix[lo]) * kGemmBlockM;
  c.row_end = min(c.row0 + kGemmBlockM, std::int64_t(t.end[lo]));
  return true;
}

// Issues the cp.async copies of K block kb into `stage`: A rows past the tile's group end are
// zero-filled (never read), B rows are the tile's 128 columns of B[g].
__device__ __forceinline__ void load_stage(const GemmKernelArgs& p, const TileCoord& c,
                                           std::uint8_t* smem, float* sa_smem, int kb, int stage) {
  std::uint8_t* sa = smem + stage * kStageBytes;
  std::uint8_t* sb = sa + kTileBytes;
  const std::int64_t k0 = std::int64_t(kb) * kGemmBlockK;
  const std::uint8_t* b = p.b + c.g * p.N * p.K + std::int64_t(c.tile_n) * kGemmBlockN * p.K;
#pragma unroll
  for (int i = 0; i < kTileBytes / 16 / kThreads; ++i) {
    const int q = int(threadIdx.x) + i * kThreads, r = q >> 3, chunk = q & 7;
    const int swz = r * 128 + ((chunk ^ (r & 7)) << 4);  // 128-byte swizzle: chunk ^ row % 8
    const std::int64_t row = c.row0 + r;
    const bool ok = row < c.row_end;
    cp_async16(smem_u32(sa + swz), p.a + (ok ? row : 0) * p.K + k0 + chunk * 16, ok);
    cp_async16(smem_u32(sb + swz), b + std::int64_t(r) * p.K + k0 + chunk * 16, true);
  }
  if (p.mode == GemmScaleMode::blockwise && threadIdx.x < kGemmBlockM) {
    const std::int64_t row = c.row0 + threadIdx.x;
    const bool ok = row < c.row_end;
    cp_async4(smem_u32(sa_smem + stage * kGemmBlockM + threadIdx.x),
              p.scale_a + (ok ? row : 0) * p.sa_row + kb, ok);
  }
}

// Y = the promoted f32 accumulator after the epilogue scales, rounded to bf16 or stored as f32;
// rows past the group end are not written.
__device__ __forceinline__ void store_tile(const GemmKernelArgs& p, const TileCoord& c,
                                           const float (&acc)[64], int local_row) {
  const int lane = threadIdx.x % 32;
  const std::int64_t col0 = std::int64_t(c.tile_n) * kGemmBlockN + (lane % 4) * 2;
  float ts = 0.0f;
  if (p.mode == GemmScaleMode::tensorwise) ts = __fmul_rn(p.scale_a[0], p.scale_b[c.g]);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::int64_t row = c.row0 + local_row + 8 * half;
    if (row >= c.row_end) continue;
    const float sa = p.mode == GemmScaleMode::rowwise ? p.scale_a[row] : 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const std::int64_t col = col0 + j * 8;
      float v[2] = {acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1]};
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (p.mode == GemmScaleMode::tensorwise) v[e] = __fmul_rn(v[e], ts);
        if (p.mode == GemmScaleMode::rowwise)  // a_then_b: RN(RN(acc·sa)·sb)
          v[e] = __fmul_rn(__fmul_rn(v[e], sa), p.scale_b[c.g * p.N + col + e]);
      }
      if (p.out_bf16) {
        auto* y = static_cast<__nv_bfloat162*>(p.y);
        y[(row * p.N + col) / 2] = __floats2bfloat162_rn(v[0], v[1]);
      } else {
        reinterpret_cast<float2*>(p.y)[(row * p.N + col) / 2] = make_float2(v[0], v[1]);
      }
    }
  }
}

// The pipeline of one CTA: stage kb % kStages holds K block kb. Every thread copies its part of
// a stage and the stage's `full` barrier completes when all copies landed; every thread arrives
// on `empty` once its warpgroup's wgmma on the stage finished, and a stage is refilled only after
// that. The two warpgroups therefore drift apart by up to a block instead of meeting at a barrier.
struct Pipeline {
  std::uint8_t* smem;
  float* sa_smem;
  std::uint32_t bars;  // full[kStages] then empty[kStages]
  __device__ std::uint32_t full(int s) const { return bars + 8 * s; }
  __device__ std::uint32_t empty(int s) const { return bars + 8 * (kStages + s); }
  // Copies block kb into its stage once the block kStages earlier in it was consumed.
  __device__ __forceinline__ void produce(const GemmKernelArgs& p, const TileCoord& c,
                                          int kb) const {
    const int s = kb % kStages;
    if (kb >= kStages) mbar_wait(empty(s), std::uint32_t(kb / kStages - 1) & 1);
    load_stage(p, c, smem, sa_smem, kb, s);
    cp_async_arrive_noinc(full(s));
  }
};

template <bool AE5, bool BE5>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_gemm_kernel(const __grid_constant__ GemmKernelArgs p) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  const Pipeline pipe{smem, reinterpret_cast<float*>(smem + kStages * kStageBytes),
                      smem_u32(smem + kStages * kStageBytes + kScaleBytes)};
  TileCoord c;
  if (!find_tile(p.groups, p.N / kGemmBlockN, c)) return;
  const int nkb = int(p.K / kGemmBlockK);
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;  // and local_row + 8 (wgmma D layout)
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s)
      mbar_init(pipe.full(s), kThreads), mbar_init(pipe.empty(s), kThreads);
  __syncthreads();
  for (int kb = 0; kb < kStages - 1 && kb < nkb; ++kb) pipe.produce(p, c, kb);
  float acc[64], t[64];  // t: written by the first k32 step of each block (scale-d 0)
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  const float* sb_tile = p.scale_b + c.g * p.sb_group + c.tile_n * p.sb_ntile;
  for (int kb = 0; kb < nkb; ++kb) {
    const int stage = kb % kStages;
    // The B scale is loaded before the tensor cores run, so its latency hides behind them.
    const float sb = p.mode == GemmScaleMode::blockwise ? sb_tile[kb * p.sb_kblock] : 0.0f;
    mbar_wait(pipe.full(stage), std::uint32_t(kb / kStages) & 1);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async -> wgmma reads
    const std::uint32_t a_base = smem_u32(smem + stage * kStageBytes) + wg * 64 * 128;
    const std::uint32_t b_base = smem_u32(smem + stage * kStageBytes + kTileBytes);
    fence_regs(t);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int j = 0; j < kGemmBlockK / 32; ++j)  // T_kb: four k32 steps chained from +0
      wgmma_k32<128, AE5, BE5>(t, smem_desc(a_base + j * 32), smem_desc(b_base + j * 32), j);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // While the tensor cores run: refill the stage of block kb - 1 and read this block's A scales.
    if (kb + kStages - 1 < nkb) pipe.produce(p, c, kb + kStages - 1);
    const float sa0 = pipe.sa_smem[stage * kGemmBlockM + local_row];
    const float sa1 = pipe.sa_smem[stage * kGemmBlockM + local_row + 8];
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_regs(t);
    mbar_arrive(pipe.empty(stage));
    if (p.mode == GemmScaleMode::blockwise) {
      const float s0 = __fmul_rn(sa0, sb), s1 = __fmul_rn(sa1, sb);
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = __fmaf_rn((i & 2) ? s1 : s0, t[i], acc[i]);
    } else {
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = __fadd_rn(acc[i], t[i]);
    }
  }
  store_tile(p, c, acc, local_row);
}

template <bool AE5, bool BE5>
void launch_typed(const GemmKernelArgs& args, cudaStream_t stream) {
  const auto kernel = grouped_gemm_kernel<AE5, BE5>;
  FP8REF_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const std::int64_t blocks =
      std::int64_t(args.groups.tile_prefix[args.groups.count]) * (args.N / kGemmBlockN);
  if (blocks == 0) return;
  kernel<<<dim3(unsigned(blocks)), kThreads, kSmemBytes, stream>>>(args);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_grouped_gemm_cp_async(const GemmKernelArgs& args, cudaStream_t stream) {
  if (!args.a_e5m2 && !args.b_e5m2) return launch_typed<false, false>(args, stream);
  if (!args.a_e5m2 && args.b_e5m2) return launch_typed<false, true>(args, stream);
  if (args.a_e5m2 && !args.b_e5m2) return launch_typed<true, false>(args, stream);
  launch_typed<true, true>(args, stream);
}

}  // namespace fp8ref::gpu::detail
