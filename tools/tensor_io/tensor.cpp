// Tensor value type: dtype names, sizes, checked shape arithmetic, reinterpretation (--as).
// Implements tensor.h; the dtype spellings follow the safetensors format specification.
#include "tensor.h"

#include <array>
#include <cctype>
#include <cstdlib>

namespace fp8ref::tensor_io {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
  bool is_float;
};

constexpr std::array<DTypeInfo, kDTypeCount> kInfo{{
    {DType::F64, "F64", 64, true},
    {DType::F32, "F32", 32, true},
    {DType::F16, "F16", 16, true},
    {DType::BF16, "BF16", 16, true},
    {DType::I64, "I64", 64, false},
    {DType::I32, "I32", 32, false},
    {DType::I16, "I16", 16, false},
    {DType::I8, "I8", 8, false},
    {DType::U8, "U8", 8, false},
    {DType::U16, "U16", 16, false},
    {DType::U32, "U32", 32, false},
    {DType::U64, "U64", 64, false},
    {DType::BOOL, "BOOL", 8, false},
    {DType::F8_E4M3, "F8_E4M3", 8, true},
    {DType::F8_E5M2, "F8_E5M2", 8, true},
    {DType::F8_E8M0, "F8_E8M0", 8, true},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, true},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, true},
    {DType::F4, "F4", 4, true},
    {DType::F6_E2M3, "F6_E2M3", 6, true},
    {DType::F6_E3M2, "F6_E3M2", 6, true},
}};

struct Alias {
  std::string_view alias;
  DType type;
};

constexpr std::array<Alias, 34> kAliases{{
    {"e4m3", DType::F8_E4M3},
    {"e4m3fn", DType::F8_E4M3},
    {"float8_e4m3fn", DType::F8_E4M3},
    {"e5m2", DType::F8_E5M2},
    {"float8_e5m2", DType::F8_E5M2},
    {"e8m0", DType::F8_E8M0},
    {"e8m0fnu", DType::F8_E8M0},
    {"float8_e8m0fnu", DType::F8_E8M0},
    {"e4m3fnuz", DType::F8_E4M3FNUZ},
    {"float8_e4m3fnuz", DType::F8_E4M3FNUZ},
    {"e5m2fnuz", DType::F8_E5M2FNUZ},
    {"float8_e5m2fnuz", DType::F8_E5M2FNUZ},
    {"e2m1", DType::F4},
    {"fp4", DType::F4},
    {"float4_e2m1fn", DType::F4},
    {"e2m3", DType::F6_E2M3},
    {"float6_e2m3fn", DType::F6_E2M3},
    {"e3m2", DType::F6_E3M2},
    {"float6_e3m2fn", DType::F6_E3M2},
    {"bf16", DType::BF16},
    {"bfloat16", DType::BF16},
    {"f16", DType::F16},
    {"float16", DType::F16},
    {"half", DType::F16},
    {"f32", DType::F32},
    {"float32", DType::F32},
    {"float", DType::F32},
    {"f64", DType::F64},
    {"float64", DType::F64},
    {"double", DType::F64},
    {"uint8", DType::U8},
    {"int8", DType::I8},
    {"int32", DType::I32},
    {"int64", DType::I64},
}};

const DTypeInfo& info(DType t) { return kInfo.at(static_cast<std::size_t>(t)); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Error::Error(const std::string& what)
    : std::runtime_error([&] {
        std::string s = what;
        for (char& c : s) {
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
        }
        return s;
      }()) {}

void fail(std::string_view file, std::string_view reason) {
  throw Error(std::string(file) + ": " + std::string(reason));
}

void ReadBudget::charge(std::uint64_t n, std::string_view what) {
  if (n <= limit_ - used_) {
    used_ += n;
    return;
  }
  fail(file_, "reading it needs more than its read limit of " + std::to_string(limit_) +
                  " bytes, at " + std::string(what) + " (default " +
                  std::to_string(kReadExpansion) +
                  " x the file size + 256 MiB; FP8REF_MAX_READ_BYTES=N sets it, docs/security.md)");
}

std::uint64_t read_limit(const ReadOptions& opts, std::uint64_t file_size, std::string_view file) {
  if (opts.max_read_bytes != 0) return opts.max_read_bytes;
  const char* env = std::getenv("FP8REF_MAX_READ_BYTES");
  if (env != nullptr && *env != '\0') {
    const std::string v = env;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.find_first_not_of("0123456789") != std::string::npos || end != v.c_str() + v.size() ||
        v.size() > 19 || n == 0)
      fail(file, "FP8REF_MAX_READ_BYTES='" + v + "' is not a positive whole number of bytes");
    return n;
  }
  const std::uint64_t relative = file_size > (UINT64_MAX - kReadSlackBytes) / kReadExpansion
                                     ? UINT64_MAX
                                     : file_size * kReadExpansion + kReadSlackBytes;
  return relative;
}

BudgetScope::BudgetScope(const ReadOptions& opts, std::uint64_t file_size, std::string_view file)
    : own_(opts.budget != nullptr ? 0 : read_limit(opts, file_size, file), std::string(file)),
      opts_(opts) {
  if (opts_.budget == nullptr) opts_.budget = &own_;
}

std::string_view dtype_name(DType t) { return info(t).name; }
int dtype_bits(DType t) { return info(t).bits; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> dtype_from_name(std::string_view name) {
  const std::string l = lower(name);
  for (const DTypeInfo& i : kInfo) {
    if (lower(i.name) == l) return i.type;
  }
  for (const Alias& a : kAliases) {
    if (a.alias == l) return a.type;
  }
  return std::nullopt;
}

// 2^60 elements: the byte count of any dtype (at most 8 bytes an element) then stays below 2^63,
// so no size computed from a file's shape can wrap modulo 2^64 (docs/security.md).
std::uint64_t checked_numel(const std::vector<std::int64_t>& shape, std::string_view file) {
  constexpr std::uint64_t kLimit = kMaxElements;
  std::uint64_t n = 1;
  bool zero = false;
  for (std::int64_t d : shape) {
    if (d < 0) fail(file, "negative extent in shape " + shape_string(shape));
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (std::int64_t d : shape) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u > kLimit / n) fail(file, "shape " + shape_string(shape) + " has more than 2^60 elements");
    n *= u;
  }
  return n;
}

std::uint64_t bytes_for(DType t, std::uint64_t n) {
  const auto bits = static_cast<std::uint64_t>(dtype_bits(t));
  return bits < 8 ? (n * bits + 7) / 8 : n * (bits / 8);  // n <= 2^60: no overflow
}

std::uint64_t checked_byte_size(DType t, const std::vector<std::int64_t>& shape,
                                std::string_view file) {
  return bytes_for(t, checked_numel(shape, file));
}

std::uint64_t Tensor::numel() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::uint64_t Tensor::byte_size() const { return bytes_for(dtype, numel()); }

const Tensor* TensorFile::find(std::string_view name) const {
  for (const NamedTensor& t : tensors) {
    if (t.name == name) return &t.tensor;
  }
  return nullptr;
}

Tensor reinterpret_as(std::vector<std::uint8_t> bytes, std::vector<std::int64_t> shape,
                      int src_bits, DType to, std::string_view file) {
  const int dst_bits = dtype_bits(to);
  if (src_bits != dst_bits) {
    const std::string why = "cannot reinterpret " + std::to_string(src_bits) +
                            "-bit elements of shape " + shape_string(shape) + " as " +
                            std::string(dtype_name(to));
    if (shape.empty()) fail(file, why + " (0-d tensor)");
    std::uint64_t last_bits = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(shape.back()),
                               static_cast<std::uint64_t>(src_bits), &last_bits))
      fail(file, why + " (last dimension too large)");
    if (last_bits % static_cast<std::uint64_t>(dst_bits) != 0)
      fail(file, why + " (last dimension does not divide)");
    shape.back() = static_cast<std::int64_t>(last_bits / static_cast<std::uint64_t>(dst_bits));
  }
  Tensor t{to, std::move(shape), std::move(bytes)};
  if (bytes_for(to, checked_numel(t.shape, file)) != t.data.size()) {
    fail(file,
         "reinterpreting as " + std::string(dtype_name(to)) + " does not preserve the byte count");
  }
  return t;
}

Tensor pack_unpacked_subbyte(const std::vector<std::uint8_t>& bytes,
                             std::vector<std::int64_t> shape, DType to, std::string_view file) {
  const int bits = dtype_bits(to);
  if (bits != 4 && bits != 6) fail(file, "only F4 and F6 codes are packed");
  if (to == DType::F4) return pack_unpacked_f4(bytes, std::move(shape), file);
  const std::uint64_t n = checked_numel(shape, file);
  if (n != bytes.size()) fail(file, "float6 dump: element count differs from byte count");
  Tensor t{to, std::move(shape), std::vector<std::uint8_t>(bytes_for(to, n), 0)};
  for (std::uint64_t i = 0; i < n; ++i) {
    if (bytes[i] > 0x3f) fail(file, "float6 dump: element " + std::to_string(i) + " uses bits 7:6");
    const std::uint64_t at = 6 * i;  // LSB-first bit stream (tensor.h)
    t.data[at / 8] |= static_cast<std::uint8_t>(bytes[i] << (at % 8));
    if (at % 8 > 2) t.data[at / 8 + 1] |= static_cast<std::uint8_t>(bytes[i] >> (8 - at % 8));
  }
  return t;
}

Tensor pack_unpacked_f4(const std::vector<std::uint8_t>& bytes, std::vector<std::int64_t> shape,
                        std::string_view file) {
  const std::uint64_t n = checked_numel(shape, file);
  if (n != bytes.size()) fail(file, "float4 dump: element count differs from byte count");
  Tensor t{DType::F4, std::move(shape), std::vector<std::uint8_t>((n + 1) / 2, 0)};
  for (std::uint64_t i = 0; i < n; ++i) {
    if (bytes[i] > 0x0f)
      fail(file, "float4 dump: element " + std::to_string(i) + " uses the high nibble");
    t.data[i / 2] |= static_cast<std::uint8_t>(bytes[i] << (4 * (i % 2)));
  }
  return t;
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// at most U+10FFFF), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else
    return 0;
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  }
  return n;
}

void append_hex(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

}  // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_length(s, i);
    const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0;
    if (n == 0 || c < 0x20 || c == 0x7f) {
      append_hex(out, c), ++i;
    } else if (c1) {
      append_hex(out, c), append_hex(out, static_cast<unsigned char>(s[i + 1])), i += 2;
    } else if (c == '\\') {
      out += "\\\\", ++i;
    } else {
      out.append(s.substr(i, n)), i += n;
    }
  }
  return out;
}

std::string json_text(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) return escape_text(s);
    i += n;
  }
  return std::string(s);
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace fp8ref::tensor_io
