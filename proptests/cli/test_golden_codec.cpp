// Tests for the golden generators (tools/cli/golden_codec, sha256): SHA-256 against FIPS 180-4
// examples and coreutils' sha256sum; the input set is deterministic, distinct and hits every class;
// the tables obey laws checked with tensor_io's decoder, a second implementation of the formats.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/golden_codec.h"
#include "cli/sha256.h"
#include "tensor_io/element_values.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::cli {
namespace {

using tensor_io::DType;

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};

DType dtype_of(Format f) {
  return f == Format::e4m3 ? DType::F8_E4M3 : f == Format::e5m2 ? DType::F8_E5M2 : DType::F8_E8M0;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> parse_lines(const std::string& text) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rows;
  std::istringstream in(text);
  std::string a, b;
  while (in >> a >> b) rows.emplace_back(std::stoull(a, nullptr, 16), std::stoull(b, nullptr, 16));
  return rows;
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AgreesWithSha256sumAcrossPaddingBoundaries) {
  if (std::system("command -v sha256sum > /dev/null 2>&1") != 0) GTEST_SKIP() << "no sha256sum";
  const auto path =
      std::filesystem::temp_directory_path() / ("fp8ref_sha_" + std::to_string(::getpid()));
  std::string bytes;
  for (std::size_t n = 0; n <= 200; ++n) {
    std::ofstream(path, std::ios::binary) << bytes;
    FILE* p = ::popen(("sha256sum " + path.string()).c_str(), "r");
    char out[65] = {};
    ASSERT_EQ(std::fread(out, 1, 64, p), 64u);
    ::pclose(p);
    EXPECT_EQ(sha256_hex(bytes), std::string(out, 64)) << "length " << n;
    bytes.push_back(static_cast<char>(n * 37 + 11));
  }
  std::filesystem::remove(path);
}

TEST(CodecInputs, DeterministicDistinctAndEveryClassHit) {
  for (Format f : kFormats) {
    const auto a = f32_codec_inputs(f, 20261122, 2000), b = f32_codec_inputs(f, 20261122, 2000);
    ASSERT_EQ(a.size(), 2000u);
    std::set<std::uint32_t> distinct;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].bits, b[i].bits);
      distinct.insert(a[i].bits);
    }
    EXPECT_EQ(distinct.size(), a.size()) << to_string(f);
    const auto counts = class_counts(a);
    for (int c = 0; c < kInputClassCount; ++c) {
      const char* name = class_name(static_cast<InputClass>(c));
      EXPECT_GE(counts.count(name) ? counts.at(name) : 0, 30u) << to_string(f) << " class " << name;
    }
    EXPECT_NE(f32_codec_inputs(f, 1, 2000)[100].bits, a[100].bits) << "the seed must matter";
  }
}

// Any rounding and overflow rule returns a representable input's own value (sign included).
TEST(EncodeTable, ExactInputsEncodeToTheirOwnValueUnderEveryProfile) {
  for (Format f : kFormats) {
    const auto inputs = f32_codec_inputs(f, 20261122, 2000);
    for (Profile p : kAllProfiles) {
      const ProfileCodec codec = make_codec(p, f, Source::f32, natural_rounding(p, f));
      const auto rows = parse_lines(encode_table_hex(codec, inputs));
      ASSERT_EQ(rows.size(), inputs.size());
      int checked = 0;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double x = std::bit_cast<float>(static_cast<std::uint32_t>(rows[i].first));
        if (inputs[i].cls != InputClass::exact || (f == Format::e8m0 && std::signbit(x))) continue;
        const double z = tensor_io::decode_bits(dtype_of(f), rows[i].second);
        EXPECT_TRUE(z == x && std::signbit(z) == std::signbit(x))
            << to_string(p) << " " << to_string(f) << " input " << x << " -> " << z;
        ++checked;
      }
      EXPECT_GT(checked, 100);
    }
  }
}

// Under rne a midpoint strictly inside the range goes to the neighbour with an even code.
TEST(EncodeTable, InRangeTiesRoundToTheEvenNeighbourUnderRne) {
  for (Format f : {Format::e4m3, Format::e5m2}) {
    const auto inputs = f32_codec_inputs(f, 20261122, 2000);
    const double max = tensor_io::decode_bits(dtype_of(f), f == Format::e4m3 ? 0x7e : 0x7b);
    for (Profile p : kAllProfiles) {
      const auto rows =
          parse_lines(encode_table_hex(make_codec(p, f, Source::f32, Rounding::rne), inputs));
      int checked = 0;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double x = std::bit_cast<float>(static_cast<std::uint32_t>(rows[i].first));
        if (inputs[i].cls != InputClass::tie || std::fabs(x) >= max) continue;
        const std::uint64_t code = rows[i].second;
        // Sign-magnitude codes: the magnitude neighbours of `code` are code ± 1 (same sign bit).
        const double z = tensor_io::decode_bits(dtype_of(f), code), d = std::fabs(x - z);
        const double up = tensor_io::decode_bits(dtype_of(f), code + 1);
        const double down =
            (code & 0x7f) != 0 ? tensor_io::decode_bits(dtype_of(f), code - 1) : NAN;
        EXPECT_EQ(code & 1, 0u) << to_string(p) << " input " << x;
        EXPECT_TRUE(d == std::fabs(x - up) || d == std::fabs(x - down))
            << to_string(p) << " input " << x << " is not a midpoint next to " << z;
        ++checked;
      }
      EXPECT_GT(checked, 100);
    }
  }
}

TEST(DecodeTable, MatchesTheTensorIoDecoderForAll256Codes) {
  for (Format f : kFormats) {
    const auto rows = parse_lines(decode_table_hex(f));
    ASSERT_EQ(rows.size(), 256u);
    for (std::uint64_t c = 0; c < 256; ++c) {
      ASSERT_EQ(rows[c].first, c);
      const double got = std::bit_cast<double>(rows[c].second),
                   ref = tensor_io::decode_bits(dtype_of(f), c);
      EXPECT_TRUE(std::isnan(ref)
                      ? std::isnan(got)
                      : std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(ref))
          << to_string(f) << " code " << c;
    }
  }
}

TEST(CastCases, SafetensorsHoldTheInputsAndOneTensorPerProfile) {
  const auto inputs = f32_codec_inputs(Format::e5m2, 7, 64);
  const std::string bytes = cast_cases_safetensors(Format::e5m2, inputs, "cmd");
  const tensor_io::TensorFile tf = tensor_io::parse_safetensors(
      {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, "cases", {});
  ASSERT_EQ(tf.tensors.size(), 1 + kAllProfiles.size());
  EXPECT_EQ(tf.metadata.at("generator"), "cmd");
  const tensor_io::Tensor* z = tf.find("torch_2_11");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->dtype, DType::F8_E5M2);
  const ProfileCodec codec =
      make_codec(Profile::torch_2_11, Format::e5m2, Source::f32, Rounding::rne);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    EXPECT_EQ(z->data[i], codec.encode(inputs[i].bits));
}

}  // namespace
}  // namespace fp8ref::cli
