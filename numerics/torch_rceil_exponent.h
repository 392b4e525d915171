// The E8M0 exponent of torchao's RCEIL scale under torch (torchao 0.18 _to_mx_rceil, eager):
// e = clamp(ceil(log2(descale)), -127, 127) + 127 with torch's f32 log2 (docs/recipes.md), as the
// log2 definition and as a per-binade threshold table built from it, equal on every f32 descale
// (proptests/numerics/scale/rceil_exponent_test.cpp sweeps all 2^32 patterns).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace fp8ref::detail {

// torch.log2 of an f32 (CUDA log2f, CPU Sleef): modelled as log2 rounded once to f32. What
// matters is that near a power of two the result rounds to the integer: for d = 2^k (1 + 2^-23)
// the f32 log2 is k (|k| >= 2), so torch's ceil(log2(d)) is k where the exact value gives k + 1,
// and for d = 2^k (1 - 2^-24) floor(log2(d)) is k, not k - 1 (seen on the GPU machine, torch 2.11).
inline float torch_log2_f32(float d) {
  return static_cast<float>(std::log2(static_cast<double>(d)));
}

// The definition: e = isnan ? 0xFF : isinf ? 0xFE : 0 ? 0x00 : clamp(ceil(log2 d), +-127) + 127.
// descale = |amax| / max_pos, so it is never negative except -0 (a negative finite descale has no
// defined code: its log2 is NaN).
inline std::uint8_t torch_rceil_e8m0_log2(float descale) {
  if (std::isnan(descale)) return 0xFF;
  if (std::isinf(descale)) return 0xFE;
  if (descale == 0.0f) return 0;
  const float c = std::ceil(torch_log2_f32(descale));
  return static_cast<std::uint8_t>((c < -127.0f ? -127.0f : (c > 127.0f ? 127.0f : c)) + 127.0f);
}

// On one binade of d (f32 exponent field f; f = 0 holds the subnormals), the definition takes two
// codes at most, `lo` on [first pattern, last_lo] and `hi` above. For f >= 1, d in [2^k, 2^(k+1)):
// f32(log2 d) is k at d = 2^k and never decreases with d (adjacent f32 inputs differ in log2 by
// about 2^-23 / ln 2, far more than the f64 log2's error, and rounding to f32 keeps order) and
// stays <= k + 1, so the ceiling is k up to some d and k + 1 after it; the clamp keeps that
// order. For f = 0 every ceiling is <= -126, so the clamp leaves codes 0 and 1 in that order.
struct TorchRceilBinade {
  std::uint32_t last_lo;  // the largest pattern of the binade whose code is lo
  std::uint8_t lo, hi;
};

// The 255 binades of finite positive f32 (exponent fields 0..254), each split by binary search
// with the definition itself; the threshold test checks the result on every pattern.
inline std::array<TorchRceilBinade, 255> torch_rceil_binades_from_log2() {
  std::array<TorchRceilBinade, 255> t{};
  const auto code = [](std::uint32_t b) { return torch_rceil_e8m0_log2(std::bit_cast<float>(b)); };
  for (std::uint32_t f = 0; f < 255; ++f) {
    std::uint32_t lo_b = f == 0 ? 1u : f << 23, hi_b = (f << 23) | 0x7FFFFFu;
    const std::uint8_t lo = code(lo_b), hi = code(hi_b);
    if (lo == hi) {
      t[f] = {hi_b, lo, hi};
      continue;
    }
    while (hi_b - lo_b > 1) {  // code(lo_b) == lo, code(hi_b) != lo
      const std::uint32_t mid = lo_b + (hi_b - lo_b) / 2;
      (code(mid) == lo ? lo_b : hi_b) = mid;
    }
    t[f] = {lo_b, lo, hi};
  }
  return t;
}

inline const std::array<TorchRceilBinade, 255>& torch_rceil_binades() {
  static const std::array<TorchRceilBinade, 255> table = torch_rceil_binades_from_log2();
  return table;
}

// The same code by one compare against its binade's threshold (quantize's per-block scale: no
// log2 call). +0 is in binade 0 below its threshold (code 0); NaN, Inf and negative patterns go to
// the definition.
inline std::uint8_t torch_rceil_e8m0_threshold(float descale) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(descale);
  if (b >= 0x7F800000u) return torch_rceil_e8m0_log2(descale);
  const TorchRceilBinade& t = torch_rceil_binades()[b >> 23];
  return b <= t.last_lo ? t.lo : t.hi;
}

}  // namespace fp8ref::detail
