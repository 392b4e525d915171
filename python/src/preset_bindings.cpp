// Kernel presets and `explain` for the Python module (docs/python.md, docs/presets.md): the
// preset table, the resolution of kernel= on arrays (members, and the scaling / B layout / output
// dtype read from the arrays), and fp8-check's explain report as its JSON. Separate from
// tensor_bindings.cpp so the grouped-GEMM bindings there stay as they are.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "cli/errors.h"
#include "cli/explain.h"
#include "cli/gemm_case.h"
#include "cli/kernel_match.h"
#include "reference/kernel_preset.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::py {
namespace {

using cli::UsageError;
using Given = std::tuple<bool, bool, bool, bool, bool, bool>;

// The (dtype name, shape, bytes) triples of python/fp8ref/_arrays.py as a tensor file.
tensor_io::TensorFile tensors_in(const std::map<std::string, PyTensor>& tensors) {
  tensor_io::TensorFile tf;
  for (const auto& [name, t] : tensors) tf.tensors.push_back({name, to_tensor(name, t)});
  return tf;
}

cli::GivenOptions given_of(const Given& g) {
  const auto& [scaling, b_layout, out_dtype, model, split, epilogue] = g;
  return {scaling, b_layout, out_dtype, model, split, epilogue};
}

std::map<std::string, std::string> member_dict(const ref::ModelChoice& m) {
  return {{"model", to_string(m.model)},
          {"split_k", std::to_string(m.split_k)},
          {"split_k_blocks", std::to_string(m.split_blocks)},
          {"epilogue", to_string(m.epilogue)},
          {"configuration", ref::describe_member(m)}};
}

// kernel= resolved on the arrays: (members, the options the preset filled).
std::tuple<std::vector<std::map<std::string, std::string>>, std::map<std::string, std::string>>
resolve(const std::map<std::string, PyTensor>& tensors, cli::GemmOptions o,
        const std::string& kernel, bool fast_accum, const Given& given,
        const std::string& grouping) {
  const tensor_io::TensorFile tf = tensors_in(tensors);
  o.kernel = kernel, o.fast_accum = fast_accum, o.got = tf.find("got") ? "got" : "";
  o.grouping = grouping;
  const cli::ResolvedKernel rk = cli::resolve_kernel(o, given_of(given), tf);
  std::vector<std::map<std::string, std::string>> members;
  for (const ref::ModelChoice& m : rk.members) members.push_back(member_dict(m));
  return {members,
          {{"scaling", o.scaling},
           {"b_layout", o.b_layout},
           {"out_dtype", o.out_dtype},
           {"kernel", std::string(rk.preset->name)},
           {"alias", std::string(rk.preset->alias)}}};
}

// fp8-check explain grouped-gemm on arrays: the JSON report as a string.
std::string explain(const std::map<std::string, PyTensor>& tensors, cli::GemmOptions o,
                    const std::string& kernel, bool fast_accum, const Given& given,
                    std::size_t top) {
  const tensor_io::TensorFile tf = tensors_in(tensors);
  o.kernel = kernel, o.fast_accum = fast_accum, o.got = "got";
  std::vector<ref::ModelChoice> members;
  if (!o.kernel.empty()) members = cli::resolve_kernel(o, given_of(given), tf).members;
  const OutDtype d = cli::parse_out_dtype(o.out_dtype);
  std::string report;
  {
    nb::gil_scoped_release unlocked;
    const cli::LoadedCase lc = cli::load_for_run(tf, o);
    std::vector<ref::ModelChoice> c = members;
    if (o.kernel.empty() && std::get<3>(given)) c.push_back(cli::parse_model(o));
    std::vector<std::string> seen;
    for (const ref::ModelChoice& m : c) seen.push_back(ref::describe_member(m));
    for (const ref::ModelChoice& m : cli::wide_candidates(lc, d))
      if (std::find(seen.begin(), seen.end(), ref::describe_member(m)) == seen.end()) {
        seen.push_back(ref::describe_member(m));
        c.push_back(m);
      }
    const tensor_io::Tensor& got = cli::find_tensor(tf, o.in, o.got, "got");
    const tensor_io::DType want = d == OutDtype::f32    ? tensor_io::DType::F32
                                  : d == OutDtype::bf16 ? tensor_io::DType::BF16
                                                        : tensor_io::DType::F16;
    if (got.shape != lc.shape || got.dtype != want)
      throw UsageError("got: shape " + tensor_io::shape_string(got.shape) + " " +
                       std::string(tensor_io::dtype_name(got.dtype)) + ", expected " +
                       tensor_io::shape_string(lc.shape) + " " + o.out_dtype);
    report = cli::explain_json(cli::explain(lc, got, c, members.size(), d, top, o.screen), d, top)
                 .dump();
  }
  return report;
}

std::vector<std::map<std::string, std::string>> presets() {
  std::vector<std::map<std::string, std::string>> out;
  for (const ref::KernelPreset& p : ref::kernel_presets())
    for (const ref::PresetRow& r : p.rows)
      out.push_back({{"kernel", std::string(p.name)},
                     {"alias", std::string(p.alias)},
                     {"measured", std::string(p.measured)},
                     {"scaling", to_string(r.scaling)},
                     {"fast_accum", r.fast_accum ? "true" : "false"},
                     {"model", to_string(r.model)},
                     {"epilogue", to_string(r.epilogue)},
                     {"evidence", std::string(r.evidence)}});
  return out;
}

}  // namespace

void register_presets(nb::module_& m) {
  m.def("kernel_presets", &presets, "The kernel preset table (docs/presets.md), a row each");
  m.def("resolve_kernel", &resolve, nb::arg("tensors"), nb::arg("options"), nb::arg("kernel"),
        nb::arg("fast_accum"), nb::arg("given"), nb::arg("grouping"),
        "kernel= on arrays: (members, the scaling / b_layout / out_dtype read from them)");
  m.def("explain", &explain, nb::arg("tensors"), nb::arg("options"), nb::arg("kernel"),
        nb::arg("fast_accum"), nb::arg("given"), nb::arg("top"),
        "fp8-check explain grouped-gemm on arrays: the JSON report");
}

}  // namespace fp8ref::py
