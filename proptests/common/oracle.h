// Slow, independent oracles for the reference-op suites: exact dot products in
// Boost.Multiprecision cpp_rational, and a round-to-nearest check by neighbour comparison
// (never by the rounding code under test). Generators for FP8 codes by class.
#pragma once

#include <rapidcheck.h>

#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "numerics/format.h"

namespace fp8ref::test {

using Rational = boost::multiprecision::cpp_rational;

// Exact rational value of a finite double.
inline Rational to_rational(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m·2^e, |m| in [0.5, 1)
  const auto sig = static_cast<std::int64_t>(std::ldexp(m, 53));
  Rational r(sig);
  const int sh = e - 53;
  if (sh >= 0)
    r *= Rational(boost::multiprecision::cpp_int(1) << sh);
  else
    r /= Rational(boost::multiprecision::cpp_int(1) << -sh);
  return r;
}

// Value of an FP8 code from its bit fields, written independently of the codec.
inline Rational fp8_rational(Format f, std::uint8_t code) {
  const int p = f == Format::e4m3 ? 3 : 2, bias = f == Format::e4m3 ? 7 : 15;
  const int field = (code & 0x7F) >> p, man = code & ((1 << p) - 1);
  const int sig = field ? (1 << p) + man : man;
  const int e = (field ? field : 1) - bias - p;
  Rational r(sig);
  if (e >= 0)
    r *= Rational(boost::multiprecision::cpp_int(1) << e);
  else
    r /= Rational(boost::multiprecision::cpp_int(1) << -e);
  return (code & 0x80) ? Rational(-r) : r;
}

// sum_kb sa_kb·sb_kb·sum_{k in kb} a_k·b_k, blocks of `block` (sa/sb of length ceil(K/block),
// or 1 for one pair over all of K).
inline Rational exact_dot_rational(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                   Format fa, Format fb, const std::vector<float>& sa,
                                   const std::vector<float>& sb, std::int64_t block = 128) {
  Rational total = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    const std::size_t kb = sa.size() == 1 ? 0 : std::size_t(k / block);
    total +=
        fp8_rational(fa, a[k]) * fp8_rational(fb, b[k]) * to_rational(sa[kb]) * to_rational(sb[kb]);
  }
  return total;
}

// Whether `got` (an f32 value, or a bf16 value when bf16) is RN-even of `x`: no neighbour is
// nearer, and on a tie got's last significand bit is even. Finite results only.
inline bool is_nearest_even(const Rational& x, float got, bool bf16) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(got);
  const std::uint32_t step = bf16 ? 0x10000u : 1u;
  auto value_of = [](std::uint32_t bits) {
    return to_rational(double(std::bit_cast<float>(bits)));
  };
  const Rational g = to_rational(double(got));
  const Rational d = abs(x - g);
  // Neighbours in value: toward zero and away from zero (same sign), or across zero.
  std::vector<Rational> neigh;
  if ((u & 0x7FFFFFFF) != 0)
    neigh.push_back(value_of(u - step));
  else
    neigh.push_back(-value_of(step));
  if ((u & 0x7FFFFFFF) + step < 0x7F800000u) neigh.push_back(value_of(u + step));
  if ((u & 0x7FFFFFFF) == 0) neigh.push_back(value_of(step));
  for (const Rational& n : neigh) {
    const Rational dn = abs(x - n);
    if (dn < d) return false;
    if (dn == d && (((u / step) & 1) != 0)) return false;
  }
  return true;
}

// Value of a finite binary16 pattern from its fields (independent of the code under test).
inline Rational f16_rational(std::uint16_t h) {
  const int field = (h >> 10) & 0x1F, man = h & 0x3FF;
  const int sig = field ? 1024 + man : man, e = (field ? field : 1) - 25;
  Rational r(sig);
  if (e >= 0)
    r *= Rational(boost::multiprecision::cpp_int(1) << e);
  else
    r /= Rational(boost::multiprecision::cpp_int(1) << -e);
  return (h & 0x8000) ? Rational(-r) : r;
}

// Whether binary16 `got` is x rounded to nearest-even (overflow: ±Inf iff |x| >= 65520).
inline bool is_nearest_even_f16(const Rational& x, std::uint16_t got) {
  const Rational limit(65520);
  if ((got & 0x7FFF) == 0x7C00) return (got & 0x8000) ? x <= -limit : x >= limit;
  if ((got & 0x7FFF) > 0x7C00 || abs(x) >= limit) return false;
  const Rational d = abs(x - f16_rational(got));
  std::vector<std::uint16_t> neigh;
  const std::uint16_t mag = got & 0x7FFF, sign = got & 0x8000;
  if (mag)
    neigh.push_back(std::uint16_t(sign | (mag - 1)));
  else
    neigh.push_back(std::uint16_t((sign ^ 0x8000) | 1));
  if (mag + 1 < 0x7C00) neigh.push_back(std::uint16_t(sign | (mag + 1)));
  for (std::uint16_t n : neigh) {
    const Rational dn = abs(x - f16_rational(n));
    if (dn < d || (dn == d && (got & 1))) return false;
  }
  return true;
}

// FP8 codes by class: zero, subnormal, normal near one, any finite, max.
inline rc::Gen<std::uint8_t> gen_finite_code(Format f) {
  const std::uint8_t max = f == Format::e4m3 ? 0x7E : 0x7B;
  const std::uint8_t sub_max = f == Format::e4m3 ? 0x07 : 0x03;
  const std::uint8_t one = f == Format::e4m3 ? 0x38 : 0x3C;
  auto with_sign = [](rc::Gen<std::uint8_t> g) {
    return rc::gen::apply([](std::uint8_t c, bool s) { return std::uint8_t(c | (s ? 0x80 : 0)); },
                          g, rc::gen::arbitrary<bool>());
  };
  return with_sign(rc::gen::weightedOneOf<std::uint8_t>({
      {1, rc::gen::just(std::uint8_t(0))},
      {2, rc::gen::inRange<std::uint8_t>(1, std::uint8_t(sub_max + 1))},
      {4, rc::gen::inRange<std::uint8_t>(std::uint8_t(one - 12), std::uint8_t(one + 12))},
      {6, rc::gen::inRange<std::uint8_t>(0, std::uint8_t(max + 1))},
      {1, rc::gen::just(std::uint8_t(max))},
  }));
}

// One code drawn by the classes of gen_finite_code from a seeded engine.
inline std::uint8_t draw_finite_code(Format f, std::mt19937_64& rng) {
  const int max = f == Format::e4m3 ? 0x7E : 0x7B, sub_max = f == Format::e4m3 ? 0x07 : 0x03;
  const int one = f == Format::e4m3 ? 0x38 : 0x3C;
  const std::uint8_t sign = (rng() & 1) ? 0x80 : 0;
  const int cls = int(rng() % 14);  // weights 1 : 2 : 4 : 6 : 1 as gen_finite_code
  int c = 0;
  if (cls == 0)
    c = 0;
  else if (cls < 3)
    c = 1 + int(rng() % std::uint64_t(sub_max));
  else if (cls < 7)
    c = one - 12 + int(rng() % 24);
  else if (cls < 13)
    c = int(rng() % std::uint64_t(max + 1));
  else
    c = max;
  return std::uint8_t(c | sign);
}

// n codes from one drawn seed: vectors of thousands of codes built from per-element
// shrinkables dominated the suites' run time; a failing case still replays from its seed.
inline rc::Gen<std::vector<std::uint8_t>> gen_codes(Format f, std::int64_t n) {
  return rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [f, n](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> v(static_cast<std::size_t>(n));
    for (auto& c : v) c = draw_finite_code(f, rng);
    return v;
  });
}

inline rc::Gen<Format> gen_format() { return rc::gen::element(Format::e4m3, Format::e5m2); }

// Powers of two 2^-20..2^20 (MX scales are E8M0 values).
inline rc::Gen<float> gen_pow2_scale() {
  return rc::gen::map(rc::gen::inRange(-20, 21), [](int e) { return std::ldexp(1.0f, e); });
}

// Positive f32 scales: powers of two, and arbitrary 24-bit significands in [2^-8, 2^8).
inline rc::Gen<float> gen_scale() {
  return rc::gen::weightedOneOf<float>({
      {1, rc::gen::map(rc::gen::inRange(-8, 9), [](int e) { return std::ldexp(1.0f, e); })},
      {2, rc::gen::map(rc::gen::inRange<std::uint32_t>(0x3B800000u, 0x43800000u),
                       [](std::uint32_t u) { return std::bit_cast<float>(u); })},
  });
}

}  // namespace fp8ref::test
