// nvfp4_quantize: the NVFP4 recipes of numerics/nvfp4_recipe.h applied to a (rows, cols) f32
// matrix: amax reductions (TE: fmaxf, NaN ignored; torch: NaN propagates), per-block scales, the
// element casts. Partial blocks (cols % 16, rows % 16) take the amax over real elements only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "numerics/nvfp4_recipe.h"

namespace fp8ref {

namespace detail {

struct Nvfp4Block {
  std::uint8_t scale;  // UE4M3 code (bit 7 clear)
  float factor;        // elements: x · factor (te, torchao_rcp) or x / factor (torchao)
  bool divide;
};

inline Nvfp4Block nvfp4_block(Nvfp4Recipe r, Runtime rt, float block_amax, float g) {
  if (r == Nvfp4Recipe::te) {  // g = S_enc
    const float s_dec_b = block_amax * (g * (1.0f / 6.0f));
    const std::uint8_t code = e4m3_code(s_dec_b, true, Runtime::cuda_kernel);
    const float s_dec = 1.0f / g;
    const float factor = std::fmin(1.0f / (float(decode_f64(Format::e4m3, code)) * s_dec), kFltMax);
    return {code, factor, false};
  }
  const float s = torch_div_scalar(rt, block_amax, 6.0f);
  if (r == Nvfp4Recipe::torchao_single_level) {
    const std::uint8_t code = e4m3_code(torch_clamp(s, 0x1p-6f, 448.0f), false, rt);
    return {code, float(decode_f64(Format::e4m3, code)), true};
  }
  // g = per_tensor_scale
  const std::uint8_t code = e4m3_code(torch_clamp(s / g, 0x1p-6f, 448.0f), false, rt);
  const float sv = float(decode_f64(Format::e4m3, code));
  if (r == Nvfp4Recipe::torchao_rcp)  // (1.0 / pts) / s: tensor ops, divisions on both runtimes
    return {code, (1.0f / g) / sv, false};
  return {code, g * sv, true};
}

}  // namespace detail

inline Nvfp4Quantized nvfp4_quantize(Nvfp4Recipe r, Runtime rt, const float* x, std::int64_t rows,
                                     std::int64_t cols, int block_rows) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("nvfp4_quantize: negative shape");
  if (block_rows != 1 && !(block_rows == 16 && r == Nvfp4Recipe::te))
    throw std::invalid_argument(std::string(to_string(r)) + ": blocks are 1x16" +
                                (r == Nvfp4Recipe::te ? " or 16x16" : ""));
  if ((r == Nvfp4Recipe::te) != (rt == Runtime::cuda_kernel))
    throw std::invalid_argument(
        std::string(to_string(r)) + ": runtime " + std::string(to_string(rt)) +
        (r == Nvfp4Recipe::te ? " (te runs as cuda_kernel)"
                              : " (torchao runs as torch_cpu or torch_cuda)"));
  const AmaxNan nanp = r == Nvfp4Recipe::te ? AmaxNan::ignore : AmaxNan::propagate;
  float amax = 0.0f;
  for (std::int64_t i = 0; i < rows * cols; ++i) amax = amax_fold(nanp, amax, x[i]);
  float g = 1.0f, global_decode = 1.0f;
  if (r == Nvfp4Recipe::te) {
    g = detail::te_global_encode(amax);
    global_decode = 1.0f / g;
  } else if (r == Nvfp4Recipe::torchao || r == Nvfp4Recipe::torchao_rcp) {
    g = detail::torch_div_scalar(rt, amax, 448.0f * 6.0f);
    global_decode = g;
  }
  const std::int64_t nb = (cols + 15) / 16;
  Nvfp4Quantized q{std::vector<std::uint8_t>(std::size_t(rows * cols)),
                   std::vector<std::uint8_t>(std::size_t(rows * nb)), global_decode};
  for (std::int64_t r0 = 0; r0 < rows; r0 += block_rows)
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t r1 = std::min(rows, r0 + block_rows), c0 = b * 16;
      const std::int64_t c1 = std::min(cols, c0 + 16);
      float bamax = 0.0f;
      for (std::int64_t i = r0; i < r1; ++i)
        for (std::int64_t j = c0; j < c1; ++j) bamax = amax_fold(nanp, bamax, x[i * cols + j]);
      const detail::Nvfp4Block blk = detail::nvfp4_block(r, rt, bamax, g);
      for (std::int64_t i = r0; i < r1; ++i) {
        q.scales[std::size_t(i * nb + b)] = blk.scale;
        for (std::int64_t j = c0; j < c1; ++j) {
          const float v = x[i * cols + j];
          const float y =
              blk.divide ? detail::torch_clamp(v / blk.factor, -6.0f, 6.0f) : v * blk.factor;
          q.codes[std::size_t(i * cols + j)] = detail::e2m1_code(y);
        }
      }
    }
  return q;
}

}  // namespace fp8ref
