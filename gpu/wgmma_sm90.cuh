// sm_90a building blocks of the FP8 GEMM kernels (internal to gpu/): cp.async of scales with zero
// fill, mbarriers, TMA tensor loads, setmaxnreg, the wgmma shared-memory descriptor for K-major
// 128-byte-swizzled tiles, and the wgmma.mma_async m64n{128,192}k32 FP8 instructions with f32
// accumulation (PTX ISA 8.0 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"). Included
// by the .cu files of the kernels only.
#pragma once

#include <cstdint>

namespace fp8ref::gpu::detail::sm90 {

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 4 bytes global -> shared; `valid` false writes zeros without reading (src-size 0).
__device__ __forceinline__ void cp_async4(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 4 : 0));
}
// mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"): init
// with an arrival count, arrive, wait for the phase of a given parity, and the arrival a thread's
// earlier cp.async copies make when they land (.noinc: counted in the init count).
__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(std::uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Arrive and add `bytes` to the transaction count the current phase waits for (the TMA copies
// that complete_tx on this barrier).
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Makes the barriers' initialisation visible to the async proxy (TMA) before their first use.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::
                   : "memory");
}

// TMA (PTX ISA "cp.async.bulk.tensor"): the box at (inner, row) of a 2D tensor map into shared
// memory, completing `bytes` on the mbarrier; out-of-bounds elements of the box are zero.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const void* tensor_map,
                                            std::int32_t inner, std::int32_t row,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tensor_map), "r"(inner), "r"(row), "r"(bar)
      : "memory");
}
// An L2 eviction policy for data read or written once (PTX ISA "createpolicy": evict_first over
// the whole access), for the .L2::cache_hint forms below.
__device__ __forceinline__ std::uint64_t l2_evict_first_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// tma_load_2d with an L2 cache policy.
__device__ __forceinline__ void tma_load_2d_hint(std::uint32_t dst, const void* tensor_map,
                                                 std::int32_t inner, std::int32_t row,
                                                 std::uint32_t bar, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tensor_map), "r"(inner), "r"(row), "r"(bar), "l"(policy)
      : "memory");
}
// TMA store (PTX ISA "cp.async.bulk.tensor", shared::cta -> global, bulk-group completion) with an
// L2 cache policy: the box at `src` to (inner, row) of a 2D tensor map, elements out of bounds
// skipped. The issuing thread commits its stores as a bulk group and waits until their
// shared-memory sources have been read (wait_group.read: at most N groups still reading) before
// that memory is written again.
__device__ __forceinline__ void tma_store_2d_hint(const void* tensor_map, std::int32_t inner,
                                                  std::int32_t row, std::uint32_t src,
                                                  std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint"
      " [%0, {%1, %2}], [%3], %4;\n" ::"l"(tensor_map),
      "r"(inner), "r"(row), "r"(src), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// `count` arrivals at once (one thread arriving for its warpgroup's warps).
__device__ __forceinline__ void mbar_arrive_count(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const void* tensor_map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensor_map) : "memory");
}

// Register reallocation between warpgroups (PTX ISA "setmaxnreg"): the producer gives registers
// back, the consumers take them.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// wgmma shared-memory descriptor, K-major, 128-byte swizzle: 8-row atoms 1024 bytes apart (SBO);
// the leading byte offset is unused for this layout (PTX ISA "Matrix Descriptor Format").
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr) {
  return std::uint64_t((addr & 0x3FFFF) >> 4) | std::uint64_t(1) << 16 |
         std::uint64_t(1024 >> 4) << 32 | std::uint64_t(1) << 62;
}

// The same descriptor as its two 32-bit halves: smem_desc(addr) == uint64(kSmemDescHi) << 32 |
// smem_desc_lo(addr). The low half is linear in addr below 256 KiB (the 14-bit start field takes
// addr >> 4 and never carries into bit 16), so smem_desc_lo(addr + d) == smem_desc_lo(addr) + d /
// 16 for 16-byte multiples d while addr + d < 256 KiB: every shared address of a CTA.
constexpr std::uint32_t kSmemDescHi = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ std::uint32_t smem_desc_lo(std::uint32_t addr) {
  return ((addr & 0x3FFFF) >> 4) | (1u << 16);
}
__device__ __forceinline__ std::uint64_t smem_desc_of(std::uint32_t lo) {
  return std::uint64_t(kSmemDescHi) << 32 | lo;
}

template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define FP8REF_WGMMA_M64N128K32(TA, TB)                                                            \
  asm volatile(                                                                                    \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n128k32.f32." TA "." TB                                     \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%"  \
      "24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%"   \
      "46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, "  \
      "1;\n}\n"                                                                                    \
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

#define FP8REF_WGMMA_M64N192K32(TA, TB)                                                            \
  asm volatile(                                                                                    \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n192k32.f32." TA "." TB                                     \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%"  \
      "24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%"   \
      "46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%"   \
      "68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%"   \
      "90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1;\n}\n"                                           \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), \
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), \
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), \
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])                            \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// D (64×BN f32) = A (64×32, smem) · B (BN×32, smem)ᵀ + (scale_d ? D : 0), BN = 128 or 192. The
// instruction's N changes no output bit: each output is its own row-by-column chain.
template <int BN, bool AE5, bool BE5>
__device__ __forceinline__ void wgmma_k32(float (&d)[BN / 2], std::uint64_t desc_a,
                                          std::uint64_t desc_b, int scale_d) {
  static_assert(BN == 128 || BN == 192);
#define FP8REF_WGMMA_TYPED(N)                  \
  if constexpr (!AE5 && !BE5)                  \
    FP8REF_WGMMA_M64N##N##K32("e4m3", "e4m3"); \
  else if constexpr (!AE5 && BE5)              \
    FP8REF_WGMMA_M64N##N##K32("e4m3", "e5m2"); \
  else if constexpr (AE5 && !BE5)              \
    FP8REF_WGMMA_M64N##N##K32("e5m2", "e4m3"); \
  else                                         \
    FP8REF_WGMMA_M64N##N##K32("e5m2", "e5m2");
  if constexpr (BN == 128) {
    FP8REF_WGMMA_TYPED(128)
  } else {
    FP8REF_WGMMA_TYPED(192)
  }
#undef FP8REF_WGMMA_TYPED
}

// Clusters (PTX ISA "Cluster"; the wgrad's 2-CTA pairs). The CTA's rank in its cluster
// (blockIdx.x % 2 for 1-D clusters of two).
__device__ __forceinline__ std::uint32_t cta_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// `count` arrivals on the barrier at the same shared address in CTA `peer` of the cluster. The
// default (release, CTA-scope) semantics, as CUTLASS's ClusterBarrier arrives remotely: the
// `.release.cluster` form compiles to MEMBAR.ALL.GPU before each arrival and ran the wgrad's 2-CTA
// pairs 38% slower (docs/benchmarks.md "wgrad 2-CTA pairs and the epilogue's bank order, fourteenth
// session").
__device__ __forceinline__ void arrive_peer(std::uint32_t bar, std::uint32_t peer,
                                            std::uint32_t count) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(peer));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0], %1;" ::"r"(remote), "r"(count)
               : "memory");
}
// A barrier of every thread of every CTA in the cluster (aligned: all of them execute it).
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
// tma_load_2d into the same shared address of every CTA in `mask`, completing the bytes on the
// barrier at the same address in each.
__device__ __forceinline__ void tma_load_2d_multicast(std::uint32_t dst, const void* tensor_map,
                                                      std::int32_t inner, std::int32_t row,
                                                      std::uint32_t bar, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tensor_map), "r"(inner), "r"(row), "r"(bar), "h"(mask)
      : "memory");
}

}  // namespace fp8ref::gpu::detail::sm90
