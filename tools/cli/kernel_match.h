// Verification without guessed parameters (docs/presets.md): `--kernel NAME [--fast-accum]`
// resolves a kernel preset (reference/kernel_preset.h) into the model configurations the kernel
// may have run, infers what the dump already says (scaling from the scale shapes, B layout from
// B's shape, output dtype from --got), and scores each configuration against a dumped output.
// The same scoring ranks the wide candidate set of `--strength` and `explain`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/gemm_case.h"
#include "cli/kernel_screen.h"
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
  std::int64_t compared = 0;    // elements compared: every one, or the screen's when screened out
  bool screened_out = false;    // differs on the screen: mismatches counts the screen's only
  bool error = false;           // the reference refused this configuration for the case
  std::string why;              // its message
};

// The screen of one case (docs/cli.md "The screen"): its two stages (kernel_screen.h) built once,
// and the comparison of a configuration's bits with got on them or on every compared element.
// score_members and explain (explain.h) score through it.
class MemberScreen {
 public:
  MemberScreen(const LoadedCase& lc, const tensor_io::Tensor& got, OutDtype d, bool on_gpu,
               std::size_t screen);
  std::size_t elements() const { return orders_[0].size(); }  // the grid (0: no screen)
  std::size_t rows() const;                                   // the second stage's rows
  // m on the stages in turn, up to the first where it differs (screened_out, that stage's
  // counts: verify's screen), or with `every_stage` on all of them (counts over their union, each
  // element once: explain's common sample). Not screened out: it reproduces every screened element
  // or the reference refused it on the screen (the full comparison reports the refusal with the
  // case's message).
  MemberScore screen(const ref::ModelChoice& m, bool every_stage = false) const;
  // s.m on every compared element: s's counts replaced, screened_out cleared; a refusal sets
  // error and why. Returns the run (empty bits on a refusal).
  OracleRun compare_full(MemberScore& s) const;

 private:
  const LoadedCase& lc_;
  const tensor_io::Tensor& got_;
  OutDtype d_;
  bool on_gpu_;
  std::vector<bool> rows_;
  ScreenCase stages_[2];
  std::vector<std::size_t> orders_[2];  // each stage's elements in run_screen's order
  std::vector<bool> again_;             // the second stage's elements that the grid has
};

// Scores each member in order (docs/cli.md "The screen"). With `screen` > 0, each member is first
// evaluated on a grid of `screen` elements, then (large M) on a sixteenth of the rows
// (kernel_screen.h), and in full only if it reproduces all of them, so every member reported with
// 0 mismatches was compared on every element. `keep`, when given, receives the full run of the
// first member with the fewest mismatches among those evaluated in full (verify's chosen
// configuration; untouched when none was).
std::vector<MemberScore> score_members(const LoadedCase& lc, const tensor_io::Tensor& got,
                                       const std::vector<ref::ModelChoice>& members, OutDtype d,
                                       bool on_gpu, std::size_t screen,
                                       std::optional<OracleRun>* keep = nullptr);

// The configuration verify compares with: the first member that reproduces every compared
// element, else the one with the fewest mismatches, preferring members evaluated in full
// (members are scored when there are several, with `preset`, or with `strength`). With
// --strength, every member and every wide candidate is scored (with the same screen), and `also`
// lists the other configurations that reproduce every element (each evaluated in full);
// `warnings` names vacuous data (all-zero operands or outputs, outputs the exact model gets).
// `run` holds the chosen configuration's full output when scoring computed it.
struct Selection {
  ref::ModelChoice chosen{AccumulationModel::exact, 1};
  bool matched = false;
  std::vector<MemberScore> scores;  // the members (empty for a single --model)
  std::vector<std::string> also;    // --strength: other configurations that reproduce it
  std::vector<std::string> warnings;
  bool strength = false;
  std::size_t screened = 0;       // elements of the screen's grid (0: no screen)
  std::size_t screened_rows = 0;  // rows of its second stage (kernel_screen.h; 0: none)
  std::optional<OracleRun> run;
};
Selection select_configuration(const LoadedCase& lc, const tensor_io::Tensor& got,
                               const std::vector<ref::ModelChoice>& members, OutDtype d,
                               bool on_gpu, bool strength, bool preset,
                               std::size_t screen = kDefaultScreen);

// Elements of the output that verify compares (rows inside a group), as a mask.
std::vector<bool> compared_rows(const LoadedCase& lc);

}  // namespace fp8ref::cli
