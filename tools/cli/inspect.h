// `fp8-check inspect FILE [--as [NAME=]DTYPE ...] [--json]`: per tensor dtype, shape, decoded
// min/max/mean, NaN/Inf counts and the FP8/FP4 code histogram (docs/cli.md). JSON schema
// "fp8ref.inspect/1".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor_io/tensor.h"

namespace fp8ref::cli {

class Progress;

struct TensorStats {
  std::uint64_t numel = 0;
  std::uint64_t nan = 0;
  std::uint64_t pos_inf = 0;
  std::uint64_t neg_inf = 0;
  std::uint64_t finite = 0;
  double min = 0;  // over finite elements; 0 when there are none
  double max = 0;
  double mean = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>>
      top_codes;  // (code, count), most frequent first
};

// `progress`, when given, is advanced by the number of elements read.
TensorStats compute_stats(const tensor_io::Tensor& t, std::size_t top_n,
                          Progress* progress = nullptr);

// Parses a --as value; throws UsageError naming the accepted spellings.
tensor_io::DType parse_dtype_option(const std::string& s);
// The --as values into `ro`: DTYPE (at most one) for every tensor, NAME=DTYPE for tensor NAME
// (in place of DTYPE; repeatable). Throws UsageError.
void apply_as_options(const std::vector<std::string>& values, tensor_io::ReadOptions& ro);

void add_inspect_command(CLI::App& app);

}  // namespace fp8ref::cli
