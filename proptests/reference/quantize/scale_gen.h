// Generators for the scale suites: every valid recipe, and class-weighted f32 tensors with one
// magnitude class per row (ordinary, power of two, next to a recipe threshold, subnormal, huge,
// zero) and a few NaN / Inf elements, plus the per-block amax classification (docs/design.md §14).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "campaign/gen/choices.h"
#include "numerics/scale_recipe.h"
#include "reference/quantize.h"

namespace fp8ref {

// How counterexamples print (RapidCheck finds these by argument-dependent lookup).
inline std::ostream& operator<<(std::ostream& os, const Recipe& r) {
  return os << to_string(r.kind) << ' ' << to_string(r.elem) << ' ' << to_string(r.runtime)
            << (r.pow2 ? " pow2" : "") << " eps=" << r.epsilon;
}
inline std::ostream& operator<<(std::ostream& os, Source s) { return os << to_string(s); }

}  // namespace fp8ref

namespace fp8ref::test {

// The campaign's recipes (gen::all_recipes) and those it leaves out: TE's kernel with an epsilon,
// and its MXFP8 quantizer (mx_rceil cuda_kernel, both dimensions multiples of 32).
inline std::vector<Recipe> all_recipes() {
  std::vector<Recipe> out = gen::all_recipes();
  for (Format f : {Format::e4m3, Format::e5m2}) {
    for (bool p : {false, true}) out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, 1e-6f});
    out.push_back({RecipeKind::mx_rceil, f, Runtime::cuda_kernel, false, 0.0f});
  }
  return out;
}

inline rc::Gen<Recipe> gen_recipe() { return rc::gen::elementOf(all_recipes()); }

inline ref::BlockGeometry gen_geometry() {
  return *rc::gen::elementOf(std::vector<ref::BlockGeometry>{
      ref::BlockGeometry::tensorwise, ref::BlockGeometry::rowwise, ref::BlockGeometry::per_channel,
      ref::BlockGeometry::b1x128, ref::BlockGeometry::b128x1, ref::BlockGeometry::b128x128,
      ref::BlockGeometry::b1x32, ref::BlockGeometry::b32x1});
}

inline float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// A tensor extent in [1, hi): RapidCheck's size-scaled draw (small extents in early cases) with
// weight 2, or uniform in [128, hi) whatever the size with weight `large_weight`, so that blocks
// 128 long are often full (hi > 128).
inline rc::Gen<std::int64_t> gen_extent(std::int64_t hi, int large_weight) {
  return rc::gen::weightedOneOf<std::int64_t>(
      {{2, rc::gen::inRange<std::int64_t>(1, hi)},
       {large_weight, rc::gen::resize(100, rc::gen::inRange<std::int64_t>(128, hi))}});
}

// One finite element of a row whose values lie below s: mostly a uniform 23-bit mantissa times s;
// sometimes a zero of either sign, a power of two, a subnormal or a value next to a power of two,
// each below s / 2 (for normal s) so that they do not decide the row's amax.
inline float draw_element(std::mt19937_64& rng, float s) {
  const std::uint64_t u = rng();
  const float sign = (u >> 63) ? -1.0f : 1.0f;
  const std::uint32_t v = std::uint32_t(u >> 8) & 0x7FFFFFu;
  switch (u % 16) {
    case 0: return sign * 0.0f;
    case 1: return sign * std::ldexp(s, -2 - int(v % 12));
    case 2: return sign * from_bits(v % (1u << 20) + 1);
    case 3:
      if (s >= std::ldexp(1.0f, -120))  // just above or below a power of two in [s/4, s/2)
        return sign * from_bits((std::bit_cast<std::uint32_t>(s / 4) & 0xFF800000u) |
                                (v % 2 ? v % 8 : 0x7FFFFFu - v % 8));
      [[fallthrough]];
    default: return sign * float(v) / float(1 << 23) * s;
  }
}

// The amax of a row (or of a block whose largest row it is) by row class: ordinary (a random
// mantissa below 2^e), exactly 2^e, next to a recipe threshold (2^e one ulp up, max_pos * 2^k =
// 1.75 * 2^e and one ulp either side, the MX EVEN carry points 1.9375 / 1.875 * 2^e), subnormal,
// huge, or an all-zero row.
enum class RowClass { ordinary, pow2, threshold, subnormal, huge, zero };

inline float row_top(RowClass c, float s, std::uint64_t u) {
  const float sign = (u >> 63) ? -1.0f : 1.0f;
  if (c == RowClass::pow2) return sign * s;
  constexpr float kTops[] = {1.0f, 1.75f, 1.75f, 1.75f, 1.9375f, 1.875f};
  constexpr int kSteps[] = {1, 0, 1, -1, 0, 0};
  const int t = int(u % 6);
  return sign * from_bits(std::bit_cast<std::uint32_t>(kTops[t] * s) + std::uint32_t(kSteps[t]));
}

// An m x k row-major tensor with one magnitude class per row (so a block's amax class is that of
// its largest row: 1 x n blocks see every class, 128 x 128 blocks mostly ordinary ones), now and
// then an all-zero tensor or a band of zero rows, and — when allowed — a few NaN / +-Inf elements
// (none in 40% of tensors, at most 16), so most blocks have a finite amax. The row classes, bands
// and non-finite positions are RapidCheck draws (they shrink); the elements come from a seeded
// engine.
inline rc::Gen<std::vector<float>> gen_matrix(std::int64_t m, std::int64_t k,
                                              bool allow_nonfinite) {
  return rc::gen::exec([=] {
    const std::size_t n = std::size_t(m * k);
    std::vector<float> x(n, 0.0f);
    if (n == 0 ||
        *rc::gen::weightedOneOf<bool>({{11, rc::gen::just(false)}, {1, rc::gen::just(true)}}))
      return x;  // all zero
    std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
    const auto classes = *rc::gen::container<std::vector<RowClass>>(
        std::size_t(m), rc::gen::weightedOneOf<RowClass>({{10, rc::gen::just(RowClass::ordinary)},
                                                          {2, rc::gen::just(RowClass::pow2)},
                                                          {2, rc::gen::just(RowClass::threshold)},
                                                          {1, rc::gen::just(RowClass::subnormal)},
                                                          {1, rc::gen::just(RowClass::huge)},
                                                          {1, rc::gen::just(RowClass::zero)}}));
    for (std::int64_t i = 0; i < m; ++i) {
      const RowClass c = classes[std::size_t(i)];
      if (c == RowClass::zero) continue;
      const int e = c == RowClass::subnormal ? -127 - int(rng() % 14)
                    : c == RowClass::huge    ? 100 + int(rng() % 26)
                                             : int(rng() % 41) - 20;
      const float s = std::ldexp(1.0f, e);
      for (std::int64_t j = 0; j < k; ++j) x[std::size_t(i * k + j)] = draw_element(rng, s);
      if (c != RowClass::pow2 && c != RowClass::threshold) continue;
      // The top element: anywhere, or at a block edge (column 0, 31, 32, 127, 128, 255, k - 1).
      constexpr std::int64_t kEdges[] = {0, 31, 32, 127, 128, 255, 1 << 30};
      const std::uint64_t u = rng();
      const std::int64_t j =
          u % 3 ? std::int64_t(u % std::uint64_t(k)) : std::min(k - 1, kEdges[(u >> 32) % 7]);
      x[std::size_t(i * k + j)] = row_top(c, s, rng());
    }
    if (*rc::gen::weightedOneOf<bool>({{4, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {
      const std::int64_t r0 = *rc::gen::inRange<std::int64_t>(0, m),
                         r1 = *rc::gen::inRange<std::int64_t>(r0, m + 1);
      std::fill(x.begin() + r0 * k, x.begin() + r1 * k, 0.0f);  // a band of zero rows
    }
    if (!allow_nonfinite) return x;
    const int count = *rc::gen::weightedOneOf<int>({{4, rc::gen::just(0)},
                                                    {3, rc::gen::just(1)},
                                                    {2, rc::gen::inRange(2, 5)},
                                                    {1, rc::gen::inRange(5, 17)}});
    constexpr float kInf = std::numeric_limits<float>::infinity();
    const float kNan = std::numeric_limits<float>::quiet_NaN();
    for (int t = 0; t < count; ++t)
      x[*rc::gen::inRange<std::size_t>(0, n)] =
          *rc::gen::elementOf(std::vector<float>{kNan, -kNan, kInf, -kInf});
    return x;
  });
}

// The amax class of one block (as the recipe reduces it).
inline const char* amax_class(float a) {
  if (std::isnan(a)) return "NaN";
  if (std::isinf(a)) return "Inf";
  if (a == 0.0f) return "zero";
  if (a < std::ldexp(1.0f, -126)) return "subnormal";
  if (std::ldexp(1.0f, std::ilogb(a)) == a) return "pow2";
  return "ordinary";
}

// Tags the case with the amax classes of its full blocks of geometry g, e.g. "full blocks: NaN
// ordinary pow2" (partial blocks are left out; "no full block" when there is none).
inline void classify_block_amax(const std::vector<float>& x, std::int64_t m, std::int64_t k,
                                ref::BlockGeometry g, AmaxNan p) {
  const ref::BlockShape b = block_shape(g, m, k);
  std::set<std::string> seen;
  for (std::int64_t r0 = 0; r0 + b.rows <= m; r0 += b.rows)
    for (std::int64_t c0 = 0; c0 + b.cols <= k; c0 += b.cols) {
      float a = 0.0f;
      for (std::int64_t i = r0; i < r0 + b.rows; ++i)
        for (std::int64_t j = c0; j < c0 + b.cols; ++j)
          a = amax_fold(p, a, x[std::size_t(i * k + j)]);
      seen.insert(amax_class(a));
    }
  std::string tag = seen.empty() ? "no full block" : "full blocks:";
  for (const std::string& c : seen) tag += " " + c;
  RC_TAG(tag);
}

}  // namespace fp8ref::test
