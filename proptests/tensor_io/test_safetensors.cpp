// safetensors reader/writer tests: round trips of every dtype (0-d, empty, F4 odd counts),
// metadata, and hand-built malformed headers that must fail with a one-line Error.
#include <gtest/gtest.h>

#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"
#include "test_util.h"

namespace fp8ref::tensor_io {
namespace {

using test::kAllDTypes;
using test::make_tensor;
using test::safetensors_raw;

TensorFile roundtrip(const TensorFile& tf) {
  const std::vector<std::uint8_t> bytes = serialize_safetensors(tf, "mem");
  return parse_safetensors(bytes, "mem", {});
}

TEST(Safetensors, EveryDTypeRoundTripsBitwise) {
  for (DType t : kAllDTypes) {
    TensorFile tf;
    tf.tensors.push_back({"a", make_tensor(t, {3, 5})});
    tf.tensors.push_back({"scalar", make_tensor(t, {})});
    tf.tensors.push_back({"empty", make_tensor(t, {0, 4})});
    tf.tensors.push_back({"odd", make_tensor(t, {7})});
    const TensorFile back = roundtrip(tf);
    ASSERT_EQ(back.tensors.size(), 4u) << dtype_name(t);
    for (const NamedTensor& nt : tf.tensors) {
      const Tensor* got = back.find(nt.name);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->dtype, t);
      EXPECT_EQ(got->shape, nt.tensor.shape);
      EXPECT_EQ(got->data, nt.tensor.data) << dtype_name(t) << " " << nt.name;
    }
  }
}

TEST(Safetensors, MetadataAndFileOrderAreKept) {
  TensorFile tf;
  tf.metadata = {{"format", "pt"}, {"seed", "7"}};
  tf.tensors.push_back({"z", make_tensor(DType::F32, {2})});
  tf.tensors.push_back({"a", make_tensor(DType::BF16, {2})});
  const TensorFile back = roundtrip(tf);
  EXPECT_EQ(back.metadata, tf.metadata);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].name, "z");
  EXPECT_EQ(back.tensors[1].name, "a");
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  TensorFile tf;
  tf.tensors.push_back({"w", make_tensor(DType::F8_E4M3, {3})});
  const auto bytes = serialize_safetensors(tf, "mem");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{bytes[static_cast<std::size_t>(i)]} << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 3);
}

// The header length is any number: one whose first byte is 0x80 (a pickle's PROTO opcode, for
// the format sniffer) must still read as safetensors. Metadata of growing length walks the
// (8-aligned) header length over every low byte 0x00..0xF8, 0x80 included.
TEST(Safetensors, SniffedAsSafetensorsWhateverTheHeaderLength) {
  int low_0x80 = 0;
  for (int pad = 0; pad < 300; ++pad) {
    TensorFile tf;
    tf.metadata = {{"pad", std::string(std::size_t(pad), 'x')}};
    tf.tensors.push_back({"w", make_tensor(DType::F32, {2})});
    const std::vector<std::uint8_t> bytes = serialize_safetensors(tf, "mem");
    low_0x80 += bytes[0] == 0x80;
    FileFormat f{};
    const TensorFile back = parse_tensor_bytes(bytes, "mem", {}, &f);
    ASSERT_EQ(f, FileFormat::Safetensors) << "pad " << pad;
    ASSERT_EQ(back.metadata, tf.metadata) << "pad " << pad;
  }
  EXPECT_GT(low_0x80, 0);
}

TEST(Safetensors, AsDTypeReinterpretsU8Views) {
  TensorFile tf;
  tf.tensors.push_back({"w", make_tensor(DType::U8, {2, 8})});
  const auto bytes = serialize_safetensors(tf, "mem");
  ReadOptions opts;
  opts.as_dtype = DType::BF16;
  const TensorFile back = parse_safetensors(bytes, "mem", opts);
  EXPECT_EQ(back.tensors[0].tensor.dtype, DType::BF16);
  EXPECT_EQ(back.tensors[0].tensor.shape, (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(back.tensors[0].tensor.data, tf.tensors[0].tensor.data);
}

void expect_error(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  try {
    parse_safetensors(bytes, "bad.safetensors", {});
    ADD_FAILURE() << "accepted malformed file, expected: " << needle;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.rfind("bad.safetensors: ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST(Safetensors, MalformedFilesAreRefusedWithAReason) {
  expect_error({1, 2, 3}, "shorter than its 8-byte header length");
  std::vector<std::uint8_t> huge;
  test::put_le(huge, ~std::uint64_t{0}, 8);
  expect_error(huge, "exceeds the 100 MB limit");
  std::vector<std::uint8_t> longer;
  test::put_le(longer, 1000, 8);
  longer.push_back('{');
  expect_error(longer, "exceeds the file size");
  expect_error(safetensors_raw("{\"a\":", 0), "not valid JSON");
  expect_error(safetensors_raw("[1]", 0), "not a JSON object");
  expect_error(safetensors_raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
               "beyond the 4-byte buffer");
  expect_error(safetensors_raw(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
               "needs 12 bytes");
  expect_error(safetensors_raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
               "begin > end");
  expect_error(safetensors_raw(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                               8),
               "overlap");
  expect_error(safetensors_raw(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
               "negative");
  expect_error(
      safetensors_raw(
          R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
      "2^60");
  expect_error(safetensors_raw(R"({"a":{"dtype":"Q8","shape":[2],"data_offsets":[0,2]}})", 2),
               "unknown dtype 'Q8'");
  expect_error(safetensors_raw(R"({"a":{"dtype":"U8","shape":[2]}})", 2), "lacks 'data_offsets'");
  expect_error(safetensors_raw(R"({"a":{"dtype":"U8","shape":[2.5],"data_offsets":[0,2]}})", 2),
               "not a non-negative integer");
  expect_error(safetensors_raw(R"({"__metadata__":{"k":1}})", 0), "__metadata__ value");
  expect_error(safetensors_raw(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", 1),
               "needs 2 bytes");
}

TEST(Safetensors, ZeroSizedTensorsMayShareAnOffset) {
  const auto bytes = safetensors_raw(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                     R"("b":{"dtype":"F32","shape":[1,0],"data_offsets":[0,0]}})",
                                     0);
  const TensorFile tf = parse_safetensors(bytes, "mem", {});
  EXPECT_EQ(tf.tensors.size(), 2u);
}

}  // namespace
}  // namespace fp8ref::tensor_io
