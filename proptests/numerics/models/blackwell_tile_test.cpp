// The batch step models (numerics/models/blackwell_step_tile.h) against MMA-Sim 2.1.1's golden
// steps (proptests/numerics/models/data/blackwell_step_mmasim.hex, an independent implementation):
// golden lines of one kind and format pair become the rows of A and the columns of B of a square
// tile with C[i][j] = c of line i, so that D[i][i] must be MMA-Sim's z of line i; the other
// elements mix operands of different lines and must equal the single-step model's bits. Every
// instruction-set copy this processor runs (baseline, avx2, avx512: the lanes of
// numerics/models/blackwell_tile_lanes.h) is checked, on the golden tiles and on random tiles of
// every shape class (partial lane blocks, odd row counts, short steps) with operands, scales and C
// drawn from classes that reach each branch of the single-step model (NaN / Inf, zero and extreme
// scales, subnormal, huge and special C, all-zero and cancelling operands).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
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
std::vector<std::uint32_t> tile(const Key& key, const std::vector<Line>& ls, int t, StepIsa isa) {
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
  if (kind == "f8f6f4") blackwell_f8f6f4_tile(a.data(), bt.data(), s, fa, fb, cf, df, isa);
  if (kind == "mxf8f6f4")
    blackwell_mxf8f6f4_tile(a.data(), bt.data(), s, fa, fb, sa.data(), sb.data(), cf, df, isa);
  if (kind == "mxf4")
    blackwell_mxf4_tile(a.data(), bt.data(), s, sa.data(), sb.data(), *parse_format(sf), block, cf,
                        df, isa);
  if (kind == "f8f6f4_f16") {
    std::vector<std::uint16_t> c16(c.begin(), c.end()), d16(c.size());
    blackwell_f8f6f4_tile_f16(a.data(), bt.data(), s, fa, fb, c16.data(), d16.data(), isa);
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

std::vector<StepIsa> available_isas() {
  std::vector<StepIsa> v{StepIsa::baseline};
  for (StepIsa isa : {StepIsa::avx2, StepIsa::avx512})
    if (step_isa_available(isa)) v.push_back(isa);
  return v;
}

TEST(BlackwellTile, DiagonalIsMmaSimAndEveryElementIsTheSingleStep) {
  const auto groups = read_golden();
  ASSERT_FALSE(groups.empty()) << "no golden lines in " << FP8REF_BLACKWELL_GOLDEN_FILE;
  for (StepIsa isa : available_isas()) {
    std::map<std::string, int> diagonal, off, bad;
    for (const auto& [key, lines] : groups)
      for (std::size_t at = 0; at < lines.size(); at += 16) {
        const std::vector<Line> ls(lines.begin() + long(at),
                                   lines.begin() + long(std::min(lines.size(), at + 16)));
        const int t = int(ls.size());
        const std::vector<std::uint32_t> d = tile(key, ls, t, isa);
        for (int i = 0; i < t; ++i)
          for (int j = 0; j < t; ++j) {
            const std::uint32_t got_z = d[std::size_t(i * t + j)];
            const std::uint32_t ref_z = i == j ? ls[i].z : step(key, ls[i], ls[j], ls[i].c);
            ++(i == j ? diagonal : off)[std::get<0>(key)];
            if (got_z != ref_z && ++bad[std::get<0>(key)] <= 5)
              ADD_FAILURE() << to_string(isa) << " " << std::get<0>(key) << " " << std::get<1>(key)
                            << " " << std::get<2>(key) << " tile row " << i << " column " << j
                            << ": expected " << std::hex << ref_z << ", tile " << got_z;
          }
      }
    for (const char* k : {"f8f6f4", "f8f6f4_f16", "mxf8f6f4", "mxf4"}) {
      EXPECT_GE(diagonal[k], 1000) << k;
      std::cout << to_string(isa) << " " << k << ": " << diagonal[k] << " MMA-Sim steps, " << off[k]
                << " mixed steps, " << bad[k] << " mismatches" << std::endl;
    }
  }
}

// ---- random tiles -------------------------------------------------------------------------------

const Format kElem[] = {Format::e4m3, Format::e5m2, Format::e3m2, Format::e2m3, Format::e2m1};

int code_bits(Format f) {
  return f == Format::e2m1 ? 4 : f == Format::e2m3 || f == Format::e3m2 ? 6 : 8;
}

// An operand row of k codes from one of the classes: uniform, mostly zero, subnormal-heavy,
// the largest magnitudes, one NaN / Inf code (FP8 only), all zero.
std::vector<std::uint8_t> random_row(std::mt19937_64& g, Format f, int k, int cls) {
  const int bits = code_bits(f), sign = 1 << (bits - 1);
  std::vector<std::uint8_t> v(static_cast<std::size_t>(k));
  for (auto& x : v) {
    int c = int(g() % (1u << bits));
    if (cls == 1 && g() % 4 != 0) c &= sign;                          // zeros
    if (cls == 2) c = (c & sign) | int(g() % 4);                      // subnormal and zero
    if (cls == 3) c |= (sign - 1) & ~7;                               // large
    if (f == Format::e4m3 && (c & 0x7F) == 0x7F && cls != 4) c ^= 1;  // keep finite
    if (f == Format::e5m2 && (c & 0x7C) == 0x7C && cls != 4) c &= ~0x40;
    if (cls == 5) c = 0;
    x = std::uint8_t(c);
  }
  if (cls == 4 && (f == Format::e4m3 || f == Format::e5m2))
    v[std::size_t(g() % std::uint64_t(k))] = f == Format::e4m3 ? 0x7F : (g() % 2 ? 0x7C : 0xFE);
  return v;
}

std::uint32_t random_c(std::mt19937_64& g) {
  const std::uint32_t sign = std::uint32_t(g() % 2) << 31;
  switch (g() % 9) {
    case 0: return sign;                                          // ±0
    case 1: return sign | std::uint32_t(g() % 0x800000);          // subnormal
    case 2: return sign | std::uint32_t((g() % 30 + 200) << 23);  // huge (u < -100)
    case 3: return g() % 2 ? 0x7F800000u | sign : 0x7FC00000u;    // Inf / NaN
    case 4: return sign | std::uint32_t((g() % 20 + 1) << 23) | std::uint32_t(g() % 0x800000);
    default: return sign | std::uint32_t((g() % 40 + 107) << 23) | std::uint32_t(g() % 0x800000);
  }
}

std::uint16_t random_c16(std::mt19937_64& g) {
  const std::uint16_t sign = std::uint16_t((g() % 2) << 15);
  switch (g() % 6) {
    case 0: return sign;
    case 1: return sign | std::uint16_t(g() % 0x400);
    case 2: return g() % 2 ? std::uint16_t(0x7C00 | sign) : std::uint16_t(0x7E00);
    default: return sign | std::uint16_t((g() % 30 + 1) << 10) | std::uint16_t(g() % 0x400);
  }
}

std::uint8_t random_scale(std::mt19937_64& g, Format sf) {
  const unsigned r = unsigned(g() % 16);
  if (sf == Format::e8m0)
    return r == 0  ? 0xFF
           : r < 3 ? std::uint8_t(g() % 8)
           : r < 5 ? std::uint8_t(247 + g() % 8)
                   : std::uint8_t(117 + g() % 21);
  const std::uint8_t v = r == 0 ? 0x7F : r < 3 ? 0 : std::uint8_t(g() % 0x7F);
  return std::uint8_t(v | (g() % 4 == 0 ? 0x80 : 0));  // the sign bit is ignored
}

struct RandomTile {
  int m, n, k;
  Format fa, fb, sf;
  int block;
  std::vector<std::uint8_t> a, bt, sa, sb;
  std::vector<std::uint32_t> c;
};

RandomTile random_tile(std::mt19937_64& g, int kind, int m, int n) {
  RandomTile t{m,  n, kind == 3 ? 64 : 32, Format::e2m1, Format::e2m1, Format::e8m0, 32, {}, {}, {},
               {}, {}};
  if (g() % 4 == 0) t.k = 1 + int(g() % std::uint64_t(t.k));  // a short step: zero products past k
  if (kind != 3) t.fa = kElem[g() % 5], t.fb = kElem[g() % 5];
  if (kind == 3) {
    const int form = int(g() % 3);
    t.block = form == 0 ? 32 : 16, t.sf = form == 2 ? Format::ue4m3 : Format::e8m0;
  }
  const int ns = kind == 3 ? 64 / t.block : kind == 2 ? 1 : 0;
  for (int i = 0; i < m; ++i) {
    const auto row = random_row(g, t.fa, t.k, int(g() % 16 < 10 ? 0 : g() % 6));
    t.a.insert(t.a.end(), row.begin(), row.end());
    for (int s = 0; s < ns; ++s) t.sa.push_back(random_scale(g, t.sf));
  }
  for (int j = 0; j < n; ++j) {
    auto row = random_row(g, t.fb, t.k, int(g() % 16 < 10 ? 0 : g() % 6));
    if (j > 0 && g() % 8 == 0)  // cancelling: the negation of a row of A where the formats match
      for (int k = 0; k < t.k && t.fa == t.fb; ++k)
        row[std::size_t(k)] = std::uint8_t(t.a[std::size_t(k)] ^ (1 << (code_bits(t.fb) - 1)));
    t.bt.insert(t.bt.end(), row.begin(), row.end());
    for (int s = 0; s < ns; ++s) t.sb.push_back(random_scale(g, t.sf));
  }
  for (int e = 0; e < m * n; ++e) t.c.push_back(kind == 1 ? random_c16(g) : random_c(g));
  return t;
}

std::uint32_t random_step(const RandomTile& t, int kind, int i, int j) {
  const std::uint8_t* a = t.a.data() + std::size_t(i) * t.k;
  const std::uint8_t* b = t.bt.data() + std::size_t(j) * t.k;
  const std::uint32_t c = t.c[std::size_t(i) * t.n + j];
  const float cf = std::bit_cast<float>(c);
  if (kind == 1) return blackwell_f8f6f4_step_f16(a, b, t.k, t.fa, t.fb, std::uint16_t(c));
  if (kind == 2)
    return std::bit_cast<std::uint32_t>(blackwell_mxf8f6f4_step(
        a, b, t.k, t.fa, t.fb, t.sa[std::size_t(i)], t.sb[std::size_t(j)], cf));
  if (kind == 3) {
    const std::size_t ns = std::size_t(64 / t.block);
    return std::bit_cast<std::uint32_t>(blackwell_mxf4_step(
        a, b, t.k, t.sa.data() + i * ns, t.sb.data() + j * ns, t.sf, t.block, cf));
  }
  return std::bit_cast<std::uint32_t>(blackwell_f8f6f4_step(a, b, t.k, t.fa, t.fb, cf));
}

std::vector<std::uint32_t> random_tile_eval(const RandomTile& t, int kind, StepIsa isa) {
  const BlackwellTileShape s{t.m, t.n, t.k};
  std::vector<std::uint32_t> d(t.c.size());
  auto* cf = reinterpret_cast<const float*>(t.c.data());
  auto* df = reinterpret_cast<float*>(d.data());
  if (kind == 0) blackwell_f8f6f4_tile(t.a.data(), t.bt.data(), s, t.fa, t.fb, cf, df, isa);
  if (kind == 1) {
    std::vector<std::uint16_t> c16(t.c.begin(), t.c.end()), d16(t.c.size());
    blackwell_f8f6f4_tile_f16(t.a.data(), t.bt.data(), s, t.fa, t.fb, c16.data(), d16.data(), isa);
    d.assign(d16.begin(), d16.end());
  }
  if (kind == 2)
    blackwell_mxf8f6f4_tile(t.a.data(), t.bt.data(), s, t.fa, t.fb, t.sa.data(), t.sb.data(), cf,
                            df, isa);
  if (kind == 3)
    blackwell_mxf4_tile(t.a.data(), t.bt.data(), s, t.sa.data(), t.sb.data(), t.sf, t.block, cf, df,
                        isa);
  return d;
}

TEST(BlackwellTile, RandomTilesOfEveryClassAreTheSingleStepOnEveryIsa) {
  std::mt19937_64 g(20261128);
  const int shapes[][2] = {{1, 1}, {5, 3}, {7, 19}, {16, 8}, {9, 33}, {12, 16}, {4, 40}, {21, 8}};
  for (StepIsa isa : available_isas()) {
    long steps = 0, bad = 0;
    for (int kind = 0; kind < 4; ++kind)
      for (int rep = 0; rep < 40; ++rep)
        for (const auto& mn : shapes) {
          const RandomTile t = random_tile(g, kind, mn[0], mn[1]);
          const std::vector<std::uint32_t> d = random_tile_eval(t, kind, isa);
          for (int i = 0; i < t.m; ++i)
            for (int j = 0; j < t.n; ++j, ++steps) {
              const std::uint32_t ref = random_step(t, kind, i, j),
                                  got = d[std::size_t(i * t.n + j)];
              if (ref != got && ++bad <= 10)
                ADD_FAILURE() << to_string(isa) << " kind " << kind << " " << to_string(t.fa) << " "
                              << to_string(t.fb) << " " << mn[0] << "x" << mn[1] << " (" << i
                              << ", " << j << ") c " << std::hex << t.c[std::size_t(i * t.n + j)]
                              << ": expected " << ref << ", tile " << got << std::dec;
            }
        }
    std::cout << to_string(isa) << ": " << steps << " random steps, " << bad << " mismatches"
              << std::endl;
    EXPECT_GT(steps, 100000);
  }
}

}  // namespace
}  // namespace fp8ref
