// The Blackwell models in the reference grouped GEMM (numerics/models/blackwell_models.h through
// reference/grouped_gemm.h) against an independent per-element computation on rationals (Boost
// cpp_rational from decode_f64 of every code and scale): each 32 / 64-product step as
// docs/models.md "Blackwell tensor-core steps" defines it (term exponents, e_zero, truncation to F
// fraction bits below the largest exponent, exact sum, RZ to f32), chained over K from +0, then the
// scalar scales RN(acc·RN(sa·sb)). Class-weighted operands (zeros, subnormals, the largest codes),
// scales over a wide exponent range (overflow to Inf included); kind::mxf4nvf4 under mx, nvfp4 and
// mx16 (ue8m0 per 16). Every element bitwise; every finite element also within its bound of the
// exact scaled sum.
#include <gtest/gtest.h>

#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <vector>

#include "numerics/models.h"
#include "proptests/common/test_level.h"
#include "proptests/numerics/codec/input_classes.h"
#include "reference/grouped_gemm.h"

namespace {

using namespace fp8ref;
using boost::multiprecision::cpp_int;
using boost::multiprecision::cpp_rational;
using ref::Scaling;

// ---- the independent step, on rationals ------------------------------------------------------

cpp_rational pow2(int e) {
  return e >= 0 ? cpp_rational(cpp_int(1) << e) : cpp_rational(1, cpp_int(1) << -e);
}
int floor_log2(const cpp_rational& x) {  // x > 0
  int e = int(msb(numerator(x))) - int(msb(denominator(x)));
  if (pow2(e) > x) --e;
  return e;
}
// The exponent of a code's value as the step reads it: floor(log2 |v|), at least the format's
// smallest normal exponent (subnormals and zero sit there); ue8m0 2^e is e.
int emin_of(Format f) {
  switch (f) {
    case Format::e4m3:
    case Format::ue4m3: return -6;
    case Format::e5m2: return -14;
    case Format::e3m2: return -2;
    case Format::e8m0: return -127;
    default: return 0;
  }
}
int exp_of(Format f, double v) { return v == 0 ? emin_of(f) : std::max(std::ilogb(v), emin_of(f)); }

// A term of a step: its exact value and exponent; a zero term (a zero product, a zero C, a k64
// group of zero products or zero scales, a padded product) sits at e_zero.
struct Term {
  cpp_rational v;
  int e;
  bool zero;
};
int man_bits(Format f) {
  return f == Format::e2m1 ? 1 : (f == Format::e5m2 || f == Format::e3m2) ? 2 : 3;
}

// RZ to f32 of a rational: the f32 of largest magnitude not above |x|; +0 for 0; ±Inf past 2^128.
float rz_f32(const cpp_rational& x) {
  if (x == 0) return 0.0f;
  const cpp_rational m = abs(x);
  const int e = floor_log2(m);
  const float sign = x < 0 ? -1.0f : 1.0f;
  if (e > 127) return sign * std::numeric_limits<float>::infinity();
  const int q = std::max(e, -126) - 23;
  const cpp_rational u = m / pow2(q);
  const cpp_int n = numerator(u) / denominator(u);
  if (n == 0) return 0.0f;
  return sign * float(std::ldexp(n.convert_to<double>(), q));
}

// One step: terms (zero terms at e_zero included), C; F fraction bits.
float step(std::vector<Term> terms, float c, int e_zero, int frac) {
  if (std::isinf(c)) return c;  // finite products: the IEEE sum is C
  terms.push_back(c == 0 ? Term{0, e_zero, true}
                         : Term{cpp_rational(double(c)), std::max(std::ilogb(c), -126), false});
  int e_max = std::numeric_limits<int>::min();
  for (const Term& t : terms) e_max = std::max(e_max, t.zero ? e_zero : t.e);
  const cpp_rational unit = pow2(e_max - frac);
  cpp_rational s = 0;
  for (const Term& t : terms) {
    const cpp_rational u = t.v / unit;
    s += cpp_rational(cpp_int(numerator(u) / denominator(u))) * unit;  // toward zero
  }
  return rz_f32(s);
}

double dec(Format f, std::uint8_t c) { return decode_f64(f, c); }

// One output element of a model on one row / column: the chain over K from +0.
float chain(BlackwellKind kind, const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
            Format fa, Format fb, const float* sa, const float* sb, std::int64_t blk, Format sf) {
  const bool k64 = kind == BlackwellKind::mxf4 || kind == BlackwellKind::mxf4nvf4;
  const int w = k64 ? 64 : 32, frac = k64 ? 35 : 25, e_zero = k64 ? -139 : -133;
  float acc = 0.0f;
  for (std::int64_t k0 = 0; k0 < K; k0 += w) {
    std::vector<Term> terms;
    if (!k64) {
      for (std::int64_t k = k0; k < k0 + w; ++k) {
        if (k >= K) {
          terms.push_back({0, e_zero, true});
          continue;
        }
        const double x = dec(fa, a[k]), y = dec(fb, b[k]);
        const double xs = kind == BlackwellKind::mxf8f6f4 ? sa[k / 32] : 1.0;
        const double ys = kind == BlackwellKind::mxf8f6f4 ? sb[k / 32] : 1.0;
        const cpp_rational v =
            cpp_rational(x) * cpp_rational(y) * cpp_rational(xs) * cpp_rational(ys);
        terms.push_back(
            {v, exp_of(fa, x) + exp_of(fb, y) + std::ilogb(xs) + std::ilogb(ys), x * y == 0});
      }
    } else {
      for (std::int64_t g = k0; g < k0 + w; g += 16) {
        cpp_rational p = 0;
        bool all_zero = true;
        for (std::int64_t k = g; k < std::min(K, g + 16); ++k) {
          const double x = dec(Format::e2m1, a[k]), y = dec(Format::e2m1, b[k]);
          all_zero = all_zero && x * y == 0;
          p += cpp_rational(x) * cpp_rational(y);
        }
        const double xs = g < K ? sa[g / blk] : 1.0, ys = g < K ? sb[g / blk] : 1.0;
        const bool zero = all_zero || xs == 0 || ys == 0;
        terms.push_back({zero ? cpp_rational(0) : p * cpp_rational(xs) * cpp_rational(ys),
                         zero ? e_zero : exp_of(sf, xs) + exp_of(sf, ys), zero});
      }
    }
    acc = step(std::move(terms), acc, e_zero, frac);
  }
  return acc;
}

// ---- random problems -------------------------------------------------------------------------

using test::SplitMix64;

std::uint8_t finite_code(Format f, SplitMix64& r) {
  const int bits = format_bits(f);
  for (;;) {
    const std::uint64_t cls = r.below(8);
    std::uint8_t c = std::uint8_t(r.below(1u << bits));
    if (cls == 0) c &= std::uint8_t(1u << (bits - 1));                                // ±0
    if (cls == 1) c &= std::uint8_t((1u << (bits - 1)) | ((1u << man_bits(f)) - 1));  // subnormal
    if (std::isfinite(dec(f, c))) return c;
  }
}

struct Case {
  AccumulationModel model;
  Scaling scaling;
  Format fa, fb;
  std::int64_t M, N, K, G;
};

Case pick_case(SplitMix64& r) {
  constexpr Format kElems[] = {Format::e4m3, Format::e5m2, Format::e3m2, Format::e2m3,
                               Format::e2m1};
  Case c{kBlackwellAccumulationModels[r.below(8)],
         Scaling::none,
         Format::e2m1,
         Format::e2m1,
         std::int64_t(r.in(1, 4)),
         std::int64_t(r.in(1, 3)),
         std::int64_t(r.in(1, 200)),
         std::int64_t(r.in(1, 3))};
  switch (blackwell_kind(c.model)) {
    case BlackwellKind::f8f6f4:
      c.scaling = std::array{Scaling::none, Scaling::tensorwise, Scaling::rowwise}[r.below(3)];
      c.fa = kElems[r.below(5)], c.fb = kElems[r.below(5)];
      break;
    case BlackwellKind::mxf8f6f4:
      c.scaling = Scaling::mx, c.fa = kElems[r.below(5)], c.fb = kElems[r.below(5)];
      break;
    case BlackwellKind::mxf4: c.scaling = Scaling::mx; break;
    case BlackwellKind::mxf4nvf4:
      c.scaling = std::array{Scaling::mx, Scaling::nvfp4, Scaling::mx16}[r.below(3)];
      break;
  }
  return c;
}

float pick_scale(Scaling s, SplitMix64& r) {
  if (s == Scaling::mx || s == Scaling::mx16) {  // ue8m0: mostly near 1, sometimes the extremes
    const std::uint64_t cls = r.below(10);
    const int e = cls == 0 ? int(r.in(0, 254)) - 127 : int(r.in(0, 40)) - 20;
    return float(std::ldexp(1.0, e));
  }
  if (s == Scaling::nvfp4) return float(dec(Format::ue4m3, std::uint8_t(r.below(0x7F))));
  return float(std::ldexp(double(r.in(1, 255)), int(r.in(0, 20)) - 14));  // any f32
}

std::int64_t block_of(Scaling s) { return s == Scaling::nvfp4 || s == Scaling::mx16 ? 16 : 32; }

TEST(BlackwellGemm, EveryElementEqualsTheIndependentStepChain) {
  SplitMix64 r{0xB1AC4E11};
  long elements = 0;
  const int cases = 300 * test::level_factor();
  for (int i = 0; i < cases; ++i) {
    const Case c = pick_case(r);
    std::vector<std::uint8_t> a(std::size_t(c.M * c.K)), b(std::size_t(c.G * c.N * c.K));
    for (auto& x : a) x = finite_code(c.fa, r);
    for (auto& x : b) x = finite_code(c.fb, r);
    const std::int64_t blk = block_of(c.scaling), nb = ceil_div(c.K, blk);
    const bool blocks =
        c.scaling == Scaling::mx || c.scaling == Scaling::nvfp4 || c.scaling == Scaling::mx16;
    std::vector<float> sa, sb, ta, tb;
    const std::int64_t na = blocks ? c.M * nb : c.scaling == Scaling::rowwise ? c.M : 1;
    const std::int64_t nbb = blocks                          ? c.G * c.N * nb
                             : c.scaling == Scaling::rowwise ? c.G * c.N
                                                             : c.G;
    if (c.scaling != Scaling::none) {
      for (std::int64_t j = 0; j < na; ++j) sa.push_back(pick_scale(c.scaling, r));
      for (std::int64_t j = 0; j < nbb; ++j) sb.push_back(pick_scale(c.scaling, r));
    }
    if (c.scaling == Scaling::nvfp4 && r.below(2)) {
      ta.push_back(pick_scale(Scaling::tensorwise, r));
      for (std::int64_t g = 0; g < c.G; ++g) tb.push_back(pick_scale(Scaling::tensorwise, r));
    }
    std::vector<std::int32_t> row_map(std::size_t(c.M));
    for (auto& g : row_map) g = std::int32_t(r.below(std::uint64_t(c.G) + 1)) - 1;
    const ref::GroupedGemmOperands op{c.M,       c.N, c.K, c.G, c.fa, c.fb, a, b, ref::BLayout::nk,
                                      c.scaling, sa,  sb,  ta,  tb};
    std::vector<float> y(std::size_t(c.M * c.N), -7.0f);
    std::vector<double> bound(y.size());
    ref::grouped_gemm_forward(op, row_map, {c.model, 1}, ref::RowPolicy::untouched,
                              {OutDtype::f32, y, {}, bound});
    const BlackwellKind kind = blackwell_kind(c.model);
    for (std::int64_t m = 0; m < c.M; ++m) {
      const std::int64_t g = row_map[std::size_t(m)];
      if (g < 0) continue;
      for (std::int64_t n = 0; n < c.N; ++n) {
        const std::uint8_t* ar = a.data() + m * c.K;
        const std::uint8_t* bc = b.data() + (g * c.N + n) * c.K;
        const float* xs = blocks ? sa.data() + m * nb : nullptr;
        const float* ys = blocks ? sb.data() + (g * c.N + n) * nb : nullptr;
        float want = chain(kind, ar, bc, c.K, c.fa, c.fb, xs, ys, blk,
                           c.scaling == Scaling::nvfp4 ? Format::ue4m3 : Format::e8m0);
        float s1 = 1.0f, s2 = 1.0f;
        if (c.scaling == Scaling::tensorwise) s1 = sa[0], s2 = sb[std::size_t(g)];
        if (c.scaling == Scaling::rowwise)
          s1 = sa[std::size_t(m)], s2 = sb[std::size_t(g * c.N + n)];
        if (!ta.empty()) s1 = ta[0], s2 = tb[std::size_t(g)];
        if (s1 != 1.0f || s2 != 1.0f) want = want * (s1 * s2);
        const float got = y[std::size_t(m * c.N + n)];
        ++elements;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
            << to_string(c.model) << " " << ref::to_string(c.scaling) << " " << to_string(c.fa)
            << "x" << to_string(c.fb) << " K=" << c.K << " element (" << m << ", " << n << "): got "
            << got << " want " << want;
        if (!std::isfinite(got)) continue;
        cpp_rational exact = 0;
        for (std::int64_t k = 0; k < c.K; ++k)
          exact += cpp_rational(dec(c.fa, ar[k])) * cpp_rational(dec(c.fb, bc[k])) *
                   (blocks ? cpp_rational(double(xs[k / blk])) * cpp_rational(double(ys[k / blk]))
                           : cpp_rational(1));
        exact *= cpp_rational(double(s1)) * cpp_rational(double(s2));
        EXPECT_LE(abs(cpp_rational(double(got)) - exact),
                  cpp_rational(bound[std::size_t(m * c.N + n)]))
            << to_string(c.model) << " K=" << c.K;
      }
    }
  }
  std::cout << elements << " elements bitwise equal to the independent chain" << std::endl;
}

TEST(BlackwellGemm, MismatchedModelsScalingsAndScalesAreRefused) {
  const std::vector<std::uint8_t> a(32, 0x22), b(32, 0x22);
  const std::vector<std::int32_t> map{0};
  std::vector<float> y(1), s1{1.0f}, s3{3.0f};
  auto run = [&](AccumulationModel m, Scaling s, Format f, std::vector<float> sa,
                 std::vector<float> sb) {
    const ref::GroupedGemmOperands op{1, 1, 32, 1, f, f, a, b, ref::BLayout::nk, s, sa, sb};
    ref::grouped_gemm_forward(op, map, {m, 1}, ref::RowPolicy::untouched,
                              {OutDtype::f32, y, {}, {}});
  };
  using AM = AccumulationModel;
  EXPECT_NO_THROW(run(AM::blackwell_mxf4, Scaling::mx, Format::e2m1, s1, s1));
  EXPECT_THROW(run(AM::blackwell_mxf4, Scaling::mx, Format::e4m3, s1, s1), std::invalid_argument);
  EXPECT_THROW(run(AM::blackwell_mxf4, Scaling::mx, Format::e2m1, s3, s1), std::invalid_argument);
  EXPECT_THROW(run(AM::blackwell_mxf4, Scaling::nvfp4, Format::e2m1, {1, 1}, {1, 1}),
               std::invalid_argument);
  EXPECT_NO_THROW(run(AM::rtx_blackwell_mxf4nvf4, Scaling::nvfp4, Format::e2m1, {1, 3}, {1, 1}));
  EXPECT_THROW(run(AM::blackwell_mxf4nvf4, Scaling::nvfp4, Format::e2m1, {1, 0.3f}, {1, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(AM::blackwell_mxf8f6f4, Scaling::tensorwise, Format::e4m3, s1, s1),
               std::invalid_argument);
  EXPECT_THROW(run(AM::blackwell_f8f6f4, Scaling::mx, Format::e4m3, s1, s1), std::invalid_argument);
  EXPECT_THROW(run(AM::hopper_mma_sync, Scaling::nvfp4, Format::e4m3, {1, 1}, {1, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(AM::hopper_mma_sync, Scaling::none, Format::e2m1, {}, {}),
               std::invalid_argument);
  // mx16 (ue8m0 per 16): kind::mxf4nvf4 only, powers of two only, no Hopper / exact model
  EXPECT_NO_THROW(run(AM::blackwell_mxf4nvf4, Scaling::mx16, Format::e2m1, {1, 4}, {0.5f, 1}));
  EXPECT_THROW(run(AM::blackwell_mxf4, Scaling::mx16, Format::e2m1, {1, 1}, {1, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(AM::rtx_blackwell_mxf4nvf4, Scaling::mx16, Format::e2m1, {1, 3}, {1, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(AM::blackwell_mxf4nvf4, Scaling::mx16, Format::e2m1, s1, s1),
               std::invalid_argument);
  EXPECT_THROW(run(AM::exact, Scaling::mx16, Format::e4m3, {1, 1}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(run(AM::hopper_mma_sync, Scaling::mx16, Format::e4m3, {1, 1}, {1, 1}),
               std::invalid_argument);
}

}  // namespace
