// .npy / .npz parse and serialize (npy.h). The header is a Python dict literal; a small
// tokenizer accepts exactly the literal forms numpy writes (strings, True/False, int tuples).
#include "npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "zip_archive.h"

namespace fp8ref::tensor_io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<std::int64_t> shape;
};

// Recursive-descent reader for the header dict: {'descr': '<f4', 'fortran_order': False, 'shape':
// (2, 3), }
class DictLiteral {
 public:
  DictLiteral(std::string_view s, std::string_view file) : s_(s), file_(file) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek_is('}')) {
      const std::string key = string_lit();
      expect(':');
      if (key == "descr") {
        if (peek_is('[')) fail(file_, "npy structured dtypes are not supported");
        h.descr = string_lit(), seen[0] = true;
      } else if (key == "fortran_order") {
        h.fortran = bool_lit(), seen[1] = true;
      } else if (key == "shape") {
        h.shape = int_tuple(), seen[2] = true;
      } else {
        fail(file_, "npy header has unknown key '" + key + "'");
      }
      if (!peek_is('}')) expect(',');
    }
    expect('}');
    if (!seen[0] || !seen[1] || !seen[2])
      fail(file_, "npy header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool peek_is(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek_is(c)) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  [[noreturn]] void bad(const std::string& why) {
    fail(file_, "npy header is malformed at offset " + std::to_string(i_) + ": " + why);
  }
  std::string string_lit() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a string");
    const char q = s_[i_++];
    const std::size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  bool bool_lit() {
    skip_ws();
    if (s_.substr(i_, 4) == "True") return i_ += 4, true;
    if (s_.substr(i_, 5) == "False") return i_ += 5, false;
    bad("expected True or False");
  }
  std::int64_t int_lit() {
    skip_ws();
    std::int64_t v = 0;
    const std::size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      if (v > (INT64_MAX - 9) / 10) bad("shape extent too large");
      v = v * 10 + (s_[i_++] - '0');
    }
    if (i_ == start) bad("expected a non-negative integer");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
    return v;
  }
  std::vector<std::int64_t> int_tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (!peek_is(')')) {
      out.push_back(int_lit());
      if (out.size() > 64) bad("more than 64 dimensions");
      if (!peek_is(')')) expect(',');
    }
    expect(')');
    return out;
  }

  std::string_view s_;
  std::string_view file_;
  std::size_t i_ = 0;
};

struct Descr {
  std::optional<DType> dtype;  // nullopt: opaque (ml_dtypes void/f1 types)
  int itemsize = 1;
  bool big_endian = false;
};

Descr parse_descr(const std::string& d, std::string_view file) {
  const std::string bad = "npy descr '" + d + "' is not supported";
  if (d.size() < 2) fail(file, bad);
  std::size_t i = 0;
  Descr out;
  if (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=') out.big_endian = d[i++] == '>';
  const char kind = d[i++];
  const std::string digits = d.substr(i);
  if (digits.empty() || digits.size() > 3 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    fail(file, bad);
  out.itemsize = std::stoi(digits);
  const int n = out.itemsize;
  if (kind == 'f' && (n == 8 || n == 4 || n == 2))
    out.dtype = n == 8 ? DType::F64 : n == 4 ? DType::F32 : DType::F16;
  else if (kind == 'i' && (n == 1 || n == 2 || n == 4 || n == 8))
    out.dtype = n == 1 ? DType::I8 : n == 2 ? DType::I16 : n == 4 ? DType::I32 : DType::I64;
  else if (kind == 'u' && (n == 1 || n == 2 || n == 4 || n == 8))
    out.dtype = n == 1 ? DType::U8 : n == 2 ? DType::U16 : n == 4 ? DType::U32 : DType::U64;
  else if ((kind == 'b' || kind == '?') && n == 1)
    out.dtype = DType::BOOL;
  else if (kind == 'f' && n == 1)  // ml_dtypes spells float8_e5m2 (only it) '<f1'
    out.dtype = DType::F8_E5M2;
  else if (!(kind == 'V' && n >= 1 && n <= 8))
    fail(file, bad);
  return out;
}

// Column-major (Fortran) element order to row-major, `w` bytes per element.
std::vector<std::uint8_t> fortran_to_c(const std::vector<std::uint8_t>& src,
                                       const std::vector<std::int64_t>& shape, std::size_t w) {
  const std::size_t nd = shape.size();
  std::vector<std::uint64_t> fstride(nd, 1);
  for (std::size_t k = 1; k < nd; ++k)
    fstride[k] = fstride[k - 1] * static_cast<std::uint64_t>(shape[k - 1]);
  std::vector<std::uint8_t> dst(src.size());
  std::vector<std::int64_t> idx(nd, 0);
  const std::size_t n = w ? src.size() / w : 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t f = 0;
    for (std::size_t k = 0; k < nd; ++k) f += static_cast<std::uint64_t>(idx[k]) * fstride[k];
    std::memcpy(dst.data() + i * w, src.data() + f * w, w);
    for (std::size_t k = nd; k-- > 0;) {  // row-major odometer
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return dst;
}

std::string descr_for(DType t) {
  switch (t) {
    case DType::F64: return "<f8";
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<V2";
    case DType::I64: return "<i8";
    case DType::I32: return "<i4";
    case DType::I16: return "<i2";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::U16: return "<u2";
    case DType::U32: return "<u4";
    case DType::U64: return "<u8";
    case DType::BOOL: return "|b1";
    default: return "|V1";  // fp8 and fp4 (unpacked), as ml_dtypes writes them
  }
}

Header read_header(ByteReader& r, std::string_view file) {
  if (r.remaining() < 10 || r.str(6) != kMagic) fail(file, "not an npy file (bad magic)");
  const std::uint8_t major = r.u8();
  r.u8();  // minor
  if (major < 1 || major > 3)
    fail(file, "npy format version " + std::to_string(major) + " is not supported");
  const std::uint64_t len = major == 1 ? r.le<std::uint16_t>() : r.le<std::uint32_t>();
  if (len > r.remaining())
    fail(file, "npy header length " + std::to_string(len) + " exceeds the file size");
  if (len > 1'000'000)
    fail(file, "npy header length " + std::to_string(len) + " exceeds the 1 MB limit");
  return DictLiteral(r.str(len), file).parse();
}

// Which ml_dtypes types numpy stores under an opaque void descr of this width, and the --as
// spellings that read them.
std::string opaque_message(const std::string& descr, int itemsize) {
  const std::string head = "npy descr '" + descr + "' is opaque: ";
  if (itemsize == 1)
    return head +
           "ml_dtypes stores float8_e4m3fn, float8_e8m0fnu, float8_e4m3fnuz, float8_e5m2fnuz, "
           "float4_e2m1fn and float6_e2m3fn / e3m2fn so; pass --as "
           "e4m3|e8m0|e4m3fnuz|e5m2fnuz|fp4|e2m3|e3m2 (float8_e5m2 is '<f1' and needs no --as)";
  if (itemsize == 2) return head + "ml_dtypes stores bfloat16 so; pass --as bf16";
  return head + "no fp8ref dtype is " + std::to_string(itemsize) +
         " bytes wide and opaque; pass --as DTYPE to reinterpret its bytes";
}

// `member`: the tensor's name in an .npz ("" for an .npy file), named in the opaque refusal.
Tensor finish_tensor(std::vector<std::uint8_t> raw, Header& h, const Descr& d,
                     std::string_view file, std::optional<DType> as, std::string_view member = {}) {
  const auto w = static_cast<std::size_t>(d.itemsize);
  if (h.fortran && h.shape.size() > 1) raw = fortran_to_c(raw, h.shape, w);
  if (d.big_endian && d.dtype) {
    for (std::size_t i = 0; i + w <= raw.size(); i += w)
      std::reverse(raw.begin() + static_cast<std::ptrdiff_t>(i),
                   raw.begin() + static_cast<std::ptrdiff_t>(i + w));
  }
  if (as) {
    if (!d.dtype && w == 1 && dtype_bits(*as) < 8)
      return pack_unpacked_subbyte(raw, std::move(h.shape), *as, file);
    return reinterpret_as(std::move(raw), std::move(h.shape), d.itemsize * 8, *as, file);
  }
  if (!d.dtype)
    fail(file,
         opaque_message(h.descr, d.itemsize) +
             (member.empty() ? ""
                             : "; for this tensor only: --as " + std::string(member) + "=DTYPE"));
  return Tensor{*d.dtype, std::move(h.shape), std::move(raw)};
}

// The header of an .npy image and where its data starts, checked against the image's size.
struct NpyLayout {
  Header header;
  Descr descr;
  std::size_t data_offset = 0;
};

NpyLayout read_layout(Bytes bytes, std::string_view file, const ReadOptions& opts) {
  ByteReader r(bytes, file, "npy file");
  NpyLayout l;
  l.header = read_header(r, file);
  l.descr = parse_descr(l.header.descr, file);
  const Header& h = l.header;
  const std::uint64_t n = checked_numel(h.shape, file);
  const auto w = static_cast<std::uint64_t>(l.descr.itemsize);
  if (n > opts.max_bytes / w)
    fail(file, "npy array of shape " + shape_string(h.shape) + " exceeds the size limit");
  if (n * w != r.remaining()) {
    fail(file, "npy data is " + std::to_string(r.remaining()) + " bytes, shape " +
                   shape_string(h.shape) + " x " + h.descr + " needs " + std::to_string(n * w));
  }
  l.data_offset = r.pos();
  return l;
}

// Transposing a Fortran-order array needs a second buffer: charged as well.
void charge_npy(const NpyLayout& l, std::uint64_t data_bytes, const ReadOptions& opts) {
  const bool transposed = l.header.fortran && l.header.shape.size() > 1;
  opts.budget->charge(data_bytes * (transposed ? 2 : 1), "the npy array");
}

}  // namespace

bool looks_like_npy(Bytes bytes) {
  return bytes.size() >= 6 && std::memcmp(bytes.data(), kMagic.data(), 6) == 0;
}

Tensor parse_npy(Bytes bytes, std::string_view file, const ReadOptions& opts_in) {
  const BudgetScope scope(opts_in, bytes.size(), file);
  const ReadOptions& opts = scope.options();
  NpyLayout l = read_layout(bytes, file, opts);
  const Bytes data = bytes.subspan(l.data_offset);
  const bool as_stored = !(l.header.fortran && l.header.shape.size() > 1) &&
                         !(l.descr.big_endian && l.descr.itemsize > 1);
  const std::optional<DType> as = opts.as_for(kNpyTensorName);
  if (opts.map && opts.mapping && !as && l.descr.dtype && as_stored)
    return Tensor{*l.descr.dtype, std::move(l.header.shape), {}, data, opts.mapping};
  charge_npy(l, data.size(), opts);
  return finish_tensor(std::vector<std::uint8_t>(data.begin(), data.end()), l.header, l.descr, file,
                       as);
}

namespace {

// An npz member is parsed in place: its header is cut off the extracted buffer instead of the
// data being copied out of it, so a member costs its own size once (not twice).
Tensor parse_npy_member(std::vector<std::uint8_t> member, std::string_view file,
                        const ReadOptions& opts, std::string_view name) {
  NpyLayout l = read_layout(member, file, opts);
  const bool transposed = l.header.fortran && l.header.shape.size() > 1;
  if (transposed) opts.budget->charge(member.size() - l.data_offset, "the npy array (transposed)");
  member.erase(member.begin(), member.begin() + static_cast<std::ptrdiff_t>(l.data_offset));
  return finish_tensor(std::move(member), l.header, l.descr, file, opts.as_for(name), name);
}

}  // namespace

std::vector<std::uint8_t> serialize_npy(const Tensor& t, std::string_view file) {
  const std::uint64_t n = checked_numel(t.shape, file);
  const std::span<const std::uint8_t> data = t.bytes();
  if (bytes_for(t.dtype, n) != data.size())
    fail(file, "tensor byte count does not match shape x dtype");
  std::string dict = "{'descr': '" + descr_for(t.dtype) +
                     "', 'fortran_order': False, 'shape': " + shape_string(t.shape) + ", }";
  const bool v2 = dict.size() + 11 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  dict.append(63 - (prefix + dict.size()) % 64, ' ');
  dict += '\n';
  std::vector<std::uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out.push_back(static_cast<std::uint8_t>(dict.size() >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  if (t.dtype == DType::F4) {
    for (std::uint64_t i = 0; i < n; ++i)
      out.push_back(static_cast<std::uint8_t>((data[i / 2] >> (4 * (i % 2))) & 0xf));
  } else if (dtype_bits(t.dtype) == 6) {  // one code per byte, as ml_dtypes writes float6
    for (std::uint64_t i = 0, at = 0; i < n; ++i, at += 6) {
      unsigned v = data[at / 8] >> (at % 8);
      if (at % 8 > 2) v |= unsigned{data[at / 8 + 1]} << (8 - at % 8);
      out.push_back(static_cast<std::uint8_t>(v & 0x3f));
    }
  } else {
    out.insert(out.end(), data.begin(), data.end());
  }
  return out;
}

TensorFile parse_npz(Bytes bytes, std::string_view file, const ReadOptions& opts_in) {
  const BudgetScope scope(opts_in, bytes.size(), file);
  const ReadOptions& opts = scope.options();
  const ZipReader zip(bytes, std::string(file), opts);
  TensorFile tf;
  for (const ZipEntry& e : zip.entries()) {
    if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0) {
      fail(file, "npz member '" + e.name + "' is not a .npy file");
    }
    const std::string where = std::string(file) + ":" + e.name;
    std::string name = e.name.substr(0, e.name.size() - 4);
    Tensor t = parse_npy_member(zip.extract(e), where, opts, name);
    tf.tensors.push_back({std::move(name), std::move(t)});
  }
  return tf;
}

std::vector<std::uint8_t> serialize_npz(const TensorFile& tf, std::string_view file) {
  std::vector<ZipMember> members;
  for (const NamedTensor& nt : tf.tensors)
    members.emplace_back(nt.name + ".npy", serialize_npy(nt.tensor, file));
  return serialize_zip_stored(members, file);
}

}  // namespace fp8ref::tensor_io
