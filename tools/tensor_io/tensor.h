// Tensor value type of the fp8-check file I/O: dtype, logical shape, raw little-endian bytes.
// fp8-check reads every dtype incl. FP8 and packed FP4 (docs/cli.md "File formats").
// All I/O failures are reported as tensor_io::Error with a one-line reason naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp8ref::tensor_io {

// Element types. F4 is e2m1, packed two per byte (element 2i in the low nibble), shape logical.
// F6_E2M3 / F6_E3M2 (safetensors' names for MXFP6's elements) are packed 6 bits each as one
// little-endian bit stream: element i in stream bits [6i, 6i + 6), stream bit j in bit j % 8 of
// byte j / 8 (F4's element-0-low convention, extended; safetensors counts bits and leaves the
// order open).
enum class DType : std::uint8_t {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U8,
  U16,
  U32,
  U64,
  BOOL,
  F8_E4M3,
  F8_E5M2,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  F4,
  F6_E2M3,
  F6_E3M2,
};
inline constexpr int kDTypeCount = 21;

// One-line error; the constructor replaces control characters so messages stay on one line.
struct Error : std::runtime_error {
  explicit Error(const std::string& what);
};

[[noreturn]] void fail(std::string_view file, std::string_view reason);

std::string_view dtype_name(DType t);  // safetensors spelling: "F8_E4M3", "BF16", ...
// Accepts the safetensors spelling (any case) and the aliases e4m3, e4m3fn, float8_e4m3fn,
// e5m2, e8m0, e8m0fnu, bf16, bfloat16, f32, float32, fp4, e2m1, ...
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_bits(DType t);  // 4 for F4, 6 for F6_*, else 8 * element bytes
bool dtype_is_float(DType t);

struct Tensor {
  DType dtype = DType::U8;
  std::vector<std::int64_t> shape;  // empty = 0-d (one element); zero extents are legal
  std::vector<std::uint8_t> data;   // little-endian, C order, exactly byte_size() bytes
  // A tensor read with ReadOptions::map views its bytes in the mapped file instead: `view` holds
  // them, `data` is empty and `keep` keeps the mapping alive. Readers use bytes().
  std::span<const std::uint8_t> view{};
  std::shared_ptr<const void> keep{};
  std::span<const std::uint8_t> bytes() const {
    return keep ? view : std::span<const std::uint8_t>(data);
  }
  std::uint64_t numel() const;  // assumes a validated shape
  std::uint64_t byte_size() const;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct TensorFile {
  std::vector<NamedTensor> tensors;             // file order
  std::map<std::string, std::string> metadata;  // safetensors __metadata__
  const Tensor* find(std::string_view name) const;
};

class ReadBudget;

struct ReadOptions {
  // Reinterpret every tensor's bytes as this dtype (required for opaque npy descr such as
  // ml_dtypes' '<V1', '<V2', '<f1'). See reinterpret_as() for the shape rule.
  std::optional<DType> as_dtype;
  // Per tensor name, in place of as_dtype for that tensor: an .npz mixing ml_dtypes' float6 codes
  // and float8_e8m0fnu scales (both '|V1'). A name the file does not hold fails the read.
  std::map<std::string, DType, std::less<>> as_by_name;
  // The dtype tensor `name` is reinterpreted as: as_by_name's, else as_dtype.
  std::optional<DType> as_for(std::string_view name) const {
    const auto it = as_by_name.find(name);
    return it != as_by_name.end() ? std::optional<DType>(it->second) : as_dtype;
  }
  // Largest tensor or zip entry accepted, in bytes (zip bombs, hostile headers).
  std::uint64_t max_bytes = std::uint64_t{1} << 36;
  // Total bytes one read may decompress and materialise (docs/security.md "Limits"); 0: the
  // FP8REF_MAX_READ_BYTES environment variable when set, else kReadExpansion x the file size +
  // kReadSlackBytes.
  std::uint64_t max_read_bytes = 0;
  // Shared by the parsers of one read; set by the readers' entry points (callers leave it null).
  ReadBudget* budget = nullptr;
  // Tensors view the memory-mapped file instead of copying it where the format allows
  // (safetensors; npy in little-endian C order; not with as_for): reading costs no memory
  // beyond the pages touched. Honoured by read_tensor_file, which sets `mapping`.
  bool map = false;
  std::shared_ptr<const void> mapping{};
};

inline constexpr std::uint64_t kReadExpansion = 64;
inline constexpr std::uint64_t kReadSlackBytes = std::uint64_t{256} << 20;
// What one unpickled object or one visited node of the object graph is charged (its heap cost).
inline constexpr std::uint64_t kPickleNodeBytes = 256;

// Running total of the bytes one read has decompressed or materialised; charge() fails (one line
// naming the file, the limit and how to raise it) once the total would pass the limit.
class ReadBudget {
 public:
  ReadBudget(std::uint64_t limit, std::string file) : limit_(limit), file_(std::move(file)) {}
  void charge(std::uint64_t n, std::string_view what);
  std::uint64_t used() const { return used_; }
  std::uint64_t limit() const { return limit_; }

 private:
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
  std::string file_;
};

// The limit of a read of a `file_size`-byte file under `opts` (see ReadOptions::max_read_bytes).
std::uint64_t read_limit(const ReadOptions& opts, std::uint64_t file_size, std::string_view file);

// The options a parser works with: `opts` itself when it carries a budget, else a copy with a
// budget of its own for a `file_size`-byte input.
class BudgetScope {
 public:
  BudgetScope(const ReadOptions& opts, std::uint64_t file_size, std::string_view file);
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;
  const ReadOptions& options() const { return opts_; }

 private:
  ReadBudget own_;
  ReadOptions opts_;
};

// Most elements a tensor may have: 2^60, so that its byte count (<= 8 bytes an element) cannot
// wrap modulo 2^64.
inline constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 60;
// Element count of `shape`, failing (with `file` in the message) on negative extents or
// products above kMaxElements.
std::uint64_t checked_numel(const std::vector<std::int64_t>& shape, std::string_view file);
// Bytes of a tensor of dtype t and `shape` (checked_numel, then bytes_for: cannot overflow).
std::uint64_t checked_byte_size(DType t, const std::vector<std::int64_t>& shape,
                                std::string_view file);
// Bytes needed for n elements of t (F4 rounds up to whole bytes).
std::uint64_t bytes_for(DType t, std::uint64_t n);

// Reinterpret raw bytes as `to`. Same element width: shape unchanged. Otherwise the last
// dimension is rescaled so the byte count is preserved (a '.view(uint8)' dump of bf16 of
// shape (m, 2k) becomes (m, k)); a 0-d tensor must keep its width. `src_bits` is the width
// of the source element (it may be an opaque npy type such as '<V2').
Tensor reinterpret_as(std::vector<std::uint8_t> bytes, std::vector<std::int64_t> shape,
                      int src_bits, DType to, std::string_view file);

// ml_dtypes stores float6_e2m3fn / float6_e3m2fn one value per byte (bits 5:0): pack into F6_*
// (`to`; F4 goes to pack_unpacked_f4).
Tensor pack_unpacked_subbyte(const std::vector<std::uint8_t>& bytes,
                             std::vector<std::int64_t> shape, DType to, std::string_view file);
// ml_dtypes stores float4_e2m1fn one value per byte (low nibble): pack into F4.
Tensor pack_unpacked_f4(const std::vector<std::uint8_t>& bytes, std::vector<std::int64_t> shape,
                        std::string_view file);

std::string shape_string(const std::vector<std::int64_t>& shape);  // "(2, 3)", "()"

// Text from a file made safe to print (docs/security.md "Messages"): control characters (C0, DEL,
// C1, so ANSI escapes and newlines), backslashes and bytes that are not UTF-8 become \xNN / \\;
// valid UTF-8 text is kept. Printing the result cannot start a line or move the cursor.
std::string escape_text(std::string_view s);
// For JSON output: `s` itself when it is valid UTF-8 (JSON escapes control characters), else
// escape_text(s), so a name that is not UTF-8 is escaped rather than fatal to the dump.
std::string json_text(std::string_view s);

}  // namespace fp8ref::tensor_io
