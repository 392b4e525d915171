// Device helpers for bf16 sources with 16-byte access, shared by the quantize kernels
// (gpu/quantize_device.cuh and the kernel files): streaming 16-byte loads, cp.async into shared
// memory, and the amax of packed |bf16| patterns (max.u16x2, sm_90). docs/recipes.md "GPU
// kernels". Device code only.
#pragma once

#include <cstdint>

namespace fp8ref::gpu::detail {
namespace {

// A 16-byte chunk of a read-only source, streamed: no L1 allocation, a 256-byte L2 prefetch (the
// lanes of a block read neighbouring chunks), so several chunks a lane stay in flight cheaply.
__device__ __forceinline__ uint4 load_stream16(const void* p) {
  uint4 u;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
      : "l"(p));
  return u;
}

// A 16-byte chunk by a plain global load (no cache hints): the 1xW and row kernels measured it
// faster than load_stream16 on the H200 (docs/benchmarks.md "GPU data path").
__device__ __forceinline__ uint4 load16(const void* p) {
  uint4 u;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p));
  return u;
}

// Max of |x| over bf16 patterns, two 16-bit lanes a word (max.u16x2, sm_90): the pattern order of
// non-negative bf16 is their value order, NaN patterns above +Inf (0x7F80).
__device__ __forceinline__ std::uint32_t max_u16x2(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t abs16x2(std::uint32_t w) { return w & 0x7FFF7FFFu; }
// Packed maximum of abs over a chunk's four words (abs: Abs16x2, or Abs16x2NoNan below).
template <class Abs>
__device__ __forceinline__ std::uint32_t chunk_max16x2(const uint4& u, Abs abs) {
  return max_u16x2(max_u16x2(abs(u.x), abs(u.y)), max_u16x2(abs(u.z), abs(u.w)));
}
// The two 16-bit maxima of a word folded into one.
__device__ __forceinline__ std::uint32_t fold16(std::uint32_t p) {
  return max(p >> 16, p & 0xFFFFu);
}
// |x| of a word's two bf16 with NaN patterns as 0 (the cuda_kernel runtimes' fmaxf drops NaN).
__device__ __forceinline__ std::uint32_t abs16x2_no_nan(std::uint32_t w) {
  const std::uint32_t lo = w & 0x7FFFu, hi = (w >> 16) & 0x7FFFu;
  return (hi > 0x7F80u ? 0u : hi << 16) | (lo > 0x7F80u ? 0u : lo);
}
// The two |x| of a word as function objects (template arguments of the max passes, inlined).
struct Abs16x2 {
  __device__ std::uint32_t operator()(std::uint32_t w) const { return abs16x2(w); }
};
struct Abs16x2NoNan {
  __device__ std::uint32_t operator()(std::uint32_t w) const { return abs16x2_no_nan(w); }
};
// True when a packed maximum holds a NaN pattern in either lane.
__device__ __forceinline__ bool has_nan16x2(std::uint32_t p) {
  return (p & 0xFFFFu) > 0x7F80u || (p >> 16) > 0x7F80u;
}
// The maximum of N chunks as a 16-bit |bf16| pattern, NaN patterns dropped when ignore_nan (a
// second pass over the chunks, taken only when a NaN is present).
template <int N>
__device__ __forceinline__ std::uint32_t chunks_max16(const uint4 (&v)[N], bool ignore_nan) {
  const auto pass = [&](auto abs) {
    std::uint32_t p = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) p = max_u16x2(p, chunk_max16x2(v[k], abs));
    return p;
  };
  std::uint32_t p = pass(Abs16x2{});
  if (ignore_nan && has_nan16x2(p)) p = pass(Abs16x2NoNan{});
  return fold16(p);
}

// Eight bf16 of a 16-byte chunk as f32 patterns (element k of the chunk in f[k]).
__device__ __forceinline__ void unpack_bf16(const uint4& u, std::uint32_t (&f)[8]) {
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) f[2 * k] = w[k] << 16, f[2 * k + 1] = w[k] & 0xFFFF0000u;
}

// cp.async of one 16-byte chunk into shared memory (live false: 16 zero bytes), and the group
// commit that closes a tile's copies.
__device__ __forceinline__ void copy_chunk(uint4* dst, const std::uint16_t* src, bool live) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(live ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

}  // namespace
}  // namespace fp8ref::gpu::detail
