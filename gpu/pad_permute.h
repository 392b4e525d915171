// MoE data movement on the GPU around the grouped GEMM (docs/design.md §13): pad / unpad of
// grouped rows to an alignment, top-k permutation to expert-major order with the scale rows
// travelling along (TE compact rows and the GEMM-ready MN-major layout), and the weighted
// unpermute-combine in a fixed order with one writer per output (no atomics: the bits do not
// depend on the grid). Bitwise equal to reference/pad_permute. Plans are computed on the host from
// host routing / group sizes, uploaded once (PadPlan, PermutePlan) and reused by every launch; the
// launchers check everything before any launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace fp8ref::gpu {

// `rows` opaque rows of `row_bytes` bytes, row-major, on the device.
struct DeviceRows {
  const void* data;
  std::int64_t rows, row_bytes;
};
struct DeviceRowsOut {
  void* data;
  std::int64_t rows, row_bytes;
};

// ---- pad / unpad ----------------------------------------------------------------------------

enum class EmptyGroups : std::uint8_t {
  keep_empty,  // an empty group takes no rows
  one_block,   // an empty group takes one block of `align` zero rows
};

// Group g's rows at [starts[g], starts[g] + sizes[g]) of `capacity` rows; the rest is padding.
struct PadLayout {
  std::vector<std::int64_t> starts;  // multiples of align
  std::int64_t used, capacity;       // capacity = round_up(T + G * align, align)
};
PadLayout pad_layout(std::span<const std::int64_t> sizes, std::int64_t align, EmptyGroups empty);

// An index map on the device (freed with cudaFree when the last owner goes).
struct DeviceIndexMap {
  std::shared_ptr<const std::int64_t> data;
  std::int64_t size = 0;
};
DeviceIndexMap upload_index_map(std::span<const std::int64_t> host);

// A padding plan with its gather maps on the device, computed once for a list of group sizes and
// reused by every pad / unpad of rows grouped that way (the host plan and the upload are the
// costly part of a call; a launch with a plan does no host work beyond its checks).
struct PadPlan {
  PadLayout layout;
  std::int64_t rows_in = 0;  // sum(sizes)
  DeviceIndexMap pad_map;    // capacity entries: source row or -1
  DeviceIndexMap unpad_map;  // rows_in entries: padded row
};
PadPlan plan_pad(std::span<const std::int64_t> sizes, std::int64_t align, EmptyGroups empty);

// out (capacity rows) = the groups of `in` (sum(sizes) rows) at their padded starts, padding rows
// zero bytes. unpad_rows is the inverse (in: capacity rows, out: sum(sizes) rows).
void pad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
              EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks = 0);
void unpad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
                EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks = 0);
void pad_rows(DeviceRows in, const PadPlan& plan, DeviceRowsOut out, cudaStream_t stream,
              int max_blocks = 0);
void unpad_rows(DeviceRows in, const PadPlan& plan, DeviceRowsOut out, cudaStream_t stream,
                int max_blocks = 0);

// ---- permute / unpermute --------------------------------------------------------------------

// Top-k routing (host): expert[t * k + j] in [0, experts) or -1 (dropped), no expert twice for one
// token.
struct HostRouting {
  std::int64_t tokens, k, experts;
  std::span<const std::int32_t> expert;
};
// Expert-major order, ascending token within an expert.
struct PermuteOrder {
  std::vector<std::int64_t> expert_sizes;
  std::vector<std::int64_t> source_token;  // per permuted row
  std::vector<std::int64_t> row_of;        // (tokens, k): permuted row, -1 if dropped
};
PermuteOrder permute_order(const HostRouting& routing);

// A routing's permutation with its maps on the device, computed once and reused by the permute
// of the codes, of the scales and by the combine that follow the same routing.
struct PermutePlan {
  std::int64_t tokens = 0, k = 0, rows = 0;  // rows: the permuted row count
  DeviceIndexMap source_token;               // rows entries
  DeviceIndexMap row_of;                     // tokens * k entries, -1 if dropped
};
PermutePlan plan_permute(const HostRouting& routing);

// out row p = in row source_token[p] (FP8 code rows, or TE compact scale rows (T, K/128) /
// (T, K/32)); out.rows must equal the permuted row count.
void permute_rows(DeviceRows in, const HostRouting& routing, DeviceRowsOut out, cudaStream_t stream,
                  int max_blocks = 0);
void permute_rows(DeviceRows in, const PermutePlan& plan, DeviceRowsOut out, cudaStream_t stream,
                  int max_blocks = 0);
// The GEMM-ready MN-major f32 scale layout (numerics ScaleLayoutF32::tma_mn_major: cols x
// round_up(rows, 4) words, padding 0): in has `tokens` rows, out the permuted rows.
void permute_scales_mn_major(const std::uint32_t* in, std::int64_t scale_cols,
                             const HostRouting& routing, std::uint32_t* out, std::size_t out_words,
                             cudaStream_t stream, int max_blocks = 0);
void permute_scales_mn_major(const std::uint32_t* in, std::int64_t scale_cols,
                             const PermutePlan& plan, std::uint32_t* out, std::size_t out_words,
                             cudaStream_t stream, int max_blocks = 0);

enum class Combine : std::uint8_t {
  mul_then_add,  // acc = RN(acc + RN(p * y))
  fma,           // acc = fmaf(p, y, acc)
};
// out[t, h] (f32, tokens x H) = sum over t's routed slots j ascending of prob[t, j] * y[row, h]:
// the first routed slot's RN(p * y), each later one combined by `c`; no slot gives +0.
// y: (permuted rows, H) f32 on the device; prob: (tokens, k) f32 on the device.
void unpermute_combine(const float* y, std::int64_t H, const HostRouting& routing,
                       const float* prob, Combine c, float* out, std::size_t out_floats,
                       cudaStream_t stream, int max_blocks = 0);
void unpermute_combine(const float* y, std::int64_t H, const PermutePlan& plan, const float* prob,
                       Combine c, float* out, std::size_t out_floats, cudaStream_t stream,
                       int max_blocks = 0);

}  // namespace fp8ref::gpu
