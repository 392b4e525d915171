// Quantize kernels (device code; the launcher gpu/quantize.cpp checks the arguments): an amax
// pass and a cast pass per block, the recipe's scale arithmetic as IEEE f32 / f64 operations
// (no contraction: every product and quotient is an explicit __fmul_rn / __fdiv_rn), E8M0
// exponents by integer operations on the f32 pattern (cvt.rp.satfinite.ue8m0x2.f32 is sm_100+),
// elements by cvt.rn.satfinite.{e4m3,e5m2}x2.f32. docs/recipes.md "GPU kernels" lists the recipes.
#include <cstdint>

#include "gpu/device.h"
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
  return {sf, __fdiv_rn(1.0f, sf), false, 0};
}

// torchao amax_to_scale: f32(max_pos * (1 / clamp(f64 amax, 1e-12))) in f64; s = 1 / scale.
__device__ DevScale torchao_scale(const RecipeParams& p, float amax) {
  double a = amax;
  if (!isnan(a) && a < 1e-12) a = 1e-12;
  const float scale = __double2float_rn(__dmul_rn(__ddiv_rn(1.0, a), double(p.elem_max)));
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
  return {__double2float_rn(__ddiv_rn(1.0, double(scale))), scale, false, 0};
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
  return {scale, scale, true, std::uint8_t(biased)};
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

__device__ DevScale block_scale(const RecipeParams& p, std::int32_t amax_bits) {
  const float amax = amax_value(amax_bits);
  switch (p.kind) {
    case ScaleKind::deepgemm: return deepgemm_scale(p, amax);
    case ScaleKind::torchao: return torchao_scale(p, amax);
    case ScaleKind::te: return te_scale(p, amax);
    case ScaleKind::mx_torchao: return mx_torchao_scale(p, amax);
    default: return mx_rceil_kernel_scale(p, amax);
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
    const uint4 u = *reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i);
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
__device__ std::int32_t cta_max(std::int32_t m, std::int32_t* red) {
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

// 1xW blocks (W = 32, 128): W / 16 lanes per block, sixteen elements a lane (two independent
// 16-byte loads of bf16 in flight); a warp takes 32 / (W / 16) consecutive blocks per step, all
// lanes stepping together so the shuffles see the whole warp.
template <int W, bool kBf16>
__global__ void __launch_bounds__(kThreads) small_blocks_kernel(QuantizeLaunch q) {
  constexpr int kLanes = W / 16, kPerWarp = 32 / kLanes;
  const std::int64_t nbc = (q.cols + W - 1) / W, nblocks = q.rows * nbc;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t nwarps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t base = warp * kPerWarp; base < nblocks; base += nwarps * kPerWarp) {
    const std::int64_t b = base + lane / kLanes;
    const std::int64_t r = b / nbc, bc = b % nbc, c = bc * W + sub * 16;
    const bool live = b < nblocks && c < q.cols;
    const std::int64_t i = r * q.cols + c, end = live ? r * q.cols + q.cols : i;
    std::uint32_t v[2][8];
    const bool vec_hi = q.vec && live && c + 8 < q.cols;  // vec: cols % 8 == 0
    load8(q.x, kBf16, q.vec && live, i, end, v[0]);
    load8(q.x, kBf16, vec_hi, i + 8, end, v[1]);
    std::int32_t m = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k)
      m = max(m,
              max(abs_bits(v[0][k], q.recipe.ignore_nan), abs_bits(v[1][k], q.recipe.ignore_nan)));
#pragma unroll
    for (int off = kLanes / 2; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    const DevScale d = block_scale(q.recipe, m);
    if (b < nblocks && sub == 0) store_scale(q.scales, r, bc, d);
    if (live) {
      store8(q.codes, q.vec, i, end, cast8(q.recipe, d, v[0]));
      store8(q.codes, vec_hi, i + 8, end, cast8(q.recipe, d, v[1]));
    }
  }
}

// One CTA per block (rowwise, 128x128, grouped blocks, any width >= 2): amax pass, scale, cast
// pass over rows [r0, r1) x columns [c0, c1) in chunks of eight.
__global__ void __launch_bounds__(kThreads) tile_blocks_kernel(QuantizeLaunch q) {
  __shared__ std::int32_t red[kThreads / 32];
  const std::int64_t nbc = (q.cols + q.block_w - 1) / q.block_w, nblocks = q.block_rows * nbc;
  for (std::int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    const std::int64_t br = blk / nbc, bc = blk % nbc;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    const std::int64_t c0 = bc * q.block_w, c1 = min(q.cols, c0 + q.block_w);
    const std::int64_t chunks = (c1 - c0 + 7) / 8, items = (r1 - r0) * chunks;
    std::int32_t m = 0;
    for (std::int64_t t = threadIdx.x; t < items; t += blockDim.x) {
      const std::int64_t r = r0 + t / chunks, i = r * q.cols + c0 + (t % chunks) * 8;
      std::uint32_t v[8];
      load8(q.x, q.bf16, q.vec, i, r * q.cols + c1, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) m = max(m, abs_bits(v[k], q.recipe.ignore_nan));
    }
    m = cta_max(m, red);
    const DevScale d = block_scale(q.recipe, m);
    if (threadIdx.x == 0) store_scale(q.scales, br, bc, d);
    for (std::int64_t t = threadIdx.x; t < items; t += blockDim.x) {
      const std::int64_t r = r0 + t / chunks, i = r * q.cols + c0 + (t % chunks) * 8;
      std::uint32_t v[8];
      load8(q.x, q.bf16, q.vec, i, r * q.cols + c1, v);
      store8(q.codes, q.vec, i, r * q.cols + c1, cast8(q.recipe, d, v));
    }
  }
}

// One-column blocks (128x1, 32x1, per-channel): a thread per column of a block row.
__global__ void __launch_bounds__(kThreads) column_blocks_kernel(QuantizeLaunch q) {
  const std::int64_t chunks = (q.cols + kThreads - 1) / kThreads, n = q.block_rows * chunks;
  for (std::int64_t it = blockIdx.x; it < n; it += gridDim.x) {
    const std::int64_t br = it / chunks, j = (it % chunks) * kThreads + threadIdx.x;
    if (j >= q.cols) continue;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    std::int32_t m = 0;
    for (std::int64_t r = r0; r < r1; ++r)
      m = max(m, abs_bits(load_bits(q.x, q.bf16, r * q.cols + j), q.recipe.ignore_nan));
    const DevScale d = block_scale(q.recipe, m);
    store_scale(q.scales, br, j, d);
    for (std::int64_t r = r0; r < r1; ++r) {
      const float y = scaled(__uint_as_float(load_bits(q.x, q.bf16, r * q.cols + j)), d);
      std::uint32_t c = cvt2(q.recipe.e4m3, 0.0f, y) & 0xFF;
      if (q.recipe.nonsat) c = nonsat_fix(c, y);
      q.codes[r * q.cols + j] = std::uint8_t(c);
    }
  }
}

// Tensorwise, pass 1: the amax of the whole tensor into *amax_ws (an integer max of |x|
// patterns: order-independent, so any grid gives the same word).
__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(QuantizeLaunch q) {
  const std::int64_t n = q.rows * q.cols, chunks = (n + 7) / 8;
  std::int32_t m = 0;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < chunks;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint32_t v[8];
    load8(q.x, q.bf16, q.vec, t * 8, n, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) m = max(m, abs_bits(v[k], q.recipe.ignore_nan));
  }
  __shared__ std::int32_t red[kThreads / 32];
  m = cta_max(m, red);
  if (threadIdx.x == 0) atomicMax(q.amax_ws, std::uint32_t(m));
}

// Tensorwise, pass 2: every thread derives the one scale from the amax and casts.
__global__ void __launch_bounds__(kThreads) tensor_cast_kernel(QuantizeLaunch q) {
  const std::int64_t n = q.rows * q.cols, chunks = (n + 7) / 8;
  const DevScale d = block_scale(q.recipe, std::int32_t(*q.amax_ws));
  if (blockIdx.x == 0 && threadIdx.x == 0) store_scale(q.scales, 0, 0, d);
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < chunks;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint32_t v[8];
    load8(q.x, q.bf16, q.vec, t * 8, n, v);
    store8(q.codes, q.vec, t * 8, n, cast8(q.recipe, d, v));
  }
}

__global__ void fill_words_kernel(std::uint32_t* p, std::uint32_t w, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = w;
}

// Grid of `want` CTAs, capped by the caller's max_blocks (never a bit of difference: every
// kernel strides over its work).
unsigned grid_of(std::int64_t want, int max_blocks) {
  std::int64_t g = want < 1 ? 1 : (want > (1 << 20) ? (1 << 20) : want);
  if (max_blocks > 0 && g > max_blocks) g = max_blocks;
  return unsigned(g);
}

}  // namespace

void launch_small_blocks(const QuantizeLaunch& q) {
  const std::int64_t w = q.block_w, nblocks = q.rows * ((q.cols + w - 1) / w);
  const std::int64_t per_cta = kThreads / (w / 16);
  const unsigned grid = grid_of((nblocks + per_cta - 1) / per_cta, q.max_blocks);
  if (w == 32)
    q.bf16 ? small_blocks_kernel<32, true><<<grid, kThreads, 0, q.stream>>>(q)
           : small_blocks_kernel<32, false><<<grid, kThreads, 0, q.stream>>>(q);
  else
    q.bf16 ? small_blocks_kernel<128, true><<<grid, kThreads, 0, q.stream>>>(q)
           : small_blocks_kernel<128, false><<<grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_tile_blocks(const QuantizeLaunch& q) {
  const std::int64_t nblocks = q.block_rows * ((q.cols + q.block_w - 1) / q.block_w);
  tile_blocks_kernel<<<grid_of(nblocks, q.max_blocks), kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_column_blocks(const QuantizeLaunch& q) {
  const std::int64_t n = q.block_rows * ((q.cols + kThreads - 1) / kThreads);
  column_blocks_kernel<<<grid_of(n, q.max_blocks), kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_tensorwise(const QuantizeLaunch& q) {
  const std::int64_t chunks = (q.rows * q.cols + 7) / 8;
  const unsigned grid = grid_of((chunks + kThreads - 1) / kThreads, q.max_blocks);
  const unsigned amax_grid = grid < 1024 ? grid : 1024;  // one atomic per CTA
  tensor_amax_kernel<<<amax_grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
  tensor_cast_kernel<<<grid, kThreads, 0, q.stream>>>(q);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void launch_fill_words(void* data, std::uint32_t word, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  fill_words_kernel<<<grid_of((n + kThreads - 1) / kThreads, 0), kThreads, 0, stream>>>(
      static_cast<std::uint32_t*>(data), word, n);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu::detail
