// Codec golden generators (golden_codec.h). The input set is built from the format's own value
// line (decode_f64 of all 256 codes): its exact values, the midpoints between neighbours and the
// first midpoint past max are where every rounding and overflow rule makes its decision.
#include "cli/golden_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_set>

#include "cases/split_mix64.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::cli {
namespace {

constexpr std::uint32_t kSign = 0x80000000u;
constexpr std::uint32_t kF32Inf = 0x7f800000u;

using cases::SplitMix64;

std::uint32_t f32_bits(double exact) {
  const float f = static_cast<float>(exact);
  if (static_cast<double>(f) != exact)
    throw std::logic_error("golden_codec: value not exact in f32");
  return std::bit_cast<std::uint32_t>(f);
}

// The format's value line: sorted non-negative finite magnitudes, plus the midpoints between
// neighbours and the midpoint between max and the next (virtual) value of max's binade.
struct ValueLine {
  std::vector<std::uint32_t> values;  // f32 bits of each magnitude
  std::vector<std::uint32_t> ties;
  double max = 0, min_subnormal = 0, min_normal = 0;
};

ValueLine value_line(Format format) {
  std::vector<double> mags;
  for (int c = 0; c < 256; ++c) {
    const double v = decode_f64(format, static_cast<std::uint8_t>(c));
    if (std::isfinite(v) && !std::signbit(v)) mags.push_back(v);
  }
  std::sort(mags.begin(), mags.end());
  mags.erase(std::unique(mags.begin(), mags.end()), mags.end());
  ValueLine line;
  for (std::size_t i = 0; i < mags.size(); ++i) {
    line.values.push_back(f32_bits(mags[i]));
    const double next = i + 1 < mags.size() ? mags[i + 1] : 2 * mags[i] - mags[i - 1];
    line.ties.push_back(f32_bits((mags[i] + next) / 2));
  }
  line.max = mags.back();
  line.min_subnormal = mags[0] > 0 ? mags[0] : mags[1];
  // e8m0 has no subnormals: its smallest value 2^-127 plays both parts.
  line.min_normal = format == Format::e8m0
                        ? mags[0]
                        : std::ldexp(1.0, format == Format::e4m3 ? E4m3Traits::kMinNormalExp
                                                                 : E5m2Traits::kMinNormalExp);
  return line;
}

std::uint32_t step_ulps(std::uint32_t mag, int ulps) {
  const std::int64_t m = std::int64_t{mag} + ulps;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(m, 0, kF32Inf - 1));
}

std::vector<std::uint32_t> special_inputs(const ValueLine& line) {
  std::vector<std::uint32_t> mags = {0,
                                     kF32Inf,
                                     0x7fc00000u,
                                     0x7f800001u,
                                     0x7fffffffu,
                                     0x7fa00000u,  // ±0, ±Inf, qNaN, sNaNs, payloads
                                     1,
                                     0x007fffffu,
                                     0x00800000u,
                                     0x7f7fffffu,  // f32 subnormal edges, min normal, max
                                     f32_bits(line.max),
                                     line.ties.back(),
                                     step_ulps(line.ties.back(), -1),
                                     step_ulps(line.ties.back(), 1),
                                     f32_bits(line.min_subnormal),
                                     f32_bits(line.min_subnormal / 2),
                                     step_ulps(f32_bits(line.min_subnormal / 2), 1),
                                     step_ulps(f32_bits(line.min_subnormal / 2), -1),
                                     f32_bits(line.min_normal),
                                     step_ulps(f32_bits(line.min_normal), -1)};
  std::vector<std::uint32_t> out;
  for (std::uint32_t m : mags) out.insert(out.end(), {m, m | kSign});
  return out;
}

// One weighted draw (weights in the table below); returns the magnitude or full pattern.
std::uint32_t draw(InputClass c, const ValueLine& line, const std::vector<std::uint32_t>& specials,
                   SplitMix64& rng) {
  const std::uint32_t sign = (rng.next() & 1) ? kSign : 0;
  const int jitter = static_cast<int>(rng.below(3)) + 1;
  const auto pick = [&](const std::vector<std::uint32_t>& v) { return v[rng.below(v.size())]; };
  switch (c) {
    case InputClass::special: return pick(specials);
    case InputClass::exact: return sign | pick(line.values);
    case InputClass::near_exact:
      return sign | step_ulps(pick(line.values), (rng.next() & 1) ? jitter : -jitter);
    case InputClass::tie: return sign | pick(line.ties);
    case InputClass::near_tie:
      return sign | step_ulps(pick(line.ties), (rng.next() & 1) ? jitter : -jitter);
    case InputClass::subnormal: {
      const std::uint32_t top =
          line.min_normal < 0x1p-120 ? f32_bits(0x1p-120) : f32_bits(2 * line.min_normal);
      return sign | static_cast<std::uint32_t>(rng.below(top));
    }
    case InputClass::overflow: {
      const std::uint32_t lo = f32_bits(line.max) + 1;
      return sign | (lo + static_cast<std::uint32_t>(rng.below(kF32Inf - lo)));
    }
    case InputClass::in_range: {
      const int lo = std::ilogb(line.min_subnormal) - 1,
                hi = std::min(std::ilogb(line.max) + 1, 127);
      const int e = lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
      const std::uint32_t frac = static_cast<std::uint32_t>(rng.next()) & 0x007fffffu;
      return sign | (f32_bits(std::ldexp(1.0, e)) +
                     frac);  // same binade: adding the fraction bits is exact
    }
    case InputClass::random_bits: return static_cast<std::uint32_t>(rng.next());
  }
  return 0;
}

// Draw weights per class (special is the fixed list, drawn again only rarely).
constexpr int kWeight[kInputClassCount] = {2, 14, 10, 16, 16, 10, 10, 12, 10};

}  // namespace

const char* class_name(InputClass c) {
  static constexpr const char* kNames[kInputClassCount] = {"special",  "exact",    "near_exact",
                                                           "tie",      "near_tie", "subnormal",
                                                           "overflow", "in_range", "random_bits"};
  return kNames[static_cast<int>(c)];
}

std::vector<CodecInput> f32_codec_inputs(Format format, std::uint64_t seed, std::size_t count) {
  const ValueLine line = value_line(format);
  const std::vector<std::uint32_t> specials = special_inputs(line);
  std::vector<CodecInput> out;
  std::unordered_set<std::uint32_t> seen;
  for (std::uint32_t s : specials) {
    if (out.size() < count && seen.insert(s).second) out.push_back({s, InputClass::special});
  }
  int total_weight = 0;
  for (int w : kWeight) total_weight += w;
  SplitMix64 rng{seed};
  for (std::size_t tries = 0; out.size() < count && tries < 100 * count; ++tries) {
    int r = static_cast<int>(rng.below(static_cast<std::uint64_t>(total_weight))), c = 0;
    while (r >= kWeight[c]) r -= kWeight[c++];
    const std::uint32_t bits = draw(static_cast<InputClass>(c), line, specials, rng);
    if (seen.insert(bits).second) out.push_back({bits, static_cast<InputClass>(c)});
  }
  return out;
}

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
