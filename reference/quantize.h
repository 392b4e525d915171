// Quantize / dequantize of strided 2-D and (G, ., .) 3-D tensors under a named scale recipe and
// block geometry (docs/design.md §6, docs/recipes.md). Blocks are independent, so results do not
// depend on the OpenMP thread count. Per-group quantization restarts row blocks at each group
// boundary.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/scale_recipe.h"

namespace fp8ref::ref {

enum class BlockGeometry : std::uint8_t {
  tensorwise,   // one block: (M, K)
  rowwise,      // (1, K): one scale per row / token
  per_channel,  // (M, 1): one scale per column / channel
  b1x128,
  b128x1,
  b128x128,
  b1x32,
  b32x1,
};

constexpr std::string_view to_string(BlockGeometry g) {
  switch (g) {
    case BlockGeometry::tensorwise: return "tensorwise";
    case BlockGeometry::rowwise: return "rowwise";
    case BlockGeometry::per_channel: return "per_channel";
    case BlockGeometry::b1x128: return "1x128";
    case BlockGeometry::b128x1: return "128x1";
    case BlockGeometry::b128x128: return "128x128";
    case BlockGeometry::b1x32: return "1x32";
    case BlockGeometry::b32x1: return "32x1";
  }
  return "?";
}

struct BlockShape {
  std::int64_t rows, cols;
};
// The block of geometry g on an (M, K) tensor (whole-extent blocks are at least 1 long).
BlockShape block_shape(BlockGeometry g, std::int64_t rows, std::int64_t cols);

// A strided 2-D view of source bit patterns: f32 as uint32_t, bf16 / f16 as uint16_t. Strides are
// in elements and may be any non-negative values (a transpose is a stride swap).
struct SourceView2d {
  const void* data;
  Source src;  // f32, bf16 or f16
  std::int64_t rows, cols, row_stride, col_stride;
};
// G stacked 2-D views (per-expert weights (G, N, K)), group_stride elements apart.
struct SourceView3d {
  SourceView2d plane;
  std::int64_t groups, group_stride;
};

struct Quantized {
  Recipe recipe;
  BlockGeometry geometry;
  std::int64_t rows, cols;  // codes, row-major
  std::vector<std::uint8_t> codes;
  std::int64_t scale_rows, scale_cols;
  std::vector<float> scale;        // decode scale s per block, row-major
  std::vector<std::uint8_t> e8m0;  // MX recipes: the stored E8M0 code per block; else empty
  std::vector<std::int64_t> block_row_start;  // first tensor row of each block row, + rows at end
};

// Global blocking: row blocks start at multiples of the block height.
Quantized quantize(const SourceView2d& x, const Recipe& r, BlockGeometry g);
// The same into `out`, reusing its storage (no allocation or page faults when its vectors are
// already large enough): for callers that quantize repeatedly. Bitwise equal to quantize().
void quantize_into(const SourceView2d& x, const Recipe& r, BlockGeometry g, Quantized& out);

// Per-group blocking along rows (tokens): group_ends are cumulative end offsets (torch `offs`),
// non-decreasing, the last equal to x.rows; row blocks restart at each group start, so a group of
// m rows has ceil(m / block_rows) block rows (an empty group has none).
Quantized quantize_grouped_rows(const SourceView2d& x, const Recipe& r, BlockGeometry g,
                                std::span<const std::int64_t> group_ends);

// Each of the G planes quantized on its own (per-expert weights).
std::vector<Quantized> quantize_3d(const SourceView3d& x, const Recipe& r, BlockGeometry g);

// x_hat[i][j] = decode(q) * s of its block, exactly (every such product is an f64).
std::vector<double> dequantize(const Quantized& q);

// The shape rules of the recipes' source libraries (docs/recipes.md, "Shapes"). fp8ref itself
// quantizes any shape (partial blocks take the amax over their real elements), so this is a
// separate check.
enum class ShapeRule : std::uint8_t {
  accepted,                // the library takes (rows, cols) with this geometry
  deepgemm_channel_rows,   // DeepGEMM per_channel_cast_to_fp8: rows % block height
  te_mxfp8_dims,           // Transformer Engine MXFP8: both dimensions % 32
  torchao_extent_divides,  // torchao: every fixed block extent divides its dimension
};
struct ShapeCheck {
  ShapeRule rule;
  std::string reason;  // empty when accepted, else one line naming recipe, block, shape and rule
};
ShapeCheck library_shape_check(const Recipe& r, BlockGeometry g, std::int64_t rows,
                               std::int64_t cols);
// Throws std::invalid_argument with library_shape_check's reason unless the shape is accepted.
void require_library_shape(const Recipe& r, BlockGeometry g, std::int64_t rows, std::int64_t cols);

// What to do with NaN elements before quantizing.
enum class NanInput : std::uint8_t {
  propagate,  // quantize them the way the recipe's library does (docs/recipes.md)
  reject,     // throw std::invalid_argument naming the first NaN (row, col)
};
void check_nan_input(const SourceView2d& x, NanInput policy);

}  // namespace fp8ref::ref
