// The scale recipe and block geometry of a quantize case as case-file metadata (docs/design.md
// §6, docs/fuzz.md "Case files"): one form for the CPU (`quantize.grouped`) and GPU
// (`gpu.quantize`) suites, TE's amax epsilon included.
#pragma once

#include "cases/tensor_form.h"
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

}  // namespace fp8ref::cases
