// fp8ref._core grouped-GEMM oracle on a chosen device and grouping (docs/python.md "Devices and
// K-grouped"): device "cpu" (reference/) or "cuda" (the GPU oracle, gpu/oracle/: the same bits,
// no bound), grouping "m" (the M-grouped forward) or "k" (torch's 2d x 2d K-grouped product,
// fp8-check --grouping k, out (G, M, N), an empty group +0), through fp8-check's own loader and
// run (tools/cli/oracle_run.h). Without a usable device "cuda" raises RuntimeError with
// fp8-check's message; bad input is ValueError.
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
#include "cli/oracle_run.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/tensor_file.h"

#ifdef FP8REF_PY_HAVE_GPU
#include "gpu/device.h"
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

std::tuple<OutTensor, std::optional<NumpyArray<double>>, Metadata> grouped_gemm_on(
    const std::map<std::string, PyTensor>& tensors, const cli::GemmOptions& options,
    bool want_bound, const std::string& device, const std::string& grouping) {
  tensor_io::TensorFile tf;
  for (const auto& [name, t] : tensors) tf.tensors.push_back({name, to_tensor(name, t)});
  cli::GemmOptions o = options;
  o.grouping = grouping;
  const ref::ModelChoice m = cli::parse_model(o);
  const OutDtype d = cli::parse_out_dtype(o.out_dtype);
  if (grouping != "m" && grouping != "k")
    throw UsageError("grouping: expected m or k, got '" + grouping + "'");
  const bool gpu = on_gpu(device, want_bound);
  const cli::LoadedCase lc = cli::load_for_run(tf, o);
  cli::OracleRun r;
  {
    nb::gil_scoped_release unlocked;
    try {
      r = cli::run_loaded(lc, m, d, gpu);  // the fp8-check path: M-grouped, or K-grouped
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  const bool f32 = d == OutDtype::f32;
  std::vector<std::uint8_t> bytes(r.bits.size() * (f32 ? 4 : 2));
  for (std::size_t i = 0; i < r.bits.size(); ++i)
    std::memcpy(bytes.data() + i * (f32 ? 4 : 2), &r.bits[i], f32 ? 4 : 2);
  std::optional<NumpyArray<double>> b;
  const std::vector<std::size_t> shape(lc.shape.begin(), lc.shape.end());
  if (want_bound) b = owning_array(std::move(r.bound), shape);
  const std::int64_t M = lc.k ? lc.k->M : lc.c.M, N = lc.k ? lc.k->N : lc.c.N,
                     K = lc.k ? lc.k->K : lc.c.K, G = lc.k ? lc.k->G : lc.c.G;
  Metadata meta{{"model", std::string(to_string(m.model))},
                {"split", m.split().str()},
                {"epilogue", std::string(to_string(m.epilogue))},
                {"scaling", o.scaling},
                {"b_layout", o.b_layout},
                {"out_dtype", o.out_dtype},
                {"device", device},
                {"grouping", grouping},
                {"M", std::to_string(M)},
                {"N", std::to_string(N)},
                {"K", std::to_string(K)},
                {"G", std::to_string(G)}};
  const DType dt = f32 ? DType::F32 : d == OutDtype::bf16 ? DType::BF16 : DType::F16;
  return {from_tensor(Tensor{dt, lc.shape, std::move(bytes)}), std::move(b), std::move(meta)};
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
