// MXFP4 / MXFP6 quantization (docs/recipes.md "MXFP4 / MXFP6"): e2m1, e2m3 or e3m2 elements in
// 1×32 blocks along a row with an E8M0 block scale, as torchao's to_mx computes them
// (prototype/mx_formats/mx_tensor.py): the MX FP8 recipes mx_floor / mx_ceil / mx_even / mx_rceil
// with the FP4 / FP6 element codecs. FLOOR, torchao's default:
//   max_abs = amax of the block (torch.amax: NaN propagates); eps = 2^-126 when max_abs == 0
//   p = floor(log2(max_abs + eps)) read off the f32 exponent field
//   e = clamp(p - emax_elem, -127, 128) + 127 (NaN max_abs: 255); emax_elem = 2 (e2m1, e2m3), 4
//   (e3m2); scale_fp32 = max(bits(e << 23), 2^-126)
//   element = RNE_elem(clamp(x / scale_fp32, ±max_elem)) (max 6, 7.5, 28; saturating cast)
// Partial blocks (cols % 32) take the amax over their real elements.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/scale_recipe.h"

namespace fp8ref {

inline constexpr int kMxSubbyteBlock = 32;

// Element codes one per byte (rows, cols) (FP6 in bits 5:0, FP4 in bits 3:0) and E8M0 codes
// (rows, ceil(cols / 32)).
struct MxSubbyteQuantized {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
};

namespace detail {

inline void require_mx_subbyte(Format elem, RecipeKind mode, Runtime rt) {
  if (elem != Format::e2m1 && elem != Format::e2m3 && elem != Format::e3m2)
    throw std::invalid_argument("mxfp4 / mxfp6 elements are e2m1, e2m3 or e3m2, not " +
                                std::string(to_string(elem)));
  if (!is_mx(mode))
    throw std::invalid_argument(
        "mxfp4 / mxfp6 scales are mx_floor, mx_ceil, mx_even or mx_rceil, "
        "not " +
        std::string(to_string(mode)));
  if (rt == Runtime::cuda_kernel && mode != RecipeKind::mx_rceil)
    throw std::invalid_argument(
        "mx_floor / mx_ceil / mx_even are torchao's to_mx: runtime "
        "torch_cpu or torch_cuda");
}

// One element: y = x / factor (FLOOR, CEIL, EVEN) or x * factor (RCEIL), clamped to +-max_pos
// (NaN passes), then RNE to the element format (torchao f32_to_f4 / f6 unpacked).
inline std::uint8_t mx_subbyte_element(float x, const BlockScale& s, Format f) {
  const float mx = elem_max(f);
  float y = s.divide ? x / s.factor : x * s.factor;
  if (!std::isnan(y)) y = y < -mx ? -mx : (y > mx ? mx : y);
  const EncodeSpec spec{Rounding::rne, Overflow::sat, NanEncoding::quiet_signed,
                        InfEncoding::saturate, 32};
  return encode(f, double(y), spec);
}

}  // namespace detail

// MXFP4 / MXFP6 with the E8M0 scale of `mode` (torchao ScaleCalculationMode FLOOR, CEIL, EVEN,
// RCEIL; the FP8 MX recipes' scale rules, numerics/scale_recipe.h, with the element's emax,
// max_pos and mbits) computed as `rt` computes it.
inline MxSubbyteQuantized mx_subbyte_quantize(Format elem, RecipeKind mode, Runtime rt,
                                              const float* x, std::int64_t rows,
                                              std::int64_t cols) {
  detail::require_mx_subbyte(elem, mode, rt);
  if (rows < 0 || cols < 0) throw std::invalid_argument("mx_subbyte_quantize: negative shape");
  const Recipe r{mode, elem, rt, false, 0.0f};
  const std::int64_t nb = (cols + kMxSubbyteBlock - 1) / kMxSubbyteBlock;
  MxSubbyteQuantized q{std::vector<std::uint8_t>(std::size_t(rows * cols)),
                       std::vector<std::uint8_t>(std::size_t(rows * nb))};
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t c0 = b * kMxSubbyteBlock, c1 = std::min(cols, c0 + kMxSubbyteBlock);
      float amax = 0.0f;
      for (std::int64_t j = c0; j < c1; ++j)
        amax = amax_fold(AmaxNan::propagate, amax, x[i * cols + j]);
      const BlockScale s = mode == RecipeKind::mx_rceil
                               ? detail::mx_rceil_scale(r, amax, Source::f32)
                               : detail::mx_scale_torchao(r, amax, Source::f32);
      q.scales[std::size_t(i * nb + b)] = s.e8m0;
      for (std::int64_t j = c0; j < c1; ++j)
        q.codes[std::size_t(i * cols + j)] = detail::mx_subbyte_element(x[i * cols + j], s, elem);
    }
  return q;
}

// torchao's default scale mode, FLOOR.
inline MxSubbyteQuantized mx_subbyte_quantize(Format elem, const float* x, std::int64_t rows,
                                              std::int64_t cols) {
  return mx_subbyte_quantize(elem, RecipeKind::mx_floor, Runtime::torch_cpu, x, rows, cols);
}

}  // namespace fp8ref
