// Shape, scaling, model and recipe generators shared by the CPU and GPU suites (docs/fuzz.md
// "Generators"):
// small GEMM extents (suite throughput) and, rarely, MoE-like ones; scalings; every accumulation
// model a scaling admits with split-K and epilogue; scale recipes (docs/design.md §6) for
// quantizers.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "numerics/format.h"
#include "numerics/models.h"
#include "numerics/scale_recipe.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::gen {

// Reduction / output extents: mostly multiples of the scale block (what kernels require), small
// for suite throughput, and sometimes a ragged tail (the reference accepts partial blocks).
struct ShapeLimits {
  std::int64_t max_k_blocks = 2;  // K up to max_k_blocks·128
  std::int64_t max_n = 48;
};
inline rc::Gen<std::int64_t> extent_k(ShapeLimits lim = {}) {
  return rc::gen::weightedOneOf<std::int64_t>({
      {6, rc::gen::map(rc::gen::inRange<std::int64_t>(1, lim.max_k_blocks + 1),
                       [](std::int64_t b) { return 128 * b; })},
      {2, rc::gen::map(rc::gen::inRange<std::int64_t>(1, 4 * lim.max_k_blocks + 1),
                       [](std::int64_t b) { return 32 * b; })},
      {1, rc::gen::inRange<std::int64_t>(1, 128 * lim.max_k_blocks + 1)},
  });
}
inline rc::Gen<std::int64_t> extent_n(ShapeLimits lim = {}) {
  return rc::gen::weightedOneOf<std::int64_t>({
      {4, rc::gen::map(rc::gen::inRange<std::int64_t>(1, lim.max_n / 16 + 1),
                       [](std::int64_t b) { return 16 * b; })},
      {1, rc::gen::inRange<std::int64_t>(1, lim.max_n + 1)},
  });
}

// MoE-like extents: K and N multiples of 128 up to 1024 (expert GEMMs of a scaled-down MoE layer)
// for up to 16 groups. Drawn rarely (`moe_shape`), and bounded so a case stays cheap: the B
// tensor G·N·K codes and the work tokens·N·K multiply-adds (the reference evaluates every
// element; the hardware models cost a step emulation per 32 products).
struct MoeShapeLimits {
  std::int64_t max_k = 1024, max_n = 1024;
  int max_groups = 16;
  std::int64_t max_tokens = 64;        // tokens over all groups
  std::int64_t max_b_codes = 1 << 22;  // G·N·K
  std::int64_t max_work = 1 << 24;     // tokens·N·K
  int one_in = 32;                     // a MoE-like shape in 1 of one_in cases
};
inline rc::Gen<bool> moe_shape(const MoeShapeLimits& lim = {}) {
  return rc::gen::weightedOneOf<bool>(
      {{lim.one_in - 1, rc::gen::just(false)}, {1, rc::gen::just(true)}});
}
// (K, N) of a MoE-like shape for G groups holding `tokens` tokens (rows of A that are computed).
inline rc::Gen<std::pair<std::int64_t, std::int64_t>> moe_extents(std::int64_t G,
                                                                  std::int64_t tokens,
                                                                  const MoeShapeLimits& lim = {}) {
  return rc::gen::exec([=] {
    const std::int64_t t = std::max<std::int64_t>(tokens, 1), g = std::max<std::int64_t>(G, 1);
    auto blocks = [](std::int64_t cap, std::int64_t most) {
      return std::clamp<std::int64_t>(cap / 128, 1, most / 128);
    };
    const std::int64_t kb =
        blocks(std::min(lim.max_work / (t * 128), lim.max_b_codes / (g * 128)), lim.max_k);
    const std::int64_t K = 128 * *rc::gen::inRange<std::int64_t>(1, kb + 1);
    const std::int64_t nb =
        blocks(std::min(lim.max_work / (t * K), lim.max_b_codes / (g * K)), lim.max_n);
    const std::int64_t N = 128 * *rc::gen::inRange<std::int64_t>(1, nb + 1);
    return std::pair<std::int64_t, std::int64_t>{K, N};
  });
}

inline rc::Gen<Format> element_format() { return rc::gen::element(Format::e4m3, Format::e5m2); }

inline rc::Gen<ref::Scaling> scaling() {
  return rc::gen::element(ref::Scaling::none, ref::Scaling::tensorwise, ref::Scaling::rowwise,
                          ref::Scaling::blockwise, ref::Scaling::mx);
}

// A model the reference accepts for `s`, with a split-K (slice count or slice length) where the
// model takes one.
inline rc::Gen<ref::ModelChoice> model_for(ref::Scaling s) {
  std::vector<AccumulationModel> ok;
  for (AccumulationModel m : kAllAccumulationModels)
    if (!(needs_constant_scales(m) && (s == ref::Scaling::blockwise || s == ref::Scaling::mx)))
      ok.push_back(m);
  return rc::gen::exec([ok, s] {
    const AccumulationModel m = *rc::gen::elementOf(ok);
    if (!accepts_split_k(m)) return ref::ModelChoice{m, 1};
    // The scalar-scale order, where the model and the scaling take one.
    const Epilogue ep = accepts_epilogue(m) && s != ref::Scaling::blockwise && s != ref::Scaling::mx
                            ? *rc::gen::element(Epilogue::model, Epilogue::scale_product,
                                                Epilogue::b_then_a, Epilogue::a_then_b)
                            : Epilogue::model;
    // S equal slices, or slices of L 128-blocks (SplitK::of_length).
    if (*rc::gen::weightedOneOf<bool>({{2, rc::gen::just(false)}, {1, rc::gen::just(true)}}))
      return ref::ModelChoice{m, 1, *rc::gen::inRange<std::int64_t>(1, 4), ep};
    return ref::ModelChoice{m, *rc::gen::inRange(1, 4), 0, ep};
  });
}

// Positive finite f32 decode scales: powers of two 2^-20..2^20 for MX (E8M0 values), else
// powers of two 2^-8..2^8 and arbitrary significands in [2^-8, 2^8).
inline float draw_scale(std::uint64_t r, bool pow2) {
  if (pow2) return std::ldexp(1.0f, int(r % 41) - 20);
  if ((r >> 40) % 3 == 0) return std::ldexp(1.0f, int(r % 17) - 8);
  return std::bit_cast<float>(std::uint32_t(0x3B800000u + (r >> 8) % (0x43800000u - 0x3B800000u)));
}

// Every scale recipe of docs/recipes.md in each runtime whose arithmetic it reproduces (deepgemm
// and torchao with and without power-of-two scales, TE's kernel, the four MX rules), both elements,
// that takes any shape: TE's MXFP8 kernel (mx_rceil cuda_kernel) is left to the scale suites
// (proptests/reference/quantize/scale_gen.h adds it and TE's epsilon).
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
  for (Format f : {Format::e4m3, Format::e5m2})
    for (bool p : {false, true}) out.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, 0.0f});
  return out;
}
inline rc::Gen<Recipe> recipe() { return rc::gen::elementOf(all_recipes()); }

inline bool is_mx_recipe(RecipeKind k) {
  return k == RecipeKind::mx_floor || k == RecipeKind::mx_rceil || k == RecipeKind::mx_ceil ||
         k == RecipeKind::mx_even;
}

}  // namespace fp8ref::gen
