// The FP8 grouped GEMM kernel on Hopper tensor cores (sm_90a): cp.async into 128-byte-swizzled
// shared memory, a 5-stage pipeline, two warpgroups of wgmma.mma_async m64n128k32 (f32 accumulate)
// per 128×128 tile, and promotion into an f32 accumulator after every 128 of K in the order of
// the declared models (docs/gpu_gemm.md §3, docs/models.md): blockwise
//   acc = fmaf(RN(sa·sb), T_kb, acc)   (hopper_promoted_blockwise),
// rowwise / tensorwise acc = acc + T_kb, scales in the epilogue (hopper_promoted_rowwise a_then_b,
// hopper_promoted_tensorwise). T_kb = four chained wgmma k32 steps from +0. No atomics, no split-K.
#include <cuda_bf16.h>

#include "gpu/device.h"
#include "gpu/grouped_gemm_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kStages = 5;
constexpr int kThreads = 256;                          // two consumer warpgroups
constexpr int kTileBytes = kGemmBlockM * kGemmBlockK;  // one e4m3/e5m2 operand tile, 16 KiB
constexpr int kStageBytes = 2 * kTileBytes;            // A tile then B tile
constexpr int kSmemBytes = kStages * kStageBytes + kStages * kGemmBlockM * 4 + 1024;
static_assert(kGemmBlockM == kGemmBlockN, "A and B tiles share one load loop");
static_assert(kGemmBlockK == 128, "one 128-byte swizzle row is one K block of FP8 codes");

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared; `valid` false writes zeros without reading (src-size 0).
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async4(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// wgmma shared-memory descriptor, K-major, 128-byte swizzle: 8-row atoms 1024 bytes apart (SBO);
// the leading byte offset is unused for this layout (PTX ISA "Matrix Descriptor Format").
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr) {
  return std::uint64_t((addr & 0x3FFFF) >> 4) | std::uint64_t(1) << 16 |
         std::uint64_t(1024 >> 4) << 32 | std::uint64_t(1) << 62;
}

__device__ __forceinline__ void fence_regs(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define FP8REF_WGMMA_M64N128K32(TA, TB)                                                            \
  asm volatile(                                                                                    \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n128k32.f32." TA "." TB                                     \
      " {"                                                                                         \
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
      "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%"  \
      "47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"                         \
      "}, %64, %65, p, 1, 1;\n}\n"                                                                 \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63])                                                                                \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// D (64×128 f32) = A (64×32, smem) · B (128×32, smem)ᵀ + (scale_d ? D : 0).
template <bool AE5, bool BE5>
__device__ __forceinline__ void wgmma_k32(float (&d)[64], std::uint64_t desc_a,
                                          std::uint64_t desc_b, int scale_d) {
  if constexpr (!AE5 && !BE5)
    FP8REF_WGMMA_M64N128K32("e4m3", "e4m3");
  else if constexpr (!AE5 && BE5)
    FP8REF_WGMMA_M64N128K32("e4m3", "e5m2");
  else if constexpr (AE5 && !BE5)
    FP8REF_WGMMA_M64N128K32("e5m2", "e4m3");
  else
    FP8REF_WGMMA_M64N128K32("e5m2", "e5m2");
}

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

template <bool AE5, bool BE5>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_gemm_kernel(const __grid_constant__ GemmKernelArgs p) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  float* sa_smem = reinterpret_cast<float*>(smem + kStages * kStageBytes);
  TileCoord c;
  if (!find_tile(p.groups, p.N / kGemmBlockN, c)) return;
  const int nkb = int(p.K / kGemmBlockK);
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int local_row = wg * 64 + warp * 16 + lane / 4;  // and local_row + 8 (wgmma D layout)

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nkb) load_stage(p, c, smem, sa_smem, s, s);
    cp_async_commit();
  }
  float acc[64], t[64];  // t: written by the first k32 step of each block (scale-d 0)
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  const float* sb_tile = p.scale_b + c.g * p.sb_group + c.tile_n * p.sb_ntile;
  for (int kb = 0; kb < nkb; ++kb) {
    const int stage = kb % kStages;
    cp_async_wait<kStages - 2>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async -> wgmma reads
    __syncthreads();
    if (kb + kStages - 1 < nkb)  // refills the stage every warp finished reading at kb - 1
      load_stage(p, c, smem, sa_smem, kb + kStages - 1, (kb + kStages - 1) % kStages);
    cp_async_commit();
    // The B scale is loaded before the tensor cores run, so its latency hides behind them.
    const float sb = p.mode == GemmScaleMode::blockwise ? sb_tile[kb * p.sb_kblock] : 0.0f;
    const std::uint32_t a_base = smem_u32(smem + stage * kStageBytes) + wg * 64 * 128;
    const std::uint32_t b_base = smem_u32(smem + stage * kStageBytes + kTileBytes);
    fence_regs(t);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int j = 0; j < kGemmBlockK / 32; ++j)  // T_kb: four k32 steps chained from +0
      wgmma_k32<AE5, BE5>(t, smem_desc(a_base + j * 32), smem_desc(b_base + j * 32), j);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_regs(t);
    if (p.mode == GemmScaleMode::blockwise) {
      const float s0 = __fmul_rn(sa_smem[stage * kGemmBlockM + local_row], sb);
      const float s1 = __fmul_rn(sa_smem[stage * kGemmBlockM + local_row + 8], sb);
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

void launch_grouped_gemm(const GemmKernelArgs& args, cudaStream_t stream) {
  if (!args.a_e5m2 && !args.b_e5m2) return launch_typed<false, false>(args, stream);
  if (!args.a_e5m2 && args.b_e5m2) return launch_typed<false, true>(args, stream);
  if (args.a_e5m2 && !args.b_e5m2) return launch_typed<true, false>(args, stream);
  launch_typed<true, true>(args, stream);
}

}  // namespace fp8ref::gpu::detail
