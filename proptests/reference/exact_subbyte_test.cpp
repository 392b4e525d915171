// `exact` on FP6 / FP4 operands (docs/models.md "`exact`") in the reference grouped forward,
// against an independent oracle: every code's value from its bit fields (written here, not the
// codec), the scales as rationals, the element's sum in Boost cpp_rational, rounded once to
// nearest-even by integer arithmetic. Every operand pair with a sub-byte side, every scaling
// `exact` takes for them (none, tensorwise, rowwise, mx with E8M0 0x00 / 0xFE, mx16, nvfp4 with and
// without per-tensor scales), f32 / bf16 / f16, rows of no group, empty groups, K not a multiple
// of the block; then the Blackwell models within their bound of `exact`, and the refusals.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
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
using test::SplitMix64;

cpp_rational pow2(int e) {
  return e >= 0 ? cpp_rational(cpp_int(1) << e) : cpp_rational(1, cpp_int(1) << -e);
}

// ---- the oracle ------------------------------------------------------------------------------

// (exponent bits, mantissa bits, bias) of the operand formats, from the OCP specifications.
struct Fields {
  int e, m, bias;
};
Fields fields(Format f) {
  switch (f) {
    case Format::e4m3: return {4, 3, 7};
    case Format::e5m2: return {5, 2, 15};
    case Format::e2m1: return {2, 1, 1};
    case Format::e2m3: return {2, 3, 1};
    default: return {3, 2, 3};  // e3m2
  }
}
bool finite_code(Format f, std::uint8_t c) {
  const int mag = c & 0x7F;
  return f == Format::e4m3 ? mag != 0x7F : f == Format::e5m2 ? (mag >> 2) != 31 : true;
}
// A code's value: sign at bit e + m, bits above it ignored (codes one per byte, low bits).
cpp_rational code_value(Format f, std::uint8_t c) {
  const Fields x = fields(f);
  const int field = (c >> x.m) & ((1 << x.e) - 1), man = c & ((1 << x.m) - 1);
  const cpp_rational v =
      cpp_rational(field ? (1 << x.m) + man : man) * pow2((field ? field : 1) - x.bias - x.m);
  return (c >> (x.e + x.m)) & 1 ? cpp_rational(-v) : v;
}
cpp_rational exact_of(float x) {  // a finite f32
  int e = 0;
  const double m = std::frexp(double(x), &e);
  return cpp_rational(std::int64_t(std::ldexp(m, 30))) * pow2(e - 30);
}

// x rounded once to nearest-even with p significant bits, subnormals below 2^emin and ±Inf from
// 2^(emax+1); the zero of x's sign when x != 0 rounds to zero, +0 for x == 0.
double round_once(const cpp_rational& x, int p, int emin, int emax) {
  if (x == 0) return 0.0;
  const cpp_rational m = abs(x);
  int e = int(msb(numerator(m))) - int(msb(denominator(m)));
  if (pow2(e) > m) --e;
  const int q = std::max(e, emin) - (p - 1);
  const cpp_rational n = m * pow2(-q);
  cpp_int fl = numerator(n) / denominator(n);
  const cpp_rational rem = n - cpp_rational(fl);
  if (rem > cpp_rational(1, 2) || (rem == cpp_rational(1, 2) && (fl & 1) != 0)) ++fl;
  double z = std::ldexp(fl.convert_to<double>(), q);  // fl <= 2^p: exact
  if (z >= std::ldexp(1.0, emax + 1)) z = std::numeric_limits<double>::infinity();
  return x < 0 ? -z : z;
}
double round_to_out(const cpp_rational& x, OutDtype d) {
  return d == OutDtype::f32    ? round_once(x, 24, -126, 127)
         : d == OutDtype::bf16 ? round_once(x, 8, -126, 127)
                               : round_once(x, 11, -14, 15);
}
double out_value_of(const std::vector<float>& f, const std::vector<std::uint16_t>& h, std::size_t i,
                    OutDtype d) {
  if (d == OutDtype::f32) return f[i];
  if (d == OutDtype::bf16) return std::bit_cast<float>(std::uint32_t(h[i]) << 16);
  const int field = (h[i] >> 10) & 0x1F, man = h[i] & 0x3FF;
  const double v = field == 31 ? (man ? NAN : INFINITY)
                               : std::ldexp(field ? 1024 + man : man, (field ? field : 1) - 25);
  return h[i] & 0x8000 ? -v : v;
}

// ---- random cases ----------------------------------------------------------------------------

struct Case {
  Format fa, fb;
  Scaling scaling;
  std::int64_t M, N, K, G;
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb, ta, tb;
  std::vector<std::int32_t> row_map;
  std::int64_t blk() const {
    return scaling == Scaling::mx ? 32 : scaling == Scaling::none ? K + 1 : 16;
  }
  bool blocks() const {
    return scaling == Scaling::mx || scaling == Scaling::mx16 || scaling == Scaling::nvfp4;
  }
  ref::GroupedGemmOperands operands() const {
    return {M, N, K, G, fa, fb, a, b, ref::BLayout::nk, scaling, sa, sb, ta, tb};
  }
};

// Class-weighted codes: ±0, the largest magnitude, the smallest subnormal, any finite code.
std::uint8_t draw_code(Format f, SplitMix64& r) {
  const Fields x = fields(f);
  const int bits = x.e + x.m + 1;
  const auto sign = std::uint8_t(r.below(2) << (bits - 1));
  switch (r.below(6)) {
    case 0: return sign;
    case 1:
      return std::uint8_t(
          sign | ((1 << (bits - 1)) - (f == Format::e4m3 ? 2 : 1) - (f == Format::e5m2 ? 4 : 0)));
    case 2: return std::uint8_t(sign | 1);
    default:
      for (;;)
        if (const auto c = std::uint8_t(r.below(1u << bits)); finite_code(f, c)) return c;
  }
}

// A scale of the scaling's kind: E8M0 powers of two with 0x00 (2^-127) and 0xFE (2^127) often,
// ue4m3 values (positive E4M3 codes), any f32 (negative too) for tensorwise / rowwise / tensor.
float draw_scale(Scaling s, SplitMix64& r) {
  if (s == Scaling::mx || s == Scaling::mx16) {
    const std::uint64_t cls = r.below(8);
    const int e = cls == 0   ? -127
                  : cls == 1 ? 127
                  : cls == 2 ? int(r.in(0, 254)) - 127
                             : int(r.in(0, 16)) - 8;
    return float(std::ldexp(1.0, e));
  }
  if (s == Scaling::nvfp4) return float(code_value(Format::e4m3, std::uint8_t(r.below(0x7F))));
  const double v = std::ldexp(double(r.in(1, (1 << 24) - 1)), int(r.in(0, 60)) - 54);
  return float(r.below(4) == 0 ? -v : v);
}

Case draw_case(SplitMix64& r) {
  constexpr Format kAll[] = {Format::e4m3, Format::e5m2, Format::e3m2, Format::e2m3, Format::e2m1};
  constexpr Scaling kScalings[] = {Scaling::none, Scaling::tensorwise, Scaling::rowwise,
                                   Scaling::mx,   Scaling::mx16,       Scaling::nvfp4};
  Case c{};
  c.scaling = kScalings[r.below(6)];
  const bool e2m1_only = c.scaling == Scaling::mx16 || c.scaling == Scaling::nvfp4;
  do {
    c.fa = e2m1_only ? Format::e2m1 : kAll[r.below(5)];
    c.fb = e2m1_only ? Format::e2m1 : kAll[r.below(5)];
  } while (!is_mx_element_format(c.fa) && !is_mx_element_format(c.fb));
  c.M = std::int64_t(r.in(1, 5)), c.N = std::int64_t(r.in(1, 4));
  // K: tiny (0 included), up to a few blocks, or past 64 16-blocks (exact_dot's batches)
  const std::uint64_t k_class = r.below(16);
  c.K = std::int64_t(k_class < 2 ? r.in(0, 3) : k_class == 2 ? r.in(1025, 1100) : r.in(1, 150));
  c.G = std::int64_t(r.in(1, 3));
  for (std::int64_t i = 0; i < c.M * c.K; ++i) c.a.push_back(draw_code(c.fa, r));
  for (std::int64_t i = 0; i < c.G * c.N * c.K; ++i) c.b.push_back(draw_code(c.fb, r));
  const std::int64_t nb = ceil_div(c.K, c.blk());
  const std::int64_t na = c.blocks() ? c.M * nb : c.scaling == Scaling::rowwise ? c.M : 1;
  const std::int64_t nbb = c.blocks()                      ? c.G * c.N * nb
                           : c.scaling == Scaling::rowwise ? c.G * c.N
                                                           : c.G;
  if (c.scaling != Scaling::none) {
    for (std::int64_t i = 0; i < na; ++i) c.sa.push_back(draw_scale(c.scaling, r));
    for (std::int64_t i = 0; i < nbb; ++i) c.sb.push_back(draw_scale(c.scaling, r));
  }
  if (c.scaling == Scaling::nvfp4 && r.below(2)) {
    c.ta.push_back(draw_scale(Scaling::tensorwise, r));
    for (std::int64_t g = 0; g < c.G; ++g) c.tb.push_back(draw_scale(Scaling::tensorwise, r));
  }
  for (std::int64_t m = 0; m < c.M; ++m)  // -1: a row of no group; a group may get no rows
    c.row_map.push_back(std::int32_t(r.below(std::uint64_t(c.G) + 1)) - 1);
  return c;
}

// The exact value of element (m, n) of group g.
cpp_rational oracle(const Case& c, std::int64_t m, std::int64_t n, std::int64_t g) {
  const std::int64_t nb = ceil_div(c.K, c.blk());
  cpp_rational s = 0;
  for (std::int64_t k = 0; k < c.K; ++k) {
    cpp_rational p = code_value(c.fa, c.a[std::size_t(m * c.K + k)]) *
                     code_value(c.fb, c.b[std::size_t((g * c.N + n) * c.K + k)]);
    if (c.blocks())
      p *= exact_of(c.sa[std::size_t(m * nb + k / c.blk())]) *
           exact_of(c.sb[std::size_t((g * c.N + n) * nb + k / c.blk())]);
    s += p;
  }
  if (c.scaling == Scaling::tensorwise) s *= exact_of(c.sa[0]) * exact_of(c.sb[std::size_t(g)]);
  if (c.scaling == Scaling::rowwise)
    s *= exact_of(c.sa[std::size_t(m)]) * exact_of(c.sb[std::size_t(g * c.N + n)]);
  if (!c.ta.empty()) s *= exact_of(c.ta[0]) * exact_of(c.tb[std::size_t(g)]);
  return s;
}

// Element (m, n) of group g by exact_dot itself (the per-element path the fast path falls back
// to), with the case's scales as ElementScales.
double exact_dot_of(const Case& c, std::int64_t m, std::int64_t n, std::int64_t g, OutDtype d) {
  static const float kOne = 1.0f;
  const std::int64_t nb = ceil_div(c.K, c.blk()), col = g * c.N + n;
  ElementScales sc{&kOne, &kOne, false};
  if (c.blocks()) sc = {c.sa.data() + m * nb, c.sb.data() + col * nb, true, c.blk()};
  if (c.scaling == Scaling::tensorwise) sc = {c.sa.data(), c.sb.data() + g, false};
  if (c.scaling == Scaling::rowwise) sc = {c.sa.data() + m, c.sb.data() + col, false};
  if (!c.ta.empty()) sc.tensor_a = c.ta[0], sc.tensor_b = c.tb[std::size_t(g)];
  return exact_dot(c.a.data() + m * c.K, c.b.data() + col * c.K, c.K, c.fa, c.fb, sc, d);
}

std::string describe(const Case& c) {
  return std::string(to_string(c.fa)) + " x " + std::string(to_string(c.fb)) + " " +
         ref::to_string(c.scaling) + (c.ta.empty() ? "" : " +tensor") +
         " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " G=" + std::to_string(c.G);
}

TEST(ExactSubbyte, EveryElementIsTheRationalSumRoundedOnce) {
  SplitMix64 r{0xE4AC75B1};
  long elements = 0, infinite = 0, zero = 0, tensor = 0, long_k = 0;
  const int cases = 400 * test::level_factor();
  for (int i = 0; i < cases; ++i) {
    const Case c = draw_case(r);
    const OutDtype d = std::array{OutDtype::f32, OutDtype::bf16, OutDtype::f16}[r.below(3)];
    std::vector<float> y(d == OutDtype::f32 ? std::size_t(c.M * c.N) : 0, -7.0f);
    std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : std::size_t(c.M * c.N), 0x1234);
    ref::grouped_gemm_forward(c.operands(), c.row_map, {AccumulationModel::exact, 1},
                              ref::RowPolicy::untouched, {d, y, h, {}});
    tensor += !c.ta.empty(), long_k += c.K > 1024;
    for (std::int64_t m = 0; m < c.M; ++m) {
      const std::int64_t g = c.row_map[std::size_t(m)];
      for (std::int64_t n = 0; n < c.N && g >= 0; ++n) {
        const double want = round_to_out(oracle(c, m, n, g), d);
        const double got = out_value_of(y, h, std::size_t(m * c.N + n), d);
        ++elements, infinite += std::isinf(want), zero += want == 0;
        ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
            << describe(c) << " " << to_string(d) << " element (" << m << ", " << n << "): got "
            << got << " want " << want << " (replay: case " << i << ")";
        const double dot = exact_dot_of(c, m, n, g, d);
        ASSERT_TRUE(dot == want && std::signbit(dot) == std::signbit(want))
            << describe(c) << " exact_dot: got " << dot << " want " << want;
      }
    }
  }
  std::cout << elements << " elements equal to the rational oracle (" << infinite
            << " overflowing, " << zero << " zero; " << tensor << " cases with tensor scales, "
            << long_k << " with K > 1024)" << std::endl;
  EXPECT_GT(infinite, 0);
  EXPECT_GT(zero, 0);
  EXPECT_GT(tensor, 0);
  EXPECT_GT(long_k, 0);
}

// The ends of ExactAccumulator's range (exact_sum.h): nvfp4 with ue4m3 block scales 256 and 2^-9
// and f32 tensor scales 2^127 and 2^-149 (term exponents up to 268 and down to -318), mx / mx16
// with E8M0 0xFE and 0x00, alternating block by block so that the terms spread beyond one i128;
// K = 1100, past 64 16-blocks, so exact_dot adds every term to the accumulator. The rational
// oracle's value: ±Inf, ±0 or finite where the ends meet.
TEST(ExactSubbyte, ExtremeScalesStayInTheAccumulatorRange) {
  struct Ends {
    Scaling s;
    float lo, hi, ta, tb;
  };
  const Ends ends[] = {{Scaling::nvfp4, 256, 256, 0x1p127f, 0x1p127f},
                       {Scaling::nvfp4, 0x1p-9f, 0x1p-9f, 0x1p-149f, 0x1p-149f},
                       {Scaling::nvfp4, 0x1p-9f, 256, 0x1p127f, 0x1p-149f},
                       {Scaling::mx, 0x1p-127f, 0x1p127f, 1, 1},
                       {Scaling::mx16, 0x1p127f, 0x1p127f, 1, 1},
                       {Scaling::mx16, 0x1p-127f, 0x1p-127f, 1, 1}};
  SplitMix64 r{0xE7E7E7};
  long elements = 0;
  for (const Ends& x : ends)
    for (const OutDtype d : {OutDtype::f32, OutDtype::bf16, OutDtype::f16}) {
      Case c{};
      c.fa = c.fb = Format::e2m1, c.scaling = x.s, c.M = 2, c.N = 2, c.K = 1100, c.G = 1;
      for (std::int64_t i = 0; i < c.M * c.K; ++i) c.a.push_back(draw_code(c.fa, r));
      for (std::int64_t i = 0; i < c.N * c.K; ++i) c.b.push_back(draw_code(c.fb, r));
      const std::int64_t nb = ceil_div(c.K, c.blk());
      for (std::int64_t i = 0; i < c.M * nb; ++i) c.sa.push_back(i % 2 ? x.lo : x.hi);
      for (std::int64_t i = 0; i < c.N * nb; ++i) c.sb.push_back(i % 3 ? x.hi : x.lo);
      if (x.ta != 1.0f) c.ta = {x.ta}, c.tb = {x.tb};
      c.row_map = {0, 0};
      std::vector<float> y(d == OutDtype::f32 ? 4 : 0);
      std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : 4);
      ref::grouped_gemm_forward(c.operands(), c.row_map, {AccumulationModel::exact, 1},
                                ref::RowPolicy::untouched, {d, y, h, {}});
      for (std::int64_t m = 0; m < 2; ++m)
        for (std::int64_t n = 0; n < 2; ++n, ++elements) {
          const double want = round_to_out(oracle(c, m, n, 0), d);
          const double got = out_value_of(y, h, std::size_t(m * 2 + n), d);
          const double dot = exact_dot_of(c, m, n, 0, d);
          EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want))
              << describe(c) << " " << to_string(d) << ": got " << got << " want " << want;
          EXPECT_TRUE(dot == want && std::signbit(dot) == std::signbit(want))
              << describe(c) << " exact_dot: got " << dot << " want " << want;
        }
    }
  EXPECT_EQ(elements, 72);
}

// The Blackwell model of the case's scaling and formats, if one takes them.
std::optional<AccumulationModel> blackwell_model_for(const Case& c, SplitMix64& r) {
  using AM = AccumulationModel;
  const bool rtx = r.below(2);
  switch (c.scaling) {
    case Scaling::mx:
      if (c.fa == Format::e2m1 && c.fb == Format::e2m1 && r.below(2))
        return rtx ? AM::rtx_blackwell_mxf4 : AM::blackwell_mxf4;
      return rtx ? AM::rtx_blackwell_mxf8f6f4 : AM::blackwell_mxf8f6f4;
    case Scaling::mx16:
    case Scaling::nvfp4: return rtx ? AM::rtx_blackwell_mxf4nvf4 : AM::blackwell_mxf4nvf4;
    default: return rtx ? AM::rtx_blackwell_f8f6f4 : AM::blackwell_f8f6f4;
  }
}

// `verify --within-bound` (docs/models.md "Checking a kernel's output"): every finite element of
// a Blackwell model lies within its bound of `exact` (f32, plus the half ulp of that rounding).
TEST(ExactSubbyte, BlackwellModelsLieWithinTheirBoundOfExact) {
  SplitMix64 r{0xB0B0E4AC};
  long elements = 0;
  const int cases = 300 * test::level_factor();
  for (int i = 0; i < cases; ++i) {
    const Case c = draw_case(r);
    const AccumulationModel model = *blackwell_model_for(c, r);
    const std::size_t n_out = std::size_t(c.M * c.N);
    std::vector<float> y(n_out), z(n_out);
    std::vector<double> bound(n_out);
    ref::grouped_gemm_forward(c.operands(), c.row_map, {model, 1}, ref::RowPolicy::zero,
                              {OutDtype::f32, y, {}, bound});
    ref::grouped_gemm_forward(c.operands(), c.row_map, {AccumulationModel::exact, 1},
                              ref::RowPolicy::zero, {OutDtype::f32, z, {}, {}});
    for (std::size_t j = 0; j < n_out; ++j) {
      if (c.row_map[j / std::size_t(c.N)] < 0 || !std::isfinite(y[j]) || !std::isfinite(z[j]))
        continue;
      ++elements;
      const double ex = z[j];
      EXPECT_LE(std::fabs(double(y[j]) - ex), bound[j] + std::ldexp(std::fabs(ex), -24) + 0x1p-150)
          << to_string(model) << " " << describe(c) << " element " << j;
    }
  }
  std::cout << elements << " finite elements within their bound of exact" << std::endl;
  EXPECT_GT(elements, 500);
}

// NaN scales (E8M0 0xFF decodes to NaN) are refused where a valid row reads them and ignored in
// a group without rows, as the Blackwell models do; so are the combinations `exact` cannot take.
TEST(ExactSubbyte, RefusesWhatTheBlackwellModelsRefuse) {
  const std::vector<std::uint8_t> a(32, 0x3), b(64, 0x5);  // e2m1 1.5 and 3 (also FP6 codes)
  const std::vector<std::int32_t> map{0};
  std::vector<float> y(2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto run = [&](AccumulationModel m, Scaling s, Format f, std::vector<float> sa,
                 std::vector<float> sb, std::vector<float> ta = {}, std::vector<float> tb = {}) {
    const ref::GroupedGemmOperands op{1, 1, 32, 2, f, f, a, b, ref::BLayout::nk, s, sa, sb, ta, tb};
    ref::grouped_gemm_forward(op, map, {m, 1}, ref::RowPolicy::untouched,
                              {OutDtype::f32, std::span(y).first(1), {}, {}});
    return y[0];
  };
  using AM = AccumulationModel;
  for (AM m : {AM::exact, AM::blackwell_mxf8f6f4}) {
    EXPECT_EQ(run(m, Scaling::mx, Format::e2m1, {1}, {2, nan}), 288.0f) << to_string(m);
    EXPECT_THROW(run(m, Scaling::mx, Format::e2m1, {nan}, {1, 1}), std::invalid_argument);
    EXPECT_THROW(run(m, Scaling::mx, Format::e2m1, {1}, {nan, 1}), std::invalid_argument);
  }
  for (AM m : {AM::exact, AM::blackwell_mxf4nvf4}) {
    EXPECT_EQ(run(m, Scaling::nvfp4, Format::e2m1, {1, 2}, {1, 1, 7, 7}, {0.5f}, {4, 1}), 432.0f);
    EXPECT_THROW(run(m, Scaling::nvfp4, Format::e2m1, {1, 0.3f}, {1, 1, 1, 1}),
                 std::invalid_argument);
    EXPECT_THROW(run(m, Scaling::nvfp4, Format::e2m1, {1, 1}, {1, 1, 1, 1}, {nan}, {1, 1}),
                 std::invalid_argument);
    EXPECT_THROW(run(m, Scaling::mx16, Format::e2m1, {1, nan}, {1, 1, 1, 1}),
                 std::invalid_argument);
    EXPECT_THROW(run(m, Scaling::nvfp4, Format::e2m3, {1, 1}, {1, 1, 1, 1}), std::invalid_argument);
  }
  EXPECT_THROW(run(AM::exact, Scaling::mx16, Format::e4m3, {1, 1}, {1, 1, 1, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(AM::exact, Scaling::none, Format::ue4m3, {}, {}), std::invalid_argument);
  EXPECT_THROW(run(AM::exact, Scaling::none, Format::e8m0, {}, {}), std::invalid_argument);
  EXPECT_THROW(run(AM::hopper_mma_sync, Scaling::none, Format::e2m3, {}, {}),
               std::invalid_argument);
  EXPECT_EQ(run(AM::exact, Scaling::none, Format::e2m3, {}, {}), 32 * 0.375f * 0.625f);
}

}  // namespace
