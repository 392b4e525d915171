// The batch step models (numerics/models/blackwell_step_tile.h) against MMA-Sim 2.1.1's golden
// steps (proptests/numerics/models/data/blackwell_step_mmasim.hex, an independent implementation):
// golden lines of one kind and format pair become the rows of A and the columns of B of a square
// tile with C[i][j] = c of line i, so that D[i][i] must be MMA-Sim's z of line i; the other
// elements mix operands of different lines and must equal the single-step model's bits.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "numerics/models/blackwell_step_tile.h"

#ifndef FP8REF_BLACKWELL_GOLDEN_FILE
#error \
    "FP8REF_BLACKWELL_GOLDEN_FILE must name proptests/numerics/models/data/blackwell_step_mmasim.hex"
#endif

namespace fp8ref {
namespace {

std::vector<std::uint8_t> hex_bytes(const std::string& s) {
  std::vector<std::uint8_t> v;
  for (std::size_t i = 0; s != "-" && i + 1 < s.size(); i += 2)
    v.push_back(std::uint8_t(std::stoul(s.substr(i, 2), nullptr, 16)));
  return v;
}

struct Line {
  std::vector<std::uint8_t> a, b, sa, sb;
  std::uint32_t c, z;
};
using Key = std::tuple<std::string, std::string, std::string, std::string, int>;

std::map<Key, std::vector<Line>> read_golden() {
  std::ifstream in(FP8REF_BLACKWELL_GOLDEN_FILE);
  std::map<Key, std::vector<Line>> out;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream ss(text);
    std::string kind, fa, fb, sf, a, b, sa, sb, c, z;
    int block = 0;
    if (!(ss >> kind >> fa >> fb >> sf >> block >> a >> b >> sa >> sb >> c >> z))
      throw std::invalid_argument("malformed golden line: " + text);
    out[{kind, fa, fb, sf, block}].push_back(
        {hex_bytes(a), hex_bytes(b), hex_bytes(sa), hex_bytes(sb),
         std::uint32_t(std::stoul(c, nullptr, 16)), std::uint32_t(std::stoul(z, nullptr, 16))});
  }
  return out;
}

// One tile over lines [0, t) of a group: D bits (f32, or f16 in the low half).
std::vector<std::uint32_t> tile(const Key& key, const std::vector<Line>& ls, int t) {
  const auto& [kind, fa_s, fb_s, sf, block] = key;
  const Format fa = *parse_format(fa_s), fb = *parse_format(fb_s);
  const int k = int(ls[0].a.size());
  std::vector<std::uint8_t> a, bt, sa, sb;
  std::vector<std::uint32_t> c(std::size_t(t * t)), d(c.size());
  for (int i = 0; i < t; ++i) {
    a.insert(a.end(), ls[i].a.begin(), ls[i].a.end());
    bt.insert(bt.end(), ls[i].b.begin(), ls[i].b.end());
    sa.insert(sa.end(), ls[i].sa.begin(), ls[i].sa.end());
    sb.insert(sb.end(), ls[i].sb.begin(), ls[i].sb.end());
    for (int j = 0; j < t; ++j) c[std::size_t(i * t + j)] = ls[i].c;
  }
  const BlackwellTileShape s{t, t, k};
  auto* cf = reinterpret_cast<const float*>(c.data());
  auto* df = reinterpret_cast<float*>(d.data());
  if (kind == "f8f6f4") blackwell_f8f6f4_tile(a.data(), bt.data(), s, fa, fb, cf, df);
  if (kind == "mxf8f6f4")
    blackwell_mxf8f6f4_tile(a.data(), bt.data(), s, fa, fb, sa.data(), sb.data(), cf, df);
  if (kind == "mxf4")
    blackwell_mxf4_tile(a.data(), bt.data(), s, sa.data(), sb.data(), *parse_format(sf), block, cf,
                        df);
  if (kind == "f8f6f4_f16") {
    std::vector<std::uint16_t> c16(c.begin(), c.end()), d16(c.size());
    blackwell_f8f6f4_tile_f16(a.data(), bt.data(), s, fa, fb, c16.data(), d16.data());
    d.assign(d16.begin(), d16.end());
  }
  return d;
}

// The single-step model on row i of A and column j of B.
std::uint32_t step(const Key& key, const Line& x, const Line& y, std::uint32_t c) {
  const auto& [kind, fa_s, fb_s, sf, block] = key;
  const Format fa = *parse_format(fa_s), fb = *parse_format(fb_s);
  const int n = int(x.a.size());
  const float cf = std::bit_cast<float>(c);
  if (kind == "f8f6f4_f16")
    return blackwell_f8f6f4_step_f16(x.a.data(), y.b.data(), n, fa, fb, std::uint16_t(c));
  if (kind == "mxf8f6f4")
    return std::bit_cast<std::uint32_t>(
        blackwell_mxf8f6f4_step(x.a.data(), y.b.data(), n, fa, fb, x.sa[0], y.sb[0], cf));
  if (kind == "mxf4")
    return std::bit_cast<std::uint32_t>(blackwell_mxf4_step(
        x.a.data(), y.b.data(), n, x.sa.data(), y.sb.data(), *parse_format(sf), block, cf));
  return std::bit_cast<std::uint32_t>(blackwell_f8f6f4_step(x.a.data(), y.b.data(), n, fa, fb, cf));
}

TEST(BlackwellTile, DiagonalIsMmaSimAndEveryElementIsTheSingleStep) {
  const auto groups = read_golden();
  ASSERT_FALSE(groups.empty()) << "no golden lines in " << FP8REF_BLACKWELL_GOLDEN_FILE;
  std::map<std::string, int> diagonal, off, bad;
  for (const auto& [key, lines] : groups)
    for (std::size_t at = 0; at < lines.size(); at += 16) {
      const std::vector<Line> ls(lines.begin() + long(at),
                                 lines.begin() + long(std::min(lines.size(), at + 16)));
      const int t = int(ls.size());
      const std::vector<std::uint32_t> d = tile(key, ls, t);
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) {
          const std::uint32_t got_z = d[std::size_t(i * t + j)];
          const std::uint32_t ref_z = i == j ? ls[i].z : step(key, ls[i], ls[j], ls[i].c);
          ++(i == j ? diagonal : off)[std::get<0>(key)];
          if (got_z != ref_z && ++bad[std::get<0>(key)] <= 5)
            ADD_FAILURE() << std::get<0>(key) << " " << std::get<1>(key) << " " << std::get<2>(key)
                          << " tile row " << i << " column " << j << ": expected " << std::hex
                          << ref_z << ", tile " << got_z;
        }
    }
  for (const char* k : {"f8f6f4", "f8f6f4_f16", "mxf8f6f4", "mxf4"}) {
    EXPECT_GE(diagonal[k], 1000) << k;
    std::cout << k << ": " << diagonal[k] << " MMA-Sim steps, " << off[k] << " mixed steps, "
              << bad[k] << " mismatches" << std::endl;
  }
}

}  // namespace
}  // namespace fp8ref
