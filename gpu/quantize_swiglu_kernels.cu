// SwiGLU then 1xW quantize of a merged bf16 gate/up (device code; the launcher gpu/quantize.cpp
// checks the arguments), docs/recipes.md "SwiGLU": h = RN(RN(g / RN(1 + e)) * up) with e the
// correctly rounded f32 exp(-g), then the 1xW blocks of h as the row kernel quantizes them.
// e comes from a table of __double2float_rn(exp(-(double)g)) over the bf16 g whose result is
// neither 1, 0 nor +Inf, filled once per device by the same expression the kernel used to
// evaluate per element, so the bits are those of the f64 evaluation.
#include <cstdint>
#include <mutex>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

// Table of e(g) for |g| in [2^-25, 2^7): bf16 patterns a = |g| in [0x3300, 0x4300), both signs,
// index (sign << 12) | (a - 0x3300). Outside it e is known without an exp: |g| < 2^-25 gives
// exp(-g) in (1 - 2^-25, 1 + 2^-25), which rounds to 1 (the f32 neighbours of 1 are 1 - 2^-24
// and 1 + 2^-23); |g| >= 128 gives exp(-g) < 2^-184 (0) or > 2^184 (+Inf); a NaN g takes the f64
// expression itself.
constexpr std::uint32_t kTableLow = 0x3300u, kTableSize = 8192;
__device__ float g_exp_table[kTableSize];

__device__ __forceinline__ float exp_neg_f64(std::uint32_t g16) {
  return __double2float_rn(exp(-double(__uint_as_float(g16 << 16))));
}

__global__ void fill_exp_table_kernel() {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kTableSize) g_exp_table[i] = exp_neg_f64(((i >> 12) << 15) | (kTableLow + (i & 4095)));
}

// e = RN_f32(exp(-g)) of a bf16 pattern, from the table in shared memory.
__device__ __forceinline__ float exp_neg(std::uint32_t g16, const float* table) {
  const std::uint32_t a = g16 & 0x7FFFu, k = a - kTableLow;
  if (k < 4096u) return table[((g16 >> 15) << 12) | k];
  if (a < kTableLow) return 1.0f;
  if (a <= 0x7F80u) return g16 >> 15 ? __uint_as_float(0x7F800000u) : 0.0f;
  return exp_neg_f64(g16);
}

// SwiGLU of eight gate / up elements (bf16 chunks) as f32 patterns: silu(g) = RN(g / RN(1 + e)),
// h = RN(silu(g) * up).
__device__ __forceinline__ void swiglu8(const uint4& gate, const uint4& up, const float* table,
                                        std::uint32_t (&h)[8]) {
  std::uint32_t g[8], u[8];
  unpack_bf16(gate, g);
  unpack_bf16(up, u);
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float gv = __uint_as_float(g[k]);
    const float silu = __fdiv_rn(gv, __fadd_rn(1.0f, exp_neg(g[k] >> 16, table)));
    h[k] = __float_as_uint(__fmul_rn(silu, __uint_as_float(u[k])));
  }
}

// q describes the (rows, H = q.cols) f32 result; q.x is the merged (rows, 2H) bf16 gate/up
// (H % W == 0). The row kernel's mapping over output elements (G lanes a block, C chunks a lane
// each: chunks sub, sub + G, ...), kRounds rounds in flight; each lane reads its gate chunk and the
// up chunk H columns further. Persistent CTAs: the table is copied to shared memory once a CTA.
template <int W, ScaleKind K>
__global__ void __launch_bounds__(kThreads) swiglu_blocks_kernel(QuantizeLaunch q) {
  constexpr int G = W == 128 ? 4 : 2, C = W / 8 / G, kRounds = W == 128 ? 1 : 2;
  constexpr std::int64_t kRoundElems = (32 / G) * W, kWarpElems = kRoundElems * kRounds;
  extern __shared__ float table[];
  for (int i = int(threadIdx.x); i < int(kTableSize); i += kThreads) table[i] = g_exp_table[i];
  __syncthreads();
  const std::int64_t n = q.rows * q.cols;
  const int lane = threadIdx.x & 31, sub = lane % G;
  const std::int64_t own = (lane / G) * W;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  const auto* x = static_cast<const std::uint16_t*>(q.x);
  const bool narrow = n < (std::int64_t(1) << 31);  // 32-bit row division
  for (std::int64_t base = warp * kWarpElems; base < n; base += nwarps * kWarpElems) {
    uint4 g[kRounds][C], u[kRounds][C];
#pragma unroll
    for (int rd = 0; rd < kRounds; ++rd) {
      const std::int64_t b0 = base + rd * kRoundElems + own;  // a block lies in one row
      const std::int64_t r =
          narrow ? std::int64_t(std::uint32_t(b0) / std::uint32_t(q.cols)) : b0 / q.cols;
      const std::int64_t i0 = b0 + r * q.cols;  // = r * 2H + (b0 - r * H)
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const std::int64_t i = i0 + (j * G + sub) * 8;
        g[rd][j] = b0 < n ? load_stream16(x + i) : make_uint4(0, 0, 0, 0);
        u[rd][j] = b0 < n ? load_stream16(x + i + q.cols) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int rd = 0; rd < kRounds; ++rd) {
      const std::int64_t b0 = base + rd * kRoundElems + own;
      std::uint32_t h[C][8];
      std::int32_t m = 0;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        swiglu8(g[rd][j], u[rd][j], table, h[j]);
#pragma unroll
        for (int k = 0; k < 8; ++k) m = max(m, abs_bits(h[j][k], q.recipe.ignore_nan));
      }
#pragma unroll
      for (int off = G / 2; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      if (b0 >= n) continue;  // whole blocks are live or not: n % W == 0
      const DevScale d = block_scale_of<K>(q.recipe, m);
      if (sub == 0) store_flat_scale(q.scales, b0 / W, d);
#pragma unroll
      for (int j = 0; j < C; ++j)
        *reinterpret_cast<uint2*>(q.codes + b0 + (j * G + sub) * 8) = cast8(q.recipe, d, h[j]);
    }
  }
}

// e = exp_neg(g) of every bf16 pattern g (out[g], 65536 floats) through the kernel's own path:
// the table copied to shared memory as swiglu_blocks_kernel copies it, then exp_neg.
__global__ void __launch_bounds__(kThreads) exp_probe_kernel(float* out) {
  __shared__ float table[kTableSize];
  for (int i = int(threadIdx.x); i < int(kTableSize); i += kThreads) table[i] = g_exp_table[i];
  __syncthreads();
  const std::uint32_t g = blockIdx.x * kThreads + threadIdx.x;
  if (g < 65536u) out[g] = exp_neg(g, table);
}

// The table, filled on the first call on each device (and waited for, so a later call on any
// stream finds it complete).
void ensure_exp_table(cudaStream_t stream) {
  static std::mutex mu;
  static bool filled[64] = {};
  int device = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mu);
  if (device < 64 && filled[device]) return;
  fill_exp_table_kernel<<<kTableSize / kThreads, kThreads, 0, stream>>>();
  FP8REF_CUDA_CHECK(cudaGetLastError());
  FP8REF_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (device < 64) filled[device] = true;
}

template <int W, ScaleKind K>
void launch_swiglu_kernel(const QuantizeLaunch& q) {
  const auto kernel = swiglu_blocks_kernel<W, K>;
  constexpr int smem = kTableSize * sizeof(float);
  int device = 0, sms = 0, per_sm = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  FP8REF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FP8REF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  constexpr int G = W == 128 ? 4 : 2, kRounds = W == 128 ? 1 : 2;
  const std::int64_t per_cta = (kThreads / 32) * (32 / G) * W * kRounds;
  const std::int64_t want = (q.rows * q.cols + per_cta - 1) / per_cta;
  const std::int64_t resident = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  kernel<<<grid_of(want < resident ? want : resident, q.max_blocks), kThreads, smem, q.stream>>>(q);
}

}  // namespace

void swiglu_exp_probe(float* out, cudaStream_t stream) {
  ensure_exp_table(stream);
  exp_probe_kernel<<<65536 / kThreads, kThreads, 0, stream>>>(out);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_swiglu_bf16(const QuantizeLaunch& q) {
  ensure_exp_table(q.stream);
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (q.block_w == 32)
      launch_swiglu_kernel<32, decltype(kind)::value>(q);
    else
      launch_swiglu_kernel<128, decltype(kind)::value>(q);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
