// fp8ref._core: the compiled half of the Python package (docs/python.md). Every input error of
// the library and the CLI layer becomes ValueError with the CLI's one-line message.
#include <stdexcept>

#include "bindings.h"
#include "cli/errors.h"
#include "tensor_io/tensor.h"

NB_MODULE(_core, m) {
  m.doc() = "fp8ref compiled core: codecs, quantize, grouped-GEMM oracle, diff, tensor files";
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const fp8ref::cli::UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const fp8ref::tensor_io::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  fp8ref::py::register_codec(m);
  fp8ref::py::register_tensors(m);
  fp8ref::py::register_oracle(m);
  fp8ref::py::register_presets(m);
}
