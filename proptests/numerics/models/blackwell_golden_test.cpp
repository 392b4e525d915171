// Golden vectors of the Blackwell tensor-core steps (docs/models.md "Blackwell"): outputs of
// MMA-Sim 2.1.1 (an independent implementation, run by
// proptests/fidelity/mmasim_blackwell_xcheck.py with torch on a CPU), one step per line `kind fa fb
// scale_format block a b sa sb c z` (hex codes, FP6 / FP4 in the low bits, element k = byte k).
// Every line must be reproduced bitwise by numerics/models/blackwell_step.h. The file path is compiled in
// (FP8REF_BLACKWELL_GOLDEN_FILE).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "numerics/models/blackwell_step.h"

#ifndef FP8REF_BLACKWELL_GOLDEN_FILE
#error "FP8REF_BLACKWELL_GOLDEN_FILE must name proptests/numerics/models/data/blackwell_step_mmasim.hex"
#endif

namespace fp8ref {
namespace {

std::vector<std::uint8_t> hex_bytes(const std::string& s) {
  std::vector<std::uint8_t> v;
  if (s == "-") return v;
  if (s.size() % 2) throw std::invalid_argument("odd hex length: " + s);
  for (std::size_t i = 0; i < s.size(); i += 2)
    v.push_back(std::uint8_t(std::stoul(s.substr(i, 2), nullptr, 16)));
  return v;
}

// The model's output bits for one golden line (f32 bits; kind f8f6f4_f16: f16 bits).
std::uint32_t evaluate(const std::string& kind, Format fa, Format fb, const std::string& sf,
                       int block, const std::vector<std::uint8_t>& a,
                       const std::vector<std::uint8_t>& b, const std::vector<std::uint8_t>& sa,
                       const std::vector<std::uint8_t>& sb, std::uint32_t c) {
  const float cf = std::bit_cast<float>(c);
  const int n = int(a.size());
  if (kind == "f8f6f4")
    return std::bit_cast<std::uint32_t>(blackwell_f8f6f4_step(a.data(), b.data(), n, fa, fb, cf));
  if (kind == "f8f6f4_f16")
    return blackwell_f8f6f4_step_f16(a.data(), b.data(), n, fa, fb, std::uint16_t(c));
  if (kind == "mxf8f6f4")
    return std::bit_cast<std::uint32_t>(
        blackwell_mxf8f6f4_step(a.data(), b.data(), n, fa, fb, sa.at(0), sb.at(0), cf));
  if (kind == "mxf4")
    return std::bit_cast<std::uint32_t>(blackwell_mxf4_step(
        a.data(), b.data(), n, sa.data(), sb.data(), *parse_format(sf), block, cf));
  throw std::invalid_argument("unknown kind " + kind);
}

TEST(BlackwellGolden, EveryMmaSimVectorIsReproducedBitwise) {
  std::ifstream in(FP8REF_BLACKWELL_GOLDEN_FILE);
  ASSERT_TRUE(in) << "cannot read " << FP8REF_BLACKWELL_GOLDEN_FILE;
  std::map<std::string, int> lines, bad;
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string kind, fa, fb, sf, a, b, sa, sb, c, z;
    int block = 0;
    ASSERT_TRUE(ss >> kind >> fa >> fb >> sf >> block >> a >> b >> sa >> sb >> c >> z)
        << "line " << no << " is malformed";
    const auto pa = parse_format(fa), pb = parse_format(fb);
    ASSERT_TRUE(pa && pb) << "line " << no;
    const std::uint32_t ref_z = std::uint32_t(std::stoul(z, nullptr, 16));
    const std::uint32_t got_z =
        evaluate(kind, *pa, *pb, sf, block, hex_bytes(a), hex_bytes(b), hex_bytes(sa),
                 hex_bytes(sb), std::uint32_t(std::stoul(c, nullptr, 16)));
    ++lines[kind];
    if (got_z != ref_z && ++bad[kind] <= 5)
      ADD_FAILURE() << "line " << no << ": mmasim " << z << ", fp8ref " << std::hex << got_z
                    << "\n  " << line;
  }
  for (const char* k : {"f8f6f4", "f8f6f4_f16", "mxf8f6f4", "mxf4"}) {
    EXPECT_GE(lines[k], 1000) << "too few golden vectors of kind " << k;
    std::cout << k << ": " << lines[k] << " vectors, " << bad[k] << " mismatches" << std::endl;
  }
}

}  // namespace
}  // namespace fp8ref
