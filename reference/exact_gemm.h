// The `exact` model of one group of the M-grouped forward, evaluated on exact integer block
// products (docs/design.md §9, "the exactness fact"): FP8 / FP6 / FP4 codes as integers in units
// of 2^(emin - mantissa bits), per-K-block products by an Eigen double GEMM (exact: every partial
// sum is an integer of magnitude <= sum |a_k·b_k| <= 2^53, whatever the summation order), then
// each element's blocks combined with their scale products exactly and rounded once.
// Internal to the reference library (grouped_gemm.cpp); results are bitwise those of exact_dot.
#pragma once

#include <cstdint>
#include <span>

#include "numerics/format.h"
#include "numerics/models.h"

namespace fp8ref::ref::detail {

// The scales of one operand: scale(i, kb) = data[(i / div) * stride + (per_block ? kb : 0)]
// for row (A) or column (B) i and K block kb of width block_k, times `tensor` (nvfp4's per-tensor
// scale; 1 elsewhere).
struct ScaleGrid {
  const float* data;
  std::int64_t stride;
  std::int64_t div;
  bool per_block;
  std::int64_t block_k;
  float tensor = 1.0f;
  const float* at(std::int64_t i) const { return data + (i / div) * stride; }
};

struct ExactGroup {
  std::int64_t N, K;
  Format fa, fb;
  const std::uint8_t* a;               // A (M, K): row r at a + r·K
  std::span<const std::int64_t> rows;  // the group's rows of A
  const std::uint8_t* b;               // the group's B, (N, K) row-major
  ScaleGrid sa, sb;                    // sa indexed by row r, sb by column n
};

// z (rows.size() × N, row-major) = each element's exact value rounded once to `d`. Returns false
// without writing when the integer path does not apply (a non-finite code in the group, block
// products that could exceed 2^53 — possible with large e5m2 values — or per-tensor scales with
// a block scale whose odd significand is 16 or more, i.e. no ue4m3 value); the caller then
// evaluates exact_dot per element.
bool exact_group_forward(const ExactGroup& grp, OutDtype d, std::span<double> z);

}  // namespace fp8ref::ref::detail
