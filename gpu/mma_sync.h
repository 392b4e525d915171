// The FP8 `mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32` instruction (PTX ISA 8.4+, sm_89+),
// one warp per 16×8×32 tile: what a CUDA-core-free FP8 kernel written with mma.sync computes on
// the hardware it runs on. Used to hold the `hopper_mma_sync` accumulation model
// (numerics/models/mma_sync_step.h, docs/design.md §10) to an H100 bit for bit; the model is
// portable software, this is the instruction.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "numerics/format.h"

namespace fp8ref::gpu {

inline constexpr int kMmaSyncM = 16, kMmaSyncN = 8, kMmaSyncKDepth = 32;

// For each tile t < tiles: D[t] = A[t]·B[t] + C[t] with
//   A (tiles, 16, 32) FP8 codes, row-major (row m, k);
//   B (tiles, 8, 32)  FP8 codes, n-major: B[t][n][k] (the "col" operand, K contiguous);
//   C, D (tiles, 16, 8) f32, row-major.
// fa, fb: e4m3 or e5m2. Device pointers; throws std::runtime_error on a launch error.
void mma_sync_fp8_tiles(Format fa, Format fb, const std::uint8_t* a, const std::uint8_t* b,
                        const float* c, float* d, std::size_t tiles, cudaStream_t stream);

}  // namespace fp8ref::gpu
