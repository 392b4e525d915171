// `fp8-check quantize --recipe nvfp4_te|nvfp4_torchao[_rcp|_0.16|_0.18]|mxfp4|mxfp6`
// (docs/recipes.md "CLI"): the FP4 / FP6 recipes, whose codes and scales are not the FP8 recipes'
// (quantize.cpp). Writes "codes" (F4 packed two per byte, element 0 in the low nibble, as torch
// float4_e2m1fn_x2; FP6 as U8, one code per byte in bits 5:0), "scales" (ue4m3 as F8_E4M3 or E8M0
// as F8_E8M0, row-major; or the 128×4 blocked layout as U8) and, for NVFP4, "global_scale" (F32
// per-tensor decode scale, one per plane).
#pragma once

#include <string>

#include "cli/quantize.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {

bool is_subbyte_recipe(const std::string& recipe);

tensor_io::TensorFile quantize_subbyte_tensor(const tensor_io::Tensor& x, const QuantizeOptions& o,
                                              const std::string& source_name);

}  // namespace fp8ref::cli
