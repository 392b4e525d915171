// Shape, scaling, model and recipe generators shared by the CPU and GPU suites (issue 6 item 1).
#pragma once

#include <rapidcheck.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics/accumulation_models.h"
#include "numerics/format.h"
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

}  // namespace fp8ref::gen
