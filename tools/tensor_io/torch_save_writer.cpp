// torch.save writer (torch_save_writer.h): a protocol-2 pickle built opcode by opcode
// (Lib/pickletools.py names them) and a stored zip (zip_archive.h).
#include "torch_save_writer.h"

#include <array>
#include <string>

#include "zip_archive.h"

namespace fp8ref::tensor_io {
namespace {

struct TorchDtype {
  DType type;
  std::string_view name;  // the torch module attribute
};
constexpr std::array<TorchDtype, 19> kTorchDtypes{{
    {DType::F64, "float64"},
    {DType::F32, "float32"},
    {DType::F16, "float16"},
    {DType::BF16, "bfloat16"},
    {DType::I64, "int64"},
    {DType::I32, "int32"},
    {DType::I16, "int16"},
    {DType::I8, "int8"},
    {DType::U8, "uint8"},
    {DType::U16, "uint16"},
    {DType::U32, "uint32"},
    {DType::U64, "uint64"},
    {DType::BOOL, "bool"},
    {DType::F8_E4M3, "float8_e4m3fn"},
    {DType::F8_E5M2, "float8_e5m2"},
    {DType::F8_E8M0, "float8_e8m0fnu"},
    {DType::F8_E4M3FNUZ, "float8_e4m3fnuz"},
    {DType::F8_E5M2FNUZ, "float8_e5m2fnuz"},
    {DType::F4, "float4_e2m1fn_x2"},
}};

class Pickler {
 public:
  void op(char c) { out_.push_back(std::uint8_t(c)); }
  void global(std::string_view module, std::string_view name) {
    op('c');
    text(module), op('\n'), text(name), op('\n');
  }
  void str(std::string_view s) {  // BINUNICODE
    op('X');
    le(s.size(), 4);
    text(s);
  }
  void integer(std::uint64_t v) {
    if (v < 0x100) {
      op('K'), le(v, 1);  // BININT1
    } else if (v < 0x10000) {
      op('M'), le(v, 2);  // BININT2
    } else if (v < 0x80000000u) {
      op('J'), le(v, 4);  // BININT (signed)
    } else {
      op('\x8a'), le(9, 1), le(v, 8), le(0, 1);  // LONG1: 9 bytes, non-negative two's complement
    }
  }
  void int_tuple(const std::vector<std::uint64_t>& v) {
    op('(');
    for (const std::uint64_t x : v) integer(x);
    op('t');
  }
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  void text(std::string_view s) { out_.insert(out_.end(), s.begin(), s.end()); }
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(std::uint8_t(v >> (8 * i)));
  }
  std::vector<std::uint8_t> out_;
};

std::string_view torch_dtype(DType t, std::string_view file) {
  for (const TorchDtype& d : kTorchDtypes)
    if (d.type == t) return d.name;
  fail(file, "dtype " + std::string(dtype_name(t)) + " has no torch dtype");
}

// torch's size and C-order stride of a tensor (F4: float4_e2m1fn_x2, the last dimension halved).
void torch_geometry(const NamedTensor& nt, std::string_view file, std::vector<std::uint64_t>& size,
                    std::vector<std::uint64_t>& stride) {
  for (const std::int64_t d : nt.tensor.shape) size.push_back(std::uint64_t(d));
  if (nt.tensor.dtype == DType::F4) {
    if (size.empty() || size.back() % 2 != 0)
      fail(file, "tensor '" + nt.name +
                     "': float4_e2m1fn_x2 packs pairs along the last dimension, which must be "
                     "even");
    size.back() /= 2;
  }
  stride.assign(size.size(), 1);
  for (std::size_t i = size.size(); i-- > 1;) stride[i - 1] = stride[i] * size[i];
}

// name -> _rebuild_tensor_v3(('storage', UntypedStorage, key, 'cpu', nbytes), 0, size, stride,
// False, OrderedDict(), dtype), as torch 2.x pickles a tensor.
void pickle_tensor(Pickler& p, const NamedTensor& nt, std::size_t key, std::string_view file) {
  std::vector<std::uint64_t> size, stride;
  torch_geometry(nt, file, size, stride);
  p.str(nt.name);
  p.global("torch._utils", "_rebuild_tensor_v3");
  p.op('(');
  p.op('(');
  p.str("storage");
  p.global("torch.storage", "UntypedStorage");
  p.str(std::to_string(key));
  p.str("cpu");
  p.integer(nt.tensor.data.size());
  p.op('t');
  p.op('Q');  // BINPERSID
  p.integer(0);
  p.int_tuple(size);
  p.int_tuple(stride);
  p.op('\x89');  // NEWFALSE: requires_grad
  p.global("collections", "OrderedDict");
  p.op(')');
  p.op('R');
  p.global("torch", torch_dtype(nt.tensor.dtype, file));
  p.op('t');
  p.op('R');
}

}  // namespace

std::vector<std::uint8_t> serialize_torch_save(const TensorFile& tf, std::string_view file) {
  Pickler p;
  p.op('\x80'), p.op('\x02');  // PROTO 2
  p.op('}');                   // EMPTY_DICT
  p.op('(');
  for (std::size_t i = 0; i < tf.tensors.size(); ++i) pickle_tensor(p, tf.tensors[i], i, file);
  p.op('u');  // SETITEMS
  p.op('.');  // STOP
  std::vector<ZipMember> members;
  members.push_back({"archive/data.pkl", p.take()});
  members.push_back({"archive/byteorder", {'l', 'i', 't', 't', 'l', 'e'}});
  for (std::size_t i = 0; i < tf.tensors.size(); ++i)
    members.push_back({"archive/data/" + std::to_string(i), tf.tensors[i].tensor.data});
  members.push_back({"archive/version", {'3', '\n'}});
  return serialize_zip_stored(members, file);
}

}  // namespace fp8ref::tensor_io
