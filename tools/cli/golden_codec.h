// Generators of the codec golden files (`fp8-check golden gen-codec`): TestFloat-style hex tables
// and one safetensors case file per format, over the class-weighted, seeded f32 inputs of
// tools/cases/input_classes_f32.h (TestFloat genCases / docs/design.md §14: ties, subnormal
// boundaries, max±ulp, overflow, NaN/Inf, ±0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cases/input_classes.h"
#include "numerics/profile.h"

namespace fp8ref::cli {

// The inputs: the class-weighted f32 set of the codec golden tables
// (tools/cases/input_classes_f32.h, one of the class-weighted input sets of cases/input_classes.h);
// the generated set reports how often each class was drawn (the RC_CLASSIFY analogue).
using InputClass = cases::F32InputClass;
using CodecInput = cases::F32Input;
using cases::f32_codec_inputs;
inline constexpr int kInputClassCount = cases::kF32InputClassCount;
inline const char* class_name(InputClass c) { return cases::to_string(c); }
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
