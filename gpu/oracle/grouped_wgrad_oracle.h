// The GPU oracle's K-grouped wgrad: reference/grouped_wgrad.cpp emulated bit for bit on CUDA cores
// (docs/gpu_oracle.md §4a), dW[g] = C[g] + dY_g^T X_g under every model the CPU takes for wgrad
// (exact, fp32_sequential, the Hopper models with split-K and epilogue orders), scalings none,
// tensorwise, blockwise and mx along tokens, f32 / bf16 / f16 output; an empty group gives C[g].
#pragma once

#include <cstdint>
#include <span>

#include "numerics/grouped_gemm_types.h"

namespace fp8ref::gpu {

// As ref::grouped_gemm_wgrad (WgradOperands in numerics/grouped_gemm_types.h has the shapes):
// offs are torch-style cumulative row ends (length G). Throws std::invalid_argument on any shape,
// offset, scale or model/scaling mismatch (and when dw.bound is given: the GPU oracle computes no
// bound), before writing anything; CudaError (gpu/device.h) when the device fails. The kernel
// time lands in oracle_last_kernel_seconds() (grouped_gemm_oracle.h).
void oracle_grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                               ModelChoice model, const GemmOutput& dw);

}  // namespace fp8ref::gpu
