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

namespace fp8ref::fuzz {

// The campaign's configurations for a scaling and K, one per distinct arithmetic: `exact`,
// `fp32_sequential`, and each Hopper model the scaling admits × the three epilogue orders (scalar
// scales; one order without scales, where they all agree) × the slice partitions of split-K
// S ∈ {1, 2, 3} and slices of 1–3 128-blocks (gen::model_for's space). hopper_promoted_tensorwise
// and hopper_promoted_rowwise share their accumulator, so under an explicit order they are one
// configuration (listed as tensorwise).
std::vector<ref::ModelChoice> strength_candidates(ref::Scaling s, std::int64_t K);

// The key two configurations share iff they compute the same arithmetic for (scaling, K):
// Epilogue::model resolved to the model's own order, promoted rowwise/tensorwise merged, the split
// as its slice partition.
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

// A suite's strength tags for a case: strength_tags of a sampled case, none for the others. The
// campaign counts a case's tags only when its check passed.
std::vector<std::string> sampled_strength_tags(const cases::GemmCase& c);

}  // namespace fp8ref::fuzz
