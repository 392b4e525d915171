// CPU reference grouped GEMMs on FP8 codes under a named accumulation model (docs/design.md §9-10):
// M-grouped forward Y[r] = A[r]·B[g(r)]^T, dgrad dA[r] = dY[r]·W[g(r)] (the forward on the
// transposed layout) and K-grouped wgrad dW[g] = C[g] + sum_{r in g} dY^T X. Parallel over rows /
// output rows with no reduction across threads, so the bits do not depend on the thread count;
// `exact` runs on exact integer block products (reference/exact_gemm.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "numerics/format.h"
#include "numerics/grouped_gemm_types.h"
#include "numerics/models.h"

namespace fp8ref::ref {

using fp8ref::BLayout;
using fp8ref::DgradOperands;
using fp8ref::GemmOutput;
using fp8ref::GroupedGemmOperands;
using fp8ref::ModelChoice;
using fp8ref::parse_scaling;
using fp8ref::RowPolicy;
using fp8ref::Scaling;
using fp8ref::to_string;
using fp8ref::WgradOperands;

// row_map: M entries in [-1, G), see group_desc.h. Throws std::invalid_argument on any shape,
// descriptor, scale or model/scaling mismatch, before writing anything.
void grouped_gemm_forward(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                          ModelChoice model, RowPolicy outside, const GemmOutput& y);

// The same with torch-style cumulative end offsets (length G).
void grouped_gemm_forward_offs(const GroupedGemmOperands& op, std::span<const std::int64_t> offs,
                               ModelChoice model, RowPolicy outside, const GemmOutput& y);

// dgrad dA[r] (K) = dY[r] (N) · W[g(r)] (N, K), the forward with reduction dimension N on the
// other layout; DgradOperands (numerics/grouped_gemm_types.h) has the scale shapes.
// Output dA (M, K). Throws std::invalid_argument as the forward does.
void grouped_gemm_dgrad(const DgradOperands& op, std::span<const std::int32_t> row_map,
                        ModelChoice model, RowPolicy outside, const GemmOutput& da);

// K-grouped wgrad: WgradOperands (numerics/grouped_gemm_types.h) has the shapes, scales and
// output conventions.
void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, const GemmOutput& dw);
// The same with f32 output; `bound` optional (G·N·K).
void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, std::span<float> dw, std::span<double> bound);

}  // namespace fp8ref::ref
