// Codec golden generators (golden_codec.h): the tables and the cast case file over the inputs of
// tools/cases/input_classes_f32.h.
#include "cli/golden_codec.h"

#include <bit>
#include <cstdio>

#include "tensor_io/safetensors.h"

namespace fp8ref::cli {

std::map<std::string, std::uint64_t> class_counts(const std::vector<CodecInput>& inputs) {
  std::map<std::string, std::uint64_t> counts;
  for (const CodecInput& in : inputs) ++counts[class_name(in.cls)];
  return counts;
}

std::string encode_table_hex(const ProfileCodec& codec, const std::vector<CodecInput>& inputs) {
  std::string out;
  out.reserve(inputs.size() * 12);
  char buf[16];
  for (const CodecInput& in : inputs) {
    std::snprintf(buf, sizeof buf, "%08X %02X\n", in.bits, codec.encode(in.bits));
    out += buf;
  }
  return out;
}

std::string decode_table_hex(Format format) {
  std::string out;
  char buf[24];
  for (int c = 0; c < 256; ++c) {
    const double v = decode_f64(format, static_cast<std::uint8_t>(c));
    std::snprintf(buf, sizeof buf, "%02X %016llX\n", c,
                  static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
    out += buf;
  }
  return out;
}

std::string cast_cases_safetensors(Format format, const std::vector<CodecInput>& inputs,
                                   const std::string& command) {
  using tensor_io::DType;
  const DType dtype = format == Format::e4m3   ? DType::F8_E4M3
                      : format == Format::e5m2 ? DType::F8_E5M2
                                               : DType::F8_E8M0;
  const auto n = static_cast<std::int64_t>(inputs.size());
  tensor_io::TensorFile tf;
  tf.metadata = {{"generator", command}};
  tensor_io::Tensor input{DType::F32, {n}, {}};
  for (const CodecInput& in : inputs) {
    for (int b = 0; b < 4; ++b) input.data.push_back(static_cast<std::uint8_t>(in.bits >> (8 * b)));
  }
  tf.tensors.push_back({"input", std::move(input)});
  for (Profile p : kAllProfiles) {
    const ProfileCodec codec = make_codec(p, format, Source::f32, natural_rounding(p, format));
    tensor_io::Tensor z{dtype, {n}, {}};
    for (const CodecInput& in : inputs) z.data.push_back(codec.encode(in.bits));
    tf.tensors.push_back({std::string(to_string(p)), std::move(z)});
  }
  const std::vector<std::uint8_t> bytes = tensor_io::serialize_safetensors(tf, "<golden>");
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace fp8ref::cli
