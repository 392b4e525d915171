// Lane operations of the Blackwell tile lanes (numerics/models/blackwell_tile_lanes.h,
// numerics/models/blackwell_step_tile.h): W-lane vector types, masks, step 4 on exact f64 sums
// (RZ-FP32: the RNE conversion stepped one code toward zero where it went past the value; RNE-FP16:
// (x + M) - M at f16's quantum), C as a term, step 3's truncation of a shifted term (docs/models.md
// "Blackwell", Speed). Lane masks (-1 / 0) come from arithmetic shifts and are applied with bit
// operations: GCC 12 lowers vector comparisons and ?: on AVX-512 lanes piecewise (their results
// are mask registers); the only ?: left are plain max / min. No function takes or returns a lane
// vector by value (no vector ABI is involved).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "numerics/models/wgmma_step.h"  // FP8REF_ALWAYS_INLINE

namespace fp8ref {
namespace detail {

template <int W>
struct BwLanes {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef std::int32_t I __attribute__((vector_size(4 * W)));
  typedef std::uint32_t U __attribute__((vector_size(4 * W)));
  typedef std::uint16_t H16 __attribute__((vector_size(2 * W)));
  typedef double D __attribute__((vector_size(8 * W)));
};

// -1 where x != 0, else 0 (any int32 bits; computed unsigned so that nothing overflows).
template <class I>
FP8REF_ALWAYS_INLINE void mask_nonzero(I& m, const I& x) {
  typedef std::uint32_t UV __attribute__((vector_size(sizeof(I))));
  const UV u = (UV)x;
  m = (I)(u | -u) >> 31;
}
// out = m ? a : b, lane by lane, for a mask m of -1 / 0.
template <class I>
FP8REF_ALWAYS_INLINE void select(I& out, const I& m, const I& a, const I& b) {
  const I r = b ^ ((a ^ b) & m);
  out = r;
}
template <class To, class From>
FP8REF_ALWAYS_INLINE void bits_of(To& out, const From& x) {
  static_assert(sizeof(To) == sizeof(From));
  std::memcpy(&out, &x, sizeof out);
}

// Lanes [h·V, h·V + V) of a W-lane vector as a V-lane vector (V = W / 2: an f64 vector of V
// lanes is one register).
template <class Half, class Full>
FP8REF_ALWAYS_INLINE void half_of(const Full& x, int h, Half& out) {
  std::memcpy(&out, reinterpret_cast<const char*>(&x) + h * sizeof(Half), sizeof(Half));
}

// 2^e as an f32 vector, e in [-126, 127].
template <class I, class F>
FP8REF_ALWAYS_INLINE void pow2_lanes(const I& e, F& out) {
  const I bits = (e + 127) << 23;
  bits_of(out, bits);
}

// x·2^q in f64 (exact: x an integer below 2^53, q in [-200, 250]), 2^q as two f32 factors.
template <int V>
FP8REF_ALWAYS_INLINE void scale_f64_lanes(typename BwLanes<V>::D& x,
                                          const typename BwLanes<V>::I& q) {
  using I = typename BwLanes<V>::I;
  using F = typename BwLanes<V>::F;
  using D = typename BwLanes<V>::D;
  I q1 = q < -126 ? I{} - 126 : q;
  q1 = q1 > 127 ? I{} + 127 : q1;
  F f1, f2;
  pow2_lanes(q1, f1);
  pow2_lanes(I(q - q1), f2);
  x = x * __builtin_convertvector(f1, D) * __builtin_convertvector(f2, D);
}

// RZ-FP32 bits of the exact f64 v: the RNE conversion, one code toward zero where it went past v
// (v - RNE(v) is exact, and its product with v is negative then, +0 when v is exact); ±Inf from
// 2^128 (step 4: an exponent above 127), told by the sign of v·v - 2^256 (v·v rounds below 2^256
// when |v| < 2^128).
template <int V>
FP8REF_ALWAYS_INLINE void rz_f32_lanes(const typename BwLanes<V>::D& v,
                                       typename BwLanes<V>::I& bits) {
  using I = typename BwLanes<V>::I;
  using F = typename BwLanes<V>::F;
  using D = typename BwLanes<V>::D;
  const F hi = __builtin_convertvector(v, F);
  const D past = (v - __builtin_convertvector(hi, D)) * v + 0.0;  // an exact v: +0, not -0
  const F past_f = __builtin_convertvector(past, F),
          big_f = __builtin_convertvector(v * v - 0x1p256, F);
  I past_bits, big_bits;
  bits_of(bits, hi), bits_of(past_bits, past_f), bits_of(big_bits, big_f);
  bits += past_bits >> 31;
  const I inf = (bits & static_cast<std::int32_t>(0x80000000u)) | 0x7F800000;
  select(bits, ~(big_bits >> 31), inf, bits);
}

// Step 4, RZ-FP32 of the exact integer sum times 2^q into out[0, V): zero is +0.
template <int V>
FP8REF_ALWAYS_INLINE void finish_rz_f32_lanes(const typename BwLanes<V>::D& sum,
                                              const typename BwLanes<V>::I& q, float* out) {
  using I = typename BwLanes<V>::I;
  typename BwLanes<V>::D x = sum;
  scale_f64_lanes<V>(x, q);
  I bits, nonzero;
  rz_f32_lanes<V>(x, bits);
  mask_nonzero(nonzero, I(bits & 0x7FFFFFFF));
  bits &= nonzero;  // -0 -> +0
  std::memcpy(out, &bits, sizeof bits);
}

// Step 4 with an f16 accumulator, RNE-FP16 of x = sum·2^q (exact in f64), in f64: with e the
// exponent of x, at least -14 (f16's subnormals share the quantum 2^-24), M = 1.5·2^(e + 42) has
// the quantum 2^(e - 10) of f16's binade e, and x + M stays in M's binade (|x| < 2^(e + 1)), so
// (x + M) - M is x rounded to f16's precision, ties to even, exactly; that value is an f16 value,
// or 2^16 and above (±Inf, i.e. from 65520 on); its f16 bits are read off its f32 bits. Zero is +0.
template <int V>
FP8REF_ALWAYS_INLINE void finish_rne_f16_lanes(const typename BwLanes<V>::D& sum,
                                               const typename BwLanes<V>::I& q,
                                               std::uint16_t* out) {
  using I = typename BwLanes<V>::I;
  using F = typename BwLanes<V>::F;
  using D = typename BwLanes<V>::D;
  typedef std::int64_t L __attribute__((vector_size(8 * V)));
  D x = sum;
  scale_f64_lanes<V>(x, q);
  L xb, e, mb;
  bits_of(xb, x);
  e = ((xb >> 52) & 0x7FF) - 1023;  // x is 0 or normal
  e = e < -14 ? L{} - 14 : e;
  mb = ((e + (1023 + 42)) << 52) | (std::int64_t{1} << 51);
  D m;
  bits_of(m, mb);
  const F y = __builtin_convertvector((x + m) - m, F);  // exact: 11 significant bits
  I yb, subnormal, nonzero;
  bits_of(yb, y);
  const I a = yb & 0x7FFFFFFF, sign = (yb >> 16) & 0x8000;
  I normal = (a >> 13) - ((127 - 15) << 10);  // re-biased (exact: 10 fraction bits)
  normal = normal > 0x7C00 ? I{} + 0x7C00 : normal;
  F small;
  bits_of(small, a);
  subnormal = (a - 0x38800000) >> 31;  // below 2^-14: a multiple of 2^-24 below 2^10 of them
  I h;
  select(h, subnormal, __builtin_convertvector(small * 0x1p24f, I), normal);
  mask_nonzero(nonzero, h);
  h |= sign & nonzero;
  typedef std::uint16_t H16 __attribute__((vector_size(2 * V)));
  const H16 h16 = __builtin_convertvector(h, H16);  // one narrowing, not V scalar stores
  std::memcpy(out, &h16, sizeof h16);
}

// sum (Add: sum +) the f64 of lanes [h·V, h·V + V) of x, V = W / 2 (an f64 vector of V lanes is
// one register): int32 or f32 lanes, exact in f64.
template <bool Add, int W, class X>
FP8REF_ALWAYS_INLINE void add_half_f64(const X& x, int h, typename BwLanes<W / 2>::D& sum) {
  using Half = std::conditional_t<std::is_same_v<X, typename BwLanes<W>::F>,
                                  typename BwLanes<W / 2>::F, typename BwLanes<W / 2>::I>;
  static_assert(sizeof(Half) * 2 == sizeof(X));
  Half x_h;
  half_of(x, h, x_h);
  if constexpr (Add)
    sum += __builtin_convertvector(x_h, typename BwLanes<W / 2>::D);
  else
    sum = __builtin_convertvector(x_h, typename BwLanes<W / 2>::D);
}

// Step 4's scaling exponent q = E - F of W lanes, clamped to [-200, 250] (scale_f64_lanes' range:
// every non-zero sum, an integer below 2^50, rounds to zero below it and overflows above it).
template <class I>
FP8REF_ALWAYS_INLINE void step4_exponent_lanes(const I& e_max, int fraction_bits, I& q) {
  q = e_max - fraction_bits;
  q = q < -200 ? I{} - 200 : q;
  q = q > 250 ? I{} + 250 : q;
}

// Step 4 on half h of a row of W lanes: the exact integer sum of the half times 2^q, rounded
// (CT float: RZ-FP32; CT uint16_t: RNE-FP16) into d[h·V, h·V + V).
template <int W, class CT>
FP8REF_ALWAYS_INLINE void finish_half_lanes(const typename BwLanes<W / 2>::D& sum,
                                            const typename BwLanes<W>::I& q, int h, CT* d) {
  constexpr int V = W / 2;
  typename BwLanes<V>::I q_h;
  half_of(q, h, q_h);
  if constexpr (std::is_same_v<CT, std::uint16_t>)
    finish_rne_f16_lanes<V>(sum, q_h, d + h * V);
  else
    finish_rz_f32_lanes<V>(sum, q_h, d + h * V);
}

// Step 3's truncation of a term sig·2^sh (sig an integer below 2^24 in magnitude, as an f32):
// trunc(sig·2^min(sh, 0)) through an f32 (exact: at most 24 bits), times 2^max(sh, 0) (exact:
// below 2^53 here, 24 significant bits).
template <class I, class F>
FP8REF_ALWAYS_INLINE void shifted_term_lanes(const F& sig, const I& sh, F& out) {
  I up = sh < 0 ? I{} : sh, down = sh > 0 ? I{} : sh;
  up = up > 100 ? I{} + 100 : up;
  down = down < -126 ? I{} - 126 : down;
  F p_up, p_down;
  pow2_lanes(up, p_up);
  pow2_lanes(down, p_down);
  out = __builtin_convertvector(__builtin_convertvector(sig * p_down, I), F) * p_up;
}

// C of W lanes as step 2's term: magnitude of the significand (24 bits; f16: 11 bits scaled to
// 24), exponent of its leading bit (subnormals at -126 / -14), and masks: negative, NaN / Inf.
template <int W, bool F16>
FP8REF_ALWAYS_INLINE void c_lanes(const std::conditional_t<F16, std::uint16_t, float>* c,
                                  typename BwLanes<W>::I& mag, typename BwLanes<W>::I& exp,
                                  typename BwLanes<W>::I& neg, typename BwLanes<W>::I& special) {
  using I = typename BwLanes<W>::I;
  I cu, normal, not_special;
  if constexpr (F16) {
    typename BwLanes<W>::H16 c16;
    std::memcpy(&c16, c, sizeof c16);
    cu = __builtin_convertvector(c16, I);
    const I field = (cu >> 10) & 0x1F, man = cu & 0x3FF;
    mask_nonzero(normal, field);
    mag = (man | (normal & 1024)) << 13;
    select(exp, normal, I(field - 15), I{} - 14);
    neg = (cu << 16) >> 31;
    mask_nonzero(not_special, I(field ^ 0x1F));
  } else {
    std::memcpy(&cu, c, sizeof cu);
    const I field = (cu >> 23) & 0xFF, man = cu & 0x7FFFFF;
    mask_nonzero(normal, field);
    mag = man | (normal & 0x800000);
    select(exp, normal, I(field - 127), I{} - 126);
    neg = cu >> 31;
    mask_nonzero(not_special, I(field ^ 0xFF));
  }
  special = ~not_special;
}

// Bit l set where lane l of the mask m is -1 (most passes have none: one OR over words first).
template <class I>
FP8REF_ALWAYS_INLINE std::uint32_t lane_bits(const I& m) {
  std::uint64_t words[sizeof(I) / 8], any = 0;
  std::memcpy(words, &m, sizeof words);
  for (std::size_t w = 0; w < sizeof(I) / 8; ++w) any |= words[w];
  if (any == 0) return 0;
  std::uint32_t bits = 0;
  for (int l = 0; l < int(sizeof(I) / 4); ++l) bits |= std::uint32_t(m[l] & 1) << l;
  return bits;
}

}  // namespace detail
}  // namespace fp8ref
