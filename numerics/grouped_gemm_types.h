// The problem description types of the grouped GEMMs (docs/design.md §9-10), shared by the CPU
// reference (reference/grouped_gemm.h, which re-exports them in fp8ref::ref) and the GPU oracle
// (gpu/oracle/), which may include only numerics/: layouts, scalings, the outside-row policy, the
// operands of the forward and of dgrad, the model choice and the output.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/format.h"
#include "numerics/models.h"

namespace fp8ref {

enum class BLayout : std::uint8_t { nk, kn };  // B as (G, N, K) or (G, K, N), row-major
inline constexpr std::array kAllBLayouts = {BLayout::nk, BLayout::kn};
constexpr const char* to_string(BLayout l) { return l == BLayout::nk ? "nk" : "kn"; }
enum class Scaling : std::uint8_t { none, tensorwise, rowwise, blockwise, mx, nvfp4, mx16 };
inline constexpr std::array kAllScalings = {
    Scaling::none, Scaling::tensorwise, Scaling::rowwise, Scaling::blockwise,
    Scaling::mx,   Scaling::nvfp4,      Scaling::mx16};
constexpr const char* to_string(Scaling s) {
  switch (s) {
    case Scaling::none: return "none";
    case Scaling::tensorwise: return "tensorwise";
    case Scaling::rowwise: return "rowwise";
    case Scaling::blockwise: return "blockwise";
    case Scaling::mx: return "mx";
    case Scaling::nvfp4: return "nvfp4";
    case Scaling::mx16: return "mx16";
  }
  return "?";
}
constexpr std::optional<Scaling> parse_scaling(std::string_view s) {
  for (Scaling x : kAllScalings)
    if (std::string_view(to_string(x)) == s) return x;
  return std::nullopt;
}
enum class RowPolicy : std::uint8_t {
  untouched,  // rows of no group are not written
  zero,       // rows of no group are set to +0
};

// Operands of the M-grouped forward. Scale shapes (f32 decode scales, x ~= q·s), row-major:
//   none:       both empty
//   tensorwise: scale_a (1), scale_b (G)          one scale per tensor / per expert
//   rowwise:    scale_a (M), scale_b (G, N)
//   blockwise:  scale_a (M, ceil(K/128)) 1×128,   scale_b (G, ceil(N/128), ceil(K/128)) 128×128
//   mx:         scale_a (M, ceil(K/32)) 1×32,     scale_b (G, N, ceil(K/32)) 1×32 along K; every
//               scale a power of two (an E8M0 value, decoded exactly to f32, 2^-127 included)
//   nvfp4:      scale_a (M, ceil(K/16)) 1×16,     scale_b (G, N, ceil(K/16)) 1×16 along K; every
//               scale a ue4m3 value (>= 0); tensor_scale_a (1) and tensor_scale_b (G) the
//               per-tensor scales (empty: 1), applied after the chain as RN(acc·RN(ta·tb)).
//               Only blackwell_mxf4nvf4 / rtx_blackwell_mxf4nvf4 take nvfp4.
//   mx16:       scale_a (M, ceil(K/16)) 1×16,     scale_b (G, N, ceil(K/16)) 1×16 along K; every
//               scale a power of two (ue8m0), no tensor scales: kind::mxf4nvf4.block16 with
//               ue8m0 scales. Only blackwell_mxf4nvf4 / rtx_blackwell_mxf4nvf4 take mx16.
// Operands are e4m3 / e5m2 codes, one per byte; the Blackwell models also take e3m2, e2m3 and
// e2m1 codes (kind::f8f6f4 / mxf8f6f4; e2m1 only for kind::mxf4 / mxf4nvf4), one per byte.
// Scales of rows of no group and the B scales of groups without rows are never read (they may
// hold NaN, Inf or garbage); every other scale must be finite.
struct GroupedGemmOperands {
  std::int64_t M, N, K, G;
  Format fa, fb;
  std::span<const std::uint8_t> a;  // (M, K)
  std::span<const std::uint8_t> b;  // (G, N, K) or (G, K, N)
  BLayout b_layout;
  Scaling scaling;
  std::span<const float> scale_a;
  std::span<const float> scale_b;
  std::span<const float> tensor_scale_a = {};  // nvfp4 only: (1) or empty
  std::span<const float> tensor_scale_b = {};  // nvfp4 only: (G) or empty
};

struct ModelChoice {
  AccumulationModel model;
  int split_k;                    // S >= 1 equal slices; only the hopper models accept > 1
  std::int64_t split_blocks = 0;  // > 0: slices of this many 128-blocks instead (split_k must be 1)
  // Order of the scalar scales (tensorwise / rowwise) against the accumulator; Epilogue::model
  // keeps the model's own. E.g. hopper_promoted_rowwise + a_then_b is torch `_scaled_grouped_mm`.
  Epilogue epilogue = Epilogue::model;
  SplitK split() const {
    return split_blocks > 0 ? SplitK::of_length(split_blocks) : SplitK(split_k);
  }
};

// Output (M, N) row-major in `dtype`: the f32 span for f32, the u16 span (bit patterns) for bf16
// and f16. The hardware models round their f32 result to bf16 / f16 (RNE, f32_to_out_bits);
// `exact` rounds the exact value once. `bound` (optional, M·N) receives the per-element bound on
// |y - exact|.
struct GemmOutput {
  OutDtype dtype;
  std::span<float> f32;
  std::span<std::uint16_t> u16;
  std::span<double> bound;
};

// dgrad dA[r] (K) = dY[r] (N) · W[g(r)] (N, K): W is the forward's B tensor, (G, N, K) `nk` or
// (G, K, N) `kn`, evaluated as the forward with reduction dimension N on the other layout.
// Scale shapes, row-major (the reduction runs over N):
//   tensorwise: scale_dy (1), scale_w (G)
//   rowwise:    scale_dy (M), scale_w (G, K)                 one per output column of dA
//   blockwise:  scale_dy (M, ceil(N/128)) 1×128 along N,     scale_w (G, ceil(N/128), ceil(K/128))
//               (the forward's 128×128 tensor, transposed internally)
//   mx:         scale_dy (M, ceil(N/32)),                    scale_w (G, K, ceil(N/32))
struct DgradOperands {
  std::int64_t M, N, K, G;
  Format fdy, fw;
  std::span<const std::uint8_t> dy;  // (M, N)
  std::span<const std::uint8_t> w;   // (G, N, K) or (G, K, N)
  BLayout w_layout;
  Scaling scaling;
  std::span<const float> scale_dy;
  std::span<const float> scale_w;
};

// dgrad as the forward it is: dA[r, k] = Σ_n dY[r, n]·W[g, n, k] is the forward with N_fwd = K,
// K_fwd = N and B = W read on the other layout (W as (G, N, K) is the forward's B in `kn` layout
// (G, K_fwd, N_fwd)). Blockwise: the 128×128 weight scales (G, ceil(N/128), ceil(K/128)) are
// transposed into `scale_w_t` as the forward's (G, ceil(K/128), ceil(N/128)), and the result's
// scale_b views it (std::invalid_argument when scale_w has the wrong size). The CPU reference and
// the GPU oracle both evaluate dgrad through this one mapping.
inline GroupedGemmOperands dgrad_as_forward(const DgradOperands& op,
                                            std::vector<float>& scale_w_t) {
  GroupedGemmOperands fwd{
      op.M,       op.K,        op.N,
      op.G,       op.fdy,      op.fw,
      op.dy,      op.w,        op.w_layout == BLayout::nk ? BLayout::kn : BLayout::nk,
      op.scaling, op.scale_dy, op.scale_w};
  if (op.scaling != Scaling::blockwise) return fwd;
  const std::int64_t nbn = ceil_div(op.N, kScaleBlockK), nbk = ceil_div(op.K, kScaleBlockK);
  if (std::int64_t(op.scale_w.size()) != op.G * nbn * nbk)
    throw std::invalid_argument("fp8ref: scale_w has " + std::to_string(op.scale_w.size()) +
                                " elements, expected " + std::to_string(op.G * nbn * nbk));
  scale_w_t.resize(op.scale_w.size());
  for (std::int64_t g = 0; g < op.G; ++g)
    for (std::int64_t i = 0; i < nbn; ++i)
      for (std::int64_t j = 0; j < nbk; ++j)
        scale_w_t[std::size_t((g * nbk + j) * nbn + i)] =
            op.scale_w[std::size_t((g * nbn + i) * nbk + j)];
  fwd.scale_b = scale_w_t;
  return fwd;
}

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

}  // namespace fp8ref
