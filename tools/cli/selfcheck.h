// `fp8-check selfcheck [--quick] [--json]`: the exhaustive codec verification this machine can
// run (README main job, issue 2 item 2): cuda_* profiles against CUDA's host functions,
// torch_2_11 and ml_dtypes_0_6 against the table oracle, ml_dtypes_0_6 against ml_dtypes when a
// Python with it is configured; progress per sweep, a summary table at the end, exit 0 iff every
// sweep that ran found 0 mismatches.
#pragma once

#include <CLI/CLI.hpp>

namespace fp8ref::cli {

void add_selfcheck_command(CLI::App& app);

}  // namespace fp8ref::cli
