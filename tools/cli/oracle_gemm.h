// `fp8-check oracle grouped-gemm` and `fp8-check verify grouped-gemm` (docs/cli.md,
// docs/models.md): recompute an M-grouped forward from dumped FP8 operands, scales and torch-style
// offsets under a named accumulation model (reference/grouped_gemm.h), write it as safetensors, or
// diff a dumped result against it per group. Exit 0 bitwise equal (or, with --within-bound, within
// the model's bound of the exact value), 1 differs, 2 bad input or usage.
#pragma once

#include <CLI/CLI.hpp>

namespace fp8ref::cli {

void add_oracle_command(CLI::App& app);
void add_verify_command(CLI::App& app);

}  // namespace fp8ref::cli
