// TMA tensor maps (internal to gpu/): of FP8 operand tiles, a row-major 2D byte tensor read in
// boxes of 128 bytes × box_rows rows with the 128-byte swizzle that the wgmma descriptors of
// gpu/wgmma_sm90.cuh expect; of f32 / bf16 output tiles (the wgrad epilogue's C and dW) (CUDA
// driver API "Tensor Map Object Management"). The driver entry point is obtained through the
// runtime (cudaGetDriverEntryPointByVersion): nothing new to link.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace fp8ref::gpu::detail {

// `rows` rows of `cols` bytes, `cols` apart, at `base` (16-byte aligned, cols % 16 == 0, both
// checked by the launchers); box_rows <= 256. Boxes past the last row read zeros. Throws CudaError
// when the driver refuses the map.
CUtensorMap fp8_tile_map(const void* base, std::int64_t cols, std::int64_t rows, int box_rows);

// `rows` rows of `cols` f32 (bf16 false) or bf16 (bf16 true) elements, `cols` apart, at `base`
// (16-byte aligned, cols·element bytes % 16 == 0, both checked by the caller), in boxes of 32
// elements × box_rows rows (box_rows <= 256) with the swizzle that spans one box row: 128 bytes for
// f32, 64 for bf16 (the 16-byte chunk c of box row r at chunk c ^ (r & 7), resp. c ^ ((r >> 1) &
// 3)). Loads read zeros out of bounds; stores skip elements out of bounds. Throws CudaError when
// the driver refuses the map.
CUtensorMap out_tile_map(const void* base, bool bf16, std::int64_t cols, std::int64_t rows,
                         int box_rows);

// `rows` rows of `cols` f32 elements, `cols` apart, at `base` (16-byte aligned, cols % 4 == 0,
// both checked by the caller), in boxes of box_cols (<= 256) × 1 row without swizzle (a row of
// block scales into a 128-byte aligned slot). Loads read zeros out of bounds. Throws CudaError
// when the driver refuses the map.
CUtensorMap f32_row_map(const void* base, std::int64_t cols, std::int64_t rows, int box_cols);

}  // namespace fp8ref::gpu::detail
