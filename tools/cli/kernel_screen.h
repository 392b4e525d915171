// Output elements cut from a loaded grouped-GEMM case (docs/cli.md "Kernel presets"): one element
// as a 1x1 case (its row of A, its group's column of B and their scales), used by `explain`'s
// element stories, and the screen of `verify --kernel` / `--strength` and of `explain`'s ranking
// (kernel_match.h MemberScreen): a deterministic grid of
// the compared elements (rows x columns), stacked into small cases, then (large M) a sixteenth of
// the rows, on which every configuration is evaluated before the survivors are evaluated in full.
// Every model computes an output element from that element's row, column and scales alone
// (docs/models.md), so a configuration that reproduces every element reproduces the screened ones:
// the screen only drops configurations that already differ somewhere, and what verify reports and
// exits with does not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cli/gemm_case.h"
#include "cli/oracle_run.h"

namespace fp8ref::cli {

// Output (row, col) of the M-grouped case `c` as a 1x1 case with B of group g.
GemmCase element_case(const GemmCase& c, std::int64_t row, std::int64_t col, std::int64_t g);

// A one-group view of output element i (flat index into the compared output): the 1x1 case, its
// row, column and group (K-grouped: row of group `group`), and the case it was cut from.
struct Located {
  GemmCase e;
  std::int64_t row, col, group;
  const GemmCase* source;
};
Located locate(const LoadedCase& lc, std::size_t i);

// The screened elements: up to ceil(sqrt(count)) rows spread evenly over the rows verify compares
// (M-grouped: rows inside a group; K-grouped: rows of the groups with at least one K column, an
// empty group's +0 is left to the full check) times as many columns spread over N, as flat output
// indices (sorted). Empty when count is 0 or the case has no more than 4·count such elements (the
// full check costs little then).
std::vector<std::size_t> screen_elements(const LoadedCase& lc, std::size_t count);

// The screened elements as cases of one K each (one for M-grouped, one per K group): part j
// evaluates the elements index[j] in that order; in it, each (column, group) pair of the source is
// one group of the sampled rows, B that group's column, the scales those of the element cases.
struct ScreenCase {
  std::vector<LoadedCase> parts;
  std::vector<std::vector<std::size_t>> index;
  std::size_t size() const;
};
ScreenCase screen_case(const LoadedCase& lc, const std::vector<std::size_t>& elements);

// The second stage of the screen, for M-grouped cases of many rows: every 16th of the rows verify
// compares (spread evenly, whole rows: every column), when that is at least ceil(sqrt(count))
// rows; empty otherwise or for K-grouped cases. 16-bit outputs hide most differences between
// split-K members, so many members reproduce a few thousand elements; a sixteenth of the output
// separates them at a sixteenth of the cost of the full comparison.
std::vector<std::int64_t> row_screen_rows(const LoadedCase& lc, std::size_t count);
ScreenCase row_screen_case(const LoadedCase& lc, std::size_t count);

// A configuration's output bits at the screened elements, parts in turn, each in index order.
// Throws what the reference (or the GPU oracle) throws for the configuration.
std::vector<std::uint32_t> run_screen(const ScreenCase& s, ref::ModelChoice m, OutDtype d,
                                      bool on_gpu);

}  // namespace fp8ref::cli
