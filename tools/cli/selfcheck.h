// `fp8-check selfcheck [--quick] [--sources LIST] [--samples N] [--json]`: the exhaustive codec
// verification (docs/numerics.md "Verification"): cuda_* profiles against CUDA's host functions,
// torch_2_11 and ml_dtypes_0_6 against the table oracle, ml_dtypes_0_6 against ml_dtypes; progress
// per sweep, a summary table and a verdict line at the end. Exit 0 iff every planned sweep ran and
// found 0 mismatches; 1 on a mismatch or a failing peer; 3 when rows were skipped (their peer is
// missing).
#pragma once

#include <CLI/CLI.hpp>

namespace fp8ref::cli {

void add_selfcheck_command(CLI::App& app);

}  // namespace fp8ref::cli
