// The GPU oracle: the CPU reference's grouped GEMMs (reference/grouped_gemm.h) emulated bit for
// bit on CUDA cores, for every accumulation model, scaling, split-K, epilogue and output dtype
// (docs/gpu_oracle.md). Same operands, same results, same errors as the CPU; no error bound.
// Host spans in, host spans out; the operands travel to the device and back inside each call.
#pragma once

#include <cstdint>
#include <span>

#include "numerics/grouped_gemm_types.h"

namespace fp8ref::gpu {

// The M-grouped forward, as ref::grouped_gemm_forward. Throws std::invalid_argument on any shape,
// descriptor, scale or model/scaling mismatch (and when y.bound is given: the GPU oracle computes
// no bound), before writing anything; CudaError (gpu/device.h) when the device fails.
void oracle_grouped_gemm_forward(const GroupedGemmOperands& op,
                                 std::span<const std::int32_t> row_map, ModelChoice model,
                                 RowPolicy outside, const GemmOutput& y);

// The same with torch-style cumulative end offsets (length G).
void oracle_grouped_gemm_forward_offs(const GroupedGemmOperands& op,
                                      std::span<const std::int64_t> offs, ModelChoice model,
                                      RowPolicy outside, const GemmOutput& y);

// dgrad, as ref::grouped_gemm_dgrad: the forward on the other layout of W.
void oracle_grouped_gemm_dgrad(const DgradOperands& op, std::span<const std::int32_t> row_map,
                               ModelChoice model, RowPolicy outside, const GemmOutput& da);

// Seconds the last call spent in the kernel (cudaEvent timing, without the transfers).
double oracle_last_kernel_seconds();

}  // namespace fp8ref::gpu
