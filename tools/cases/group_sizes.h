// Tokens per group of a grouped case (docs/design.md §8, docs/fuzz.md "Generators"): the size
// distributions that found real grouped-GEMM bugs, the sizes one draw's parameters (distribution,
// group count, total, alignment, a seed) expand to, and the coverage tags of a draw. The RapidCheck
// generator over these lives in tools/campaign/gen/group_sizes.h.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace fp8ref::cases {

enum class SizeDist : std::uint8_t {
  all_empty,          // every group empty, padding rows only
  zero_total,         // every group empty and no rows at all (M = 0)
  one_hot,            // one group holds every token
  interleaved_empty,  // empty and non-empty groups alternate
  align_edges,        // sizes k·align - 1, k·align, k·align + 1
  jitter,             // U(0.7, 1.3)·mean (a balanced router)
  zipf,               // Zipf-skewed: size ~ 1 / rank^s, s in [1, 2], ranks shuffled
  uniform,            // U(0, 2·mean), empties included
};
inline constexpr std::array kSizeDists = {
    SizeDist::all_empty,   SizeDist::zero_total, SizeDist::one_hot, SizeDist::interleaved_empty,
    SizeDist::align_edges, SizeDist::jitter,     SizeDist::zipf,    SizeDist::uniform};

constexpr const char* to_string(SizeDist d) {
  switch (d) {
    case SizeDist::all_empty: return "all_empty";
    case SizeDist::zero_total: return "zero_total";
    case SizeDist::one_hot: return "one_hot";
    case SizeDist::interleaved_empty: return "interleaved_empty";
    case SizeDist::align_edges: return "align_edges";
    case SizeDist::jitter: return "jitter";
    case SizeDist::zipf: return "zipf";
    case SizeDist::uniform: return "uniform";
  }
  return "?";
}

struct GroupSizes {
  SizeDist dist = SizeDist::uniform;
  std::int64_t align = 1;           // the alignment the sizes were drawn around
  std::vector<std::int64_t> sizes;  // tokens per group, G = sizes.size() >= 1
  std::int64_t tail = 0;            // padding rows after the last group
  bool operator==(const GroupSizes&) const = default;
  std::int64_t total() const {
    return std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0));
  }
  std::int64_t groups() const { return std::int64_t(sizes.size()); }
  // The cumulative group ends (the offsets a grouped GEMM takes): ends()[g] = sum of sizes[0..g].
  std::vector<std::int64_t> ends() const {
    std::vector<std::int64_t> e(sizes.size());
    std::partial_sum(sizes.begin(), sizes.end(), e.begin());
    return e;
  }
  std::int64_t empty_groups() const {
    return std::int64_t(std::count(sizes.begin(), sizes.end(), std::int64_t(0)));
  }
};

// The sizes of `dist` for G groups around `total` tokens, from `seed` (deterministic).
inline std::vector<std::int64_t> make_sizes(SizeDist dist, std::int64_t G, std::int64_t total,
                                            std::int64_t align, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> s(std::size_t(G), 0);
  const double mean = G > 0 ? double(total) / double(G) : 0.0;
  auto unit = [&rng] { return double(rng() >> 11) * 0x1.0p-53; };
  switch (dist) {
    case SizeDist::all_empty:
    case SizeDist::zero_total: break;
    case SizeDist::one_hot:
      s[std::size_t(rng() % std::uint64_t(G))] = std::max<std::int64_t>(total, 1);
      break;
    case SizeDist::interleaved_empty: {
      const std::uint64_t phase = rng() & 1;
      for (std::int64_t g = 0; g < G; ++g)
        if ((std::uint64_t(g) & 1) != phase)
          s[std::size_t(g)] = 1 + std::int64_t(unit() * 2.0 * mean);
      break;
    }
    case SizeDist::align_edges:
      for (auto& x : s) {
        const std::int64_t k = 1 + std::int64_t(rng() % 2);
        x = std::max<std::int64_t>(0, k * align + std::int64_t(rng() % 3) - 1);
      }
      break;
    case SizeDist::jitter:
      for (auto& x : s) x = std::max<std::int64_t>(0, std::llround(mean * (0.7 + 0.6 * unit())));
      break;
    case SizeDist::zipf: {
      const double expo = 1.0 + unit();
      std::vector<double> w(static_cast<std::size_t>(G));
      double sum = 0;
      for (std::int64_t g = 0; g < G; ++g)
        sum += w[std::size_t(g)] = std::pow(double(g + 1), -expo);
      std::shuffle(w.begin(), w.end(), rng);
      for (std::int64_t g = 0; g < G; ++g)
        s[std::size_t(g)] = std::int64_t(std::floor(double(total) * w[std::size_t(g)] / sum));
      break;
    }
    case SizeDist::uniform:
      for (auto& x : s) x = std::int64_t(unit() * 2.0 * mean + 0.5);
      break;
  }
  return s;
}

// Coverage tags of a draw: the distribution, and the edge classes it hit.
inline std::vector<std::string> size_tags(const GroupSizes& gs) {
  std::vector<std::string> t = {std::string("dist:") + to_string(gs.dist)};
  if (gs.groups() >= 65) t.push_back("groups:65+");
  if (gs.empty_groups() > 0 && gs.empty_groups() < gs.groups()) t.push_back("sizes:some_empty");
  bool edge = false;
  for (std::int64_t x : gs.sizes)
    if (gs.align > 1 && x > 0 &&
        (x % gs.align == 0 || x % gs.align == 1 || x % gs.align == gs.align - 1))
      edge = true;
  if (edge) t.push_back("sizes:align_edge");
  // The edges of one and two 128-row tiles (127..129, 255..257), drawn around alignment 128:
  // where grouped kernels switch tiles (nondeterminism at exactly 128 tokens was a real bug).
  bool edge128 = false, edge256 = false;
  for (std::int64_t x : gs.sizes) {
    edge128 = edge128 || (gs.align == 128 && x >= 127 && x <= 129);
    edge256 = edge256 || (gs.align == 128 && x >= 255 && x <= 257);
  }
  if (edge128) t.push_back("sizes:edge_128");
  if (edge256) t.push_back("sizes:edge_256");
  return t;
}

}  // namespace fp8ref::cases
