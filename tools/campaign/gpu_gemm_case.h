// The case of the GPU FP8 grouped GEMM suites (gpu.grouped_gemm, fp8ref_gpu_grouped_gemm_test):
// forward (torch `offs`), masked forward ((G, m_max) + masked_m) and dgrad (W stored kn or nk),
// built from the shared tokens-per-group and value generators with poisoned padding (NaN codes and
// NaN scales in rows of no group and in empty experts, a poisoned output) and scales spread over
// 2^-8..2^8 with non-power-of-two mantissas, so that the accumulation models disagree. The expected
// bits come from the CPU oracle (reference/grouped_gemm.h) under the kernel's declared model.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/suite.h"
#include "cases/gemm_case.h"
#include "numerics/scale_layout.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

using cases::GemmOp;

// Shapes in the kernel's view: Y (M, N) = A (M, K) · B[g] (N, K)ᵀ. For dgrad, A = dY (M, K) and
// B = W stored (G, N, K) kn, i.e. DgradOperands{M, N = K here, K = N here}. For wgrad (K-grouped),
// M tokens, A = dY (M, N) and B = X (M, K) row-major (the kernel gets their transposes), C and
// the output (G, N, K); the drawn group sizes and tail are rounded down to multiples of 16 tokens
// or taken at any token (WgradOffs), and rowwise is drawn as blockwise.
// The case is the one GEMM case (tools/cases/gemm_case.h: op, group sizes, extents, formats,
// scaling, output, value classes, operands, scales, offs, group_of = row -> group with -1 for rows
// of no group) plus what a launch adds: the seed its operands are drawn from, wgrad's C and the
// masked forward's per-group row counts.
// How a wgrad case's group sizes become token offsets: each size and the tail rounded down to a
// multiple of 16 (the form every wgrad case had before any_token), or the sizes as drawn, the
// offsets at any token, with the tail rounded up so that M % 16 == 0 (the kernel's row stride).
enum class WgradOffs : std::uint8_t { multiple_of_16, any_token };
const char* to_string(WgradOffs w);
// Where a forward, masked or dgrad launch gets its groups (offs or masked_m): host arrays (the
// launcher checks them and builds the group table), or int32 device arrays (the device-side
// groups' path: a prologue kernel does, docs/gpu_gemm.md §1; run through the host-memory wrappers
// `grouped_gemm_*_host_device_groups`).
enum class GroupsOn : std::uint8_t { host, device };
const char* to_string(GroupsOn g);
// How a wgrad case hands the kernel dY and X (gpu::WgradOperandLayout): token_contiguous, their
// transposes dYᵀ (N, M) and Xᵀ (K, M) (the form of every wgrad case before row_major), or
// row_major, dY (M, N) and X (M, K) as drawn, which the launcher transposes (docs/gpu_gemm.md §1).
// A row-major case keeps the drawn tail as it is: M need not be a multiple of 16.
enum class WgradOperandForm : std::uint8_t { token_contiguous, row_major };
const char* to_string(WgradOperandForm w);
// Where an f32 wgrad case's dW goes: a buffer of its own (separate, poisoned before the launch,
// the form of every wgrad case before into_c), or C itself (into_c: accumulation in place, the
// launcher's dW == C form, docs/gpu_gemm.md §1; the empty groups' tiles then left out of the walk).
enum class WgradDw : std::uint8_t { separate, into_c };
const char* to_string(WgradDw w);

struct GpuGemmCase : cases::GemmCase {
  std::uint64_t seed = 0;
  // How the kernel is handed A's scales: row_major, or (blockwise forward / masked only)
  // tma_mn_major, the (K/128, align(M, 4)) copy the 256-wide tiles stage directly
  // (docs/gpu_gemm.md §2). The oracle always reads c.sa row-major.
  ScaleLayoutF32 sa_layout = ScaleLayoutF32::row_major;
  WgradOffs wgrad_offs = WgradOffs::multiple_of_16;                      // wgrad only
  WgradOperandForm wgrad_operands = WgradOperandForm::token_contiguous;  // wgrad only
  WgradDw wgrad_dw = WgradDw::separate;                                  // f32 wgrad only
  // dgrad only: W as the launcher is handed it (in DgradOperands' terms, N the reduction): kn
  // (G, K, N), what the kernel reads, or nk (G, N, K), the forward's layout, which the launcher
  // transposes first (docs/gpu_gemm.md §1); `b` holds it in that layout.
  BLayout dgrad_w = BLayout::kn;
  GroupsOn groups_on = GroupsOn::host;  // forward, masked, dgrad
  std::vector<float> c;                 // wgrad: C (G, N, K)
  std::vector<std::int64_t> masked_m;   // masked: rows of each group (offs: forward / dgrad)
};

// Poison of the output before a launch (f32 NaN payload / bf16 NaN payload): rows of no group
// must keep it.
inline constexpr std::uint32_t kOutPoisonF32 = 0x7FA5A5A5u;
inline constexpr std::uint16_t kOutPoisonBf16 = 0x7FA5u;

// A case from its parameters (deterministic in `seed`); N and K multiples of 128. sa_layout other
// than row_major only for blockwise forward / masked, wgrad_offs other than multiple_of_16 and
// wgrad_operands other than token_contiguous only for wgrad, dgrad_w other than kn only for dgrad,
// groups_on device not for wgrad, wgrad_dw into_c only for f32 wgrad (std::invalid_argument
// otherwise).
GpuGemmCase make_gpu_gemm_case(
    GemmOp op, const gen::GroupSizes& gs, std::int64_t N, std::int64_t K, Format fa, Format fb,
    Scaling scaling, OutDtype out, gen::ValueClass va, gen::ValueClass vb, std::uint64_t seed,
    ScaleLayoutF32 sa_layout = ScaleLayoutF32::row_major,
    WgradOffs wgrad_offs = WgradOffs::multiple_of_16, BLayout dgrad_w = BLayout::kn,
    GroupsOn groups_on = GroupsOn::host,
    WgradOperandForm wgrad_operands = WgradOperandForm::token_contiguous,
    WgradDw wgrad_dw = WgradDw::separate);

// A's scales in the MN-major layout (K/128, align(M, 4)), the padding entries NaN (read into no
// stored output).
std::vector<float> mn_major_scales_a(const GpuGemmCase& c);

// A case drawn inside a RapidCheck property: every op, scaling, format pair, output and the
// generators' group distributions (at most max_total rows); wgrad offsets at any token in half of
// the wgrad cases and, independently, row-major wgrad operands in half and dW into C in half of the
// f32 ones, W stored nk in half of the dgrad cases, the groups on the device in half of the
// forward, masked and dgrad cases.
GpuGemmCase draw_gpu_gemm_case(std::int64_t max_total = 600);

// The model the kernel declares for a scaling (gpu::grouped_gemm_declared_model, restated here so
// that the oracle side does not take it from the code under test; a test holds the two equal).
ModelChoice declared_gemm_model(Scaling s);

// The output bits (f32 patterns, or bf16 in the low 16 bits) from the CPU oracle under model m
// (default: the kernel's declared model); rows of no group keep the poison.
std::vector<std::uint32_t> oracle_gemm_bits(const GpuGemmCase& c, const ModelChoice& m);
std::vector<std::uint32_t> oracle_gemm_bits(const GpuGemmCase& c);
// The same from the kernel (gpu/grouped_gemm.h); std::runtime_error when built without CUDA.
// `table_only_workspace`: a forward or masked case on device-side groups gets a workspace of the
// group table alone (row-major blockwise A scales then loaded row-major by the consumers instead
// of transposed into the workspace, docs/gpu_gemm.md §1).
std::vector<std::uint32_t> kernel_gemm_bits(const GpuGemmCase& c,
                                            bool table_only_workspace = false);

// "" when equal, else the first mismatch: row, group, column, both patterns and the case.
std::string first_gemm_mismatch(const GpuGemmCase& c, const std::vector<std::uint32_t>& got,
                                const std::vector<std::uint32_t>& want);
// True when some output of a row of a group is non-zero (a case with rows but only zero outputs
// proves nothing and is discarded).
bool has_nonzero_output(const GpuGemmCase& c, const std::vector<std::uint32_t>& bits);
std::string describe(const GpuGemmCase& c);
std::vector<std::string> gpu_gemm_tags(const GpuGemmCase& c);

// The case file of gpu.grouped_gemm (tools/campaign/suites_gpu_gemm.cpp, docs/fuzz.md "Case
// files"): the parameters under fp8ref.* keys, the operands regenerated from the seed; a key of a
// non-default form (scales_a, wgrad_offs, dgrad_w, offs, wgrad_operands, wgrad_dw) is written
// only when the case has that form, and a file without it loads as the default (every file written
// before the key). load throws std::invalid_argument on a malformed file; diff names the first differing
// field.
TensorFile save_gpu_gemm(const GpuGemmCase& c);
GpuGemmCase load_gpu_gemm(const TensorFile& tf);
std::string gpu_gemm_diff(const GpuGemmCase& x, const GpuGemmCase& y);

}  // namespace fp8ref::fuzz
