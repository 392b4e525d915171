// Restricted pickle VM (torch_pickle.h). Opcode semantics follow CPython Lib/pickle.py; the torch
// callables follow torch/_utils.py (_rebuild_tensor_v2, _rebuild_parameter) and
// torch/serialization.py (persistent id ('storage', StorageType, key, location, numel)).
#include "torch_pickle.h"

#include <array>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace fp8ref::tensor_io {
namespace {

constexpr std::size_t kMaxStack = 1u << 20;
constexpr std::size_t kMaxMemo = 1u << 20;

struct StorageType {
  std::string_view name;
  DType dtype;
};

constexpr std::array<StorageType, 21> kStorageTypes{{
    {"torch.DoubleStorage", DType::F64},
    {"torch.FloatStorage", DType::F32},
    {"torch.HalfStorage", DType::F16},
    {"torch.BFloat16Storage", DType::BF16},
    {"torch.LongStorage", DType::I64},
    {"torch.IntStorage", DType::I32},
    {"torch.ShortStorage", DType::I16},
    {"torch.CharStorage", DType::I8},
    {"torch.ByteStorage", DType::U8},
    {"torch.UInt16Storage", DType::U16},
    {"torch.UInt32Storage", DType::U32},
    {"torch.UInt64Storage", DType::U64},
    {"torch.BoolStorage", DType::BOOL},
    {"torch.Float8_e4m3fnStorage", DType::F8_E4M3},
    {"torch.Float8_e5m2Storage", DType::F8_E5M2},
    {"torch.Float8_e8m0fnuStorage", DType::F8_E8M0},
    {"torch.Float8_e4m3fnuzStorage", DType::F8_E4M3FNUZ},
    {"torch.Float8_e5m2fnuzStorage", DType::F8_E5M2FNUZ},
    {"torch.UntypedStorage", DType::U8},
    {"torch.Float4_e2m1fn_x2Storage", DType::U8},
    {"torch.storage.UntypedStorage", DType::U8},  // the module path torch 2.x pickles it under
}};

constexpr std::array<std::string_view, 4> kCallables{
    "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter", "collections.OrderedDict"};

// torch dtype objects, the explicit dtype argument of _rebuild_tensor_v3 (torch >= 2.x writes
// it with an UntypedStorage for dtypes such as the float8 family).
constexpr std::array<StorageType, 18> kDtypeGlobals{{
    {"torch.float64", DType::F64},
    {"torch.float32", DType::F32},
    {"torch.float16", DType::F16},
    {"torch.bfloat16", DType::BF16},
    {"torch.int64", DType::I64},
    {"torch.int32", DType::I32},
    {"torch.int16", DType::I16},
    {"torch.int8", DType::I8},
    {"torch.uint8", DType::U8},
    {"torch.uint16", DType::U16},
    {"torch.uint32", DType::U32},
    {"torch.uint64", DType::U64},
    {"torch.bool", DType::BOOL},
    {"torch.float8_e4m3fn", DType::F8_E4M3},
    {"torch.float8_e5m2", DType::F8_E5M2},
    {"torch.float8_e8m0fnu", DType::F8_E8M0},
    {"torch.float8_e4m3fnuz", DType::F8_E4M3FNUZ},
    {"torch.float8_e5m2fnuz", DType::F8_E5M2FNUZ},
}};

PyRef make(PyValue::Kind k) {
  auto v = std::make_shared<PyValue>();
  v->kind = k;
  return v;
}

PyRef make_int(std::int64_t i) {
  PyRef v = make(PyValue::Kind::Int);
  v->i = i;
  return v;
}

class Vm {
 public:
  Vm(Bytes pkl, std::string_view file, ReadBudget& budget)
      : r_(pkl, file, "torch data.pkl"), file_(file), budget_(budget) {}

  PickleGraph& graph() { return graph_; }

  PyRef run() {
    for (;;) {
      const std::size_t at = r_.pos();
      const std::uint8_t op = r_.u8();
      if (op == '.') break;
      if (!(scalar_op(op) || container_op(op) || memo_op(op) || object_op(op))) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        bad("pickle opcode " + std::string(hex) + " at byte " + std::to_string(at) +
            " is outside the torch tensors-only subset (refused)");
      }
      if (stack_.size() > kMaxStack)
        bad("pickle stack exceeds " + std::to_string(kMaxStack) + " entries");
    }
    if (stack_.size() != 1 || !marks_.empty()) bad("pickle stream ends with a malformed stack");
    return stack_.back();
  }

 private:
  [[noreturn]] void bad(const std::string& why) { fail(file_, why); }

  PyRef pop() {
    if (stack_.size() <= base()) bad("pickle stack underflow");
    PyRef v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PyRef& top() {
    if (stack_.size() <= base()) bad("pickle stack underflow");
    return stack_.back();
  }
  std::size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<PyRef> pop_mark() {
    if (marks_.empty()) bad("pickle MARK missing");
    std::vector<PyRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                             stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(PyRef v) {
    budget_.charge(kPickleNodeBytes + v->s.size(), "the unpickled objects");
    stack_.push_back(std::move(v));
  }
  void push_str(std::uint64_t n) {
    PyRef v = make(PyValue::Kind::Str);
    v->s = std::string(r_.str(n));
    push(std::move(v));
  }

  bool scalar_op(std::uint8_t op) {
    switch (op) {
      case 0x80:
        if (r_.u8() > 5) bad("pickle protocol above 5");
        return true;                       // PROTO
      case 0x95: r_.take(8); return true;  // FRAME
      case 'N': push(make(PyValue::Kind::None)); return true;
      case 0x88:
      case 0x89: {  // NEWTRUE / NEWFALSE
        PyRef v = make(PyValue::Kind::Bool);
        v->i = op == 0x88;
        push(std::move(v));
        return true;
      }
      case 'J': push(make_int(r_.le<std::int32_t>())); return true;   // BININT
      case 'K': push(make_int(r_.u8())); return true;                 // BININT1
      case 'M': push(make_int(r_.le<std::uint16_t>())); return true;  // BININT2
      case 0x8a: {                                                    // LONG1
        const std::uint8_t n = r_.u8();
        if (n > 8) bad("pickle LONG1 wider than 64 bits");
        const Bytes b = r_.take(n);
        std::uint64_t u = load_le(b, n);
        if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
        push(make_int(static_cast<std::int64_t>(u)));
        return true;
      }
      case 'G': {  // BINFLOAT, big-endian double
        const Bytes b = r_.take(8);
        std::uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | b[static_cast<std::size_t>(k)];
        PyRef v = make(PyValue::Kind::Float);
        v->f = std::bit_cast<double>(u);
        push(std::move(v));
        return true;
      }
      case 'X': push_str(r_.le<std::uint32_t>()); return true;   // BINUNICODE
      case 0x8c: push_str(r_.u8()); return true;                 // SHORT_BINUNICODE
      case 0x8d: push_str(r_.le<std::uint64_t>()); return true;  // BINUNICODE8
      case 'U':
      case 'C': push_str(r_.u8()); return true;  // SHORT_BINSTRING / SHORT_BINBYTES
      case 'T':
      case 'B': push_str(r_.le<std::uint32_t>()); return true;
      default: return false;
    }
  }

  bool container_op(std::uint8_t op) {
    switch (op) {
      case '(': marks_.push_back(stack_.size()); return true;  // MARK
      case ')': push(container(PyValue::Kind::Tuple)); return true;
      case ']': push(container(PyValue::Kind::List)); return true;
      case '}': push(container(PyValue::Kind::Dict)); return true;
      case 't':
      case 'l': {  // TUPLE / LIST
        PyRef v = container(op == 't' ? PyValue::Kind::Tuple : PyValue::Kind::List);
        v->items = pop_mark();
        push(std::move(v));
        return true;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        PyRef v = container(PyValue::Kind::Tuple);
        v->items.resize(op - 0x84u);
        for (std::size_t k = v->items.size(); k-- > 0;) v->items[k] = pop();
        push(std::move(v));
        return true;
      }
      case 'a': {
        PyRef x = pop();
        list_of(top()).items.push_back(std::move(x));
        return true;
      }
      case 'e': {
        std::vector<PyRef> xs = pop_mark();
        PyValue& l = list_of(top());
        l.items.insert(l.items.end(), xs.begin(), xs.end());
        return true;
      }
      case 's': {
        PyRef v = pop();
        PyRef k = pop();
        dict_of(top()).dict.emplace_back(k, v);
        return true;
      }
      case 'u': {
        std::vector<PyRef> xs = pop_mark();
        if (xs.size() % 2) bad("pickle SETITEMS with an odd item count");
        PyValue& d = dict_of(top());
        for (std::size_t k = 0; k < xs.size(); k += 2) d.dict.emplace_back(xs[k], xs[k + 1]);
        return true;
      }
      case '0': pop(); return true;        // POP
      case '1': pop_mark(); return true;   // POP_MARK
      case '2': push(top()); return true;  // DUP
      default: return false;
    }
  }

  PyValue& list_of(PyRef& v) {
    if (v->kind != PyValue::Kind::List) bad("pickle APPEND target is not a list");
    return *v;
  }
  PyValue& dict_of(PyRef& v) {
    if (v->kind != PyValue::Kind::Dict) bad("pickle SETITEM target is not a dict");
    return *v;
  }

  bool memo_op(std::uint8_t op) {
    switch (op) {
      case 'q': memo_put(r_.u8()); return true;
      case 'r': memo_put(r_.le<std::uint32_t>()); return true;
      case 0x94: memo_put(static_cast<std::uint32_t>(memo_.size())); return true;  // MEMOIZE
      case 'h':
      case 'j': {
        const std::uint32_t k = op == 'h' ? r_.u8() : r_.le<std::uint32_t>();
        const auto it = memo_.find(k);
        if (it == memo_.end())
          bad("pickle memo key " + std::to_string(k) + " read before it was written");
        push(it->second);
        return true;
      }
      default: return false;
    }
  }
  void memo_put(std::uint32_t k) {
    if (memo_.size() >= kMaxMemo)
      bad("pickle memo exceeds " + std::to_string(kMaxMemo) + " entries");
    memo_[k] = top();
  }

  bool object_op(std::uint8_t op) {
    switch (op) {
      case 'c': {  // GLOBAL "module\nname\n"
        const std::string module = line(), name = line();
        push(global(module, name));
        return true;
      }
      case 0x93: {  // STACK_GLOBAL
        PyRef name = pop(), module = pop();
        if (name->kind != PyValue::Kind::Str || module->kind != PyValue::Kind::Str)
          bad("pickle STACK_GLOBAL on non-strings");
        push(global(module->s, name->s));
        return true;
      }
      case 'Q': {
        PyRef pid = pop();
        push(persistent_load(*pid));
        return true;
      }  // BINPERSID
      case 'R': {
        PyRef args = pop();
        PyRef fn = pop();
        push(reduce(*fn, *args));
        return true;
      }
      case 'b': {  // BUILD: only OrderedDict instance state (state_dict()._metadata), dropped
        pop();
        if (top()->kind != PyValue::Kind::Dict)
          bad("pickle BUILD on a non-dict object is outside the tensors-only subset");
        return true;
      }
      default: return false;
    }
  }

  std::string line() {
    std::string s;
    for (;;) {
      const char c = static_cast<char>(r_.u8());
      if (c == '\n') return s;
      if (s.size() > 256) bad("pickle GLOBAL name too long");
      s += c;
    }
  }

  PyRef global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    bool ok = false;
    for (const StorageType& st : kStorageTypes) ok = ok || st.name == full;
    for (std::string_view c : kCallables) ok = ok || c == full;
    for (const StorageType& d : kDtypeGlobals) ok = ok || d.name == full;
    if (!ok)
      bad("pickle references global '" + full +
          "', outside the torch tensors-only subset (refused, not executed)");
    PyRef g = make(PyValue::Kind::Global);
    g->s = full;
    return g;
  }

  PyRef persistent_load(const PyValue& pid);
  PyRef reduce(const PyValue& fn, const PyValue& args);
  PyRef rebuild_tensor(const std::vector<PyRef>& a);
  PyRef rebuild_tensor_v3(const std::vector<PyRef>& a);
  std::vector<std::int64_t> int_tuple(const PyValue& v, const char* what);

  PyRef container(PyValue::Kind k) {
    PyRef v = make(k);
    graph_.containers.push_back(v);
    return v;
  }

  PickleGraph graph_;
  ByteReader r_;
  std::string_view file_;
  std::vector<PyRef> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, PyRef> memo_;
  ReadBudget& budget_;
};

PyRef Vm::persistent_load(const PyValue& pid) {
  const auto& t = pid.items;
  if (pid.kind != PyValue::Kind::Tuple || t.size() != 5 || t[0]->kind != PyValue::Kind::Str ||
      t[0]->s != "storage" || t[1]->kind != PyValue::Kind::Global ||
      t[2]->kind != PyValue::Kind::Str || t[4]->kind != PyValue::Kind::Int) {
    bad("pickle persistent id is not ('storage', StorageType, key, location, numel)");
  }
  PyRef s = make(PyValue::Kind::Storage);
  bool found = false;
  for (const StorageType& st : kStorageTypes) {
    if (st.name == t[1]->s)
      s->tensor.dtype = st.dtype,
      s->tensor.fp4_x2 = st.name.find("Float4") != std::string_view::npos, found = true;
  }
  if (!found) bad("pickle persistent id names '" + t[1]->s + "', which is not a storage type");
  if (t[4]->i < 0) bad("pickle storage '" + t[2]->s + "' has a negative size");
  s->tensor.storage_key = t[2]->s;
  s->tensor.storage_numel = static_cast<std::uint64_t>(t[4]->i);
  return s;
}

std::vector<std::int64_t> Vm::int_tuple(const PyValue& v, const char* what) {
  if (v.kind != PyValue::Kind::Tuple)
    bad(std::string("_rebuild_tensor_v2 ") + what + " is not a tuple");
  std::vector<std::int64_t> out;
  for (const PyRef& x : v.items) {
    if (x->kind != PyValue::Kind::Int || x->i < 0)
      bad(std::string("_rebuild_tensor_v2 ") + what + " has a non-integer or negative entry");
    out.push_back(x->i);
  }
  return out;
}

PyRef Vm::rebuild_tensor(const std::vector<PyRef>& a) {
  if (a.size() < 6 || a.size() > 7)
    bad("_rebuild_tensor_v2 called with " + std::to_string(a.size()) + " arguments");
  if (a[0]->kind != PyValue::Kind::Storage) bad("_rebuild_tensor_v2 argument 0 is not a storage");
  if (a[1]->kind != PyValue::Kind::Int || a[1]->i < 0)
    bad("_rebuild_tensor_v2 storage offset is not a non-negative integer");
  PyRef t = make(PyValue::Kind::Tensor);
  t->tensor = a[0]->tensor;
  t->tensor.offset = a[1]->i;
  t->tensor.size = int_tuple(*a[2], "size");
  t->tensor.stride = int_tuple(*a[3], "stride");
  if (t->tensor.size.size() != t->tensor.stride.size())
    bad("_rebuild_tensor_v2 size and stride differ in length");
  if (t->tensor.size.size() > 64) bad("_rebuild_tensor_v2 tensor has more than 64 dimensions");
  return t;
}

// _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype[, metadata]):
// the tensor's dtype is explicit; an UntypedStorage counts bytes, re-expressed in elements.
PyRef Vm::rebuild_tensor_v3(const std::vector<PyRef>& a) {
  if (a.size() < 7 || a.size() > 8)
    bad("_rebuild_tensor_v3 called with " + std::to_string(a.size()) + " arguments");
  if (a[6]->kind != PyValue::Kind::Global)
    bad("_rebuild_tensor_v3 dtype argument is not a torch dtype");
  const StorageType* dt = nullptr;
  for (const StorageType& d : kDtypeGlobals)
    if (d.name == a[6]->s) dt = &d;
  if (dt == nullptr)
    bad("_rebuild_tensor_v3 dtype '" + a[6]->s + "' is not a supported torch dtype");
  PyRef t = rebuild_tensor(std::vector<PyRef>(a.begin(), a.begin() + 6));
  const std::uint64_t width = static_cast<std::uint64_t>(dtype_bits(dt->dtype)) / 8;
  if (t->tensor.dtype == DType::U8 && !t->tensor.fp4_x2) {
    t->tensor.storage_numel /= width;  // UntypedStorage: bytes -> elements (remainder unused)
  } else if (t->tensor.dtype != dt->dtype) {
    bad("_rebuild_tensor_v3 dtype '" + a[6]->s + "' differs from its typed storage");
  }
  t->tensor.dtype = dt->dtype;
  return t;
}

PyRef Vm::reduce(const PyValue& fn, const PyValue& args) {
  if (fn.kind != PyValue::Kind::Global) bad("pickle REDUCE on a non-global callable (refused)");
  if (args.kind != PyValue::Kind::Tuple) bad("pickle REDUCE arguments are not a tuple");
  if (fn.s == "collections.OrderedDict") {
    if (!args.items.empty()) bad("OrderedDict called with arguments");
    return container(PyValue::Kind::Dict);
  }
  if (fn.s == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(args.items);
  if (fn.s == "torch._utils._rebuild_tensor_v3") return rebuild_tensor_v3(args.items);
  if (fn.s == "torch._utils._rebuild_parameter") {
    if (args.items.size() != 3 || args.items[0]->kind != PyValue::Kind::Tensor)
      bad("_rebuild_parameter arguments malformed");
    return args.items[0];
  }
  bad("pickle calls '" + fn.s +
      "', which is not a tensor-rebuild function (refused, not executed)");
}

}  // namespace

PickleGraph::~PickleGraph() {
  for (const PyRef& c : containers) {
    c->items.clear();
    c->dict.clear();
  }
}

PickleGraph unpickle_torch(Bytes pkl, std::string_view file) {
  ReadBudget budget(read_limit({}, pkl.size(), file), std::string(file));
  return unpickle_torch(pkl, file, budget);
}

PickleGraph unpickle_torch(Bytes pkl, std::string_view file, ReadBudget& budget) {
  Vm vm(pkl, file, budget);
  PyRef root = vm.run();
  PickleGraph g = std::move(vm.graph());
  g.root = std::move(root);
  return g;
}

}  // namespace fp8ref::tensor_io
