// The edge-class tables of docs/numerics.md: for each format, the byte every profile writes for
// each f32 edge input, and for the f16 / bf16 / f64 inputs whose handling the text documents.
// The test in this folder regenerates them and requires docs to match, so the documented bytes
// can never drift from the codec (which the sweeps hold to each library).
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/profile.h"

namespace fp8ref::docs {

struct EdgeInput {
  const char* label;
  float value;
};

inline std::vector<EdgeInput> fp8_edges(Format f) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<EdgeInput> e = {{"+0", 0.0f}, {"-0", -0.0f}};
  if (f == Format::e4m3) {
    e.insert(e.end(), {{"2^-10 (half min subnormal: tie)", 0x1p-10f},
                       {"1.5 * 2^-10", 0x1.8p-10f},
                       {"2^-9 (min subnormal)", 0x1p-9f},
                       {"2^-6 (min normal)", 0x1p-6f},
                       {"448 (max)", 448.0f},
                       {"464 (tie max / 480)", 464.0f},
                       {"464.0001", 464.00003f},
                       {"480", 480.0f},
                       {"-1000", -1000.0f}});
  } else {
    e.insert(e.end(), {{"2^-17 (half min subnormal: tie)", 0x1p-17f},
                       {"2^-16 (min subnormal)", 0x1p-16f},
                       {"2^-14 (min normal)", 0x1p-14f},
                       {"57344 (max)", 57344.0f},
                       {"61439", 61439.0f},
                       {"61440 (tie max / 2^16)", 61440.0f},
                       {"65536", 65536.0f},
                       {"-1e6", -1e6f}});
  }
  e.insert(e.end(), {{"+Inf", inf}, {"-Inf", -inf}, {"+NaN", nan}, {"-NaN", -nan}});
  return e;
}

inline std::vector<EdgeInput> e8m0_edges() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {{"+0", 0.0f},
          {"-0", -0.0f},
          {"1", 1.0f},
          {"-1", -1.0f},
          {"0.75", 0.75f},
          {"1.5", 1.5f},
          {"3", 3.0f},
          {"1.49", 1.49f},
          {"2^-127", 0x1p-127f},
          {"1.01 * 2^-127", 0x1.028f5cp-127f},
          {"2^-149", 0x1p-149f},
          {"1.5 * 2^127", 0x1.8p127f},
          {"f32 max", 0x1.fffffep127f},
          {"+Inf", inf},
          {"-Inf", -inf},
          {"NaN", nan}};
}

struct Column {
  Profile profile;
  Rounding rounding;
};

// e4m3 / e5m2: every profile at its natural rounding (rne). e8m0: the OCP profiles under both
// their floor (rtz, natural) and ties-to-even exponent (rne), both CUDA roundings (rz, rp), and
// the libraries' nearest.
inline std::vector<Column> columns(Format f) {
  if (f != Format::e8m0)
    return {{Profile::ocp_sat, Rounding::rne},        {Profile::ocp_nosat, Rounding::rne},
            {Profile::cuda_satfinite, Rounding::rne}, {Profile::cuda_nosat, Rounding::rne},
            {Profile::torch_2_11, Rounding::rne},     {Profile::ml_dtypes_0_6, Rounding::rne}};
  return {{Profile::ocp_sat, Rounding::rtz},        {Profile::ocp_sat, Rounding::rne},
          {Profile::ocp_nosat, Rounding::rtz},      {Profile::ocp_nosat, Rounding::rne},
          {Profile::cuda_satfinite, Rounding::rtz}, {Profile::cuda_satfinite, Rounding::rup},
          {Profile::cuda_nosat, Rounding::rtz},     {Profile::cuda_nosat, Rounding::rup},
          {Profile::torch_2_11, Rounding::rne},     {Profile::ml_dtypes_0_6, Rounding::rne}};
}

// One input of the non-f32 table: a bit pattern of `source`.
struct SourceInput {
  Source source;
  std::uint64_t bits;
  const char* what;
};

// The f16 / bf16 / f64 behaviours docs/numerics.md describes: torch 2.11 drops the sign of f16
// NaNs; cuda_* f64 keeps the NaN sign and (e5m2) the top two payload bits; torch and ml_dtypes
// round f64 through f32 (double rounding) where ocp_* and cuda_* round once; cuda_fp8.h has no
// f16 -> e8m0 cast and drops the sign of a bf16 e8m0 input; an f64 e8m0 floor never overflows.
inline std::vector<SourceInput> source_inputs(Format f) {
  if (f == Format::e8m0)
    return {{Source::f16, 0x3e00, "1.5"},
            {Source::bf16, 0xbf80, "-1"},
            {Source::f64, 0x3ff7fffffffff000, "1.5 - 2^-40 (f32: 1.5)"},
            {Source::f64, 0x47f0000000000000, "2^128 (f32: +Inf)"}};
  std::vector<SourceInput> in = {{Source::f16, 0x7e00, "+NaN"},
                                 {Source::f16, 0xfe00, "-NaN"},
                                 {Source::bf16, 0xffc0, "-NaN"},
                                 {Source::f64, 0x7ff8000000000000, "+NaN"},
                                 {Source::f64, 0xfff8000000000000, "-NaN"},
                                 {Source::f64, 0x7ffc000000000000, "+NaN, payload bit 50"},
                                 {Source::f64, 0xfffc000000000000, "-NaN, payload bit 50"}};
  if (f == Format::e4m3)
    in.push_back({Source::f64, 0x3ff1000000400000, "1 + 2^-4 + 2^-30 (f32: 1 + 2^-4, a tie)"});
  else
    in.push_back({Source::f64, 0x3ff2000000400000, "1 + 2^-3 + 2^-30 (f32: 1 + 2^-3, a tie)"});
  return in;
}

// The byte as two hex digits, or an em dash where the profile has no such cast.
inline std::string cell(const Column& c, Format f, Source s, std::uint64_t bits) {
  try {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%02x", make_codec(c.profile, f, s, c.rounding).encode(bits));
    return hex;
  } catch (const std::invalid_argument&) {
    return "\u2014";
  }
}

inline std::string table_head(const std::string& corner, const std::vector<Column>& cols) {
  std::ostringstream os;
  os << "| " << corner << " |";
  for (const Column& c : cols)
    os << " `" << to_string(c.profile) << "` " << to_string(c.rounding) << " |";
  os << "\n|---|";
  for (std::size_t i = 0; i < cols.size(); ++i) os << "---|";
  os << "\n";
  return os.str();
}

// Markdown table, f32 inputs, one row per edge input.
inline std::string edge_table(Format f) {
  const auto cols = columns(f);
  std::ostringstream os;
  os << table_head(std::string(to_string(f)) + " from f32", cols);
  for (const EdgeInput& in : f == Format::e8m0 ? e8m0_edges() : fp8_edges(f)) {
    os << "| " << in.label << " |";
    const auto bits = std::bit_cast<std::uint32_t>(in.value);
    for (const Column& c : cols) os << " " << cell(c, f, Source::f32, bits) << " |";
    os << "\n";
  }
  return os.str();
}

// Markdown table, f16 / bf16 / f64 inputs (source_inputs), one row per input.
inline std::string source_table(Format f) {
  const auto cols = columns(f);
  std::ostringstream os;
  os << table_head(std::string(to_string(f)) + " from", cols);
  for (const SourceInput& in : source_inputs(f)) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%0*llx", in.source == Source::f64 ? 16 : 4,
                  static_cast<unsigned long long>(in.bits));
    os << "| " << to_string(in.source) << " `" << hex << "` " << in.what << " |";
    for (const Column& c : cols) os << " " << cell(c, f, in.source, in.bits) << " |";
    os << "\n";
  }
  return os.str();
}

}  // namespace fp8ref::docs
