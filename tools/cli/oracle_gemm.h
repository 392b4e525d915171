// `fp8-check oracle grouped-gemm` and `fp8-check verify grouped-gemm` (docs/cli.md,
// docs/models.md): recompute an M-grouped forward from dumped FP8 operands, scales and torch-style
// offsets under a named accumulation model (reference/grouped_gemm.h), write it as safetensors, or
// diff a dumped result against it per group. Exit 0 bitwise equal (or, with --within-bound, within
// the model's bound of the exact value), 1 differs, 2 bad input or usage.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/gemm_case.h"
#include "cli/kernel_match.h"

namespace fp8ref::cli {

// The operand options shared by oracle, verify and explain grouped-gemm, and which of those a
// --kernel preset fills when they are not given.
struct GemmFlags {
  CLI::Option *scaling, *b_layout, *out_dtype, *model, *split_k, *split_blocks, *epilogue;
  GivenOptions given() const {
    return {scaling->count() > 0,
            b_layout->count() > 0,
            out_dtype->count() > 0,
            model->count() > 0,
            split_k->count() + split_blocks->count() > 0,
            epilogue->count() > 0};
  }
};
GemmFlags add_gemm_options(CLI::App* c, GemmOptions& o);

void add_oracle_command(CLI::App& app);
void add_verify_command(CLI::App& app);

}  // namespace fp8ref::cli
