// safetensors parse/serialize (safetensors.h). JSON via nlohmann-json; every offset and size is
// checked before any byte is copied.
#include "safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "mapped_file.h"

namespace fp8ref::tensor_io {
namespace {

using nlohmann::json;

struct Entry {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

std::uint64_t json_u64(const json& v, std::string_view file, const std::string& what) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer()) fail(file, what + " is negative");
    fail(file, what + " is not a non-negative integer");
  }
  return v.get<std::uint64_t>();
}

std::optional<DType> safetensors_dtype(const std::string& s) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto t = static_cast<DType>(i);
    if (dtype_name(t) == s) return t;
  }
  return std::nullopt;
}

Entry parse_entry(const std::string& name, const json& v, std::string_view file) {
  const std::string where = "tensor '" + name + "'";
  if (!v.is_object()) fail(file, where + ": header entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(key)) fail(file, where + ": header entry lacks '" + key + "'");
  }
  const json& dt = v["dtype"];
  if (!dt.is_string()) fail(file, where + ": dtype is not a string");
  const auto dtype = safetensors_dtype(dt.get<std::string>());
  if (!dtype) fail(file, where + ": unknown dtype '" + dt.get<std::string>() + "'");
  Entry e{name, *dtype, {}, 0, 0};
  const json& sh = v["shape"];
  if (!sh.is_array()) fail(file, where + ": shape is not an array");
  for (const json& d : sh) {
    const std::uint64_t u = json_u64(d, file, where + ": shape extent");
    if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(file, where + ": shape extent too large");
    e.shape.push_back(static_cast<std::int64_t>(u));
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2) fail(file, where + ": data_offsets is not [begin, end]");
  e.begin = json_u64(off[0], file, where + ": data_offsets[0]");
  e.end = json_u64(off[1], file, where + ": data_offsets[1]");
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, std::string_view file) {
  if (!v.is_object()) fail(file, "__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_string())
      fail(file, "__metadata__ value for '" + it.key() + "' is not a string");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

void validate_entries(std::vector<Entry>& entries, std::uint64_t data_size, std::string_view file,
                      const ReadOptions& opts) {
  for (const Entry& e : entries) {
    const std::string where = "tensor '" + e.name + "'";
    if (e.begin > e.end) fail(file, where + ": data_offsets begin > end");
    if (e.end > data_size) {
      fail(file, where + ": data_offsets end " + std::to_string(e.end) + " beyond the " +
                     std::to_string(data_size) + "-byte buffer");
    }
    const std::uint64_t need = checked_byte_size(e.dtype, e.shape, file);
    if (need != e.end - e.begin) {
      fail(file, where + ": shape " + shape_string(e.shape) + " x " +
                     std::string(dtype_name(e.dtype)) + " needs " + std::to_string(need) +
                     " bytes, offsets span " + std::to_string(e.end - e.begin));
    }
    if (need > opts.max_bytes) fail(file, where + ": larger than the configured limit");
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const Entry& p = entries[i - 1];
    if (entries[i].begin < p.end) {
      fail(file,
           "tensors '" + p.name + "' and '" + entries[i].name + "' overlap in the byte buffer");
    }
  }
}

}  // namespace

TensorFile parse_safetensors(Bytes bytes, std::string_view file, const ReadOptions& opts_in) {
  const BudgetScope scope(opts_in, bytes.size(), file);
  const ReadOptions& opts = scope.options();
  ByteReader r(bytes, file, "safetensors file");
  if (bytes.size() < 8) fail(file, "safetensors file shorter than its 8-byte header length");
  const auto n = r.le<std::uint64_t>();
  if (n > kSafetensorsMaxHeader)
    fail(file, "safetensors header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > r.remaining()) {
    fail(file, "safetensors header length " + std::to_string(n) + " exceeds the file size " +
                   std::to_string(bytes.size()));
  }
  const std::string_view text = r.str(n);
  json header;
  try {
    header = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(file, std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(file, "safetensors header is not a JSON object");
  TensorFile tf;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      tf.metadata = parse_metadata(it.value(), file);
    } else {
      entries.push_back(parse_entry(it.key(), it.value(), file));
    }
  }
  const Bytes data = bytes.subspan(r.pos());
  validate_entries(entries, data.size(), file, opts);
  for (Entry& e : entries) {
    const Bytes span =
        data.subspan(static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.end - e.begin));
    const std::optional<DType> as = opts.as_for(e.name);
    if (opts.map && opts.mapping && !as) {  // a view of the mapping: no copy
      Tensor t{e.dtype, std::move(e.shape), {}, span, opts.mapping};
      tf.tensors.push_back({e.name, std::move(t)});
      continue;
    }
    opts.budget->charge(span.size(), "tensor '" + e.name + "'");
    std::vector<std::uint8_t> raw(span.begin(), span.end());
    Tensor t =
        as ? reinterpret_as(std::move(raw), std::move(e.shape), dtype_bits(e.dtype), *as, file)
           : Tensor{e.dtype, std::move(e.shape), std::move(raw)};
    tf.tensors.push_back({e.name, std::move(t)});
  }
  return tf;
}

std::vector<std::uint8_t> serialize_safetensors(const TensorFile& tf, std::string_view file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!tf.metadata.empty()) header["__metadata__"] = tf.metadata;
  std::uint64_t offset = 0;
  for (const NamedTensor& nt : tf.tensors) {
    if (nt.name == "__metadata__" || header.contains(nt.name))
      fail(file, "duplicate or reserved tensor name '" + nt.name + "'");
    const std::uint64_t size = bytes_for(nt.tensor.dtype, checked_numel(nt.tensor.shape, file));
    if (size != nt.tensor.bytes().size())
      fail(file, "tensor '" + nt.name + "': byte count does not match shape x dtype");
    header[nt.name] = {{"dtype", dtype_name(nt.tensor.dtype)},
                       {"shape", nt.tensor.shape},
                       {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::uint8_t> out(8);
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(text.size() >> (8 * i));
  out.insert(out.end(), text.begin(), text.end());
  for (const NamedTensor& nt : tf.tensors) {
    const std::span<const std::uint8_t> b = nt.tensor.bytes();
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

TensorFile read_safetensors(const std::string& path, const ReadOptions& opts) {
  const MappedFile f(path);
  return parse_safetensors(f.bytes(), path, opts);
}

void write_safetensors(const std::string& path, const TensorFile& tf) {
  write_file_atomic(path, serialize_safetensors(tf, path));
}

}  // namespace fp8ref::tensor_io
