// The preset table (kernel_preset.h). Every row cites its measurement in docs/presets.md; a row
// is added only when a kernel's outputs were reproduced bit for bit on the hardware it names.
#include "reference/kernel_preset.h"

#include <algorithm>

namespace fp8ref::ref {
namespace {

using AM = AccumulationModel;

// cuBLASLt's blockwise 1x128 x 128x128 split-K kernels cut K into 24-block slices (K = 8192 and
// 16384 on an H100; docs/models.md "Split-K").
constexpr std::int64_t kCublasBlockwiseLengths[] = {24};

// torch 2.11 `_scaled_mm` on sm_90: cuBLASLt (nvjet kernels for tensorwise; `_ovscale` for
// rowwise; `Ablk128_Bvec128` for blockwise), split-K picked per shape by cuBLASLt's heuristic.
constexpr PresetRow kScaledMmRows[] = {
    {Scaling::tensorwise,
     false,
     AM::hopper_promoted_tensorwise,
     Epilogue::scale_product,
     SplitFamily::equal_slices,
     {},
     "nvjet tensorwise, splitK + splitKreduce: equal slices"},
    {Scaling::tensorwise,
     true,
     AM::hopper_unpromoted,
     Epilogue::scale_product,
     SplitFamily::equal_slices,
     {},
     "nvjet tensorwise fast accumulation: equal slices"},
    {Scaling::rowwise,
     false,
     AM::hopper_promoted_rowwise,
     Epilogue::b_then_a,
     SplitFamily::equal_slices,
     {},
     "cuBLASLt _ovscale rowwise: RN(RN(acc*sb)*sa)"},
    {Scaling::rowwise,
     true,
     AM::hopper_unpromoted,
     Epilogue::b_then_a,
     SplitFamily::equal_slices,
     {},
     "cuBLASLt _ovscale rowwise fast accumulation"},
    {Scaling::blockwise, false, AM::hopper_promoted_blockwise, Epilogue::model,
     SplitFamily::slice_lengths, kCublasBlockwiseLengths,
     "cuBLASLt Ablk128_Bvec128: fmaf promotion per block; split-K slices of 24 blocks"},
};

// torch 2.11 `_scaled_grouped_mm` on sm_90: CUTLASS KernelPtrArrayTmaWarpSpecializedCooperative
// (FP8FastAccum with use_fast_accum), the epilogue RN(RN(acc*sa)*sb); M-grouped 2d x 3d and
// K-grouped 2d x 2d.
constexpr PresetRow kScaledGroupedMmRows[] = {
    {Scaling::rowwise,
     false,
     AM::hopper_promoted_rowwise,
     Epilogue::a_then_b,
     SplitFamily::none,
     {},
     "CUTLASS grouped rowwise: RN(RN(acc*sa)*sb)"},
    {Scaling::rowwise,
     true,
     AM::hopper_unpromoted,
     Epilogue::a_then_b,
     SplitFamily::none,
     {},
     "CUTLASS grouped rowwise, FP8FastAccum"},
};

// DeepGEMM's sm90 1D2D FP8 GEMMs (normal and m-grouped contiguous): per 128-K block the wgmma
// partial is promoted with fmaf(RN(sa*sb), T, acc) in the kernel's registers, no split-K.
constexpr PresetRow kDeepGemmRows[] = {
    {Scaling::blockwise,
     false,
     AM::hopper_promoted_blockwise,
     Epilogue::model,
     SplitFamily::none,
     {},
     "sm90_fp8_gemm_1d2d: promotion per 128-K block, no split-K"},
};

constexpr const char* kDeepGemmUnmeasured =
    "NOT MEASURED: sm_90 DeepGEMM as its source reads (docs/models.md), never run on hardware here";

constexpr KernelPreset kPresets[] = {
    {"torch_2_11_sm90._scaled_mm", "torch._scaled_mm", "H100 and H200 (sm_90), torch 2.11, CUDA 13",
     "kn", PresetGrouping::m, kScaledMmRows},
    {"torch_2_11_sm90._scaled_grouped_mm", "torch._scaled_grouped_mm",
     "H100 and H200 (sm_90), torch 2.11, CUDA 13", "kn", PresetGrouping::m_or_k,
     kScaledGroupedMmRows},
    // Not measured: DeepGEMM did not run on the survey's H100 / H200 (docs/presets.md "Presets").
    {"deep_gemm_sm90.fp8_gemm_nt", "deep_gemm.fp8_gemm_nt", kDeepGemmUnmeasured, "nk",
     PresetGrouping::m, kDeepGemmRows},
    {"deep_gemm_sm90.m_grouped_fp8_gemm_nt_contiguous",
     "deep_gemm.m_grouped_fp8_gemm_nt_contiguous", kDeepGemmUnmeasured, "nk", PresetGrouping::m,
     kDeepGemmRows},
};

}  // namespace

std::span<const KernelPreset> kernel_presets() { return kPresets; }

const KernelPreset* find_kernel_preset(std::string_view name) {
  for (const KernelPreset& p : kPresets)
    if (p.name == name || p.alias == name) return &p;
  return nullptr;
}

const PresetRow* preset_row(const KernelPreset& p, Scaling scaling, bool fast_accum) {
  for (const PresetRow& r : p.rows)
    if (r.scaling == scaling && r.fast_accum == fast_accum) return &r;
  return nullptr;
}

std::vector<std::int64_t> slice_ends(const ModelChoice& m, std::int64_t nb) {
  const SplitK s = m.split();
  std::vector<std::int64_t> ends;
  for (std::int64_t i = 0; i < s.count(nb); ++i) {
    const SliceRange r = s.slice(nb, i);
    if (r.last > r.first) ends.push_back(r.last);
  }
  return ends;
}

std::vector<ModelChoice> preset_members(const PresetRow& row, std::int64_t k) {
  const std::int64_t nb = std::max<std::int64_t>(1, (k + kScaleBlockK - 1) / kScaleBlockK);
  std::vector<ModelChoice> all{{row.model, 1, 0, row.epilogue}};
  if (row.split == SplitFamily::equal_slices)
    for (int s = 2; s <= std::min<std::int64_t>(nb, kMaxEqualSlices); ++s)
      all.push_back({row.model, s, 0, row.epilogue});
  if (row.split == SplitFamily::slice_lengths)
    for (const std::int64_t l : row.lengths) all.push_back({row.model, 1, l, row.epilogue});
  std::vector<ModelChoice> out;
  std::vector<std::vector<std::int64_t>> seen;
  for (const ModelChoice& m : all) {
    auto ends = slice_ends(m, nb);
    if (std::find(seen.begin(), seen.end(), ends) != seen.end()) continue;
    seen.push_back(std::move(ends));
    out.push_back(m);
  }
  return out;
}

std::string describe_member(const ModelChoice& m) {
  std::string s = to_string(m.model);
  if (m.split_blocks > 0)
    s += " split_blocks=" + std::to_string(m.split_blocks);
  else
    s += " split_k=" + std::to_string(m.split_k);
  return s + " epilogue=" + to_string(m.epilogue);
}

}  // namespace fp8ref::ref
