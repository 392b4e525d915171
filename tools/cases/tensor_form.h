// The safetensors form of a case (docs/fuzz.md "Case files"): tensors of the element types cases
// use, the one metadata schema (fp8ref.* keys) read back with one-line errors, the group sizes
// every grouped case carries, and the comparison helpers of a case-file round trip
// (cases/compare.h).
#pragma once

#include <cstdint>
#include <initializer_list>
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
// The value of "fp8ref.<name>", else of the bare "<name>"; nullptr when neither exists. (Inline,
// as find_batch_seed: the CLI's golden commands read the notes without linking the case types.)
inline const std::string* find_meta(const TensorFile& tf, std::string_view name) {
  for (const std::string& key : {std::string(kMetaPrefix) + std::string(name), std::string(name)})
    if (const auto it = tf.metadata.find(key); it != tf.metadata.end()) return &it->second;
  return nullptr;
}
// The campaign's notes on a failing case (docs/fuzz.md "Case files"), written beside the case's
// own keys by the fuzz runner and read by `fp8-check golden accept`: the suite, the one-line
// replay command, the batch seed the failure was found in, the failure message and (planted
// build) the planted bug. The batch seed is "fp8ref.batch_seed", not "fp8ref.seed": several cases
// keep their own launch seed under "seed".
inline constexpr std::string_view kNoteSuite = "suite", kNoteReplay = "replay",
                                  kNoteBatchSeed = "batch_seed", kNoteFailure = "failure",
                                  kNotePlant = "plant";
// A failure note's batch seed: "fp8ref.batch_seed", else the bare "seed" that runners before the
// prefix wrote (never "fp8ref.seed", a case's own seed); nullptr when neither exists.
inline const std::string* find_batch_seed(const TensorFile& tf) {
  for (const std::string& key :
       {std::string(kMetaPrefix) + std::string(kNoteBatchSeed), std::string("seed")})
    if (const auto it = tf.metadata.find(key); it != tf.metadata.end()) return &it->second;
  return nullptr;
}
std::int64_t get_meta_int(const TensorFile& tf, const std::string& name);
// The "group_sizes" tensor and the dist / align / tail metadata. Loading throws on an unknown
// dist, a negative size, align < 1 or tail < 0; align and tail default to 1 and 0 when absent.
void save_group_sizes(const GroupSizes& gs, TensorFile& tf);
GroupSizes load_group_sizes(const TensorFile& tf);

}  // namespace fp8ref::cases
