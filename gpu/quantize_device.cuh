// Device helpers shared by the quantize kernels (gpu/quantize_kernels.cu,
// gpu/quantize_tile_kernels.cu): each recipe's block scale as explicit IEEE f32 / f64 operations,
// the scale sink's layouts, element loads, the hardware cast (cvt.rn.satfinite.{e4m3,e5m2}x2.f32)
// and the CTA max. docs/recipes.md "GPU kernels" lists the recipes. Device code only.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu/device.h"
#include "gpu/quantize_bf16.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

constexpr int kThreads = 256;
constexpr std::int32_t kInfBits = 0x7F800000;
constexpr std::uint32_t kQuietNan = 0x7FC00000u;  // the NaN scale the oracle stores

struct DevScale {
  float s;       // decode scale (stored for non-MX recipes)
  float factor;  // y = x * factor, or x / factor when divide
  bool divide;
  std::uint8_t e8m0;
  bool may_overflow;  // nonsat recipes (deepgemm, which sets it): some |y| may pass 464
};

__device__ __forceinline__ float amax_value(std::int32_t m) {
  return m > kInfBits ? __uint_as_float(kQuietNan) : __int_as_float(m);
}

// DeepGEMM per_token / per_block casts under torch_cuda: sf = clamp(amax, 1e-4) * f32(1/448),
// optionally ceil_to_ue8m0; elements x * (1 / sf).
__device__ DevScale deepgemm_scale(const RecipeParams& p, float amax) {
  const float a = isnan(amax) ? amax : (amax < 1e-4f ? 1e-4f : amax);
  float sf = __fmul_rn(a, p.max_rcp);
  if (p.pow2) {
    const std::uint32_t b = __float_as_uint(sf) & 0x7FFFFFFFu;
    int e = int((b >> 23) & 0xFF) + ((b & 0x7FFFFFu) != 0);
    e = e < 1 ? 1 : (e > 254 ? 254 : e);
    sf = __uint_as_float(std::uint32_t(e) << 23);
  }
  const float factor = __fdiv_rn(1.0f, sf);
  // |y| = RN(|x| * factor) <= RN(amax * factor) (RN is monotone): when that is <= 464 no element
  // of the block needs the non-saturating fix (a NaN or Inf amax fails the test).
  return {sf, factor, false, 0, !(__fmul_rn(amax, factor) <= 464.0f)};
}

// torchao amax_to_scale: f32(max_pos * (1 / clamp(f64 amax, 1e-12))) in f64; s = 1 / scale.
__device__ DevScale torchao_scale(const RecipeParams& p, float amax) {
  double a = amax;
  if (!isnan(a) && a < 1e-12) a = 1e-12;
  float scale = __double2float_rn(__dmul_rn(__ddiv_rn(1.0, a), double(p.elem_max)));
  // round_scales_to_power_of_2: exp2(floor(log2(scale))) with CUDA's log2f, the function torch's
  // CUDA log2 calls; exp2 of an integer is exact, as ldexpf.
  if (p.pow2 && isfinite(scale) && scale > 0.0f) scale = ldexpf(1.0f, int(floorf(log2f(scale))));
  return {__fdiv_rn(1.0f, scale), scale, false, 0};
}

// Transformer Engine compute_scale_from_amax; scale_inv = f32(1.0 / f64 scale).
__device__ DevScale te_scale(const RecipeParams& p, float amax) {
  const float a = amax < p.epsilon ? p.epsilon : amax;
  float scale = 1.0f;
  if (!(isinf(a) || a == 0.0f || isnan(a))) {
    scale = __fdiv_rn(p.elem_max, a);
    if (isinf(scale)) scale = p.source_max;
    if (p.pow2) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
  }
  // f32(1.0 / f64 scale) == RN_f32(1 / scale): double rounding through 53 bits is innocuous for a
  // quotient of 24-bit operands (53 >= 2 * 24 + 2, Figueroa 1995), and a subnormal quotient
  // (scale > 2^126) lies at least 2^-174 from any f32 midpoint, beyond f64's half ulp 2^-181.
  return {__fdiv_rn(1.0f, scale), scale, false, 0};
}

// torchao to_mx FLOOR / CEIL / EVEN: the E8M0 exponent read off the amax pattern.
__device__ DevScale mx_torchao_scale(const RecipeParams& p, float amax) {
  const bool nan = isnan(amax);
  std::uint32_t bits = amax == 0.0f ? 0x00800000u : __float_as_uint(amax);
  const int mbits = p.e4m3 ? 3 : 2;
  if (p.mx_even && !nan) bits = (bits + (1u << (23 - mbits - 1))) & 0xFF800000u;
  int e = int((bits >> 23) & 0xFF) - 127;
  if (p.mx_ceil) e += (bits & 0x7FFFFFu) != 0;
  int unbiased = e - p.elem_emax;
  unbiased = unbiased < -127 ? -127 : (unbiased > 128 ? 128 : unbiased);
  const std::uint32_t biased = nan ? 255u : std::uint32_t(unbiased + 127);
  float scale = __uint_as_float(biased << 23);
  if (scale < __uint_as_float(0x00800000u)) scale = __uint_as_float(0x00800000u);
  // x / 2^k == x * 2^-k bit for bit: 2^-k is exact for every scale here (2^-126 .. 2^127, or +Inf
  // for a NaN amax, whose reciprocal 0 gives the same signed zeros and NaNs as x / Inf), and both
  // round the same real number once.
  return {scale, __fdiv_rn(1.0f, scale), false, std::uint8_t(biased)};
}

// TE MXFP8 (RCEIL): e = ceil to a power of two of amax * max_norm_rcp, saturating (the
// cvt.rp.satfinite.ue8m0x2.f32 of sm_100, by integer operations); factor = 2^(127 - e).
__device__ DevScale mx_rceil_kernel_scale(const RecipeParams& p, float amax) {
  const std::uint32_t a = __float_as_uint(__fmul_rn(amax, p.max_rcp)) & 0x7FFFFFFFu;
  const std::uint32_t field = a >> 23, man = a & 0x7FFFFFu;
  std::uint32_t e;
  if (a > 0x7F800000u)
    e = 0xFF;
  else if (a == 0x7F800000u)
    e = 0xFE;
  else if (field == 0)
    e = man > 0x400000u ? 1 : 0;  // (2^-127, 2^-126) rounds up to 2^-126, (0, 2^-127] to 2^-127
  else
    e = field + (man != 0) > 0xFE ? 0xFE : field + (man != 0);
  const float factor = e == 0 ? 1.0f : __uint_as_float((254u - e) << 23);
  return {0.0f, factor, false, std::uint8_t(e)};
}

// torchao _to_mx_rceil under torch_cuda: descale = amax * f32(1 / max_pos) (tensor / python
// scalar), e = clamp(ceil(log2f(descale)), +-127) + 127 with CUDA's log2f (what torch's CUDA log2
// calls), NaN -> 0xFF, Inf -> 0xFE, 0 -> 0; factor = descale (NaN), 1 (e = 0) or 2^(127 - e).
__device__ DevScale mx_rceil_torch_scale(const RecipeParams& p, float amax) {
  const float descale = __fmul_rn(amax, p.max_rcp);
  int e;
  if (isnan(descale))
    e = 0xFF;
  else if (isinf(descale))
    e = 0xFE;
  else if (descale == 0.0f)
    e = 0;
  else
    e = int(fminf(fmaxf(ceilf(log2f(descale)), -127.0f), 127.0f)) + 127;
  const float factor = e == 0xFF ? descale : e == 0 ? 1.0f : ldexpf(1.0f, 127 - e);
  return {0.0f, factor, false, std::uint8_t(e)};
}

__device__ DevScale block_scale(const RecipeParams& p, std::int32_t amax_bits) {
  const float amax = amax_value(amax_bits);
  switch (p.kind) {
    case ScaleKind::deepgemm: return deepgemm_scale(p, amax);
    case ScaleKind::torchao: return torchao_scale(p, amax);
    case ScaleKind::te: return te_scale(p, amax);
    case ScaleKind::mx_torchao: return mx_torchao_scale(p, amax);
    case ScaleKind::mx_rceil_kernel: return mx_rceil_kernel_scale(p, amax);
    default: return mx_rceil_torch_scale(p, amax);
  }
}

__device__ __forceinline__ std::int64_t align4(std::int64_t x) { return (x + 3) / 4 * 4; }

__device__ void store_scale(const ScaleSink& s, std::int64_t r, std::int64_t c, const DevScale& d) {
  const std::uint32_t w = isnan(d.s) ? kQuietNan : __float_as_uint(d.s);
  auto* words = static_cast<std::uint32_t*>(s.data);
  auto* bytes = static_cast<std::uint8_t*>(s.data);
  switch (s.layout) {
    case 0: words[r * s.cols + c] = w; return;
    case 1: words[c * s.rows + r] = w; return;
    case 2: words[c * align4(s.rows) + r] = w; return;
    case 3: words[r * align4(s.cols) + c] = w; return;
    case 10: bytes[r * s.cols + c] = d.e8m0; return;
    case 11: {
      const std::int64_t tile = (r / 128) * ((s.cols + 3) / 4) + c / 4, rr = r % 128;
      bytes[tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + c % 4] = d.e8m0;
      return;
    }
    default: bytes[((c / 4) * align4(s.rows) + r) * 4 + c % 4] = d.e8m0; return;
  }
}

// Scale of flat block index b (row-major over the grid): the row-major layouts need no division.
__device__ __forceinline__ void store_flat_scale(const ScaleSink& s, std::int64_t b,
                                                 const DevScale& d) {
  if (s.layout == 0 || s.layout == 10)
    store_scale(s, 0, b, d);
  else
    store_scale(s, b / s.cols, b % s.cols, d);
}

// --- element access and cast -------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t load_bits(const void* x, bool bf16, std::int64_t i) {
  return bf16 ? std::uint32_t(static_cast<const std::uint16_t*>(x)[i]) << 16
              : static_cast<const std::uint32_t*>(x)[i];
}

// Eight elements from index i (all valid and 16-byte aligned when vec), as f32 patterns; invalid
// ones (index >= end) read as +0, which changes no amax.
__device__ __forceinline__ void load8(const void* x, bool bf16, bool vec, std::int64_t i,
                                      std::int64_t end, std::uint32_t (&v)[8]) {
  if (vec && bf16) {
    const uint4 u = load_stream16(static_cast<const std::uint16_t*>(x) + i);
    const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) v[2 * k] = w[k] << 16, v[2 * k + 1] = w[k] & 0xFFFF0000u;
  } else if (vec) {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(x) + i);
    const uint4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = i + k < end ? load_bits(x, bf16, i + k) : 0u;
  }
}

__device__ __forceinline__ std::int32_t abs_bits(std::uint32_t b, bool ignore_nan) {
  const std::int32_t a = std::int32_t(b & 0x7FFFFFFFu);
  return ignore_nan && a > kInfBits ? 0 : a;
}

__device__ __forceinline__ std::uint32_t cvt2(bool e4m3, float hi, float lo) {
  std::uint16_t d;
  if (e4m3)
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// torch's e4m3fn cast does not saturate: |y| past the rounding boundary 464 (and Inf) is NaN,
// keeping the sign.
__device__ __forceinline__ std::uint32_t nonsat_fix(std::uint32_t code, float y) {
  return fabsf(y) > 464.0f ? 0x7Fu | (__float_as_uint(y) >> 31 << 7) : code;
}

__device__ __forceinline__ float scaled(float x, const DevScale& d) {
  return d.divide ? __fdiv_rn(x, d.factor) : __fmul_rn(x, d.factor);
}

// Eight codes of eight f32 patterns, byte k of the result = code of v[k].
__device__ __forceinline__ uint2 cast8(const RecipeParams& p, const DevScale& d,
                                       const std::uint32_t (&v)[8]) {
  std::uint32_t w[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < 8; k += 2) {
    const float lo = scaled(__uint_as_float(v[k]), d), hi = scaled(__uint_as_float(v[k + 1]), d);
    std::uint32_t c = cvt2(p.e4m3, hi, lo);
    if (p.nonsat && d.may_overflow) c = nonsat_fix(c & 0xFF, lo) | (nonsat_fix(c >> 8, hi) << 8);
    w[k / 4] |= c << (8 * (k % 4));
  }
  return make_uint2(w[0], w[1]);
}

// Eight codes of eight f32 patterns, element k scaled by its own d[k] (column blocks), byte k of
// the result = code of v[k].
__device__ __forceinline__ uint2 cast8_each(const RecipeParams& p, const DevScale (&d)[8],
                                            const std::uint32_t (&v)[8]) {
  std::uint32_t w[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < 8; k += 2) {
    const float lo = scaled(__uint_as_float(v[k]), d[k]);
    const float hi = scaled(__uint_as_float(v[k + 1]), d[k + 1]);
    std::uint32_t c = cvt2(p.e4m3, hi, lo);
    if (p.nonsat) c = nonsat_fix(c & 0xFF, lo) | (nonsat_fix(c >> 8, hi) << 8);
    w[k / 4] |= c << (8 * (k % 4));
  }
  return make_uint2(w[0], w[1]);
}

__device__ __forceinline__ void store8(std::uint8_t* codes, bool vec, std::int64_t i,
                                       std::int64_t end, uint2 c) {
  if (vec) {
    *reinterpret_cast<uint2*>(codes + i) = c;
    return;
  }
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (i + k < end) codes[i + k] = std::uint8_t((k < 4 ? c.x : c.y) >> (8 * (k % 4)));
}

__device__ __forceinline__ std::int64_t row_start(const QuantizeLaunch& q, std::int64_t br) {
  return q.starts ? q.starts[br] : br * q.block_h;
}
__device__ __forceinline__ std::int64_t row_end(const QuantizeLaunch& q, std::int64_t br) {
  const std::int64_t e = q.starts ? q.starts[br + 1] : (br + 1) * q.block_h;
  return e < q.rows ? e : q.rows;
}

// Max over the CTA (every thread gets it); `red` holds one word per warp.
__device__ inline std::int32_t cta_max(std::int32_t m, std::int32_t* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < nw ? red[lane] : 0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    if (lane == 0) red[0] = m;
  }
  __syncthreads();
  m = red[0];
  __syncthreads();  // red is reused by the next block
  return m;
}

// The block scale of a recipe kind known at compile time (the kernels that hold a block in
// registers are instantiated per kind, so no switch runs per block).
template <ScaleKind K>
__device__ __forceinline__ DevScale block_scale_of(const RecipeParams& p, std::int32_t amax_bits) {
  const float amax = amax_value(amax_bits);
  if constexpr (K == ScaleKind::deepgemm) return deepgemm_scale(p, amax);
  if constexpr (K == ScaleKind::torchao) return torchao_scale(p, amax);
  if constexpr (K == ScaleKind::te) return te_scale(p, amax);
  if constexpr (K == ScaleKind::mx_torchao) return mx_torchao_scale(p, amax);
  if constexpr (K == ScaleKind::mx_rceil_kernel) return mx_rceil_kernel_scale(p, amax);
  if constexpr (K == ScaleKind::mx_rceil_torch) return mx_rceil_torch_scale(p, amax);
}

// Calls f(std::integral_constant<ScaleKind, k>{}) for the runtime kind k (host side).
template <class F>
void with_scale_kind(ScaleKind k, F&& f) {
  switch (k) {
    case ScaleKind::deepgemm: return f(std::integral_constant<ScaleKind, ScaleKind::deepgemm>{});
    case ScaleKind::torchao: return f(std::integral_constant<ScaleKind, ScaleKind::torchao>{});
    case ScaleKind::te: return f(std::integral_constant<ScaleKind, ScaleKind::te>{});
    case ScaleKind::mx_torchao:
      return f(std::integral_constant<ScaleKind, ScaleKind::mx_torchao>{});
    case ScaleKind::mx_rceil_kernel:
      return f(std::integral_constant<ScaleKind, ScaleKind::mx_rceil_kernel>{});
    default: return f(std::integral_constant<ScaleKind, ScaleKind::mx_rceil_torch>{});
  }
}

// Grid of `want` CTAs, capped by the caller's max_blocks (never a bit of difference: every
// kernel strides over its work).
inline unsigned grid_of(std::int64_t want, int max_blocks) {
  std::int64_t g = want < 1 ? 1 : (want > (1 << 20) ? (1 << 20) : want);
  if (max_blocks > 0 && g > max_blocks) g = max_blocks;
  return unsigned(g);
}

// Grid of a persistent kernel: `want` CTAs, at most as many as are resident at once on the
// device (occupancy of `kernel` with kThreads threads and `smem` bytes), capped by max_blocks.
template <class Kernel>
unsigned resident_grid(Kernel kernel, int smem, std::int64_t want, int max_blocks) {
  int device = 0, sms = 0, per_sm = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&device));
  FP8REF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FP8REF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  const std::int64_t resident = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  return grid_of(want < resident ? want : resident, max_blocks);
}

}  // namespace
}  // namespace fp8ref::gpu::detail
