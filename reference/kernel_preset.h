// Kernel presets (docs/presets.md, docs/design.md §10-12): the family of model configurations a
// named library kernel implements, as measured on the hardware the preset names. A preset fixes
// the accumulation model, the epilogue order of scalar scales and the kernel's split-K family
// (equal slices S chosen by a heuristic, or fixed-length slices); only the member the library's
// heuristic picked for a shape is left open, and verification tries each member.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/grouped_gemm_types.h"

namespace fp8ref::ref {

// How a kernel cuts K into split-K slices, each accumulated from +0 and added in f32 in order.
enum class SplitFamily : std::uint8_t {
  none,           // one slice over all of K
  equal_slices,   // S equal slices of ceil(nb / S) blocks, S = 1 .. min(nb, kMaxEqualSlices)
  slice_lengths,  // one slice, or slices of L blocks for L in the row's lengths
};
inline constexpr int kMaxEqualSlices = 32;

// One row of the preset table: what the kernel does for one scaling and accumulation mode.
struct PresetRow {
  Scaling scaling;
  bool fast_accum;
  AccumulationModel model;
  Epilogue epilogue;
  SplitFamily split;
  std::span<const std::int64_t> lengths;  // slice_lengths: L values in 128-blocks
  std::string_view evidence;              // what was measured (docs/presets.md)
};

// M: grouped along rows (M-grouped forward); K: groups of K columns (wgrad-style, 2d x 2d).
enum class PresetGrouping : std::uint8_t { m, k, m_or_k };

struct KernelPreset {
  std::string_view name;      // canonical: library, version and architecture measured
  std::string_view alias;     // the call name users write, e.g. torch._scaled_mm
  std::string_view measured;  // hardware and software versions, or NOT MEASURED and the source
  std::string_view b_layout;  // the logical layout of the B operand as the kernel takes it
  PresetGrouping grouping;
  std::span<const PresetRow> rows;
};

// Every preset, in the order docs/presets.md lists them.
std::span<const KernelPreset> kernel_presets();

// A preset by canonical name or alias; nullopt when unknown.
const KernelPreset* find_kernel_preset(std::string_view name);

// The row of `p` for a scaling and accumulation mode; nullptr when the kernel has none (e.g.
// cuBLASLt refuses fast accumulation with 128x128 scales).
const PresetRow* preset_row(const KernelPreset& p, Scaling scaling, bool fast_accum);

// The members of a row for a reduction of K elements, in the order they are tried (no split
// first). Members whose slices cut the ceil(K/128) blocks identically are listed once: they give
// the same bits, so telling them apart is impossible by construction.
std::vector<ModelChoice> preset_members(const PresetRow& row, std::int64_t k);

// "hopper_promoted_tensorwise split_k=4 epilogue=scale_product" (split_blocks=L for lengths).
std::string describe_member(const ModelChoice& m);

// The end block of each non-empty slice of a member for nb 128-blocks (its slice partition).
std::vector<std::int64_t> slice_ends(const ModelChoice& m, std::int64_t nb);

}  // namespace fp8ref::ref
