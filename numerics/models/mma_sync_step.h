// The Hopper mma.sync FP8 step model `hopper_mma_sync_step` and its chain (docs/design.md §10),
// with a running per-element error bound against the exact result. Part of the accumulation
// models (numerics/models.h).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"
#include "numerics/plant.h"

namespace fp8ref {

// ---- hopper_mma_sync: mma.sync FP8 on sm_90 ---------------------------------------------------
// sm_90 has no FP8 mma.sync; nvcc emulates mma.sync.m16n8k32 e4m3/e5m2 -> f32 (CUTLASS #1986:
// "the compiler will use software emulation to convert the data and use fp16 tensor core").
// Exact interpretation implemented here, for one step D = sum_{k<32} a_k·b_k + C:
//  1. Every FP8 operand is converted to f16 (exact for all finite e4m3 / e5m2 values; e4m3
//     subnormals become normal f16, e5m2 subnormals stay f16 subnormals at exponent -14).
//  2. A packed FP8x4 register splits into two f16x2 registers, so HMMA #1 takes the products
//     with k mod 4 in {0, 1} and HMMA #2 those with k mod 4 in {2, 3} (16 each).
//  3. Each HMMA.16816.F32 follows MMA-Sim's Hopper mma model (arch_accum_fractional_bits
//     "Hopper": 25; output "f32"): specials as hopper_wgmma; terms (16 products with f16
//     exponents and unnormalised significands in [0, 4), plus its C) aligned to the largest
//     exponent of the non-zero terms and truncated toward zero to 25 fraction bits, summed
//     exactly, normalised and truncated (RZ) to 24 significant bits (f32; multiples of 2^-149
//     below 2^-126); an exact zero sum is +0; a leading exponent above 127 is ±Inf.
//  4. HMMA #1 runs from C = +0, HMMA #2 takes HMMA #1's result as its C, and the mma.sync C is
//     added last: D = RN_f32(C + T2) (a NaN result is 0x7FFFFFFF).
// Held to an H100 bit for bit by proptests/gpu/test_gpu_mma_sync.cpp (label gpu).
inline constexpr int kHopperHmmaFractionBits = 25;
inline constexpr int kMmaSyncK = 32;

namespace detail {

// value = sig·2^(exp - 10), |sig| < 2^11: the f16 an FP8 code converts to.
struct F16Parts {
  int sig;
  int exp;
};
constexpr F16Parts fp8_as_f16(Format f, std::uint8_t code) {
  const Fp8Parts x = fp8_parts(f, code);
  int mag = x.sig < 0 ? -x.sig : x.sig, e = x.exp;
  while (mag != 0 && mag < (1 << x.man_bits) && e > -14) mag <<= 1, --e;
  mag <<= 10 - x.man_bits;
  return {x.sig < 0 ? -mag : mag, e};
}

inline const F16Parts* f16_parts_table(Format f) {
  static const auto make = [](Format g) {
    std::array<F16Parts, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = fp8_as_f16(g, std::uint8_t(c));
    return t;
  };
  static const std::array<F16Parts, 256> e4m3 = make(Format::e4m3), e5m2 = make(Format::e5m2);
  return f == Format::e4m3 ? e4m3.data() : e5m2.data();
}

// One HMMA over the products k < n with (k mod 4) / 2 == half, and c (step 3 above).
inline Bounded hmma_f16_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                             Format fb, int half, float c) {
  std::uint8_t sa[16], sb[16];
  int m = 0;
  for (int k = 0; k < n; ++k)
    if ((k & 3) / 2 == half) sa[m] = a[k], sb[m] = b[k], ++m;
  float special;
  if (step_special(sa, sb, m, fa, fb, c, &special)) return {special, 0.0};
  constexpr int kF = kHopperHmmaFractionBits;
  const F32Parts cp = f32_parts(c);
  const int ec = cp.exp + 23;
  int e_max = std::numeric_limits<int>::min(), terms = 0;
  if (cp.sig != 0) e_max = ec, ++terms;
  F16Parts x[16], y[16];
  const F16Parts *ta = f16_parts_table(fa), *tb = f16_parts_table(fb);
  for (int i = 0; i < m; ++i) {
    x[i] = ta[sa[i]], y[i] = tb[sb[i]];
    if (x[i].sig == 0 || y[i].sig == 0) continue;
    e_max = std::max(e_max, x[i].exp + y[i].exp);
    ++terms;
  }
  if (terms == 0) return {0.0f, 0.0};
  bool inexact = false;
  std::int64_t s = shift_truncate(cp.sig, kF + ec - e_max - 23, inexact);
  for (int i = 0; i < m; ++i)
    if (x[i].sig != 0 && y[i].sig != 0)
      s += shift_truncate(std::int64_t(x[i].sig) * y[i].sig, kF + x[i].exp + y[i].exp - e_max - 20,
                          inexact);
  const double term_bound = inexact ? terms * exp2i(e_max - kF) : 0.0;
  if (s == 0) return {0.0f, term_bound * kBoundSlack};
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  int q = e_max - kF;
  const int width = 64 - std::countl_zero(mag);
  const int lead = q + width - 1;
  if (lead > 127) {
    const float inf = std::numeric_limits<float>::infinity();
    return {s < 0 ? -inf : inf, std::numeric_limits<double>::infinity()};
  }
  const int drop = lead >= -126 ? width - 24 : -149 - q;  // RZ to 24 bits / to 2^-149
  if (drop > 0) mag >>= drop, q += drop;
  const float z = float(double(mag) * exp2i(q)) * (s < 0 ? -1.0f : 1.0f);
  return {z, (term_bound + std::fabs(double(z)) * 0x1p-23 + 0x1p-149) * kBoundSlack};
}

}  // namespace detail

// One mma.sync FP8 step (n <= 32 products, k counted from the step's start) with its bound
// against the exact value of sum(a_k·b_k) + c.
inline Bounded hopper_mma_sync_step_bounded(const std::uint8_t* a, const std::uint8_t* b, int n,
                                            Format fa, Format fb, float c) {
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(mma_sync_c_first)) {
    const Bounded t1 = detail::hmma_f16_step(a, b, n, fa, fb, 0, c);
    return detail::hmma_f16_step(a, b, n, fa, fb, 1, t1.z);
  }
#endif
  const Bounded t1 = detail::hmma_f16_step(a, b, n, fa, fb, 0, 0.0f);
  const Bounded t2 = detail::hmma_f16_step(a, b, n, fa, fb, 1, t1.z);
  float d = c + t2.z;
  if (std::isnan(d)) d = std::bit_cast<float>(std::uint32_t{0x7FFFFFFF});
  return {d, t1.bound + t2.bound + f32_rounding_bound(d)};
}

inline float hopper_mma_sync_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                                  Format fb, float c) {
  return hopper_mma_sync_step_bounded(a, b, n, fa, fb, c).z;
}

// acc = step(a[k..k+32), b[k..k+32), acc) over k in [0, len), starting from c.
inline Bounded hopper_mma_sync_chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len,
                                     Format fa, Format fb, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kMmaSyncK) {
    const int n = int(std::min<std::int64_t>(kMmaSyncK, len - k));
    const Bounded st = hopper_mma_sync_step_bounded(a + k, b + k, n, fa, fb, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

}  // namespace fp8ref
