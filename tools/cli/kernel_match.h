// Verification without guessed parameters (docs/presets.md): `--kernel NAME [--fast-accum]`
// resolves a kernel preset (reference/kernel_preset.h) into the model configurations the kernel
// may have run, infers what the dump already says (scaling from the scale shapes, B layout from
// B's shape, output dtype from --got), and scores each configuration against a dumped output.
// The same scoring ranks the wide candidate set of `--strength` and `explain`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/gemm_case.h"
#include "cli/oracle_run.h"
#include "reference/kernel_preset.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {

// Options the preset may fill: which of them the user gave explicitly.
struct GivenOptions {
  bool scaling = false, b_layout = false, out_dtype = false, model = false, split = false,
       epilogue = false;
};

// --kernel / --fast-accum resolved on the operands of `o` (which it completes: scaling, b_layout,
// out_dtype when not given). Explicit --model / --split-k(-blocks) / --epilogue replace the
// preset's choice in every member.
struct ResolvedKernel {
  const ref::KernelPreset* preset = nullptr;
  const ref::PresetRow* row = nullptr;
  std::vector<ref::ModelChoice> members;
};
ResolvedKernel resolve_kernel(GemmOptions& o, const GivenOptions& given);
// The same on tensors already in memory (the Python module's arrays; --got in `tf` by name).
ResolvedKernel resolve_kernel(GemmOptions& o, const GivenOptions& given,
                              const tensor_io::TensorFile& tf);

// The configurations --strength and explain compare when no preset narrows them: every model the
// reference accepts for the case's scaling, every epilogue order for scalar scales, and split-K
// S in {1, 2, 3, 4, 5, 8} or 24-block slices, listed once per distinct slice partition.
std::vector<ref::ModelChoice> wide_candidates(const LoadedCase& lc, OutDtype d);

struct MemberScore {
  ref::ModelChoice m{AccumulationModel::exact, 1};
  std::int64_t mismatches = 0;  // over the compared elements (valid rows)
  bool head_only = false;       // eliminated on the first rows: mismatches counts those only
  bool error = false;           // the reference refused this configuration for the case
  std::string why;              // its message
};

// Scores each member; with `filter`, a member that already differs on the first 64 rows of each
// group is not evaluated in full. Order kept.
std::vector<MemberScore> score_members(const LoadedCase& lc, const tensor_io::Tensor& got,
                                       const std::vector<ref::ModelChoice>& members, OutDtype d,
                                       bool on_gpu, bool filter);

// The configuration verify compares with: the first member that reproduces every compared
// element, else the one with the fewest mismatches (members are scored when there are several,
// with `preset`, or with `strength`). With --strength, every member and every wide
// candidate is scored, and `also` lists the other configurations that reproduce the data;
// `warnings` names vacuous data (all-zero operands or outputs, outputs the exact model gets).
struct Selection {
  ref::ModelChoice chosen{AccumulationModel::exact, 1};
  bool matched = false;
  std::vector<MemberScore> scores;  // the members (empty for a single --model)
  std::vector<std::string> also;    // --strength: other configurations that reproduce it
  std::vector<std::string> warnings;
  bool strength = false;
};
Selection select_configuration(const LoadedCase& lc, const tensor_io::Tensor& got,
                               const std::vector<ref::ModelChoice>& members, OutDtype d,
                               bool on_gpu, bool strength, bool preset);

// Elements of the output that verify compares (rows inside a group), as a mask.
std::vector<bool> compared_rows(const LoadedCase& lc);

}  // namespace fp8ref::cli
