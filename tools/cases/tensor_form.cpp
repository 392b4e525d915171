// The safetensors form of a case (tensor_form.h): tensor helpers, metadata and group sizes.
#include "cases/tensor_form.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cases/enum_tokens.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cases {

namespace {
template <class T>
tensor_io::Tensor make_tensor(tensor_io::DType dt, const std::vector<T>& v,
                              std::vector<std::int64_t> shape) {
  tensor_io::Tensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.data.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}
template <class T>
std::vector<T> get_vec(const TensorFile& tf, const std::string& name, tensor_io::DType dt) {
  const tensor_io::Tensor* t = tf.find(name);
  if (!t) throw std::invalid_argument("case file: no tensor '" + name + "'");
  if (t->dtype != dt)
    throw std::invalid_argument("case file: tensor '" + name + "' is " +
                                std::string(tensor_io::dtype_name(t->dtype)) + ", expected " +
                                std::string(tensor_io::dtype_name(dt)));
  std::vector<T> v(t->data.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t->data.data(), v.size() * sizeof(T));
  return v;
}
}  // namespace

tensor_io::Tensor u8_tensor(const std::vector<std::uint8_t>& v, std::vector<std::int64_t> shape) {
  return make_tensor(tensor_io::DType::U8, v, std::move(shape));
}
tensor_io::Tensor f32_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  return make_tensor(tensor_io::DType::F32, v, std::move(shape));
}
tensor_io::Tensor i64_tensor(const std::vector<std::int64_t>& v) {
  return make_tensor(tensor_io::DType::I64, v, {std::int64_t(v.size())});
}
tensor_io::Tensor i32_tensor(const std::vector<std::int32_t>& v) {
  return make_tensor(tensor_io::DType::I32, v, {std::int64_t(v.size())});
}
tensor_io::Tensor u32_tensor(const std::vector<std::uint32_t>& v, std::vector<std::int64_t> shape) {
  return make_tensor(tensor_io::DType::U32, v, std::move(shape));
}
std::vector<std::uint8_t> get_u8(const TensorFile& tf, const std::string& n) {
  return get_vec<std::uint8_t>(tf, n, tensor_io::DType::U8);
}
std::vector<float> get_f32(const TensorFile& tf, const std::string& n) {
  return get_vec<float>(tf, n, tensor_io::DType::F32);
}
std::vector<std::int64_t> get_i64(const TensorFile& tf, const std::string& n) {
  return get_vec<std::int64_t>(tf, n, tensor_io::DType::I64);
}
std::vector<std::int32_t> get_i32(const TensorFile& tf, const std::string& n) {
  return get_vec<std::int32_t>(tf, n, tensor_io::DType::I32);
}
std::vector<std::uint32_t> get_u32(const TensorFile& tf, const std::string& n) {
  return get_vec<std::uint32_t>(tf, n, tensor_io::DType::U32);
}
std::string meta_key(std::string_view name) { return std::string(kMetaPrefix) + std::string(name); }
void put_meta(TensorFile& tf, std::string_view name, std::string value) {
  tf.metadata[meta_key(name)] = std::move(value);
}

bool has_meta(const TensorFile& tf, std::string_view name) {
  return find_meta(tf, name) != nullptr;
}
const std::string& get_meta(const TensorFile& tf, const std::string& key) {
  if (const std::string* v = find_meta(tf, key)) return *v;
  throw std::invalid_argument("case file: no metadata '" + meta_key(key) + "'");
}
std::int64_t get_meta_int(const TensorFile& tf, const std::string& key) {
  const std::string& v = get_meta(tf, key);
  try {
    std::size_t pos = 0;
    const long long x = std::stoll(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("");
    return x;
  } catch (const std::exception&) {
    throw std::invalid_argument("case file: metadata '" + key + "' is not an integer: '" + v + "'");
  }
}

void save_group_sizes(const GroupSizes& gs, TensorFile& tf) {
  tf.tensors.push_back({"group_sizes", i64_tensor(gs.sizes)});
  put_meta(tf, "dist", to_string(gs.dist));
  put_meta(tf, "align", std::to_string(gs.align));
  put_meta(tf, "tail", std::to_string(gs.tail));
}

GroupSizes load_group_sizes(const TensorFile& tf) {
  GroupSizes gs;
  const auto dist = from_token(kSizeDists, get_meta(tf, "dist"));
  if (!dist) throw std::invalid_argument("case file: unknown dist '" + get_meta(tf, "dist") + "'");
  gs.dist = *dist;
  gs.align = has_meta(tf, "align") ? get_meta_int(tf, "align") : 1;
  gs.tail = has_meta(tf, "tail") ? get_meta_int(tf, "tail") : 0;
  gs.sizes = get_i64(tf, "group_sizes");
  for (auto s : gs.sizes)
    if (s < 0) throw std::invalid_argument("case file: negative group size");
  if (gs.align < 1 || gs.tail < 0) throw std::invalid_argument("case file: bad group sizes");
  return gs;
}

}  // namespace fp8ref::cases
