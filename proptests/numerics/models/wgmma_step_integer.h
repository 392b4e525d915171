// A second implementation of the hopper_wgmma step (docs/design.md §10), written on integer
// significands and shifts as the model's definition reads (numerics/models/wgmma_step.h steps 1-6),
// where the library scales f32 products and truncates them by conversion. Test oracle only: the
// library never calls it.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "numerics/codec.h"
#include "numerics/models.h"

namespace fp8ref::test {

// Truncate |sig|·2^shift toward zero (shift may be negative), keep the sign; `inexact` is set
// when non-zero bits were discarded.
inline std::int64_t shift_truncate_ref(std::int64_t sig, int shift, bool& inexact) {
  const std::int64_t mag = sig < 0 ? -sig : sig;
  std::int64_t r = 0;
  if (shift >= 0) {
    r = mag << shift;
  } else if (shift <= -63) {
    inexact = inexact || mag != 0;
  } else {
    r = mag >> -shift;
    inexact = inexact || (r << -shift) != mag;
  }
  return sig < 0 ? -r : r;
}

inline Bounded wgmma_step_integer(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                  Format fb, float c) {
  constexpr int kF = kHopperFp8FractionBits;
  // 1. Specials: the f64 sum, NaN -> 0x7FFFFFFF.
  bool finite = std::isfinite(c);
  for (int k = 0; k < n; ++k)
    finite = finite && fp8_parts(fa, a[k]).finite && fp8_parts(fb, b[k]).finite;
  if (!finite) {
    double s = double(c);
    for (int k = 0; k < n; ++k) s += decode_f64(fa, a[k]) * decode_f64(fb, b[k]);
    return {std::isnan(s) ? std::bit_cast<float>(std::uint32_t{0x7FFFFFFF}) : float(s), 0.0};
  }
  // 2-3. Raw exponents; E over the non-zero terms.
  const F32Parts cp = f32_parts(c);
  const int ec = cp.exp + 23;
  int e_max = std::numeric_limits<int>::min(), terms = 0;
  if (cp.sig != 0) e_max = ec, ++terms;
  for (int k = 0; k < n; ++k) {
    const Fp8Parts x = fp8_parts(fa, a[k]), y = fp8_parts(fb, b[k]);
    if (x.sig == 0 || y.sig == 0) continue;
    e_max = std::max(e_max, x.exp + y.exp);
    ++terms;
  }
  if (terms == 0) return {0.0f, 0.0};
  // 4-5. Align, truncate each magnitude to 13 fraction bits below E, sum exactly.
  bool inexact = false;
  std::int64_t s = shift_truncate_ref(cp.sig, kF + ec - e_max - 23, inexact);
  for (int k = 0; k < n; ++k) {
    const Fp8Parts x = fp8_parts(fa, a[k]), y = fp8_parts(fb, b[k]);
    if (x.sig == 0 || y.sig == 0) continue;
    const int shift = kF + (x.exp + y.exp) - e_max - (x.man_bits + y.man_bits);
    s += shift_truncate_ref(std::int64_t(x.sig) * y.sig, shift, inexact);
  }
  const double term_bound = inexact ? terms * std::ldexp(1.0, e_max - kF) : 0.0;
  if (s == 0) return {0.0f, term_bound * kBoundSlack};
  // 6. Normalise, truncate to 14 significant bits (f32 subnormal range: exact).
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  int q = e_max - kF;
  const int width = 64 - std::countl_zero(mag);
  const int lead = q + width - 1;
  if (lead > 127) {
    const float inf = std::numeric_limits<float>::infinity();
    return {s < 0 ? -inf : inf, std::numeric_limits<double>::infinity()};
  }
  if (lead >= -126 && width > kF + 1) q += width - (kF + 1), mag >>= width - (kF + 1);
  const float z = float(std::ldexp(double(mag), q)) * (s < 0 ? -1.0f : 1.0f);
  return {z, (term_bound + std::fabs(double(z)) * std::ldexp(1.0, -kF)) * kBoundSlack};
}

}  // namespace fp8ref::test
