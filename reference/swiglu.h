// SwiGLU of a merged gate/up activation (docs/recipes.md "SwiGLU"): the expert's first GEMM
// computes [X·W1^T, X·W3^T] as one (rows, 2H) tensor (reference/merged_gate_up.h); the gate is
// its first H columns, up the last H, and h = silu(gate) · up in f32 with
// silu(g) = RN(g / RN(1 + exp(-g))), exp rounded correctly to f32, h = RN(silu(g) · up).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fp8ref::ref {

// exp(x) rounded once to f32 (RNE): the f64 exp is within 1 ulp of the real value, and the result
// is taken only when every f64 within 2 ulps of it rounds to the same f32 (so any exp of f64 with
// at most 1 ulp of error, CUDA's included, rounds the same way); throws std::domain_error
// otherwise. Every bf16 input resolves (an exhaustive test checks all 2^16).
float exp_f32_correctly_rounded(float x);

// RN(g / RN(1 + exp_f32_correctly_rounded(-g))): silu(-inf) is NaN (-inf / inf), as torch's.
float silu_f32(float g);

// h (rows, H) f32 = silu(gate) · up of a merged (rows, 2H) bf16 tensor (uint16 patterns),
// gate = columns [0, H), up = [H, 2H).
std::vector<float> swiglu_merged_bf16(std::span<const std::uint16_t> gate_up, std::int64_t rows,
                                      std::int64_t H);

}  // namespace fp8ref::ref
