// `fp8-check diff A[:name] B[:name]`: bitwise and format-ULP comparison of tensors (docs/cli.md).
// Metrics bitwise | ulp:N | tol:ATOL,RTOL | bound:FILE[:NAME]; per-group breakdown from an offsets
// tensor (cumulative end rows over dim 0); JSON schema "fp8ref.diff/1"; exit 0 / 1 / 2. A is the
// result under test (got_z), B the reference (ref_z).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor_io/tensor.h"

namespace fp8ref::cli {

class Progress;

struct Metric {
  enum class Kind { Bitwise, Ulp, Tol, Bound } kind = Kind::Bitwise;
  std::uint64_t ulp = 0;
  double atol = 0, rtol = 0;
  // Bound: per-element absolute error bound, same shape as the pair (or one element for all).
  std::string bound_spec;                          // FILE[:NAME] as given
  std::shared_ptr<const tensor_io::Tensor> bound;  // set by load_bound_tensor (or a test)
  std::string text = "bitwise";
};
Metric parse_metric(const std::string& s);  // syntax only; throws UsageError
// Reads the bound tensor of a Kind::Bound metric: 1 tensor or FILE:NAME, float or integer dtype,
// no negative element (NaN is allowed and fails every finite pair it bounds). UsageError otherwise.
void load_bound_tensor(Metric& m);

struct Mismatch {
  std::uint64_t index = 0;
  std::vector<std::int64_t> multi_index;
  std::int64_t group = -1;  // -1: no groups given, or a padding row past the last offset
  std::uint64_t a_bits = 0, b_bits = 0;
  double a = 0, b = 0;
  std::int64_t ulp = -1;  // -1: NaN/Inf class differs
  double bound = 0;       // the element's bound (Kind::Bound only)
};

struct GroupStats {
  std::int64_t group = 0;  // -1: padding rows
  std::uint64_t rows = 0, elements = 0, mismatches = 0, metric_failures = 0;
  std::uint64_t max_ulp = 0;
  double max_abs = 0;
};

// How two tensors compare; printed and written to JSON as its token (to_string).
enum class DiffStatus : std::uint8_t {
  equal,           // bitwise equal
  within,          // differs, every element within the metric
  differs,         // some element outside the metric
  dtype_mismatch,  // not compared: dtypes differ
  shape_mismatch,  // not compared: shapes differ
  only_in_a,       // the tensor is in the first file only
  only_in_b,       // the tensor is in the second file only
};
constexpr const char* to_string(DiffStatus s) {
  switch (s) {
    case DiffStatus::equal: return "equal";
    case DiffStatus::within: return "within";
    case DiffStatus::differs: return "differs";
    case DiffStatus::dtype_mismatch: return "dtype_mismatch";
    case DiffStatus::shape_mismatch: return "shape_mismatch";
    case DiffStatus::only_in_a: return "only_in_a";
    case DiffStatus::only_in_b: return "only_in_b";
  }
  return "?";
}

struct TensorDiff {
  std::string name;
  DiffStatus status = DiffStatus::equal;
  tensor_io::DType dtype = tensor_io::DType::U8;
  std::vector<std::int64_t> shape;
  std::uint64_t numel = 0, bitwise_mismatches = 0, class_mismatches = 0, metric_failures = 0;
  std::uint64_t max_ulp = 0;
  double max_abs = 0, max_rel = 0, rel_l2 = 0, sqnr_db = 0;
  double max_bound_ratio =
      0;  // Kind::Bound: max |a-b| / bound over finite pairs (inf: error over a 0 bound)
  std::map<std::uint64_t, std::uint64_t> ulp_hist;  // bucket upper bound (0,1,2,4,8,...) -> count
  std::vector<Mismatch> first;
  std::vector<GroupStats> groups;
  std::vector<std::vector<double>> heatmap;  // rows: groups or row bins; cols: column bins; max ULP
  bool passes() const { return status == DiffStatus::equal || status == DiffStatus::within; }
};

// `progress`, when given, is advanced by the number of elements compared.
TensorDiff diff_tensors(const std::string& name, const tensor_io::Tensor& a,
                        const tensor_io::Tensor& b, const Metric& metric,
                        const std::vector<std::int64_t>* offs, std::size_t max_report,
                        Progress* progress = nullptr);

void add_diff_command(CLI::App& app);

}  // namespace fp8ref::cli
