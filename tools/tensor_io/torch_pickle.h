// Restricted pickle VM for torch.save's data.pkl (Python pickle protocols 2-5, Lib/pickletools.py).
// It only builds values: containers, scalars, and the torch tensor subset (_rebuild_tensor_v2,
// _rebuild_parameter, *Storage persistent ids, OrderedDict). Any other global or opcode is refused
// with a message naming it; nothing from the file is ever executed.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "byte_reader.h"
#include "tensor.h"

namespace fp8ref::tensor_io {

struct PyValue;
using PyRef = std::shared_ptr<PyValue>;

// A tensor as pickled: view of a storage (storage dtype, zip key, element count).
struct PickledTensor {
  DType dtype = DType::U8;
  bool fp4_x2 = false;  // torch.float4_e2m1fn_x2: one byte holds two e2m1 values
  std::string storage_key;
  std::uint64_t storage_numel = 0;
  std::int64_t offset = 0;
  std::vector<std::int64_t> size;
  std::vector<std::int64_t> stride;
};

struct PyValue {
  enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  std::int64_t i = 0;
  double f = 0;
  std::string s;                              // Str; Global as "module.name"
  std::vector<PyRef> items;                   // Tuple, List
  std::vector<std::pair<PyRef, PyRef>> dict;  // Dict (insertion order)
  PickledTensor tensor;                       // Storage (dtype/key/numel) and Tensor
};

// The unpickled object graph. Pickles can build cycles (a list appended to itself), so the graph
// owns every container and breaks their links on destruction instead of relying on shared_ptr.
struct PickleGraph {
  PyRef root;
  std::vector<PyRef> containers;
  PickleGraph() = default;
  PickleGraph(PickleGraph&&) = default;
  PickleGraph& operator=(PickleGraph&&) = default;
  ~PickleGraph();
};

// Runs the VM over `pkl` and returns the top-level object. Every object pushed is charged
// kPickleNodeBytes (plus its string bytes) to `budget`; the first overload uses a budget of its
// own for a file of pkl.size() bytes.
PickleGraph unpickle_torch(Bytes pkl, std::string_view file);
PickleGraph unpickle_torch(Bytes pkl, std::string_view file, ReadBudget& budget);

}  // namespace fp8ref::tensor_io
