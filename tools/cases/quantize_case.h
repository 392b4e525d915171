// The quantize case (docs/design.md §6, docs/fuzz.md "Case files"): an f32 source in groups of
// rows, a scale recipe and a block geometry, and its safetensors form, TE's amax epsilon
// included: one form for the CPU (`quantize.grouped`) and GPU (`gpu.quantize`) suites.
#pragma once

#include <cstdint>
#include <vector>

#include "cases/group_sizes.h"
#include "cases/tensor_form.h"
#include "cases/value_class.h"
#include "numerics/library_shapes.h"
#include "numerics/scale_recipe.h"

namespace fp8ref::cases {

// recipe_kind, recipe (its name), elem, runtime, pow2, epsilon_bits (the f32 bits of TE's amax
// epsilon), geometry and geometry_name.
void save_recipe(const Recipe& r, BlockGeometry g, TensorFile& tf);

struct RecipeGeometry {
  Recipe recipe;
  BlockGeometry geometry;
};
// The recipe and geometry back (std::invalid_argument for an id outside its enum or an element
// format other than e4m3 / e5m2; epsilon 0 when a file has no epsilon_bits). Whether a library
// implements the recipe is validate()'s question, asked by the caller.
RecipeGeometry load_recipe(const TensorFile& tf);

// The source (f32 bit patterns, gs.total() rows × cols, drawn from value class `values`) and how
// it is quantized. gpu.quantize's case adds its launch's fields (tools/campaign).
struct QuantizeCase {
  GroupSizes gs;
  Recipe recipe{RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, false, 0.0f};
  BlockGeometry geometry = BlockGeometry::b128x128;
  std::int64_t cols = 1;
  ValueClass values = ValueClass::normal;
  std::vector<std::uint32_t> x;  // (gs.total(), cols)
};

// The shape of the "x_bits" tensor in a file: (rows, cols) as quantize.grouped writes it, or one
// flat row as gpu.quantize writes it. Loading takes either.
enum class SourceShape : std::uint8_t { matrix, flat };

// "x_bits", the group sizes, the recipe (save_recipe), "cols" and "values".
void save_quantize_case(const QuantizeCase& q, SourceShape shape, TensorFile& tf);
// The same back into `q` (std::invalid_argument when x does not hold rows × cols elements, or
// from validate() when no library implements the recipe); an unknown value class keeps `normal`.
void load_quantize_case(const TensorFile& tf, QuantizeCase& q);

}  // namespace fp8ref::cases
