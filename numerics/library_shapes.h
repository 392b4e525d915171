// The block geometries of the recipes and the shape rules of their source libraries
// (docs/recipes.md, "Shapes"): which (rows, cols) each library accepts for a recipe and geometry.
// fp8ref's oracle quantizes any shape; the GPU launchers and the CLI refuse what the library
// refuses, so both reference/ and gpu/ read the rule from here.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "numerics/scale_recipe.h"

namespace fp8ref {

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
inline constexpr std::array kAllBlockGeometries = {
    BlockGeometry::tensorwise, BlockGeometry::rowwise, BlockGeometry::per_channel,
    BlockGeometry::b1x128,     BlockGeometry::b128x1,  BlockGeometry::b128x128,
    BlockGeometry::b1x32,      BlockGeometry::b32x1};

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

// Fixed block extents of g (0 = the whole extent of that dimension).
constexpr BlockShape fixed_block_extent(BlockGeometry g) {
  switch (g) {
    case BlockGeometry::b1x128: return {1, 128};
    case BlockGeometry::b128x1: return {128, 1};
    case BlockGeometry::b128x128: return {128, 128};
    case BlockGeometry::b1x32: return {1, 32};
    case BlockGeometry::b32x1: return {32, 1};
    case BlockGeometry::rowwise: return {1, 0};
    case BlockGeometry::per_channel: return {0, 1};
    case BlockGeometry::tensorwise: return {0, 0};
  }
  return {0, 0};
}

// The block of geometry g on an (rows, cols) tensor (whole-extent blocks are at least 1 long).
constexpr BlockShape block_shape(BlockGeometry g, std::int64_t rows, std::int64_t cols) {
  const BlockShape e = fixed_block_extent(g);
  const std::int64_t m = rows > 0 ? rows : 1, k = cols > 0 ? cols : 1;
  return {e.rows == 0 ? m : e.rows, e.cols == 0 ? k : e.cols};
}

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

namespace detail {

// The rule of r's library that an (rows, cols) tensor with fixed block extents e breaks, if any.
// DeepGEMM pads K (per_token / per_block casts) but per_channel_cast_to_fp8 asserts
// rows % gran == 0; torchao's blockwise casts and to_mx assert that the block divides the
// dimension; TE's MXFP8 quantizer needs both dims % 32 (it makes the rowwise and columnwise copies
// together); TE's other casts and torchao's tensorwise / rowwise casts take any shape.
constexpr ShapeRule broken_shape_rule(const Recipe& r, BlockShape e, std::int64_t rows,
                                      std::int64_t cols) {
  const auto divides = [](std::int64_t b, std::int64_t n) { return b <= 1 || n % b == 0; };
  if (r.kind == RecipeKind::te) return ShapeRule::accepted;
  if (r.kind == RecipeKind::deepgemm)
    return e.cols == 1 && !divides(e.rows, rows) ? ShapeRule::deepgemm_channel_rows
                                                 : ShapeRule::accepted;
  if (r.kind == RecipeKind::mx_rceil && r.runtime == Runtime::cuda_kernel)
    return rows % 32 != 0 || cols % 32 != 0 ? ShapeRule::te_mxfp8_dims : ShapeRule::accepted;
  return !divides(e.rows, rows) || !divides(e.cols, cols) ? ShapeRule::torchao_extent_divides
                                                          : ShapeRule::accepted;
}

inline std::string shape_rule_text(ShapeRule rule, BlockShape e) {
  switch (rule) {
    case ShapeRule::deepgemm_channel_rows:
      return "DeepGEMM per_channel_cast_to_fp8 needs rows % " + std::to_string(e.rows) + " == 0";
    case ShapeRule::te_mxfp8_dims:
      return "Transformer Engine MXFP8 needs both dimensions divisible by 32";
    case ShapeRule::torchao_extent_divides:
      return "torchao needs every block extent to divide its dimension";
    case ShapeRule::accepted: break;
  }
  return {};
}

}  // namespace detail

inline ShapeCheck library_shape_check(const Recipe& r, BlockGeometry g, std::int64_t rows,
                                      std::int64_t cols) {
  const BlockShape e = fixed_block_extent(g);
  const ShapeRule rule = detail::broken_shape_rule(r, e, rows, cols);
  if (rule == ShapeRule::accepted) return {rule, {}};
  return {rule, "recipe " + std::string(to_string(r.kind)) + " (" +
                    std::string(to_string(r.runtime)) + "), block " + std::string(to_string(g)) +
                    ", shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
                    "): " + detail::shape_rule_text(rule, e)};
}

// Throws std::invalid_argument with library_shape_check's reason unless the shape is accepted.
inline void require_library_shape(const Recipe& r, BlockGeometry g, std::int64_t rows,
                                  std::int64_t cols) {
  const ShapeCheck c = library_shape_check(r, g, rows, cols);
  if (c.rule != ShapeRule::accepted) throw std::invalid_argument(c.reason);
}

}  // namespace fp8ref
