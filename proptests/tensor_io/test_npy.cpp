// npy/npz tests: round trips of every dtype, hand-built Fortran-order, big-endian, v2/v3 headers,
// ml_dtypes opaque descr with --as, deflated npz members and zip-bomb / malformed refusals.
#include <gtest/gtest.h>
#include <zlib.h>

#include "tensor_io/npy.h"
#include "tensor_io/zip_archive.h"
#include "test_util.h"

namespace fp8ref::tensor_io {
namespace {

using test::kAllDTypes;
using test::make_tensor;

std::vector<std::uint8_t> npy_raw(int major, const std::string& dict,
                                  const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> v = test::bytes_of("\x93NUMPY");
  v.push_back(static_cast<std::uint8_t>(major));
  v.push_back(0);
  test::put_le(v, dict.size(), major == 1 ? 2 : 4);
  v.insert(v.end(), dict.begin(), dict.end());
  v.insert(v.end(), data.begin(), data.end());
  return v;
}

TEST(Npy, EveryDTypeRoundTripsBitwise) {
  for (DType t : kAllDTypes) {
    for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{2, 3}, {}, {0}, {5}}) {
      const Tensor x = make_tensor(t, shape);
      ReadOptions opts;
      const bool opaque = t == DType::BF16 || (dtype_bits(t) <= 8 && dtype_is_float(t));
      if (opaque) opts.as_dtype = t;
      const Tensor y = parse_npy(serialize_npy(x, "mem"), "mem", opts);
      EXPECT_EQ(y.dtype, t);
      EXPECT_EQ(y.shape, x.shape);
      EXPECT_EQ(y.data, x.data) << dtype_name(t) << " " << shape_string(shape);
    }
  }
}

TEST(Npy, HeaderIsAlignedTo64Bytes) {
  const auto bytes = serialize_npy(make_tensor(DType::F32, {3}), "mem");
  EXPECT_EQ((bytes.size() - 12) % 64, 0u);
  EXPECT_EQ(bytes[bytes.size() - 13], '\n');
}

TEST(Npy, FortranOrderIsConvertedToCOrder) {
  // 2x3 int16 matrix [[0,1,2],[3,4,5]] stored column-major: 0,3,1,4,2,5.
  std::vector<std::uint8_t> data;
  for (int v : {0, 3, 1, 4, 2, 5}) test::put_le(data, static_cast<std::uint64_t>(v), 2);
  const Tensor t = parse_npy(
      npy_raw(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }\n", data), "mem", {});
  ASSERT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data[static_cast<std::size_t>(2 * i)], i);
}

TEST(Npy, BigEndianIsSwapped) {
  const std::vector<std::uint8_t> be = {0x3f, 0x80, 0x00, 0x00,
                                        0xc0, 0x00, 0x00, 0x00};  // 1.0f, -2.0f
  const Tensor t = parse_npy(
      npy_raw(2, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", be), "mem", {});
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.data, (std::vector<std::uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}));
}

TEST(Npy, Version3HeaderAndZeroDim) {
  const Tensor t = parse_npy(
      npy_raw(3, "{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (), }\n", {7, 1}),
      "mem", {});
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(t.data, (std::vector<std::uint8_t>{7, 1}));
}

TEST(Npy, OpaqueDescrNeedsAsDType) {
  const auto file =
      npy_raw(1, "{'descr': '<V1', 'fortran_order': False, 'shape': (2,), }\n", {0x38, 0xff});
  EXPECT_THROW(parse_npy(file, "mem", {}), Error);
  ReadOptions opts;
  opts.as_dtype = DType::F8_E4M3;
  EXPECT_EQ(parse_npy(file, "mem", opts).dtype, DType::F8_E4M3);
  const auto f1 =
      npy_raw(1, "{'descr': '<f1', 'fortran_order': False, 'shape': (2,), }\n", {0x3c, 0x7c});
  opts.as_dtype = DType::F8_E5M2;
  EXPECT_EQ(parse_npy(f1, "mem", opts).data, (std::vector<std::uint8_t>{0x3c, 0x7c}));
  const Tensor plain = parse_npy(f1, "mem", {});  // '<f1' is ml_dtypes' float8_e5m2
  EXPECT_EQ(plain.dtype, DType::F8_E5M2);
  EXPECT_EQ(plain.data, (std::vector<std::uint8_t>{0x3c, 0x7c}));
  try {
    parse_npy(file, "mem", {});
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("float8_e4m3fn"), std::string::npos) << m;
    EXPECT_NE(m.find("--as e4m3"), std::string::npos) << m;
    EXPECT_EQ(m.find("bfloat16"), std::string::npos) << m;  // bfloat16 is '<V2', not '<V1'
  }
}

TEST(Npy, Uint8ViewOfBf16IsReshapedOnTheLastDimension) {
  const auto file = npy_raw(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 4), }\n",
                            {1, 2, 3, 4, 5, 6, 7, 8});
  ReadOptions opts;
  opts.as_dtype = DType::BF16;
  EXPECT_EQ(parse_npy(file, "mem", opts).shape, (std::vector<std::int64_t>{2, 2}));
  opts.as_dtype = DType::F4;  // packed uint8 view of fp4 doubles the last dimension
  EXPECT_EQ(parse_npy(file, "mem", opts).shape, (std::vector<std::int64_t>{2, 8}));
}

void expect_error(const std::vector<std::uint8_t>& bytes, const std::string& needle,
                  bool npz = false) {
  try {
    if (npz)
      parse_npz(bytes, "bad.npz", {});
    else
      parse_npy(bytes, "bad.npy", {});
    ADD_FAILURE() << "accepted malformed file, expected: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Npy, MalformedFilesAreRefusedWithAReason) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  expect_error(test::bytes_of("\x93NUMP"), "bad magic");
  expect_error(npy_raw(4, ok, {}), "version 4");
  expect_error(npy_raw(1, ok, {1, 2, 3}), "needs 8");
  expect_error(npy_raw(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", {}),
               "not supported");
  expect_error(npy_raw(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", {}),
               "structured");
  expect_error(npy_raw(1, "{'descr': '<f4', 'shape': (2,), }", {}), "lacks");
  expect_error(npy_raw(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", {}),
               "True or False");
  expect_error(npy_raw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", {}),
               "non-negative integer");
  expect_error(
      npy_raw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
              {}),
      "2^60");
  auto truncated_len = npy_raw(1, ok, {});
  truncated_len[8] = 0xff, truncated_len[9] = 0xff;
  expect_error(truncated_len, "exceeds the file size");
}

std::vector<std::uint8_t> deflate_raw(const std::vector<std::uint8_t>& in) {
  std::vector<std::uint8_t> out(compressBound(static_cast<uLong>(in.size())) + 64);
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Stored archive with member 0's payload replaced by a deflated one (method 8) claiming `claim`
// bytes.
std::vector<std::uint8_t> deflated_npz(const std::vector<std::uint8_t>& member,
                                       std::uint64_t claim) {
  const std::vector<std::uint8_t> z = deflate_raw(member);
  const uLong crc = crc32(0, member.data(), static_cast<uInt>(member.size()));
  std::vector<std::uint8_t> v;
  const std::string name = "x.npy";
  for (int central = 0; central < 2; ++central) {
    const std::size_t cd_start = v.size();
    test::put_le(v, central ? 0x02014b50 : 0x04034b50, 4);
    if (central) test::put_le(v, 20, 2);
    for (std::uint64_t f : {20u, 0u, 8u, 0u, 0u}) test::put_le(v, f, 2);
    test::put_le(v, crc, 4);
    test::put_le(v, z.size(), 4);
    test::put_le(v, claim, 4);
    test::put_le(v, name.size(), 2);
    test::put_le(v, 0, 2);
    if (central) test::put_le(v, 0, 10), test::put_le(v, 0, 4);
    v.insert(v.end(), name.begin(), name.end());
    if (!central) {
      v.insert(v.end(), z.begin(), z.end());
      continue;
    }
    const std::size_t cd_size = v.size() - cd_start;
    test::put_le(v, 0x06054b50, 4);
    test::put_le(v, 0, 4);
    test::put_le(v, 1, 2), test::put_le(v, 1, 2);
    test::put_le(v, cd_size, 4), test::put_le(v, cd_start, 4), test::put_le(v, 0, 2);
  }
  return v;
}

TEST(Npz, StoredAndDeflatedMembersRead) {
  TensorFile tf;
  for (DType t : {DType::F32, DType::I64, DType::BOOL})
    tf.tensors.push_back({std::string(dtype_name(t)), make_tensor(t, {4, 3})});
  const TensorFile back = parse_npz(serialize_npz(tf, "mem"), "mem", {});
  ASSERT_EQ(back.tensors.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.tensors[i].name, tf.tensors[i].name);
    EXPECT_EQ(back.tensors[i].tensor.data, tf.tensors[i].tensor.data);
  }
  const auto member = serialize_npy(make_tensor(DType::F16, {64}), "mem");
  const TensorFile z = parse_npz(deflated_npz(member, member.size()), "mem", {});
  EXPECT_EQ(z.tensors.at(0).name, "x");
  EXPECT_EQ(z.tensors.at(0).tensor.data, make_tensor(DType::F16, {64}).data);
}

TEST(Npz, BombsAndLiesAreRefused) {
  const auto member = serialize_npy(make_tensor(DType::U8, {4096}), "mem");
  expect_error(deflated_npz(member, 0xfffffff0u), "ratio", true);
  expect_error(deflated_npz(member, member.size() - 1), "corrupt", true);
  auto bad_crc = deflated_npz(member, member.size());
  bad_crc[40] ^= 0x10;  // inside the deflated payload: corrupt stream or CRC-32 mismatch
  expect_error(bad_crc, "", true);
  expect_error(test::bytes_of("PK\x05\x06"), "too short", true);
  auto stored = serialize_npz({{{"a", make_tensor(DType::U8, {3})}}, {}}, "mem");
  stored.resize(stored.size() - 30);
  expect_error(stored, "", true);
}

}  // namespace
}  // namespace fp8ref::tensor_io
