// The oracle runs shared by `fp8-check oracle|verify|explain grouped-gemm` (oracle_gemm.h,
// kernel_match.h): a case loaded once (M-grouped, or K-grouped with its groups stacked), evaluated
// under any number of model configurations on the CPU or the GPU oracle (docs/gpu_oracle.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/gemm_case.h"
#include "numerics/out_dtype.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::cli {

struct OracleRun {
  std::vector<std::uint32_t> bits;  // f32 bits, or bf16 / f16 in the low 16 bits
  std::vector<double> bound;
};

// The case as verify compares it: M-grouped as loaded, or K-grouped with `k` set and `c` its
// (G·M, N) stacking; `shape` is the output's shape ((M, N) or (G, M, N)).
struct LoadedCase {
  GemmCase c;
  std::optional<KGroupedCase> k;
  std::vector<std::int64_t> shape;
  std::string what;  // the K-grouped shape in words, empty for M-grouped
};
LoadedCase load_for_run(const GemmOptions& o);
// The same on tensors in memory (the Python module's arrays).
LoadedCase load_for_run(const tensor_io::TensorFile& tf, const GemmOptions& o);

// Where the oracle runs: --device cpu, cuda (a one-line error without a usable device, or when a
// bound is asked: the GPU oracle computes none) or auto (cuda when usable, else cpu).
bool use_gpu(const GemmOptions& o);

// The model's output (rows outside every group +0; an empty K group +0) and its bound.
OracleRun run_loaded(const LoadedCase& lc, ref::ModelChoice m, OutDtype d, bool on_gpu);

// The same on the first `rows` rows of each group's output only (a quick filter: a member that
// differs there differs in full); `rows_of` receives the flat output indices evaluated.
OracleRun run_loaded_head(const LoadedCase& lc, ref::ModelChoice m, OutDtype d, bool on_gpu,
                          std::int64_t rows, std::vector<std::size_t>& index);

}  // namespace fp8ref::cli
