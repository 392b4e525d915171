// The warp-specialised TMA pipeline the FP8 GEMM kernels share (internal to gpu/, sm_90a;
// docs/gpu_gemm.md §2): a CTA of two consumer warpgroups (threads 0..255, wgmma and promotion)
// and one producer warpgroup (one warp issues the loads), registers moved to the consumers with
// setmaxnreg, and a ring of stages, each an A tile, a B tile and the block's scales, guarded by a
// `full` mbarrier (TMA bytes + the producer lanes' scale copies) and an `empty` one (one arrival
// per consumer warp once it no longer reads the stage).
#pragma once

#include <cstdint>

#include "gpu/wgmma_sm90.cuh"

namespace fp8ref::gpu::detail::sm90 {

constexpr int kConsumerThreads = 256;                     // two warpgroups of 64 rows
constexpr int kPipelineThreads = kConsumerThreads + 128;  // + the producer warpgroup
constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kConsumerThreads * kConsumerRegs + 128 * kProducerRegs <= 65536);

// Shared memory: kStages × (A tile, B tile) at 1024-byte aligned offsets (the 128-byte swizzle
// repeats every 8 rows of 128 bytes), the scales of each stage, then full[] and empty[].
// AlignedBase: the dynamic shared memory is declared 1024-aligned, so no alignment slack is
// reserved (a ring that must stay inside the 196 KB carveout, docs/gpu_gemm.md §2); `at` traps on
// a base that is not.
template <int ATile, int BTile, int Stages, int ScaleFloats, bool AlignedBase = false>
struct StageRing {
  static constexpr int kStages = Stages;
  static constexpr int kStageBytes = ATile + BTile;
  static_assert(ATile % 1024 == 0 && BTile % 1024 == 0);
  static constexpr int kScales = kStages * kStageBytes;
  static constexpr int kBars = kScales + kStages * ScaleFloats * 4;
  static constexpr int kBytes = kBars + 2 * kStages * 8 + (AlignedBase ? 0 : 1024);
  std::uint8_t* base;
  __device__ static StageRing at(std::uint8_t* raw) {
    const auto p = reinterpret_cast<std::uintptr_t>(raw);
    if constexpr (AlignedBase) {
      if (p % 1024 != 0) __trap();
      return {raw};
    }
    return {reinterpret_cast<std::uint8_t*>((p + 1023) & ~std::uintptr_t(1023))};
  }
  __device__ std::uint32_t a_tile(int s) const { return smem_u32(base + s * kStageBytes); }
  __device__ std::uint32_t b_tile(int s) const { return a_tile(s) + ATile; }
  __device__ float* scales(int s) const {
    return reinterpret_cast<float*>(base + kScales) + s * ScaleFloats;
  }
  __device__ std::uint32_t full(int s) const { return smem_u32(base + kBars) + 8 * s; }
  __device__ std::uint32_t empty(int s) const { return full(kStages + s); }
  // Thread 0 initialises the barriers; the caller then synchronises the CTA.
  // `ctas`: the CTAs whose consumer warps free each stage (2 where a cluster pair's producers
  // multicast into both CTAs' stages).
  __device__ void init(bool scale_copies, int ctas = 1) const {
    init_full(scale_copies ? 33 : 1, ctas);
  }
  // The same with `full_arrivals` arrivals completing a `full` phase (besides its TMA bytes).
  __device__ void init_full(int full_arrivals, int ctas = 1) const {
    for (int s = 0; s < kStages; ++s)
      mbar_init(full(s), full_arrivals), mbar_init(empty(s), ctas * kConsumerWarps);
    mbar_init_fence();
  }
  // Stage and phase parity of the it-th block of the CTA (producer and consumers count alike).
  __device__ static int stage(std::uint32_t it) { return int(it % kStages); }
  __device__ static std::uint32_t parity(std::uint32_t it) { return (it / kStages) & 1; }
  // Producer: wait until the consumers freed the stage of block it (free at first use).
  __device__ void wait_empty(std::uint32_t it) const {
    mbar_wait(empty(stage(it)), parity(it) ^ 1);
  }
  // Consumer warp: done reading the stage of block it.
  __device__ void release(std::uint32_t it) const {
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbar_arrive(empty(stage(it)));
  }
};

}  // namespace fp8ref::gpu::detail::sm90
