// fp8ref._core grouped-GEMM oracle on a chosen device and grouping (docs/python.md "Devices and
// K-grouped"): device "cpu" (reference/) or "cuda" (the GPU oracle, gpu/oracle/: the same bits,
// no bound), grouping "m" (the M-grouped forward) or "k" (torch's 2d x 2d K-grouped product,
// fp8-check --grouping k: one forward per K slice into (G, M, N), an empty group +0). Without a
// usable device "cuda" raises RuntimeError with fp8-check's message; bad input is ValueError.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "cli/errors.h"
#include "cli/gemm_case.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/tensor_file.h"

#ifdef FP8REF_PY_HAVE_GPU
#include "gpu/device.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#endif

namespace fp8ref::py {
namespace {

using cli::UsageError;
using tensor_io::DType;
using tensor_io::Tensor;

using Metadata = std::map<std::string, std::string>;

// true for "cuda" (a usable device), false for "cpu"; RuntimeError without a device.
bool on_gpu(const std::string& device, bool want_bound) {
  if (device != "cpu" && device != "cuda")
    throw UsageError("device: '" + device + "' is not cpu or cuda");
  if (device == "cpu") return false;
#ifdef FP8REF_PY_HAVE_GPU
  if (!gpu::device_available())
    throw std::runtime_error("fp8ref: device='cuda': " + gpu::device_description());
#else
  throw std::runtime_error("fp8ref: device='cuda': this fp8ref was built without CUDA");
#endif
  if (want_bound)
    throw UsageError("device='cuda': bound / within_bound need the CPU oracle (device='cpu')");
  return true;
}

// One forward into f / h (and bound), on the CPU or the GPU oracle.
void forward(const cli::GemmCase& c, ref::ModelChoice m, OutDtype d, bool gpu, float* f,
             std::uint16_t* h, double* bound) {
  const std::size_t mn = std::size_t(c.M * c.N);
  const GemmOutput y{d, {f, f ? mn : 0}, {h, h ? mn : 0}, {bound, bound ? mn : 0}};
  try {
#ifdef FP8REF_PY_HAVE_GPU
    if (gpu) {
      gpu::oracle_grouped_gemm_forward_offs(c.operands(), c.offs, m, ref::RowPolicy::zero, y);
      return;
    }
#endif
    ref::grouped_gemm_forward_offs(c.operands(), c.offs, m, ref::RowPolicy::zero, y);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

struct Run {
  std::vector<std::int64_t> shape;
  std::vector<float> f;
  std::vector<std::uint16_t> h;
  std::vector<double> bound;
  std::int64_t M = 0, N = 0, K = 0, G = 0;
};

Run allocate(std::vector<std::int64_t> shape, OutDtype d, bool want_bound) {
  std::size_t n = 1;
  for (auto e : shape) n *= std::size_t(e);
  Run r{std::move(shape), {}, {}, {}};
  if (d == OutDtype::f32)
    r.f.resize(n);
  else
    r.h.resize(n);
  if (want_bound) r.bound.resize(n);
  return r;
}

Run run_m(const tensor_io::TensorFile& tf, const cli::GemmOptions& o, ref::ModelChoice m,
          OutDtype d, bool gpu, bool want_bound) {
  const cli::GemmCase c = cli::load_case(tf, o);
  Run r = allocate({c.M, c.N}, d, want_bound);
  r.M = c.M, r.N = c.N, r.K = c.K, r.G = c.G;
  nb::gil_scoped_release unlocked;
  forward(c, m, d, gpu, r.f.empty() ? nullptr : r.f.data(), r.h.empty() ? nullptr : r.h.data(),
          r.bound.empty() ? nullptr : r.bound.data());
  return r;
}

// Group g's forward into its (M, N) slice; an empty group (no K columns) stays +0, bound 0.
Run run_k(const tensor_io::TensorFile& tf, const cli::GemmOptions& o, ref::ModelChoice m,
          OutDtype d, bool gpu, bool want_bound) {
  const cli::KGroupedCase k = cli::load_kgrouped_case(tf, o);
  Run r = allocate({k.G, k.M, k.N}, d, want_bound);
  r.M = k.M, r.N = k.N, r.K = k.K, r.G = k.G;
  const std::size_t mn = std::size_t(k.M * k.N);
  nb::gil_scoped_release unlocked;
  for (std::size_t g = 0; g < k.groups.size(); ++g) {
    if (k.groups[g].K == 0) continue;
    forward(k.groups[g], m, d, gpu, r.f.empty() ? nullptr : r.f.data() + g * mn,
            r.h.empty() ? nullptr : r.h.data() + g * mn,
            r.bound.empty() ? nullptr : r.bound.data() + g * mn);
  }
  return r;
}

std::tuple<OutTensor, std::optional<NumpyArray<double>>, Metadata> grouped_gemm_on(
    const std::map<std::string, PyTensor>& tensors, const cli::GemmOptions& o, bool want_bound,
    const std::string& device, const std::string& grouping) {
  tensor_io::TensorFile tf;
  for (const auto& [name, t] : tensors) tf.tensors.push_back({name, to_tensor(name, t)});
  const ref::ModelChoice m = cli::parse_model(o);
  const OutDtype d = cli::parse_out_dtype(o.out_dtype);
  if (grouping != "m" && grouping != "k")
    throw UsageError("grouping: expected m or k, got '" + grouping + "'");
  const bool gpu = on_gpu(device, want_bound);
  Run r =
      grouping == "m" ? run_m(tf, o, m, d, gpu, want_bound) : run_k(tf, o, m, d, gpu, want_bound);
  const DType dt = d == OutDtype::f32 ? DType::F32 : d == OutDtype::bf16 ? DType::BF16 : DType::F16;
  std::vector<std::uint8_t> bytes(d == OutDtype::f32 ? r.f.size() * 4 : r.h.size() * 2);
  std::memcpy(bytes.data(), d == OutDtype::f32 ? static_cast<const void*>(r.f.data()) : r.h.data(),
              bytes.size());
  std::optional<NumpyArray<double>> b;
  std::vector<std::size_t> shape(r.shape.begin(), r.shape.end());
  if (want_bound) b = owning_array(std::move(r.bound), shape);
  Metadata meta{{"model", std::string(to_string(m.model))},
                {"split", m.split().str()},
                {"epilogue", std::string(to_string(m.epilogue))},
                {"scaling", o.scaling},
                {"b_layout", o.b_layout},
                {"out_dtype", o.out_dtype},
                {"device", device},
                {"grouping", grouping},
                {"M", std::to_string(r.M)},
                {"N", std::to_string(r.N)},
                {"K", std::to_string(r.K)},
                {"G", std::to_string(r.G)}};
  return {from_tensor(Tensor{dt, r.shape, std::move(bytes)}), std::move(b), std::move(meta)};
}

// Why device='cuda' cannot run here ("" when it can).
std::string cuda_unavailable() {
#ifdef FP8REF_PY_HAVE_GPU
  return gpu::device_available() ? "" : gpu::device_description();
#else
  return "this fp8ref was built without CUDA";
#endif
}

}  // namespace

void register_oracle(nb::module_& m) {
  m.def("cuda_unavailable", &cuda_unavailable);
  m.def("grouped_gemm_on", &grouped_gemm_on, nb::arg("tensors"), nb::arg("options"),
        nb::arg("bound"), nb::arg("device"), nb::arg("grouping"));
}

}  // namespace fp8ref::py
