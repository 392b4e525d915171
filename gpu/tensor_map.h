// TMA tensor maps of FP8 operand tiles (internal to gpu/): a row-major 2D byte tensor read in boxes
// of 128 bytes × box_rows rows with the 128-byte swizzle that the wgmma descriptors of
// gpu/wgmma_sm90.cuh expect (CUDA driver API "Tensor Map Object Management"). The driver entry
// point is obtained through the runtime (cudaGetDriverEntryPointByVersion): nothing new to link.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace fp8ref::gpu::detail {

// `rows` rows of `cols` bytes, `cols` apart, at `base` (16-byte aligned, cols % 16 == 0, both
// checked by the launchers); box_rows <= 256. Boxes past the last row read zeros. Throws CudaError
// when the driver refuses the map.
CUtensorMap fp8_tile_map(const void* base, std::int64_t cols, std::int64_t rows, int box_rows);

}  // namespace fp8ref::gpu::detail
