// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
// a fully specified 64-bit generator, so a seed gives the same draws on every platform. The one
// generator of the case draws, the class-weighted inputs (codec properties, golden codec tables,
// sweep samples) and the campaign's batch seeds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8ref::cases {

struct SplitMix64 {
  std::uint64_t state;
  // The mixing function alone: the output of a generator whose state was x (x advanced once).
  static constexpr std::uint64_t mix(std::uint64_t x) {
    std::uint64_t z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  constexpr std::uint64_t next() {
    const std::uint64_t z = mix(state);
    state += 0x9E3779B97F4A7C15ULL;
    return z;
  }
  // Uniform in [0, n) up to a modulo bias below n / 2^64 (negligible for the n used here).
  constexpr std::uint64_t below(std::uint64_t n) { return next() % n; }
  // Uniform in [lo, hi].
  constexpr std::uint64_t in(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
};

// A class index drawn from a table of integer weights: r uniform in [0, sum of weights), then the
// first index whose cumulative weight exceeds r. The class draw of every class-weighted input set
// (cases/input_classes.h); one call takes exactly one draw from `rng`.
template <class Weights>
constexpr int weighted_index(const Weights& weights, SplitMix64& rng) {
  std::uint64_t total = 0;
  for (const int w : weights) total += static_cast<std::uint64_t>(w);
  int r = static_cast<int>(rng.below(total)), c = 0;
  while (r >= weights[static_cast<std::size_t>(c)]) r -= weights[static_cast<std::size_t>(c++)];
  return c;
}

}  // namespace fp8ref::cases
