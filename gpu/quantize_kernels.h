// Internal interface between the quantize launcher (gpu/quantize.cpp, which checks every argument)
// and its kernels (gpu/quantize_kernels.cu): the recipe as plain numbers, the scale sink and one
// entry point per kernel family. Not a public header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp8ref::gpu::detail {

enum class ScaleKind : std::uint8_t {
  deepgemm,
  torchao,
  te,
  mx_torchao,
  mx_rceil_kernel,
  mx_rceil_torch,
};

struct RecipeParams {
  ScaleKind kind;
  bool e4m3;         // else e5m2
  bool pow2;         // deepgemm ue8m0, torchao round_scales_to_power_of_2, te force_pow_2_scales
  bool mx_ceil;      // mx_torchao: CEIL
  bool mx_even;      // mx_torchao: EVEN
  bool nonsat;       // deepgemm: torch's non-saturating e4m3fn cast
  bool ignore_nan;   // cuda_kernel amax (fmaxf): NaN elements do not count
  float elem_max;    // 448 or 57344
  float max_rcp;     // f32(1 / elem_max): deepgemm's torch_cuda scalar division, TE's max_norm_rcp
  float epsilon;     // te amax_epsilon
  float source_max;  // te value_for_inf: the largest finite input value
  int elem_emax;     // 8 or 15 (OCP MX emax_elem)
};

// Scale grid entry (r, c) goes to a layout offset; `layout` numbers: 0 row_major / te_compact,
// 1 col_major, 2 tma_mn_major, 3 cublas_k_major_pad4 (f32 words); 10 e8m0 row_major,
// 11 blocked_128x4, 12 deepgemm_packed (bytes).
struct ScaleSink {
  void* data;
  int layout;
  std::int64_t rows, cols;  // the logical grid
};

struct QuantizeLaunch {
  const void* x;
  bool bf16;
  std::int64_t rows, cols;
  std::int64_t block_h, block_w;  // block extents (whole-extent blocks: rows / cols)
  std::int64_t block_rows;        // scale grid rows
  const std::int64_t* starts;     // device: block_rows + 1 row starts, or null (br * block_h)
  std::uint8_t* codes;
  ScaleSink scales;
  RecipeParams recipe;
  bool vec;                // 16-byte loads: cols % 8 == 0 and x 16-byte aligned, codes 8-aligned
  std::uint32_t* amax_ws;  // tensorwise: one zeroed word
  int max_blocks;
  int chunks_per_lane;  // 1xW bf16 kernel: 4, 8 or 16 rounds a lane (0: 16 for 1x128, 4 for 1x32)
  cudaStream_t stream;
};

// Both orientations of one tensor: `row` 1xW blocks, `col` Wx1 blocks (W = row.block_w, 128 or
// 32) of the same source and recipe; bf16, 16-byte access, cols % 128 == 0.
struct DualLaunch {
  QuantizeLaunch row, col;
};
void launch_dual_bf16(const DualLaunch& dl);

// SwiGLU then 1xW quantize (W = block_w, 32 or 128): the launch describes the (rows, H) f32 result,
// x is the merged (rows, 2H) bf16 gate/up, 16-byte aligned, H % W == 0.
void launch_swiglu_bf16(const QuantizeLaunch& q);
// The SwiGLU kernel's e = RN_f32(exp(-g)) for every bf16 pattern g: out (device, 65536 floats)
// [g] (the exhaustive test of its table and range cut-offs, proptests/gpu).
void swiglu_exp_probe(float* out, cudaStream_t stream);

void launch_small_blocks(const QuantizeLaunch& q);   // block_h == 1, block_w 32 or 128
void launch_tile_blocks(const QuantizeLaunch& q);    // one CTA per block (rowwise, 128x128, ...)
void launch_column_blocks(const QuantizeLaunch& q);  // block_w == 1
void launch_tensorwise(const QuantizeLaunch& q);     // amax pass, then the cast pass
// Single-pass bf16 kernels (gpu/quantize_tile_kernels.cu), taken when the source is bf16 with
// 16-byte access; each launches nothing and returns false when the call does not fit it.
bool launch_row_blocks_bf16(const QuantizeLaunch& q);     // 1x32 / 1x128, cols % W == 0
bool launch_tile_blocks_bf16(const QuantizeLaunch& q);    // blocks of <= 2048 16-byte chunks
bool launch_column_blocks_bf16(const QuantizeLaunch& q);  // block_w 1, block_h <= 128
void launch_fill_words(void* data, std::uint32_t word, std::int64_t n, cudaStream_t stream);

}  // namespace fp8ref::gpu::detail
