// The view the GPU oracle's kernel reads (emu::ForwardView) built from the forward's operands:
// the scale views of each scaling, as reference/grouped_gemm.cpp reads them (docs/gpu_oracle.md
// §4). Host code; the pointers may be host (the emulation test) or device (the launcher) memory.
#pragma once

#include "gpu/oracle/emu_models.h"
#include "numerics/grouped_gemm_types.h"

namespace fp8ref::gpu {

// a, b (B as (G, N, K)), row_map, sa, sb: where the kernel finds them; for Scaling::none sa and
// sb point at one 1.0f.
inline emu::ForwardView make_forward_view(const GroupedGemmOperands& op, ModelChoice m,
                                          OutDtype out, const std::uint8_t* a,
                                          const std::uint8_t* b, const std::int32_t* row_map,
                                          const float* sa, const float* sb) {
  emu::ForwardView v{op.M,      op.N,           op.K,       op.G, op.fa, op.fb, a,
                     b,         row_map,        {},         {},   false, 128,   m.model,
                     m.split_k, m.split_blocks, m.epilogue, out};
  const std::int64_t nbk = ceil_div(v.K, 128), nbn = ceil_div(v.N, 128), nmx = ceil_div(v.K, 32);
  v.per_block = op.scaling == Scaling::blockwise || op.scaling == Scaling::mx;
  v.block_k = op.scaling == Scaling::mx ? 32 : 128;
  switch (op.scaling) {
    case Scaling::none: v.sa = {sa, 0, 0, 1}, v.sb = {sb, 0, 0, 1}; break;
    case Scaling::tensorwise: v.sa = {sa, 0, 0, 1}, v.sb = {sb, 1, 0, 1}; break;
    case Scaling::rowwise: v.sa = {sa, 0, 1, 1}, v.sb = {sb, v.N, 1, 1}; break;
    case Scaling::blockwise: v.sa = {sa, 0, nbk, 1}, v.sb = {sb, nbn * nbk, nbk, 128}; break;
    case Scaling::mx: v.sa = {sa, 0, nmx, 1}, v.sb = {sb, v.N * nmx, nmx, 1}; break;
    case Scaling::nvfp4:
    case Scaling::mx16: break;  // refused by the launcher's argument check
  }
  return v;
}

}  // namespace fp8ref::gpu
