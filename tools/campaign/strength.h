// Test strength of the grouped-GEMM suites (docs/fuzz.md "Test strength"): how many distinct
// configurations of the campaign's model space (model × epilogue order × split-K slice partition)
// reproduce the declared configuration's output on a case's data. A case whose output every
// configuration reproduces cannot catch a kernel or model that accumulates in another order;
// strength 1 means only the declared configuration gives those bits. Measured on a deterministic
// sample of the cases (a hash of the case's data), on a cut of its rows, and reported through
// coverage tags (`strength:N`, `vacuous:*`) that the fuzz report folds into a per-suite summary
// (tools/cli/fuzz_report.h). Nothing here changes a suite's verdict or its fingerprint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cases/gemm_case.h"
#include "cases/wgrad_case.h"

namespace fp8ref::fuzz {

// The campaign's configurations for a scaling and K, one per distinct computation: `exact`,
// `fp32_sequential`, and each Hopper model the scaling admits × the three epilogue orders (scalar
// scales; one order without scales, where they all agree) × the slice partitions of split-K
// S ∈ {1, 2, 3} and slices of 1–3 128-blocks (gen::model_for's space), deduplicated by
// configuration_key.
std::vector<ref::ModelChoice> strength_candidates(ref::Scaling s, std::int64_t K);

// The key two choices share iff the models' definitions make them one computation for
// (scaling, K): Epilogue::model resolved to the model's own order; promoted rowwise / tensorwise
// merged; one-block unpromoted and promoted_blockwise, and unscaled promoted_blockwise, as
// promoted_tensorwise; the split as its slice partition, with promoted_tensorwise's later
// one-block slices merged into the slice before (strength.cpp says why).
std::string configuration_key(const ref::ModelChoice& m, ref::Scaling s, std::int64_t K);

struct Strength {
  bool measured = false;      // false: no row of any group (nothing is compared)
  int candidates = 0;         // distinct configurations evaluated
  int matching = 0;           // of them, those giving the declared output's bits (>= 1)
  bool zero_operand = false;  // A's compared rows or B's planes of groups with rows all zero
  bool zero_output = false;   // every compared output is ±0
  std::int64_t rows = 0;      // rows of the cut
};

// Strength of a case: the declared configuration `c.model` against every candidate, on up to
// kStrengthRowsPerGroup rows of each group (first, last and between; at most kStrengthMaxRows
// rows in all) and every column. Outputs are equal when their bits are, or both are NaN.
inline constexpr std::int64_t kStrengthRowsPerGroup = 4, kStrengthMaxRows = 32;
Strength measure_strength(const cases::GemmCase& c);

// Whether the campaign measures this case: 1 in kStrengthOneIn by a hash of its data, and only
// cases of at most kStrengthMaxWork multiply-adds per candidate on the cut.
inline constexpr std::uint64_t kStrengthOneIn = 8;
inline constexpr std::int64_t kStrengthMaxWork = std::int64_t(1) << 20;
bool strength_sampled(const cases::GemmCase& c);

// The tags of a measured case: `strength:N` (N configurations reproduce it) and, where they
// apply, `vacuous:zero_operand`, `vacuous:zero_output`, `vacuous:all_agree` (every candidate
// reproduces it); `vacuous:no_rows` when nothing is compared.
std::vector<std::string> strength_tags(const Strength& s);

// The tags of a sampled case (strength_sampled), none for the others: the GEMM suites add them to
// the case's coverage classes, which the runner counts for passing cases.
std::vector<std::string> sampled_strength_tags(const cases::GemmCase& c);

// The K-grouped wgrad (`gemm.wgrad`): each group's dW is a reduction over the group's tokens, so
// a configuration is one computation for the case when it is one for every non-empty group's
// token count; the key joins configuration_key over those counts.
std::string wgrad_configuration_key(const ref::ModelChoice& m, const cases::WgradCase& w);

// Strength of a wgrad case: the declared `w.model` against the candidates of
// strength_candidates(w.scaling, the longest group) deduplicated by wgrad_configuration_key, on
// the whole case (the suite's cases are at most 200 tokens × 8 × 16: no cut). Rows are the
// tokens of the non-empty groups; `zero_operand` when dY or X is all zero on them.
Strength measure_wgrad_strength(const cases::WgradCase& w);

// sampled_strength_tags for the wgrad suite: 1 case in kStrengthOneIn by a hash of its data.
std::vector<std::string> sampled_wgrad_strength_tags(const cases::WgradCase& w);

}  // namespace fp8ref::fuzz
