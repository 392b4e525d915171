// The safetensors form of a case (docs/fuzz.md "Case files"): tensors of the element types cases
// use, the one metadata schema (fp8ref.* keys) read back with one-line errors, the group sizes
// every grouped case carries, and the comparison helpers of a case-file round trip
// (cases/compare.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cases/compare.h"
#include "cases/group_sizes.h"
#include "tensor_io/tensor.h"

namespace fp8ref::cases {

using tensor_io::TensorFile;

tensor_io::Tensor u8_tensor(const std::vector<std::uint8_t>& v, std::vector<std::int64_t> shape);
tensor_io::Tensor f32_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape);
tensor_io::Tensor i64_tensor(const std::vector<std::int64_t>& v);
tensor_io::Tensor i32_tensor(const std::vector<std::int32_t>& v);
tensor_io::Tensor u32_tensor(const std::vector<std::uint32_t>& v, std::vector<std::int64_t> shape);
// A tensor's elements (std::invalid_argument when it is missing or of another dtype).
std::vector<std::uint8_t> get_u8(const TensorFile& tf, const std::string& name);
std::vector<float> get_f32(const TensorFile& tf, const std::string& name);
std::vector<std::int64_t> get_i64(const TensorFile& tf, const std::string& name);
std::vector<std::int32_t> get_i32(const TensorFile& tf, const std::string& name);
std::vector<std::uint32_t> get_u32(const TensorFile& tf, const std::string& name);
// Case-file metadata (docs/fuzz.md "Case files"): a parameter `name` is written under the key
// "fp8ref.<name>" (so it cannot collide with a user's keys or the campaign's failure notes) and
// read from that key or, for files written before the prefix (golden/regressions/ pins them), from
// the bare "<name>"; the prefixed key wins where both exist.
inline constexpr std::string_view kMetaPrefix = "fp8ref.";
std::string meta_key(std::string_view name);
void put_meta(TensorFile& tf, std::string_view name, std::string value);
bool has_meta(const TensorFile& tf, std::string_view name);
// `m["name"] = value` writes "fp8ref.name": the save functions' idiom.
class MetaWriter {
 public:
  explicit MetaWriter(TensorFile& tf) : metadata_(tf.metadata) {}
  std::string& operator[](std::string_view name) { return metadata_[meta_key(name)]; }

 private:
  std::map<std::string, std::string>& metadata_;
};
// A metadata value (std::invalid_argument when missing or, for get_meta_int, not an integer).
const std::string& get_meta(const TensorFile& tf, const std::string& name);
std::int64_t get_meta_int(const TensorFile& tf, const std::string& name);
// The "group_sizes" tensor and the dist / align / tail metadata. Loading throws on an unknown
// dist, a negative size, align < 1 or tail < 0; align and tail default to 1 and 0 when absent.
void save_group_sizes(const GroupSizes& gs, TensorFile& tf);
GroupSizes load_group_sizes(const TensorFile& tf);

}  // namespace fp8ref::cases
