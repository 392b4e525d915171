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

#include "numerics/library_shapes.h"
#include "numerics/scale_recipe.h"

namespace fp8ref::ref {

// The geometries, block shapes and library shape rules live in numerics/library_shapes.h (the GPU
// launchers read them too); they are re-exported here.
using fp8ref::block_shape;
using fp8ref::BlockGeometry;
using fp8ref::BlockShape;
using fp8ref::library_shape_check;
using fp8ref::require_library_shape;
using fp8ref::ShapeCheck;
using fp8ref::ShapeRule;
using fp8ref::to_string;

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

// What to do with NaN elements before quantizing.
enum class NanInput : std::uint8_t {
  propagate,  // quantize them the way the recipe's library does (docs/recipes.md)
  reject,     // throw std::invalid_argument naming the first NaN (row, col)
};
void check_nan_input(const SourceView2d& x, NanInput policy);

}  // namespace fp8ref::ref
