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

// K-grouped wgrad: dW[g] (N, K) = C[g] + sum over the rows r of group g (ascending) of
// dY[r, n]·X[r, k]; group g holds rows [offs[g-1], offs[g]) (torch `offs`, length G), rows from
// offs[G-1] to M belong to no group. dY (M, N) and X (M, K) are FP8 codes; the reduction runs
// over the group's rows (tokens), so every scale block runs along tokens. Scale shapes (f32
// decode scales, x ~= q·s), row-major:
//   none:       both empty
//   tensorwise: scale_dy (1), scale_x (1)
//   blockwise:  scale_dy (R, N), scale_x (R, K): one scale per 128-token block and column; row
//               blocks restart at each group start, so group g owns ceil(m_g / 128) block rows
//               starting at sum_{h<g} ceil(m_h / 128) (an empty group owns none; its last block
//               may be partial), and the rows past offs[G-1] own ceil((M - offs[G-1]) / 128) more
//               at the end: R = sum_g ceil(m_g / 128) + ceil((M - offs[G-1]) / 128). This is the
//               scale tensor of quantize_grouped_rows(view, recipe, BlockGeometry::b128x1, ends)
//               with ends = offs (plus M when offs[G-1] < M), applied to dY and to X.
//   mx:         the same with 32-token blocks (BlockGeometry::b32x1, an MX recipe): every scale a
//               power of two (an E8M0 value decoded exactly to f32).
// Scales of the block rows past offs[G-1] are never read and may hold anything; every other scale
// must be finite (and a power of two for mx). rowwise is not a wgrad scaling.
// Models: blockwise and mx take exact, fp32_sequential, hopper_promoted_blockwise or
// hopper_mma_sync, whose blocks (and promotion blocks: 128, or 32 for mx) are the group's token
// blocks above. Output dW (G, N, K) in `dw.dtype` (f32, bf16 or f16); C stays f32:
//   hardware models: dW = RN_out(RN_f32(C[g] + acc)), acc the model's f32 result from +0 over
//                    the group's rows (the forward's convention: an f32 result, then cvt.rn);
//   exact:           dW = RN_out(C[g] + the exact sum), rounded once;
//   empty group:     dW = RN_out(C[g]) under every model (f32 output: exactly C[g], -0 and NaN
//                    payloads included).
// `dw.bound` (optional, G·N·K) receives the per-element bound on |dW - (C + exact sum)|.
// Throws std::invalid_argument on any shape, offset, scale or model/scaling mismatch, before
// writing anything.
struct WgradOperands {
  std::int64_t M, N, K, G;
  Format fdy, fx;
  std::span<const std::uint8_t> dy;  // (M, N)
  std::span<const std::uint8_t> x;   // (M, K)
  Scaling scaling;                   // none, tensorwise, blockwise or mx
  std::span<const float> scale_dy;
  std::span<const float> scale_x;
  std::span<const float> c;  // (G, N, K)
};
void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, const GemmOutput& dw);
// The same with f32 output; `bound` optional (G·N·K).
void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, std::span<float> dw, std::span<double> bound);

}  // namespace fp8ref::ref
