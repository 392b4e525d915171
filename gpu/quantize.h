// Block-scaled FP8 quantization on the GPU (docs/design.md §6, docs/recipes.md "GPU kernels"):
// the amax pass and the cast pass of every recipe the oracle names, over the 1x128, 128x128, 1x32,
// 128x1, 32x1, rowwise, per-channel and tensorwise geometries, from bf16 or f32, writing the codes
// row-major and the scale grid in any layout of numerics/scale_layout.h. Bitwise equal to
// reference/quantize (ref::quantize / quantize_grouped_rows) for the runtimes listed below.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "numerics/format.h"
#include "numerics/library_shapes.h"
#include "numerics/scale_layout.h"
#include "numerics/scale_recipe.h"
#include "numerics/source.h"

namespace fp8ref::gpu {

// A row-major, contiguous (rows, cols) device tensor of bf16 (uint16 patterns) or f32.
struct DeviceMatrix {
  const void* data;
  Source src;  // bf16 or f32
  std::int64_t rows, cols;
};

// Where one quantize call writes: `codes` rows*cols bytes row-major; `scales` the logical scale
// grid (scale_grid_shape) serialised in `f32_layout` (non-MX recipes, f32 decode scales) or
// `e8m0_layout` (MX recipes, E8M0 codes), padding as numerics/scale_layout.h defines it.
struct QuantizeOutput {
  std::uint8_t* codes;
  std::size_t codes_bytes;
  void* scales;
  std::size_t scales_bytes;
  ScaleLayoutF32 f32_layout = ScaleLayoutF32::row_major;
  ScaleLayoutE8m0 e8m0_layout = ScaleLayoutE8m0::row_major;
};

// Launch knobs that never change a bit (tests vary them to prove it): a cap on the grid size, and
// the 16-byte chunks a lane loads before casting in the bf16 1x32 / 1x128 kernel (4, 8 or 16);
// 0 = the launcher's choice.
struct LaunchOptions {
  int max_blocks = 0;
  int chunks_per_lane = 0;
};

struct ScaleGridShape {
  std::int64_t rows, cols;
};
// The logical scale grid of g on a (rows, cols) tensor; group_ends (torch `offs`, may be empty =
// global blocking) restart row blocks at every group start, as ref::quantize_grouped_rows.
ScaleGridShape scale_grid_shape(BlockGeometry g, std::int64_t rows, std::int64_t cols,
                                std::span<const std::int64_t> group_ends);
// Bytes of the serialised scale grid of one call.
std::size_t scale_bytes(const Recipe& r, BlockGeometry g, std::int64_t rows, std::int64_t cols,
                        std::span<const std::int64_t> group_ends, const QuantizeOutput& out);

// Empty when the GPU kernels implement recipe r, else one line saying why not. Implemented:
// te and mx_rceil under cuda_kernel, and deepgemm (with or without ue8m0 scales), torchao (with
// or without power-of-two scales), mx_floor, mx_ceil, mx_even and mx_rceil under torch_cuda
// (torch's f32 log2 is CUDA's log2f). torch_cpu is a CPU runtime and is refused.
const char* unsupported_reason(const Recipe& r);

// Quantizes x into out on `stream`. Throws std::invalid_argument (one line, before any launch)
// for an unsupported recipe, a source other than bf16 / f32, a shape the recipe's library
// refuses (library_shape_check), group ends out of order or not ending at rows, a layout of the
// wrong scale type, or an output buffer too small; CudaError when a CUDA call fails.
void quantize(const DeviceMatrix& x, const Recipe& r, BlockGeometry g,
              std::span<const std::int64_t> group_ends, const QuantizeOutput& out,
              cudaStream_t stream, LaunchOptions opt = {});

// Both orientations of x in one call (the dgrad and wgrad operands of one tensor): `rowwise` gets
// exactly what quantize(x, r, 1x128) writes and `columnwise` what quantize(x, r, 128x1) writes
// (1x32 / 32x1 for the MX recipes), scales in each output's layout. A bf16 source with
// cols % 128 == 0 and 16-byte aligned buffers is read once; any other call runs the two
// quantizes. Throws as quantize does, before any launch.
void quantize_dual(const DeviceMatrix& x, const Recipe& r, const QuantizeOutput& rowwise,
                   const QuantizeOutput& columnwise, cudaStream_t stream, LaunchOptions opt = {});

// SwiGLU then quantize (docs/recipes.md "SwiGLU"): h = silu(gate) * up of a merged (rows, 2H)
// bf16 tensor (gate = columns [0, H), up = [H, 2H), the merged gate/up GEMM's output), quantized
// as quantize() quantizes an f32 (rows, H) tensor holding h over 1x128 blocks (1x32 for the MX
// recipes): bitwise ref::swiglu_merged_bf16 then ref::quantize. Needs H % 128 (32) == 0, a
// 16-byte aligned input and 8-byte aligned codes; throws as quantize does, before any launch.
void swiglu_quantize(const DeviceMatrix& gate_up, const Recipe& r, const QuantizeOutput& out,
                     cudaStream_t stream, LaunchOptions opt = {});

}  // namespace fp8ref::gpu

namespace fp8ref::gpu {

// Host-side convenience for tools and tests: copies a host (rows, cols) tensor to the device,
// fills the outputs with `poison` first (so an entry the kernel leaves unwritten shows), runs
// quantize on a fresh stream and copies codes and the serialised scales back.
struct HostQuantized {
  std::vector<std::uint8_t> codes;   // rows * cols
  std::vector<std::uint8_t> scales;  // the serialised grid, scale_bytes long
  ScaleGridShape grid;
};
HostQuantized quantize_host(const void* host_x, Source src, std::int64_t rows, std::int64_t cols,
                            const Recipe& r, BlockGeometry g,
                            std::span<const std::int64_t> group_ends, ScaleLayoutF32 f32_layout,
                            ScaleLayoutE8m0 e8m0_layout, LaunchOptions opt = {},
                            std::uint8_t poison = 0xCD);

// The same for swiglu_quantize: a host merged (rows, 2H) bf16 gate/up in, the quantized h
// (rows * H codes, the serialised 1x128 / 1x32 scale grid) out.
HostQuantized swiglu_quantize_host(const std::uint16_t* host_gate_up, std::int64_t rows,
                                   std::int64_t two_h, const Recipe& r, ScaleLayoutF32 f32_layout,
                                   ScaleLayoutE8m0 e8m0_layout, LaunchOptions opt = {},
                                   std::uint8_t poison = 0xCD);

}  // namespace fp8ref::gpu
