// SwiGLU of a merged gate/up activation (docs/recipes.md "SwiGLU"). See swiglu.h.
#include "reference/swiglu.h"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fp8ref::ref {
namespace {

float bf16_value(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

// RN to f32 of a non-negative f64, +Inf from the overflow threshold (2^128 - 2^103, the largest
// f32 plus half its ulp) on; static_cast of an f64 beyond the f32 range is undefined.
float to_f32(double v) { return v >= 0x1.ffffffp127 ? HUGE_VALF : static_cast<float>(v); }

}  // namespace

float exp_f32_correctly_rounded(float x) {
  if (std::isnan(x)) return x;
  const double y = std::exp(static_cast<double>(x));
  // The real value lies within 1 ulp of y (libm's bound); a second exp with 1 ulp of error lies
  // within 2 ulps of y. All of [y - 2 ulp, y + 2 ulp] rounding to one f32 (rounding is monotone)
  // makes that f32 the correctly rounded result for both.
  double lo = y, hi = y;
  for (int i = 0; i < 2; ++i) lo = std::nextafter(lo, 0.0), hi = std::nextafter(hi, HUGE_VAL);
  const float z = to_f32(y);
  if (to_f32(lo) != z || to_f32(hi) != z)
    throw std::domain_error(
        "exp_f32_correctly_rounded: f64 exp does not decide the f32 result of " +
        std::to_string(x));
  return z;
}

float silu_f32(float g) {
  const float e = exp_f32_correctly_rounded(-g);
  const float d = 1.0f + e;
  return g / d;
}

std::vector<float> swiglu_merged_bf16(std::span<const std::uint16_t> gate_up, std::int64_t rows,
                                      std::int64_t H) {
  if (rows < 0 || H < 0 || std::int64_t(gate_up.size()) != rows * 2 * H)
    throw std::invalid_argument("swiglu: merged gate/up has " + std::to_string(gate_up.size()) +
                                " elements, needs rows * 2H");
  std::vector<float> h(std::size_t(rows * H));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < H; ++c) {
      const float g = bf16_value(gate_up[std::size_t(r * 2 * H + c)]);
      const float u = bf16_value(gate_up[std::size_t(r * 2 * H + H + c)]);
      h[std::size_t(r * H + c)] = silu_f32(g) * u;
    }
  return h;
}

}  // namespace fp8ref::ref
