// `fp8-check explain grouped-gemm` (docs/cli.md "explain"): given the operands of verify and a
// dumped output, ranks model configurations by mismatches (a kernel preset's members and the wide
// candidate set of kernel_match.h), and for a non-match tells the story of the first failing
// element: got against the best configuration, the distance in output ULPs, which configurations
// reproduce that element's bits (another epilogue order, split-K, model, or a lost / wrong group),
// and the chain of partial sums per 128-K chunk under the best configuration next to the exact
// prefix sums, with the chunk where the explaining configuration departs from it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/kernel_match.h"

namespace fp8ref::cli {

struct ChunkSum {
  std::int64_t k_end;      // prefix of K elements [0, k_end)
  double exact;            // the exact scaled prefix sum
  float best, explaining;  // the configurations' f32 results on that prefix
};

struct ElementStory {
  std::int64_t row = 0, col = 0, group = 0;  // output index (K-grouped: row of group `group`)
  std::uint32_t got = 0, ref_z = 0;          // bits in the output dtype
  std::int64_t ulps = 0;                     // got - ref_z in output ULPs (ordered)
  std::string kind;                          // one_ulp | epilogue | split_k | model | lost_group |
                                             // wrong_group | lost_chunk | chunk_scale |
                                             // unexplained
  std::string because;                       // the sentence
  std::vector<std::string> reproduced_by;    // configurations giving got's bits for this element
  std::optional<std::int64_t> wrong_group;   // the group whose weights give got
  std::vector<ChunkSum> chain;
  // First 128-K chunk where the best configuration and the explanation (another configuration,
  // or the best one on the broken case of lost_chunk / chunk_scale) differ.
  std::optional<std::int64_t> diverged_chunk;
};

struct ExplainReport {
  // Refused configurations dropped; those compared in full first, by mismatches, then those
  // counted on the screen only (screened_out: mismatches and compared over the union of the
  // screen's stages), by those counts (docs/cli.md "explain").
  std::vector<MemberScore> ranked;
  std::size_t members = 0;    // a preset's members among the candidates
  std::int64_t compared = 0;  // elements compared
  // The configuration the story is told against (the best member, or the best of all).
  ref::ModelChoice best{AccumulationModel::exact, 1};
  bool exact_match = false;
  std::size_t screened = 0;       // elements of the screen's grid (0: no screen)
  std::size_t screened_rows = 0;  // rows of its second stage (kernel_screen.h; 0: none)
  std::optional<ElementStory> first;
  std::string summary;  // one line
};

// `candidates`' first `members` entries are a kernel preset's members (0: no preset): then the
// report is an exact match only when a member reproduces every element, and the story is told
// against the best member, with any configuration as the explanation. With `screen` > 0 every
// candidate is first scored on verify's screen (kernel_match.h MemberScreen), then compared on
// every element in screened order: the first max(top, 2), every one that reproduces every
// screened element, and every one the best full count so far cannot rule out (a full count is at
// least the screened one). So the verdict, the best configuration (overall and among the
// members), its first failing element, and every full count are those of `screen` 0; the others
// keep their screened counts (screened_out).
ExplainReport explain(const LoadedCase& lc, const tensor_io::Tensor& got,
                      const std::vector<ref::ModelChoice>& candidates, std::size_t members,
                      OutDtype d, std::size_t top, std::size_t screen);

// The report as JSON (schema fp8ref.explain_grouped_gemm/1), ranking cut to `top` entries.
nlohmann::json explain_json(const ExplainReport& r, OutDtype d, std::size_t top);

void add_explain_command(CLI::App& app);

}  // namespace fp8ref::cli
