// The expected bytes of a GPU quantize call, from the oracle: reference/quantize's codes and its
// scale grid serialised by numerics/scale_layout.h in the layout the kernel wrote. Shared by the
// gpu.quantize suite, fp8ref_gpu_quantize_test and the CLI's --device cuda path.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "numerics/scale_layout.h"
#include "reference/quantize.h"

namespace fp8ref::fuzz {

struct ExpectedQuantize {
  ref::Quantized q;
  std::vector<std::uint8_t> scales;  // serialised
};

inline ExpectedQuantize expected_quantize(const void* x, Source src, std::int64_t rows,
                                          std::int64_t cols, const Recipe& r, BlockGeometry g,
                                          std::span<const std::int64_t> group_ends,
                                          ScaleLayoutF32 f32_layout, ScaleLayoutE8m0 e8m0_layout) {
  const ref::SourceView2d v{x, src, rows, cols, cols, 1};
  ExpectedQuantize e{
      group_ends.empty() ? ref::quantize(v, r, g) : ref::quantize_grouped_rows(v, r, g, group_ends),
      {}};
  if (is_mx(r.kind)) {
    e.scales = serialize(e8m0_layout, ScaleGridE8m0{1, e.q.scale_rows, e.q.scale_cols, e.q.e8m0});
  } else {
    ScaleGridF32 grid{1, e.q.scale_rows, e.q.scale_cols, {}};
    for (const float s : e.q.scale) grid.bits.push_back(std::bit_cast<std::uint32_t>(s));
    e.scales = serialize(f32_layout, grid);
  }
  return e;
}

// The recipes the GPU kernels implement (gpu/quantize.h): the campaign's recipes under torch_cuda
// and TE's kernel (torchao's power-of-two scales and torch's RCEIL included), plus TE's MXFP8
// kernel and a TE epsilon.
inline std::vector<Recipe> gpu_recipes() {
  std::vector<Recipe> out;
  for (bool p : {false, true})
    out.push_back({RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, p, 0.0f});
  for (Format f : {Format::e4m3, Format::e5m2}) {
    for (bool p : {false, true})
      out.push_back({RecipeKind::torchao, f, Runtime::torch_cuda, p, 0.0f});
    for (RecipeKind k :
         {RecipeKind::mx_floor, RecipeKind::mx_ceil, RecipeKind::mx_even, RecipeKind::mx_rceil})
      out.push_back({k, f, Runtime::torch_cuda, false, 0.0f});
    out.push_back({RecipeKind::mx_rceil, f, Runtime::cuda_kernel, false, 0.0f});
    for (bool p : {false, true}) out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, 0.0f});
    out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, false, 1e-3f});
  }
  return out;
}

}  // namespace fp8ref::fuzz
