// MXFP4 / MXFP6 quantization (docs/recipes.md "MXFP4 / MXFP6"): e2m1, e2m3 or e3m2 elements in
// 1×32 blocks along a row with an E8M0 block scale, as torchao's to_mx computes them with its
// default scale mode FLOOR (prototype/mx_formats/mx_tensor.py), the MX FP8 recipe mx_floor with
// the FP4 / FP6 element codecs:
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

namespace fp8ref {

inline constexpr int kMxSubbyteBlock = 32;

// Element codes one per byte (rows, cols) (FP6 in bits 5:0, FP4 in bits 3:0) and E8M0 codes
// (rows, ceil(cols / 32)).
struct MxSubbyteQuantized {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
};

namespace detail {

inline int mx_subbyte_emax(Format f) { return f == Format::e3m2 ? 4 : 2; }
inline float mx_subbyte_max(Format f) {
  return f == Format::e2m1 ? 6.0f : f == Format::e2m3 ? 7.5f : 28.0f;
}

// torchao to_mx FLOOR: the E8M0 code and the f32 scale the elements are divided by.
inline std::uint8_t mx_floor_e8m0(float max_abs, Format f, float& scale_fp32) {
  const float m = max_abs == 0.0f ? std::bit_cast<float>(0x00800000u) : max_abs;
  const int p = int((std::bit_cast<std::uint32_t>(m) >> 23) & 0xFF) - 127;
  int u = p - mx_subbyte_emax(f);
  u = u < -127 ? -127 : (u > 128 ? 128 : u);
  const std::uint32_t biased = std::isnan(max_abs) ? 255u : std::uint32_t(u + 127);
  scale_fp32 = std::bit_cast<float>(biased << 23);
  if (scale_fp32 < 0x1p-126f) scale_fp32 = 0x1p-126f;
  return std::uint8_t(biased);
}

inline std::uint8_t mx_subbyte_element(float x, float scale_fp32, Format f) {
  const float mx = mx_subbyte_max(f);
  float y = x / scale_fp32;
  if (!std::isnan(y)) y = y < -mx ? -mx : (y > mx ? mx : y);
  const EncodeSpec spec{Rounding::rne, Overflow::sat, NanEncoding::quiet_signed,
                        InfEncoding::saturate, 32};
  return encode(f, double(y), spec);
}

}  // namespace detail

inline MxSubbyteQuantized mx_subbyte_quantize(Format elem, const float* x, std::int64_t rows,
                                              std::int64_t cols) {
  if (elem != Format::e2m1 && elem != Format::e2m3 && elem != Format::e3m2)
    throw std::invalid_argument("mxfp4 / mxfp6 elements are e2m1, e2m3 or e3m2, not " +
                                std::string(to_string(elem)));
  if (rows < 0 || cols < 0) throw std::invalid_argument("mx_subbyte_quantize: negative shape");
  const std::int64_t nb = (cols + kMxSubbyteBlock - 1) / kMxSubbyteBlock;
  MxSubbyteQuantized q{std::vector<std::uint8_t>(std::size_t(rows * cols)),
                       std::vector<std::uint8_t>(std::size_t(rows * nb))};
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t c0 = b * kMxSubbyteBlock, c1 = std::min(cols, c0 + kMxSubbyteBlock);
      float amax = 0.0f;
      for (std::int64_t j = c0; j < c1; ++j) {
        const float a = std::fabs(x[i * cols + j]);
        amax = std::isnan(amax) || std::isnan(a) ? NAN : (a > amax ? a : amax);
      }
      float s = 1.0f;
      q.scales[std::size_t(i * nb + b)] = detail::mx_floor_e8m0(amax, elem, s);
      for (std::int64_t j = c0; j < c1; ++j)
        q.codes[std::size_t(i * cols + j)] = detail::mx_subbyte_element(x[i * cols + j], s, elem);
    }
  return q;
}

}  // namespace fp8ref
