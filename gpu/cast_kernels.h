// Hardware FP8 conversions on the GPU: the `cvt.rn.satfinite.{e4m3,e5m2}x2` instructions of
// sm_89+ (PTX ISA 7.8), from f32 and f16x2, and the reverse `cvt.rn.f16x2.{e4m3,e5m2}x2`.
// These are the conversions the project's kernels use; they are held to the cuda_satfinite
// profile of numerics/ (docs/design.md §5) by proptests/gpu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "numerics/format.h"

namespace fp8ref::gpu {

// out[i] = satfinite_rn(in[i]) for i < n; format e4m3 or e5m2. Device pointers.
void cast_f32_to_fp8_satfinite(Format format, const float* in, std::uint8_t* out, std::size_t n,
                               cudaStream_t stream);

// out[i] = satfinite_rn(f16 pattern in[i]) through the f16x2 instruction. Device pointers.
void cast_f16_to_fp8_satfinite(Format format, const std::uint16_t* in, std::uint8_t* out,
                               std::size_t n, cudaStream_t stream);

// Sweep helper: out[i] = satfinite_rn(bit_cast<float>(uint32(first + i))) for i < n, the f32
// inputs generated on the device from their index, so a 2^32 sweep moves only the codes.
void cast_f32_index_range_to_fp8_satfinite(Format format, std::uint64_t first, std::uint8_t* out,
                                           std::size_t n, cudaStream_t stream);

// out[c] = f16 pattern of code c through the hardware decode, for all 256 codes. Device pointer.
void decode_fp8_all_codes_to_f16(Format format, std::uint16_t* out, cudaStream_t stream);

}  // namespace fp8ref::gpu
