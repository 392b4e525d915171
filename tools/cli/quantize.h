// `fp8-check quantize`: quantize one 2-D (or (G, N, K) per-expert) tensor of a file under a named
// recipe, block geometry and scale layout, and write the codes and the serialised scales as
// safetensors (docs/design.md §6-7). docs/recipes.md "CLI" lists the tokens.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tensor_io/tensor.h"

namespace fp8ref::cli {

struct QuantizeOptions {
  std::string recipe;  // deepgemm torchao te mx_floor mx_rceil mx_ceil mx_even
  std::string block;   // tensorwise rowwise per_channel 1x128 128x1 128x128 1x32 32x1
  std::string layout;  // a ScaleLayoutF32 or ScaleLayoutE8m0 token
  std::string in;      // FILE or FILE:tensor
  std::string out;     // .safetensors (or another extension tensor_io writes)
  std::string format = "e4m3";
  std::string runtime;  // empty: cuda_kernel for te / mx_rceil, else torch_cuda (printed)
  bool pow2 = false;
  float epsilon = 0.0f;
  std::string nan = "propagate";      // propagate | reject
  bool allow_partial_blocks = false;  // skip the source library's shape requirement
  std::string device = "cpu";         // cpu (reference/quantize) | cuda (gpu/quantize kernels)
  bool swiglu = false;  // the input is a merged (M, 2H) BF16 gate/up: quantize silu(gate) * up
  // mxfp6 codes: u8 (one code per byte, bits 5:0) or packed (F6_E2M3 / F6_E3M2, 6 bits each,
  // LSB first: the operand dtype `oracle grouped-gemm` reads)
  std::string f6_codes = "u8";
};

// Quantizes `x` as the options say; the tensors "codes" and "scales" plus metadata. Throws
// UsageError for every bad input.
tensor_io::TensorFile quantize_tensor(const tensor_io::Tensor& x, const QuantizeOptions& o,
                                      const std::string& source_name);

void add_quantize_command(CLI::App& app);

}  // namespace fp8ref::cli
