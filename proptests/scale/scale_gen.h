// Generators for the scale suites: class-weighted f32 values and tensors (ties, powers of two,
// subnormal and tiny magnitudes, huge, zero, NaN, Inf) and every valid recipe (DESIGN §4).
#pragma once

#include <rapidcheck.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "numerics/scale_recipe.h"

namespace fp8ref {

// How counterexamples print (RapidCheck finds these by argument-dependent lookup).
inline std::ostream& operator<<(std::ostream& os, const Recipe& r) {
  return os << to_string(r.kind) << ' ' << to_string(r.elem) << ' ' << to_string(r.runtime)
            << (r.pow2 ? " pow2" : "") << " eps=" << r.epsilon;
}
inline std::ostream& operator<<(std::ostream& os, Source s) { return os << to_string(s); }

}  // namespace fp8ref

namespace fp8ref::test {

inline std::vector<Recipe> all_recipes() {
  std::vector<Recipe> out;
  for (Runtime rt : {Runtime::torch_cpu, Runtime::torch_cuda}) {
    for (bool p : {false, true}) {
      out.push_back({RecipeKind::deepgemm, Format::e4m3, rt, p, 0.0f});
      for (Format f : {Format::e4m3, Format::e5m2})
        out.push_back({RecipeKind::torchao, f, rt, p, 0.0f});
    }
    for (Format f : {Format::e4m3, Format::e5m2})
      for (RecipeKind k :
           {RecipeKind::mx_floor, RecipeKind::mx_rceil, RecipeKind::mx_ceil, RecipeKind::mx_even})
        out.push_back({k, f, rt, false, 0.0f});
  }
  for (Format f : {Format::e4m3, Format::e5m2}) {
    for (bool p : {false, true}) {
      out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, 0.0f});
      out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, 1e-6f});
    }
    out.push_back({RecipeKind::mx_rceil, f, Runtime::cuda_kernel, false, 0.0f});
  }
  return out;
}

inline rc::Gen<Recipe> gen_recipe() { return rc::gen::elementOf(all_recipes()); }

inline float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// A finite f32 of a chosen class; `scale_exp` sets the block's magnitude.
inline rc::Gen<float> gen_finite(int scale_exp) {
  const float s = std::ldexp(1.0f, scale_exp);
  return rc::gen::weightedOneOf<float>({
      {6, rc::gen::map(rc::gen::inRange(-(1 << 23), 1 << 23),
                       [s](int v) { return float(v) / float(1 << 23) * s; })},
      {2, rc::gen::map(rc::gen::inRange(-12, 12),
                       [s](int e) {
                         const float v = std::ldexp(s, e);
                         return std::isinf(v) ? std::numeric_limits<float>::max() : v;
                       })},
      {1, rc::gen::just(0.0f)},
      {1, rc::gen::just(-0.0f)},
      {1, rc::gen::map(rc::gen::inRange(1, 1 << 20),
                       [](int v) { return from_bits(std::uint32_t(v)); })},
      {1, rc::gen::map(rc::gen::inRange(0, 1 << 23),  // just below / above a power of two
                       [s](int v) {
                         return from_bits((std::bit_cast<std::uint32_t>(s) & 0xFF800000u) |
                                          std::uint32_t(v % 2 ? v % 8 : 0x7FFFFF - v % 8));
                       })},
  });
}

inline rc::Gen<float> gen_any(int scale_exp) {
  return rc::gen::weightedOneOf<float>({
      {40, gen_finite(scale_exp)},
      {1, rc::gen::just(std::numeric_limits<float>::quiet_NaN())},
      {1, rc::gen::just(-std::numeric_limits<float>::quiet_NaN())},
      {1, rc::gen::just(std::numeric_limits<float>::infinity())},
      {1, rc::gen::just(-std::numeric_limits<float>::infinity())},
  });
}

// A tensor whose magnitude class varies: ordinary, tiny (amax subnormal), huge, all zero.
inline rc::Gen<std::vector<float>> gen_tensor(std::int64_t n, bool allow_nonfinite) {
  return rc::gen::mapcat(rc::gen::weightedOneOf<int>({{6, rc::gen::inRange(-20, 20)},
                                                      {1, rc::gen::inRange(-149, -126)},
                                                      {1, rc::gen::inRange(100, 127)},
                                                      {1, rc::gen::just(-1000)}}),
                         [n, allow_nonfinite](int e) {
                           if (e == -1000)
                             return rc::gen::container<std::vector<float>>(std::size_t(n),
                                                                           rc::gen::just(0.0f));
                           return rc::gen::container<std::vector<float>>(
                               std::size_t(n), allow_nonfinite ? gen_any(e) : gen_finite(e));
                         });
}

}  // namespace fp8ref::test
