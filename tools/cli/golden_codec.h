// Generators of the codec golden files (`fp8-check golden gen-codec`): TestFloat-style hex tables
// and one safetensors case file per format. Inputs are a class-weighted, seeded set of f32
// patterns aimed at each format's decision points (TestFloat genCases / docs/design.md §20: ties,
// subnormal boundaries, max±ulp, overflow, NaN/Inf, ±0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "numerics/profile.h"

namespace fp8ref::cli {

// Input classes; the generated set reports how often each was drawn (the RC_CLASSIFY analogue).
enum class InputClass : std::uint8_t {
  special,      // ±0, ±Inf, NaNs, f32 subnormal / min normal / max, format max and min subnormal
  exact,        // a finite value of the format (any rounding must return its code)
  near_exact,   // exact ± 1..3 f32 ulps (sticky bits only)
  tie,          // midpoint of two adjacent format values, incl. max + ulp/2 (the overflow edge)
  near_tie,     // tie ± 1..3 f32 ulps
  subnormal,    // |x| below twice the format's smallest normal (or 2^-120 for e8m0)
  overflow,     // |x| in (max, f32 max]
  in_range,     // log-uniform over the format's binades, random f32 fraction
  random_bits,  // uniform 32-bit patterns
};
inline constexpr int kInputClassCount = 9;
const char* class_name(InputClass c);

struct CodecInput {
  std::uint32_t bits;
  InputClass cls;
};

// `count` distinct f32 patterns for `format`: the fixed special list first, then weighted seeded
// draws (splitmix64). Identical for every profile, so tables of one format align line by line.
std::vector<CodecInput> f32_codec_inputs(Format format, std::uint64_t seed, std::size_t count);
std::map<std::string, std::uint64_t> class_counts(const std::vector<CodecInput>& inputs);

// "3F800000 38\n" per input: uppercase hex, f32 pattern then the code.
std::string encode_table_hex(const ProfileCodec& codec, const std::vector<CodecInput>& inputs);
// "38 3FF0000000000000\n" for all 256 codes: the code then the f64 pattern of its value.
std::string decode_table_hex(Format format);
// safetensors bytes: tensor "input" (F32) and one tensor per profile (the format's dtype) holding
// each profile's natural-rounding cast of the inputs; __metadata__ {"generator": command}.
std::string cast_cases_safetensors(Format format, const std::vector<CodecInput>& inputs,
                                   const std::string& command);

}  // namespace fp8ref::cli
