// layout.inverse (docs/fuzz.md "Oracle suites"): every byte of a serialised E8M0 scale layout
// read back through the layout's inverse map (byte position -> group, row, column or padding),
// written here from docs/recipes.md's layout table: the 128x4 blocked swizzle, DeepGEMM's packed
// int32 words (assembled from little-endian bytes), and the grouped 128x4 layouts of grouped
// GEMMs (M-grouped: each group its own run of 128-row tiles; K-grouped: each group's columns
// padded to 4). layout.offsets checks the forward closed form; this suite shares no code with it.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/laws/law_suites.h"
#include "numerics/scale_layout.h"
#include "numerics/scale_layout_grouped.h"

namespace fp8ref::fuzz {
namespace {

constexpr const char* kInverseLayouts[] = {"blocked_128x4", "deepgemm_packed",
                                           "blocked_grouped_rows", "blocked_grouped_cols"};
constexpr std::int64_t kNumInverse = 4;

constexpr std::int64_t kPadding = -1;
std::int64_t up4(std::int64_t x) { return (x + 3) / 4 * 4; }
std::int64_t up128(std::int64_t x) { return (x + 127) / 128 * 128; }

// Inside a 512-byte tile, byte `in` holds row 32·((in % 16) / 4) + in / 16, column in % 4.
struct TileSlot {
  std::int64_t r, c;
};
TileSlot tile_slot(std::int64_t in) { return {32 * ((in % 16) / 4) + in / 16, in % 4}; }

// The index (into a row-major (rows, cols) grid) that byte p of a blocked_128x4 serialisation of
// a (rows, cols) grid holds, or kPadding.
std::int64_t blocked_inverse(std::int64_t p, std::int64_t rows, std::int64_t cols) {
  const std::int64_t tiles_c = up4(cols) / 4, tile = p / 512;
  const TileSlot s = tile_slot(p % 512);
  const std::int64_t r = (tile / tiles_c) * 128 + s.r, c = (tile % tiles_c) * 4 + s.c;
  return r < rows && c < cols ? r * cols + c : kPadding;
}

struct Drawn {
  std::int64_t G, R, C;
  std::vector<std::int64_t> ends;  // grouped variants: group ends over rows or columns
  std::vector<std::uint8_t> codes;
};

Drawn draw(std::int64_t variant, std::mt19937_64& rng) {
  Drawn d;
  d.G = variant < 2 ? 1 + std::int64_t(rng() % 3) : 1;
  d.R = rng() % 2 ? 1 + std::int64_t(rng() % 300) : 128 * (1 + std::int64_t(rng() % 2)) + 1;
  d.C = 1 + std::int64_t(rng() % 11);
  if (variant >= 2) {  // groups over rows (2) or columns (3), empty ones included
    const std::int64_t total = variant == 2 ? d.R : d.C, n = 1 + std::int64_t(rng() % 5);
    for (std::int64_t g = 0; g + 1 < n; ++g)
      d.ends.push_back(std::int64_t(rng() % std::uint64_t(total + 1)));
    std::sort(d.ends.begin(), d.ends.end());
    d.ends.push_back(total);
  }
  d.codes.resize(std::size_t(d.G * d.R * d.C));
  for (auto& x : d.codes) x = std::uint8_t(1 + rng() % 254);
  return d;
}

// The grid index byte p holds, per variant.
std::int64_t inverse(std::int64_t variant, const Drawn& d, std::int64_t p) {
  if (variant == 0) {
    const std::int64_t per = up128(d.R) * up4(d.C), i = blocked_inverse(p % per, d.R, d.C);
    return i == kPadding ? i : (p / per) * d.R * d.C + i;
  }
  if (variant == 1) {  // word w = p / 4 is [g][c/4][r of align(R,4)]; byte j is column 4(c/4)+j
    const std::int64_t w = p / 4, j = p % 4, am = up4(d.R), kk = up4(d.C) / 4;
    const std::int64_t g = w / (kk * am), r = w % am, c = ((w / am) % kk) * 4 + j;
    return r < d.R && c < d.C ? (g * d.R + r) * d.C + c : kPadding;
  }
  if (variant == 2) {  // tile row t belongs to the group whose run of tiles covers it
    const std::int64_t tiles_c = up4(d.C) / 4, t = p / (512 * tiles_c);
    std::int64_t run = 0, start = 0;
    for (const std::int64_t e : d.ends) {
      const std::int64_t n = (e - start + 127) / 128;
      if (t < run + n) {
        const std::int64_t local = blocked_inverse(p - run * 512 * tiles_c, e - start, d.C);
        return local == kPadding ? kPadding : start * d.C + local;
      }
      run += n, start = e;
    }
    return kPadding;
  }
  // K-grouped: blocked over (up128(R), sum of the groups' widths padded to 4)
  std::int64_t width = 0, prev = 0;
  for (const std::int64_t e : d.ends) width += up4(e - prev), prev = e;
  const std::int64_t i = blocked_inverse(p, d.R, width);
  if (i == kPadding) return kPadding;
  const std::int64_t r = i / width, pc = i % width;
  std::int64_t at = 0;
  prev = 0;
  for (const std::int64_t e : d.ends) {
    if (pc < at + up4(e - prev)) return pc - at < e - prev ? r * d.C + prev + (pc - at) : kPadding;
    at += up4(e - prev), prev = e;
  }
  return kPadding;
}

std::vector<std::uint8_t> serialized(std::int64_t variant, const Drawn& d) {
  const ScaleGridE8m0 grid{d.G, d.R, d.C, d.codes};
  switch (variant) {
    case 0: return serialize(ScaleLayoutE8m0::blocked_128x4, grid);
    case 1: return serialize(ScaleLayoutE8m0::deepgemm_packed, grid);
    case 2: return serialize_blocked_grouped_rows(grid, d.ends);
    default: return serialize_blocked_grouped_cols(grid, d.ends);
  }
}

void check_inverse(std::int64_t variant, std::uint64_t seed, Fingerprint& fp) {
  std::mt19937_64 rng(seed);
  const Drawn d = draw(variant, rng);
  const std::vector<std::uint8_t> got = serialized(variant, d);
  fp.fold(got.data(), got.size());
  std::vector<bool> seen(d.codes.size(), false);
  for (std::int64_t p = 0; p < std::int64_t(got.size()); ++p) {
    const std::int64_t i = inverse(variant, d, p);
    const std::uint8_t want = i == kPadding ? 0 : d.codes[std::size_t(i)];
    if (i != kPadding) seen[std::size_t(i)] = true;
    if (got[std::size_t(p)] != want)
      throw Violation(std::string("layout ") + kInverseLayouts[variant] +
                      " (G=" + std::to_string(d.G) + ", R=" + std::to_string(d.R) +
                      ", C=" + std::to_string(d.C) + "): byte " + std::to_string(p) + " is " +
                      hex(got[std::size_t(p)]) + ", the inverse map says " + hex(want));
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      throw Violation(std::string("layout ") + kInverseLayouts[variant] + ": code " +
                      std::to_string(i) + " of the grid is at no byte");
}

}  // namespace

void add_layout_inverse_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"layout.inverse",
       "every byte of every E8M0 layout (grouped 128x4 included) == its inverse map",
       "cpu",
       300,
       {std::begin(kInverseLayouts), std::end(kInverseLayouts)},
       {}},
      kNumInverse, [](std::int64_t v) { return std::string(kInverseLayouts[v]); }, check_inverse));
}

}  // namespace fp8ref::fuzz
