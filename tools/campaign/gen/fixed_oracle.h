// A fast independent oracle for grouped-GEMM suites: exact scaled dot products of FP8 codes in
// fixed point (products of two FP8 values are integers times 2^-32; per scale block they are
// summed exactly in __int128, blocks are combined exactly in Boost cpp_int), and round-to-nearest-
// even to f32 / bf16 / f16 written from the IEEE definition. Independent of numerics/ and
// reference/: code fields are decoded here, nothing of the code under test is called.
#pragma once

#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "numerics/format.h"

namespace fp8ref::gen {

using BigInt = boost::multiprecision::cpp_int;
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

// value = mant · 2^exp exactly; or a special.
struct ExactValue {
  enum Kind : std::uint8_t { finite, nan, pos_inf, neg_inf } kind = finite;
  BigInt mant = 0;
  int exp = 0;
};

struct CodeValue {
  int sig;  // signed significand (integer)
  int exp;  // value = sig · 2^exp
  bool nan, inf;
};
inline CodeValue decode_code(Format f, std::uint8_t code) {
  const bool e4 = f == Format::e4m3;
  const int p = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  const int mag = code & 0x7F, field = mag >> p, man = mag & ((1 << p) - 1);
  CodeValue v{0, 0, false, false};
  if (e4 && mag == 0x7F) return v.nan = true, v;
  if (!e4 && field == 31) return (man ? v.nan : v.inf) = true, v.sig = (code & 0x80) ? -1 : 1, v;
  v.sig = field ? (1 << p) + man : man;
  v.exp = (field ? field : 1) - bias - p;
  if (code & 0x80) v.sig = -v.sig;
  return v;
}

// The non-finite products seen in a dot product (NaN wins; +Inf and -Inf together are NaN).
struct NonFinite {
  bool pos_inf = false, neg_inf = false, nan = false;
};

// One block's exact sum Σ a_k·b_k for k in [k0, k1) in fixed point (scale 2^-32); a NaN or
// infinite product is recorded in `nf` and left out of the sum.
inline i128 exact_block_sum(Format fa, const std::uint8_t* a, std::int64_t a_stride, Format fb,
                            const std::uint8_t* b, std::int64_t b_stride, std::int64_t k0,
                            std::int64_t k1, NonFinite& nf) {
  i128 acc = 0;
  for (std::int64_t k = k0; k < k1; ++k) {
    const CodeValue x = decode_code(fa, a[k * a_stride]), y = decode_code(fb, b[k * b_stride]);
    if (x.nan || y.nan) {
      nf.nan = true;
      continue;
    }
    if (x.inf || y.inf) {
      if ((!x.inf && x.sig == 0) || (!y.inf && y.sig == 0)) {
        nf.nan = true;
        continue;
      }
      ((x.sig < 0) != (y.sig < 0) ? nf.neg_inf : nf.pos_inf) = true;
      continue;
    }
    acc += i128(x.sig * y.sig) * (i128(1) << (x.exp + y.exp + 32));  // no shift of negatives
  }
  return acc;
}

// A block's partial sum p (scale 2^-32) times its scale pair's product m·2^e.
struct ScaledPart {
  i128 p;
  std::int64_t m;
  int e;
};

// The block's part with the scale pair's product: two 24-bit significands, exactly.
inline ScaledPart scaled_part(i128 acc, float s0, float s1) {
  int e0 = 0, e1 = 0;
  const double m0 = std::frexp(double(s0), &e0), m1 = std::frexp(double(s1), &e1);
  const std::int64_t i0 = std::int64_t(std::ldexp(m0, 24)), i1 = std::int64_t(std::ldexp(m1, 24));
  return {acc, i0 * i1, e0 + e1 - 48 - 32};
}

// Σ parts, exactly, at the smallest exponent of the parts.
inline ExactValue sum_of_parts(const ScaledPart* parts, std::int64_t nb) {
  ExactValue out;
  int emin = std::numeric_limits<int>::max();
  for (std::int64_t blk = 0; blk < nb; ++blk) emin = std::min(emin, parts[blk].e);
  for (std::int64_t blk = 0; blk < nb; ++blk) {
    const ScaledPart& pt = parts[blk];
    if (pt.p == 0) continue;
    // |p| < 2^75 and m < 2^48: the product fits in a signed __int128.
    const i128 prod = pt.p * i128(pt.m);
    const bool neg = prod < 0;
    const u128 mag = neg ? u128(-prod) : u128(prod);
    BigInt v = BigInt(std::uint64_t(mag >> 64)) << 64;
    v += BigInt(std::uint64_t(mag));
    v <<= (pt.e - emin);
    if (neg)
      out.mant -= v;
    else
      out.mant += v;
  }
  out.exp = nb > 0 ? emin : 0;
  return out;
}

// Σ_b sa_b·sb_b·Σ_{k in block b} a_k·b_k with blocks of `block` along K (nsa == 1: one pair for
// all of K; nscales == 0: unscaled). a and b are strided code arrays (B read along K in
// either layout, wgrad's columns of dY and X).
inline ExactValue exact_scaled_dot(Format fa, const std::uint8_t* a, std::int64_t a_stride,
                                   Format fb, const std::uint8_t* b, std::int64_t b_stride,
                                   std::int64_t K, const float* sa, const float* sb,
                                   std::int64_t nscales, std::int64_t block) {
  NonFinite nf;
  // Per-block fixed-point partial sums, then combined at the smallest exponent.
  ScaledPart parts_small[64];
  std::vector<ScaledPart> parts_big;
  const std::int64_t nb = nscales <= 1 ? 1 : nscales;
  ScaledPart* parts = parts_small;
  if (nb > 64) parts_big.resize(std::size_t(nb)), parts = parts_big.data();
  for (std::int64_t blk = 0; blk < nb; ++blk) {
    const std::int64_t k0 = nscales <= 1 ? 0 : blk * block;
    const std::int64_t k1 = nscales <= 1 ? K : std::min(K, k0 + block);
    const i128 acc = exact_block_sum(fa, a, a_stride, fb, b, b_stride, k0, k1, nf);
    const float s0 = nscales == 0 ? 1.0f : sa[nscales <= 1 ? 0 : blk];
    const float s1 = nscales == 0 ? 1.0f : sb[nscales <= 1 ? 0 : blk];
    parts[blk] = scaled_part(acc, s0, s1);
  }
  ExactValue out;
  if (nf.nan || (nf.pos_inf && nf.neg_inf)) return out.kind = ExactValue::nan, out;
  if (nf.pos_inf) return out.kind = ExactValue::pos_inf, out;
  if (nf.neg_inf) return out.kind = ExactValue::neg_inf, out;
  return sum_of_parts(parts, nb);
}

// RNE of an exact value to a binary format with p significand bits (hidden bit included),
// minimum normal exponent emin and maximum exponent emax (IEEE semantics: overflow to Inf when
// the rounded magnitude reaches 2^(emax+1)); returns the value as a double (exact: p <= 24).
inline double round_to_format(const ExactValue& v, int p, int emin, int emax) {
  if (v.kind == ExactValue::nan) return std::numeric_limits<double>::quiet_NaN();
  if (v.kind == ExactValue::pos_inf) return INFINITY;
  if (v.kind == ExactValue::neg_inf) return -INFINITY;
  if (v.mant == 0) return 0.0;  // an exact zero sum is +0 (round-to-nearest of x + (-x))
  const bool neg = v.mant < 0;
  const BigInt mag = neg ? BigInt(-v.mant) : v.mant;
  const int n = int(boost::multiprecision::msb(mag));  // leading bit position
  const int lead = n + v.exp;
  const int q = std::max(lead, emin) - (p - 1);  // exponent of the last significand bit
  const int shift = q - v.exp;
  BigInt r = mag;
  if (shift > 0) {
    BigInt t = mag >> shift;
    const BigInt rem = mag - (t << shift);
    const BigInt half = BigInt(1) << (shift - 1);
    if (rem > half || (rem == half && (t & 1) != 0)) t += 1;
    r = t;
  } else {
    r = mag << -shift;
  }
  const double m = r.convert_to<double>();  // at most p + 1 bits: exact
  const double out = std::ldexp(m, q);
  if (out >= std::ldexp(1.0, emax + 1)) return neg ? -INFINITY : INFINITY;
  return neg ? -out : out;
}

inline double round_f32(const ExactValue& v) { return round_to_format(v, 24, -126, 127); }
inline double round_bf16(const ExactValue& v) { return round_to_format(v, 8, -126, 127); }
inline double round_f16(const ExactValue& v) { return round_to_format(v, 11, -14, 15); }

}  // namespace fp8ref::gen
