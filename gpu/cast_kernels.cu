// Hardware FP8 conversion kernels (sm_89+ cvt with .satfinite) and their host launchers.
// The kernels hold no rounding code: every conversion is one PTX cvt instruction.
#include <cuda_fp16.h>

#include <stdexcept>

#include "gpu/cast_kernels.h"
#include "gpu/device.h"

namespace fp8ref::gpu {
namespace {

constexpr int kThreads = 256;

template <Format F>
__device__ __forceinline__ std::uint16_t cvt_f32x2(float hi, float lo) {
  std::uint16_t d;
  if constexpr (F == Format::e4m3)
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

template <Format F>
__device__ __forceinline__ std::uint16_t cvt_f16x2(std::uint32_t pair) {
  std::uint16_t d;
  if constexpr (F == Format::e4m3)
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(d) : "r"(pair));
  else
    asm("cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;" : "=h"(d) : "r"(pair));
  return d;
}

template <Format F>
__global__ void cast_f32_kernel(const float* in, std::uint8_t* out, std::size_t n) {
  const std::size_t i = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  if (i >= n) return;
  const float lo = in[i];
  const float hi = i + 1 < n ? in[i + 1] : 0.0f;
  const std::uint16_t d = cvt_f32x2<F>(hi, lo);
  out[i] = std::uint8_t(d & 0xFF);
  if (i + 1 < n) out[i + 1] = std::uint8_t(d >> 8);
}

template <Format F>
__global__ void cast_f16_kernel(const std::uint16_t* in, std::uint8_t* out, std::size_t n) {
  const std::size_t i = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  if (i >= n) return;
  const std::uint32_t lo = in[i];
  const std::uint32_t hi = i + 1 < n ? in[i + 1] : 0u;
  const std::uint16_t d = cvt_f16x2<F>((hi << 16) | lo);
  out[i] = std::uint8_t(d & 0xFF);
  if (i + 1 < n) out[i + 1] = std::uint8_t(d >> 8);
}

// Four inputs per thread, written as one 32-bit store.
template <Format F>
__global__ void cast_index_kernel(std::uint64_t first, std::uint8_t* out, std::size_t n) {
  const std::size_t i = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i >= n) return;
  float v[4];
  for (int k = 0; k < 4; ++k) v[k] = __uint_as_float(std::uint32_t(first + i + k));
  const std::uint32_t lo = cvt_f32x2<F>(v[1], v[0]);
  const std::uint32_t hi = cvt_f32x2<F>(v[3], v[2]);
  if (i + 4 <= n) {
    *reinterpret_cast<std::uint32_t*>(out + i) = lo | (hi << 16);
  } else {
    const std::uint32_t w = lo | (hi << 16);
    for (std::size_t k = 0; i + k < n; ++k) out[i + k] = std::uint8_t(w >> (8 * k));
  }
}

template <Format F>
__global__ void decode_all_kernel(std::uint16_t* out) {
  const unsigned c = threadIdx.x * 2;  // 128 threads, two codes each
  std::uint32_t pair;
  const std::uint16_t codes = std::uint16_t(c | ((c + 1) << 8));
  if constexpr (F == Format::e4m3)
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(pair) : "h"(codes));
  else
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(pair) : "h"(codes));
  out[c] = std::uint16_t(pair & 0xFFFF);
  out[c + 1] = std::uint16_t(pair >> 16);
}

unsigned blocks_for(std::size_t n, std::size_t per_thread) {
  return unsigned((n + per_thread * kThreads - 1) / (per_thread * kThreads));
}

void require_fp8(Format f) {
  if (f != Format::e4m3 && f != Format::e5m2)
    throw std::invalid_argument("hardware cvt.satfinite exists for e4m3 and e5m2 only");
}

}  // namespace

void cast_f32_to_fp8_satfinite(Format format, const float* in, std::uint8_t* out, std::size_t n,
                               cudaStream_t stream) {
  require_fp8(format);
  if (n == 0) return;
  if (format == Format::e4m3)
    cast_f32_kernel<Format::e4m3><<<blocks_for(n, 2), kThreads, 0, stream>>>(in, out, n);
  else
    cast_f32_kernel<Format::e5m2><<<blocks_for(n, 2), kThreads, 0, stream>>>(in, out, n);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void cast_f16_to_fp8_satfinite(Format format, const std::uint16_t* in, std::uint8_t* out,
                               std::size_t n, cudaStream_t stream) {
  require_fp8(format);
  if (n == 0) return;
  if (format == Format::e4m3)
    cast_f16_kernel<Format::e4m3><<<blocks_for(n, 2), kThreads, 0, stream>>>(in, out, n);
  else
    cast_f16_kernel<Format::e5m2><<<blocks_for(n, 2), kThreads, 0, stream>>>(in, out, n);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void cast_f32_index_range_to_fp8_satfinite(Format format, std::uint64_t first, std::uint8_t* out,
                                           std::size_t n, cudaStream_t stream) {
  require_fp8(format);
  if (n == 0) return;
  if (format == Format::e4m3)
    cast_index_kernel<Format::e4m3><<<blocks_for(n, 4), kThreads, 0, stream>>>(first, out, n);
  else
    cast_index_kernel<Format::e5m2><<<blocks_for(n, 4), kThreads, 0, stream>>>(first, out, n);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

void decode_fp8_all_codes_to_f16(Format format, std::uint16_t* out, cudaStream_t stream) {
  require_fp8(format);
  if (format == Format::e4m3)
    decode_all_kernel<Format::e4m3><<<1, 128, 0, stream>>>(out);
  else
    decode_all_kernel<Format::e5m2><<<1, 128, 0, stream>>>(out);
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fp8ref::gpu
