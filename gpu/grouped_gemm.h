// The FP8 grouped GEMM on Hopper tensor cores (sm_90a wgmma), held bitwise to the accumulation
// model it declares (docs/gpu_gemm.md): M-grouped forward Y[r] = A[r]·B[g(r)]ᵀ with contiguous
// groups (torch `offs`) or masked groups (DeepGEMM's (G, M_max) + masked_m), dgrad
// dA[r] = dY[r]·W[g(r)] on W stored (G, K, N) or (G, N, K), and the K-grouped wgrad; e4m3 / e5m2
// operands; blockwise 1×128 · 128×128, rowwise or tensorwise scales; bf16 or f32 output. Rows of
// no group are never written.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gpu/grouped_gemm_tiles.h"  // grouped_gemm_wgrad_block_k
#include "numerics/grouped_gemm_types.h"
#include "numerics/out_dtype.h"
#include "numerics/scale_layout.h"

namespace fp8ref::gpu {

// The model each scaling's kernel implements bit for bit (docs/gpu_gemm.md §3):
//   blockwise  -> hopper_promoted_blockwise                (DeepGEMM / cuBLASLt 1×128 · 128×128)
//   rowwise    -> hopper_promoted_rowwise, epilogue a_then_b (torch `_scaled_grouped_mm`)
//   tensorwise -> hopper_promoted_tensorwise
// Throws std::invalid_argument for any other scaling.
ModelChoice grouped_gemm_declared_model(Scaling s);

// Device operands of the forward. B is (G, N, K) (`nk`: K contiguous, the only layout FP8 wgmma
// reads from shared memory). Scales (f32 decode scales) as GroupedGemmOperands documents;
// the sizes are element counts, checked against the shapes. Requirements, checked before any
// launch (std::invalid_argument, one line): N and K multiples of 128, M < 2^31, G <= 256,
// pointers 16-byte aligned, fa / fb e4m3 or e5m2, scaling tensorwise / rowwise / blockwise.
// scale_a_layout: row_major (the default; (M, K/128) for blockwise), or for blockwise only
// tma_mn_major, the MN-major copy (K/128, M rounded up to 4; the padding is never stored from)
// that DeepGEMM and `_scaled_mm` take (the quantizers' `tma_mn_major` output; scale_a then
// 16-byte aligned, its size K/128 · align(M, 4)). The 256-wide tiles stage MN-major scales in
// shared memory; row-major ones are first transposed into a stream-ordered scratch copy
// (cudaMallocAsync on `stream`), so passing tma_mn_major saves that pre-kernel
// (docs/gpu_gemm.md §2). Any other layout is refused.
struct DeviceGemmOperands {
  std::int64_t M, N, K, G;
  Format fa, fb;
  const std::uint8_t* a;  // (M, K)
  const std::uint8_t* b;  // (G, N, K)
  Scaling scaling;
  const float* scale_a;
  std::int64_t scale_a_size;
  const float* scale_b;
  std::int64_t scale_b_size;
  ScaleLayoutF32 scale_a_layout = ScaleLayoutF32::row_major;
};
// Y (M, N) row-major: f32, or bf16 bit patterns; `size` in elements.
struct DeviceGemmOutput {
  OutDtype dtype;  // f32 or bf16
  void* y;
  std::int64_t size;
};

// Contiguous groups: group g holds rows [offs[g-1], offs[g]) (offs[-1] = 0), host array of
// length G, non-decreasing, offs[G-1] <= M; empty groups allowed.
void grouped_gemm_forward(const DeviceGemmOperands& op, std::span<const std::int64_t> offs,
                          const DeviceGemmOutput& y, cudaStream_t stream);

// Masked groups: A and Y are (G, m_max, ·) = (M = G·m_max rows); group g holds rows
// [g·m_max, g·m_max + masked_m[g]) (host array, each in [0, m_max]).
void grouped_gemm_forward_masked(const DeviceGemmOperands& op, std::int64_t m_max,
                                 std::span<const std::int64_t> masked_m, const DeviceGemmOutput& y,
                                 cudaStream_t stream);

// dgrad dA (M, K) = dY (M, N) · W[g] (N, K) with W stored `kn` = (G, K, N) (N contiguous), as
// ref::grouped_gemm_dgrad: the forward with reduction dimension N. Scales as DgradOperands
// documents (blockwise scale_w is the forward's (G, N/128, K/128) tensor). N and K multiples of
// 128. W stored `nk` = (G, N, K), the forward's layout, is taken too: FP8 wgmma has no transposed
// shared-memory operand, so the launcher first transposes it into (G, K, N) stream-ordered scratch
// (a pass over G·N·K bytes; docs/gpu_gemm.md §1).
struct DeviceDgradOperands {
  std::int64_t M, N, K, G;
  Format fdy, fw;
  const std::uint8_t* dy;  // (M, N)
  const std::uint8_t* w;   // (G, K, N) kn or (G, N, K) nk, 16-byte aligned
  BLayout w_layout;
  Scaling scaling;
  const float* scale_dy;
  std::int64_t scale_dy_size;
  const float* scale_w;
  std::int64_t scale_w_size;
};
void grouped_gemm_dgrad(const DeviceDgradOperands& op, std::span<const std::int64_t> offs,
                        const DeviceGemmOutput& da, cudaStream_t stream);

// Device-side groups (docs/gpu_gemm.md §1): torch's int32 `offs` tensor or DeepGEMM's masked_m
// left on the device, for callers that cannot synchronise (CUDA graphs). `entries`: G int32 device
// values, the same as the host arrays above (contiguous offs: non-decreasing, 0 <= offs <= M;
// masked_m: each in [0, m_max]). The launcher reads neither them nor the status on the host: a
// one-block prologue kernel on `stream` checks them and writes the group table into `workspace`
// (grouped_gemm_workspace_bytes() bytes, 16-byte aligned, the caller's: a launch's table lives
// there until its GEMM has run, so launches that may overlap, e.g. on two streams, need two) and
// the `status` word (int32, written by every call: 0, or the first bad entry's code, which
// grouped_gemm_status_message decodes; on a bad entry the GEMM writes nothing, docs/gpu_gemm.md
// §4). Every other argument is checked on the host as above (std::invalid_argument, one line).
// No host synchronisation and no allocation, so the call can be captured in a CUDA graph and
// replayed with other entries; except dgrad on W stored nk, whose transposed copy is still
// cudaMallocAsync scratch (captured as graph memory nodes). Row-major blockwise A scales of the
// forwards' 256-wide tiles are transposed into the workspace when it has room for them
// (workspace_size >= grouped_gemm_workspace_bytes(op)), as the host-array path does in scratch
// memory; with less room the consumers load them row-major (the same bits, 8% slower at the
// benchmark's shape; or pass tma_mn_major scales, docs/gpu_gemm.md §1).
struct DeviceGroups {
  const std::int32_t* entries;     // (G) offs or masked_m
  std::int32_t* status;            // one word
  void* workspace;                 // grouped_gemm_workspace_bytes() or more
  std::size_t workspace_size = 0;  // bytes at workspace; 0: grouped_gemm_workspace_bytes()
};
// The group table's bytes: the least workspace a call takes.
std::size_t grouped_gemm_workspace_bytes();
// The workspace with which a forward on these operands (their M, K, scaling and A-scale layout)
// also transposes row-major blockwise A scales: the table's bytes rounded up to 256, plus
// K/128 · align(M, 4) floats; the table's bytes for other operands.
std::size_t grouped_gemm_workspace_bytes(const DeviceGemmOperands& op);
// The one-line message of a status word ("" for 0), as the host-array path's for the same entry.
std::string grouped_gemm_status_message(std::int32_t status);
void grouped_gemm_forward(const DeviceGemmOperands& op, const DeviceGroups& offs,
                          const DeviceGemmOutput& y, cudaStream_t stream);
void grouped_gemm_forward_masked(const DeviceGemmOperands& op, std::int64_t m_max,
                                 const DeviceGroups& masked_m, const DeviceGemmOutput& y,
                                 cudaStream_t stream);
void grouped_gemm_dgrad(const DeviceDgradOperands& op, const DeviceGroups& offs,
                        const DeviceGemmOutput& da, cudaStream_t stream);

// How the K-grouped wgrad is handed dY and X (docs/gpu_gemm.md §1):
//   token_contiguous: the transposed copies dYᵀ (N, M) and Xᵀ (K, M) that FP8 wgmma reads (the
//                     quantizers' column-wise output), read in place where every non-empty group
//                     starts at a multiple of 16 tokens;
//   row_major:        dY (M, N) and X (M, K) as the forward produced them; the launcher first
//                     transposes them, in one pass, into stream-ordered scratch with every group
//                     at a multiple of 128 tokens (gpu/grouped_wgrad_transpose.cu: a pass over
//                     (N + K) bytes per token of a group). The codes' layout does not change the
//                     scales: the same tensors either way.
enum class WgradOperandLayout : std::uint8_t { token_contiguous, row_major };

// K-grouped wgrad dW[g] (N, K) = C[g] + sum over the tokens t of group g (ascending) of
// dY[t, n]·X[t, k], as ref::grouped_gemm_wgrad. Group g holds tokens [offs[g-1], offs[g]) (host
// array), at any token. token_contiguous: M a multiple of 16 (16-byte rows of tokens; where a
// group starts off a multiple of 16 the launcher reads an aligned copy, docs/gpu_gemm.md §1);
// row_major: any M >= 0 (tokens of no group are never read). N and K multiples of 128; dy and x
// 16-byte aligned (when M > 0). Scalings: blockwise, scale_dy (R, N) and scale_x (R, K) with one
// row per 128-token block restarting at each group start (R as ref::WgradOperands says);
// tensorwise, scale_dy (1) and scale_x (1). Declared models as the forward's. C and dW (G, N, K);
// dW f32 or bf16 (f32 dW may be C itself: accumulation in place); an empty group's dW is C (bf16: C
// rounded; a NaN in C becomes the canonical bf16 NaN 0x7FFF, where the model keeps its payload's
// top bits: docs/gpu_gemm.md §3). Any other layout is refused (std::invalid_argument, before any
// launch).
struct DeviceWgradOperands {
  std::int64_t M, N, K, G;
  Format fdy, fx;
  const std::uint8_t* dy;  // token_contiguous: dYᵀ (N, M); row_major: dY (M, N)
  const std::uint8_t* x;   // token_contiguous: Xᵀ (K, M); row_major: X (M, K)
  Scaling scaling;
  const float* scale_dy;
  std::int64_t scale_dy_size;
  const float* scale_x;
  std::int64_t scale_x_size;
  const float* c;  // (G, N, K)
  WgradOperandLayout layout = WgradOperandLayout::token_contiguous;
};
void grouped_gemm_wgrad(const DeviceWgradOperands& op, std::span<const std::int64_t> offs,
                        const DeviceGemmOutput& dw, cudaStream_t stream);

// Host-memory conveniences for tests and tools: the operands travel to the device and back in
// each call; `out` (f32 or u16 span of M·N) keeps what it held in rows of no group. The forwards'
// op.scale_a is in scale_a_layout (DeviceGemmOperands::scale_a_layout).
void grouped_gemm_forward_host(const GroupedGemmOperands& op, std::span<const std::int64_t> offs,
                               const GemmOutput& out,
                               ScaleLayoutF32 scale_a_layout = ScaleLayoutF32::row_major);
void grouped_gemm_forward_masked_host(const GroupedGemmOperands& op, std::int64_t m_max,
                                      std::span<const std::int64_t> masked_m, const GemmOutput& out,
                                      ScaleLayoutF32 scale_a_layout = ScaleLayoutF32::row_major);
void grouped_gemm_dgrad_host(const DgradOperands& op, std::span<const std::int64_t> offs,
                             const GemmOutput& out);
// The same through the device-side groups' path: the int32 entries are uploaded as they are (not
// checked on the host), the call runs, and a bad status throws std::invalid_argument with
// grouped_gemm_status_message (the output then keeps what it held). The forwards' workspace is
// grouped_gemm_workspace_bytes(operands) (row-major blockwise A scales transposed into it), or
// with `table_only_workspace` grouped_gemm_workspace_bytes() (the consumers load them row-major).
void grouped_gemm_forward_host_device_groups(
    const GroupedGemmOperands& op, std::span<const std::int32_t> offs, const GemmOutput& out,
    ScaleLayoutF32 scale_a_layout = ScaleLayoutF32::row_major, bool table_only_workspace = false);
void grouped_gemm_forward_masked_host_device_groups(
    const GroupedGemmOperands& op, std::int64_t m_max, std::span<const std::int32_t> masked_m,
    const GemmOutput& out, ScaleLayoutF32 scale_a_layout = ScaleLayoutF32::row_major,
    bool table_only_workspace = false);
void grouped_gemm_dgrad_host_device_groups(const DgradOperands& op,
                                           std::span<const std::int32_t> offs,
                                           const GemmOutput& out);
struct HostWgradOperands {
  std::int64_t M, N, K, G;
  Format fdy, fx;
  std::span<const std::uint8_t> dy, x;  // (N, M), (K, M) token_contiguous; (M, N), (M, K) row_major
  Scaling scaling;
  std::span<const float> scale_dy, scale_x, c;
  WgradOperandLayout layout = WgradOperandLayout::token_contiguous;
  // f32 dW accumulated into C itself: the launch's dW is the device copy of C (the launcher's
  // in-place form, docs/gpu_gemm.md §1), copied back into `dw` (f32, C's size) afterwards.
  bool dw_into_c = false;
};
void grouped_gemm_wgrad_host(const HostWgradOperands& op, std::span<const std::int64_t> offs,
                             const GemmOutput& dw);

}  // namespace fp8ref::gpu
