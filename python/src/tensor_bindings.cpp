// fp8ref._core tensor half (docs/python.md): tensor files, quantize, the grouped-GEMM oracle and
// diff. A tensor crosses as (dtype name, shape, 1-D uint8 view of its bytes); the ops take the
// fp8-check code paths (tools/cli/) on them, so checks and messages are the CLI's. Operands are
// copied once into the owned tensor_io::Tensor those paths take; results move out without a copy.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "cli/diff.h"
#include "cli/diff_fields.h"
#include "cli/errors.h"
#include "cli/gemm_case.h"
#include "cli/quantize.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::py {

tensor_io::Tensor to_tensor(const std::string& what, const PyTensor& t) {
  const auto& [name, shape, bytes] = t;
  const auto dtype = tensor_io::dtype_from_name(name);
  if (!dtype) throw cli::UsageError(what + ": unknown dtype '" + name + "'");
  tensor_io::Tensor x{*dtype, shape, {}};
  const std::uint64_t n = tensor_io::checked_numel(shape, what);
  if (tensor_io::bytes_for(*dtype, n) != bytes.size())
    throw cli::UsageError(what + ": " + std::to_string(bytes.size()) + " bytes for " + name + " " +
                          tensor_io::shape_string(shape));
  x.data.assign(bytes.data(), bytes.data() + bytes.size());
  return x;
}

OutTensor from_tensor(tensor_io::Tensor&& t) {
  const std::size_t n = t.data.size();
  return {std::string(tensor_io::dtype_name(t.dtype)), t.shape,
          owning_array(std::move(t.data), {n})};
}

namespace {

using cli::UsageError;
using tensor_io::DType;
using tensor_io::Tensor;

using Metadata = std::map<std::string, std::string>;

std::tuple<std::vector<std::tuple<std::string, OutTensor>>, Metadata> from_file(
    tensor_io::TensorFile&& tf) {
  std::vector<std::tuple<std::string, OutTensor>> out;
  for (auto& nt : tf.tensors) out.emplace_back(nt.name, from_tensor(std::move(nt.tensor)));
  return {std::move(out), tf.metadata};
}

auto read_file(const std::string& path) {
  tensor_io::TensorFile tf;
  {
    nb::gil_scoped_release unlocked;
    tf = tensor_io::read_tensor_file(path, {});
  }
  return from_file(std::move(tf));
}

void write_file(const std::string& path,
                const std::vector<std::tuple<std::string, PyTensor>>& tensors,
                const Metadata& metadata) {
  tensor_io::TensorFile tf;
  for (const auto& [name, t] : tensors) tf.tensors.push_back({name, to_tensor(name, t)});
  tf.metadata = metadata;
  nb::gil_scoped_release unlocked;
  tensor_io::write_tensor_file(path, tf);
}

auto quantize(const PyTensor& x, const cli::QuantizeOptions& o) {
  const Tensor t = to_tensor("x", x);
  tensor_io::TensorFile tf;
  {
    nb::gil_scoped_release unlocked;
    tf = cli::quantize_tensor(t, o, "x");
  }
  return from_file(std::move(tf));
}

// The oracle's result: bits (M, N) as f32 / bf16 / f16 bytes, the per-element bound (optional)
// and the canonical configuration.
std::tuple<OutTensor, std::optional<NumpyArray<double>>, Metadata> grouped_gemm(
    const std::map<std::string, PyTensor>& tensors, const cli::GemmOptions& o, bool want_bound) {
  tensor_io::TensorFile tf;
  for (const auto& [name, t] : tensors) tf.tensors.push_back({name, to_tensor(name, t)});
  const ref::ModelChoice m = cli::parse_model(o);
  const OutDtype d = cli::parse_out_dtype(o.out_dtype);
  const cli::GemmCase c = cli::load_case(tf, o);
  const std::size_t mn = std::size_t(c.M * c.N);
  std::vector<float> f(d == OutDtype::f32 ? mn : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : mn);
  std::vector<double> bound(want_bound ? mn : 0);
  {
    nb::gil_scoped_release unlocked;
    try {
      ref::grouped_gemm_forward_offs(c.operands(), c.offs, m, ref::RowPolicy::zero,
                                     {d, f, h, bound});
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  const DType dt = d == OutDtype::f32 ? DType::F32 : d == OutDtype::bf16 ? DType::BF16 : DType::F16;
  std::vector<std::uint8_t> bytes(d == OutDtype::f32 ? mn * 4 : mn * 2);
  std::memcpy(bytes.data(), d == OutDtype::f32 ? static_cast<const void*>(f.data()) : h.data(),
              bytes.size());
  OutTensor y = from_tensor(Tensor{dt, {c.M, c.N}, std::move(bytes)});
  std::optional<NumpyArray<double>> b;
  if (want_bound) b = owning_array(std::move(bound), {std::size_t(c.M), std::size_t(c.N)});
  Metadata meta{{"model", std::string(to_string(m.model))},
                {"split", m.split().str()},
                {"epilogue", std::string(to_string(m.epilogue))},
                {"scaling", o.scaling},
                {"b_layout", o.b_layout},
                {"out_dtype", o.out_dtype},
                {"M", std::to_string(c.M)},
                {"N", std::to_string(c.N)},
                {"K", std::to_string(c.K)},
                {"G", std::to_string(c.G)}};
  return {std::move(y), std::move(b), std::move(meta)};
}

// A struct with a field list (cli/diff_fields.h): DiffReport's dicts are made from that list,
// the one fp8-check diff --json writes, so a field added there shows up here too.
struct AnyField {
  template <class V>
  void operator()(const char*, const V&, cli::Shown) const {}
};
template <class T>
concept Reported = requires(const T& x) {
  cli::visit_fields(x, AnyField{});
};

template <Reported T>
nb::dict to_python(const T& x);

// A field's value: a list of dicts for a list of report structs, else nanobind's conversion.
template <class T>
nb::object field_value(const T& v) {
  return nb::cast(v);
}
template <Reported T>
nb::object field_value(const std::vector<T>& rows) {
  nb::list l;
  for (const T& r : rows) l.append(to_python(r));
  return l;
}

// The fields by name (the Python keys are the C++ field names; the JSON's spellings are not used).
template <Reported T>
nb::dict to_python(const T& x) {
  nb::dict d;
  cli::visit_fields(x,
                    [&](const char* name, const auto& v, cli::Shown) { d[name] = field_value(v); });
  return d;
}

nb::dict diff(const PyTensor& a, const PyTensor& b, const std::string& metric,
              const std::optional<std::vector<std::int64_t>>& offs,
              const std::optional<PyTensor>& bound, std::size_t max_report) {
  cli::Metric m;
  if (bound) {
    m.kind = cli::Metric::Kind::Bound;
    m.text = "bound";
    m.bound = std::make_shared<const Tensor>(to_tensor("bound", *bound));
  } else {
    m = cli::parse_metric(metric);
    if (m.kind == cli::Metric::Kind::Bound)
      throw UsageError("metric bound: pass the bound array as bound=, not a file name");
  }
  const Tensor ta = to_tensor("got", a), tb = to_tensor("want", b);
  cli::TensorDiff r;
  {
    nb::gil_scoped_release unlocked;
    r = cli::diff_tensors("tensor", ta, tb, m, offs ? &*offs : nullptr, max_report);
  }
  return to_python(r);
}

}  // namespace

void register_tensors(nb::module_& m) {
  nb::class_<cli::QuantizeOptions>(m, "QuantizeOptions")
      .def(nb::init<>())
      .def_rw("recipe", &cli::QuantizeOptions::recipe)
      .def_rw("block", &cli::QuantizeOptions::block)
      .def_rw("layout", &cli::QuantizeOptions::layout)
      .def_rw("format", &cli::QuantizeOptions::format)
      .def_rw("runtime", &cli::QuantizeOptions::runtime)
      .def_rw("pow2", &cli::QuantizeOptions::pow2)
      .def_rw("epsilon", &cli::QuantizeOptions::epsilon)
      .def_rw("nan", &cli::QuantizeOptions::nan)
      .def_rw("allow_partial_blocks", &cli::QuantizeOptions::allow_partial_blocks);
  nb::class_<cli::GemmOptions>(m, "GemmOptions")
      .def(nb::init<>())
      .def_rw("in_", &cli::GemmOptions::in)
      .def_rw("a", &cli::GemmOptions::a)
      .def_rw("b", &cli::GemmOptions::b)
      .def_rw("scale_a", &cli::GemmOptions::scale_a)
      .def_rw("scale_b", &cli::GemmOptions::scale_b)
      .def_rw("offs", &cli::GemmOptions::offs)
      .def_rw("b_layout", &cli::GemmOptions::b_layout)
      .def_rw("scaling", &cli::GemmOptions::scaling)
      .def_rw("model", &cli::GemmOptions::model)
      .def_rw("out_dtype", &cli::GemmOptions::out_dtype)
      .def_rw("split_k", &cli::GemmOptions::split_k)
      .def_rw("split_blocks", &cli::GemmOptions::split_blocks)
      .def_rw("epilogue", &cli::GemmOptions::epilogue);
  m.def("read_tensor_file", &read_file, nb::arg("path"));
  m.def("write_tensor_file", &write_file, nb::arg("path"), nb::arg("tensors"), nb::arg("metadata"));
  m.def("quantize", &quantize, nb::arg("x"), nb::arg("options"));
  m.def("grouped_gemm", &grouped_gemm, nb::arg("tensors"), nb::arg("options"), nb::arg("bound"));
  m.def("diff", &diff, nb::arg("got"), nb::arg("want"), nb::arg("metric"), nb::arg("offs").none(),
        nb::arg("bound").none(), nb::arg("max_report"));
}

}  // namespace fp8ref::py
