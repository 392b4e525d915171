// Merged gate/up projection of a MoE expert (docs/design.md §13): W13 = concat(W1, W3) along N, so
// one grouped GEMM computes [X·W1^T, X·W3^T]. The merged forward equals the two separate forwards
// bitwise whenever the scales carry over exactly (a property of the tests; with 128×128 scales it
// needs H % 128 == 0); merged dgrad sums over 2H and is compared with `exact` instead.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/grouped_gemm.h"

namespace fp8ref::ref {

// W1, W3: (G, H, K) in `nk` or (G, K, H) in `kn` layout; returns W13 (G, 2H, K) / (G, K, 2H).
std::vector<std::uint8_t> merge_gate_up_weights(std::span<const std::uint8_t> w1,
                                                std::span<const std::uint8_t> w3, std::int64_t G,
                                                std::int64_t H, std::int64_t K, BLayout layout);

// scale_b of W13 from those of W1 and W3 (shapes as GroupedGemmOperands with N = H):
//   none: empty; tensorwise (G): W1 and W3 must share each group's scale, else the merged
//   weight needs requantizing (throws); rowwise (G, H) and mx (G, H, ceil(K/32)): rows
//   concatenated per group; blockwise (G, ceil(H/128), ceil(K/128)): block rows concatenated,
//   H % 128 == 0 required (a 128-row block would straddle W1 and W3).
std::vector<float> merge_gate_up_scales(Scaling scaling, std::span<const float> s1,
                                        std::span<const float> s3, std::int64_t G, std::int64_t H,
                                        std::int64_t K);

}  // namespace fp8ref::ref
