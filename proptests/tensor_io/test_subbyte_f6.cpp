// F6_E2M3 / F6_E3M2 in tools/tensor_io (safetensors' names for MXFP6's elements, packed 6 bits each
// as one little-endian bit stream, tensor.h): every code packs, reads back and decodes to the value
// numerics/codec.h gives it (a separate implementation, exhaustively checked against ml_dtypes);
// safetensors and npy round trips; an npz of opaque codes and scales read with one dtype per
// tensor (ReadOptions::as_by_name); torch.save refuses a dtype torch lacks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "numerics/codec.h"
#include "tensor_io/element_values.h"
#include "tensor_io/npy.h"
#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"
#include "tensor_io/torch_save_writer.h"
#include "tensor_io/zip_archive.h"

namespace fp8ref::tensor_io {
namespace {

constexpr DType kF6[] = {DType::F6_E2M3, DType::F6_E3M2};

Format numerics_format(DType t) { return t == DType::F6_E2M3 ? Format::e2m3 : Format::e3m2; }

// Codes 0..63 followed by a 3-element tail, so the stream does not end on a byte boundary.
std::vector<std::uint8_t> every_code() {
  std::vector<std::uint8_t> c;
  for (int i = 0; i < 64; ++i) c.push_back(std::uint8_t(i));
  for (int i : {0x3f, 0x15, 0x2a}) c.push_back(std::uint8_t(i));
  return c;
}

TEST(SubbyteF6, EveryCodePacksReadsBackAndDecodesAsTheCodec) {
  const std::vector<std::uint8_t> codes = every_code();
  for (const DType t : kF6) {
    const Tensor x = pack_unpacked_subbyte(codes, {std::int64_t(codes.size())}, t, "mem");
    ASSERT_EQ(x.data.size(), (codes.size() * 6 + 7) / 8) << dtype_name(t);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      ASSERT_EQ(raw_bits(x, i), codes[i]) << dtype_name(t) << " element " << i;
      const double want = decode_f64(numerics_format(t), codes[i]);
      EXPECT_EQ(decode_bits(t, codes[i]), want) << dtype_name(t) << " code " << int(codes[i]);
    }
    // The stream is little-endian: element 0 in bits 5:0 of byte 0, element 1 from bit 6 on.
    EXPECT_EQ(x.data[0], 0x40);  // codes 0, 1: 0b01'000000
  }
}

TEST(SubbyteF6, SafetensorsAndNpyRoundTripBitwise) {
  const std::vector<std::uint8_t> codes = every_code();
  for (const DType t : kF6) {
    TensorFile tf;
    tf.tensors.push_back({"a", pack_unpacked_subbyte(codes, {std::int64_t(codes.size())}, t, "m")});
    tf.tensors.push_back({"b", pack_unpacked_subbyte({1, 2, 3, 4}, {2, 2}, t, "m")});
    tf.tensors.push_back({"empty", Tensor{t, {0, 4}, {}}});
    const TensorFile back = parse_safetensors(serialize_safetensors(tf, "mem"), "mem", {});
    ASSERT_EQ(back.tensors.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(back.tensors[i].tensor.dtype, t);
      EXPECT_EQ(back.tensors[i].tensor.shape, tf.tensors[i].tensor.shape);
      EXPECT_EQ(back.tensors[i].tensor.data, tf.tensors[i].tensor.data) << dtype_name(t);
    }
    // npy: one code per byte, as ml_dtypes writes float6 ('|V1'); --as packs it again.
    const std::vector<std::uint8_t> npy = serialize_npy(tf.tensors[0].tensor, "mem");
    ReadOptions as;
    as.as_dtype = t;
    const Tensor again = parse_npy(npy, "mem", as);
    EXPECT_EQ(again.data, tf.tensors[0].tensor.data) << dtype_name(t);
  }
}

// An .npy member as ml_dtypes writes a 1-byte float type: descr '|V1', one code per byte.
std::vector<std::uint8_t> opaque_npy(const std::vector<std::uint8_t>& codes) {
  std::string dict = "{'descr': '|V1', 'fortran_order': False, 'shape': (" +
                     std::to_string(codes.size()) + ",), }";
  dict.append(63 - (10 + dict.size()) % 64, ' ');
  dict += '\n';
  std::vector<std::uint8_t> v = {0x93,
                                 'N',
                                 'U',
                                 'M',
                                 'P',
                                 'Y',
                                 1,
                                 0,
                                 std::uint8_t(dict.size()),
                                 std::uint8_t(dict.size() >> 8)};
  v.insert(v.end(), dict.begin(), dict.end());
  v.insert(v.end(), codes.begin(), codes.end());
  return v;
}

TEST(SubbyteF6, NpzOfOpaqueCodesAndScalesReadsWithOneDtypePerTensor) {
  const std::vector<std::uint8_t> codes = {0x01, 0x3f, 0x20}, scales = {0x7f, 0xff};
  const std::vector<std::uint8_t> npz = serialize_zip_stored(
      {{"codes.npy", opaque_npy(codes)}, {"scales.npy", opaque_npy(scales)}}, "mem");
  EXPECT_THROW(parse_npz(npz, "mem", {}), Error);  // both opaque
  ReadOptions opts;
  opts.as_by_name = {{"codes", DType::F6_E2M3}};
  EXPECT_THROW(parse_npz(npz, "mem", opts), Error);  // scales still opaque
  opts.as_by_name.emplace("scales", DType::F8_E8M0);
  const TensorFile tf = parse_npz(npz, "mem", opts);
  const Tensor& c = *tf.find("codes");
  ASSERT_EQ(c.dtype, DType::F6_E2M3);
  for (std::size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(raw_bits(c, i), codes[i]) << i;
  EXPECT_EQ(tf.find("scales")->dtype, DType::F8_E8M0);
  EXPECT_EQ(tf.find("scales")->data, scales);
  opts.as_by_name = {{"codes", DType::F6_E2M3}};  // a plain dtype for the other tensors
  opts.as_dtype = DType::F8_E8M0;
  EXPECT_EQ(parse_npz(npz, "mem", opts).find("scales")->dtype, DType::F8_E8M0);
  opts.as_by_name.emplace("nosuch", DType::F8_E8M0);  // a name the file lacks fails the read
  EXPECT_THROW(parse_tensor_bytes(npz, "mem", opts), Error);
}

TEST(SubbyteF6, TorchSaveRefusesADtypeTorchLacks) {
  TensorFile tf;
  tf.tensors.push_back({"a", pack_unpacked_subbyte({1, 2, 3, 4}, {4}, DType::F6_E2M3, "m")});
  EXPECT_THROW(serialize_torch_save(tf, "x.pt"), Error);
  EXPECT_THROW(pack_unpacked_subbyte({0x40}, {1}, DType::F6_E3M2, "m"), Error);  // bit 6 set
}

}  // namespace
}  // namespace fp8ref::tensor_io
