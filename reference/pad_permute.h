// MoE data movement around the grouped GEMM (docs/design.md §13): padding of grouped rows to an
// alignment and back, top-k token permutation to expert-major order with the activation scale
// rows travelling along, and the probability-weighted unpermute in a fixed f32 order. Rows are
// opaque byte rows (FP8 codes, f32 or E8M0 scale rows, bf16 activations) moved bit-exactly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/group_desc.h"
#include "reference/quantize.h"

namespace fp8ref::ref {

// A row-major 2-D tensor of `rows` opaque rows of `row_bytes` bytes each.
struct RowsView {
  std::span<const std::uint8_t> bytes;
  std::int64_t rows, row_bytes;
};
struct RowsSpan {
  std::span<std::uint8_t> bytes;
  std::int64_t rows, row_bytes;
};

// ---- pad / unpad ----------------------------------------------------------------------------

enum class EmptyGroupPolicy : std::uint8_t {
  keep_empty,  // an empty group takes no rows (TE / torch `offs` with repeated ends)
  one_block,   // an empty group takes one block of `align` zero rows (kernels that need m > 0)
};

// Group g's true rows land at [starts[g], starts[g] + sizes[g]) of a buffer of `capacity` rows;
// rows [starts[g] + sizes[g], starts[g] + padded_sizes[g]) and [used, capacity) are padding.
struct PadPlan {
  std::int64_t align;
  EmptyGroupPolicy empty;
  std::vector<std::int64_t> sizes;         // true rows per group, sum = rows_in
  std::vector<std::int64_t> padded_sizes;  // round_up(size, align); empty: 0 or align
  std::vector<std::int64_t> starts;        // prefix sums of padded_sizes, multiples of align
  std::int64_t rows_in;                    // T
  std::int64_t used;                       // sum of padded_sizes
  std::int64_t capacity;                   // round_up(T + G·align, align) >= used (static size)
};

// align >= 1 (16, 32 and 128 in practice); sizes >= 0. Throws std::invalid_argument.
PadPlan plan_padding(std::span<const std::int64_t> sizes, std::int64_t align,
                     EmptyGroupPolicy empty);

// End offsets (torch `offs`) of the padded groups: starts[g] + padded_sizes[g].
std::vector<std::int64_t> padded_offsets(const PadPlan& plan);
// capacity entries: g for group g's true rows, -1 for every padding row (DeepGEMM contiguous).
std::vector<std::int32_t> padded_row_map(const PadPlan& plan);
// The same layout as group_desc's aligned prefix sums (starts, true sizes).
AlignedLayout padded_layout(const PadPlan& plan);

// in: rows_in rows grouped contiguously in group order; out: capacity rows. Padding rows are all
// zero bytes (f32 / bf16 +0, FP8 +0, E8M0 2^-127 for scale rows).
void pad_rows(const PadPlan& plan, RowsView in, RowsSpan out);
// in: capacity rows; out: rows_in rows (the true rows, in order).
void unpad_rows(const PadPlan& plan, RowsView in, RowsSpan out);

// ---- permute / unpermute --------------------------------------------------------------------

// Top-k routing of `tokens` tokens over `experts` experts: expert[t·k + j] in [0, experts), or -1
// for a dropped slot; no expert twice for one token. prob (tokens, k) is read by unpermute only.
struct Routing {
  std::int64_t tokens, k, experts;
  std::span<const std::int32_t> expert;
  std::span<const float> prob;
};

// Permuted order: expert-major, ascending token within an expert (a token's slot j routed to e
// becomes one row of expert e's block).
struct PermutePlan {
  std::int64_t tokens, k;
  std::vector<std::int64_t> expert_sizes;  // rows per expert (the group sizes of the GEMM)
  std::vector<std::int64_t> source_token;  // per permuted row p: its token
  std::vector<std::int32_t> source_slot;   // per permuted row p: its slot j in [0, k)
  std::vector<std::int64_t> row_of;  // (tokens, k): permuted row of slot (t, j), -1 if dropped
};

PermutePlan plan_permute(const Routing& routing);

// out row p = tokens row source_token[p]; out has source_token.size() rows.
void permute_rows(const PermutePlan& plan, RowsView tokens, RowsSpan out);

// The activation scales of the permuted rows. Scales that belong to one row travel with it:
// rowwise (T, 1), 1×128 (T, ceil(K/128)), 1×32 (T, ceil(K/32)) rows are permuted like the data;
// tensorwise scales are shared and returned unchanged. Scales whose block spans several rows
// (128×128, 128×1, 32×1, per_channel: "2D-scaled activations") cannot follow a row: rejected.
RowsView permuted_scale_rows(const PermutePlan& plan, BlockGeometry geometry, RowsView scales,
                             std::vector<std::uint8_t>& storage);

enum class CombineRounding : std::uint8_t {
  mul_then_add,  // acc = RN(acc + RN(p·y))   (TE moe_unpermute: product stored, then added)
  fma,           // acc = fmaf(p, y, acc)
};

// out[t, h] = sum over t's routed slots j ascending of prob[t, j]·y[row_of(t, j), h] in f32:
// acc starts as the first routed slot's RN(p·y), each later slot combined by `rounding`; a token
// without routed slots gives +0. Fixed order, one writer per output: no atomics, and the bits do
// not depend on the thread count. y (P, H) f32, out (tokens, H) f32.
void unpermute_combine(const PermutePlan& plan, const Routing& routing, std::span<const float> y,
                       std::int64_t H, CombineRounding rounding, std::span<float> out);

}  // namespace fp8ref::ref
