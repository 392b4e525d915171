// Writes fp8ref's codes for a Python peer to compare (proptests/numerics/codec/mx_formats_ml_dtypes.py):
//   fp8ref_codec_dump table  FORMAT PROFILE SOURCE OUT        the EncodeTable of the cast
//                                                              (f32: 2^17 classes; bf16/f16: 2^16)
//   fp8ref_codec_dump encode FORMAT PROFILE SOURCE IN OUT     codes of little-endian source
//   patterns fp8ref_codec_dump decode FORMAT OUT                        decode_f64 of the 256 codes
//   (f64 LE)
// Rounding is the profile's natural one. Exit 2 with one line on bad arguments.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/encode_table.h"
#include "numerics/profile.h"

namespace {

using namespace fp8ref;

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const void* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(n));
  if (!out) throw std::invalid_argument("cannot write " + path);
}

ProfileCodec codec_of(const char* f, const char* p, const char* s) {
  const auto format = parse_format(f);
  const auto profile = parse_profile(p);
  const auto source = parse_source(s);
  if (!format || !profile || !source) throw std::invalid_argument("unknown format/profile/source");
  return make_codec(*profile, *format, *source, natural_rounding(*profile, *format));
}

int run(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "decode" && argc == 4) {
    const auto f = parse_format(argv[2]);
    if (!f) throw std::invalid_argument("unknown format");
    double v[256];
    for (int c = 0; c < 256; ++c) v[c] = decode_f64(*f, std::uint8_t(c));
    write_all(argv[3], v, sizeof v);
    return 0;
  }
  if (cmd == "table" && argc == 6) {
    const EncodeTable t(codec_of(argv[2], argv[3], argv[4]));
    const bool f32 = t.codec().source == Source::f32;
    std::vector<std::uint8_t> z(f32 ? std::size_t{1} << 17 : std::size_t{1} << 16);
    for (std::uint32_t i = 0; i < z.size(); ++i)
      z[i] = f32 ? t.encode(((i >> 1) << 16) | (i & 1)) : t.encode16(std::uint16_t(i));
    write_all(argv[5], z.data(), z.size());
    return 0;
  }
  if (cmd == "encode" && argc == 7) {
    const ProfileCodec c = codec_of(argv[2], argv[3], argv[4]);
    const std::size_t w = std::size_t(source_bits(c.source) / 8);
    const std::vector<char> in = read_all(argv[5]);
    std::vector<std::uint8_t> z(in.size() / w);
    for (std::size_t i = 0; i < z.size(); ++i) {
      std::uint64_t b = 0;
      std::memcpy(&b, in.data() + i * w, w);  // little-endian host
      z[i] = c.encode(b);
    }
    write_all(argv[6], z.data(), z.size());
    return 0;
  }
  throw std::invalid_argument("usage: fp8ref_codec_dump table|encode|decode ... (see the source)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fp8ref_codec_dump: error: " << e.what() << std::endl;
    return 2;
  }
}
