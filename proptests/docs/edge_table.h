// The edge-class table of docs/numerics.md: for each format, the byte every profile writes for
// each edge input. The test in this folder regenerates it and requires docs to match, so the
// documented bytes can never drift from the codec (which the sweeps hold to each library).
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <sstream>
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
  return {{"+0", 0.0f},          {"-0", -0.0f},         {"1", 1.0f},
          {"-1", -1.0f},         {"0.75", 0.75f},       {"1.5", 1.5f},
          {"3", 3.0f},           {"1.49", 1.49f},       {"2^-127", 0x1p-127f},
          {"1.01 * 2^-127", 0x1.028f5cp-127f},          {"2^-149", 0x1p-149f},
          {"1.5 * 2^127", 0x1.8p127f},                  {"f32 max", 0x1.fffffep127f},
          {"+Inf", inf},         {"-Inf", -inf},        {"NaN", nan}};
}

struct Column {
  Profile profile;
  Rounding rounding;
};

inline std::vector<Column> columns(Format f) {
  if (f != Format::e8m0)
    return {{Profile::ocp_sat, Rounding::rne},        {Profile::ocp_nosat, Rounding::rne},
            {Profile::cuda_satfinite, Rounding::rne}, {Profile::cuda_nosat, Rounding::rne},
            {Profile::torch_2_11, Rounding::rne},     {Profile::ml_dtypes_0_6, Rounding::rne}};
  return {{Profile::ocp_sat, Rounding::rtz},        {Profile::ocp_nosat, Rounding::rne},
          {Profile::cuda_satfinite, Rounding::rtz}, {Profile::cuda_satfinite, Rounding::rup},
          {Profile::cuda_nosat, Rounding::rtz},     {Profile::cuda_nosat, Rounding::rup},
          {Profile::torch_2_11, Rounding::rne},     {Profile::ml_dtypes_0_6, Rounding::rne}};
}

// Markdown table, f32 inputs, one row per edge input.
inline std::string edge_table(Format f) {
  const auto cols = columns(f);
  std::ostringstream os;
  os << "| " << to_string(f) << " from f32 |";
  for (const Column& c : cols) os << " `" << to_string(c.profile) << "` " << to_string(c.rounding) << " |";
  os << "\n|---|";
  for (std::size_t i = 0; i < cols.size(); ++i) os << "---|";
  os << "\n";
  for (const EdgeInput& in : f == Format::e8m0 ? e8m0_edges() : fp8_edges(f)) {
    os << "| " << in.label << " |";
    const auto bits = std::bit_cast<std::uint32_t>(in.value);
    for (const Column& c : cols) {
      const std::uint8_t z = make_codec(c.profile, f, Source::f32, c.rounding).encode(bits);
      char hex[8];
      std::snprintf(hex, sizeof hex, "%02x", z);
      os << " " << hex << " |";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace fp8ref::docs
