// K-grouped wgrad with scales along tokens (docs/design.md §9; docs/models.md "wgrad"): 1×128
// (blockwise) and MX 1×32 blocks restarting at each group, tensorwise and unscaled, f32 / bf16 /
// f16 output.
// Laws: `exact` is the Boost cpp_rational value C + sum rounded once; every model lies within its
// bound; empty groups give C converted; unit block scales change nothing; thread counts, unread
// scales and inserted empty groups change nothing; bad scales are rejected; quantize composes.
#include <gtest/gtest.h>
#include <omp.h>
#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "proptests/common/oracle.h"
#include "proptests/common/test_level.h"
#include "reference/grouped_gemm.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
namespace {

using test::Rational;

constexpr std::int64_t div_up(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

// A wgrad problem. The scale layout is written out here from its specification (grouped_gemm.h):
// group g owns ceil(m_g / w) block rows after those of the groups before it, the rows past the
// last group own ceil(tail / w) more at the end.
struct WCase {
  std::int64_t N = 1, K = 1, tail = 0;
  Format fdy = Format::e4m3, fx = Format::e4m3;
  std::vector<std::int64_t> sizes;
  std::vector<std::uint8_t> dy, x;
  Scaling scaling = Scaling::none;
  std::vector<float> sdy, sx, c;

  std::int64_t G() const { return std::int64_t(sizes.size()); }
  std::int64_t start(std::int64_t g) const {
    std::int64_t r = 0;
    for (std::int64_t h = 0; h < g; ++h) r += sizes[std::size_t(h)];
    return r;
  }
  std::int64_t M() const { return start(G()) + tail; }
  std::vector<std::int64_t> offs() const {
    std::vector<std::int64_t> o;
    for (std::int64_t g = 1; g <= G(); ++g) o.push_back(start(g));
    return o;
  }
  std::int64_t width() const {
    return scaling == Scaling::blockwise ? 128 : scaling == Scaling::mx ? 32 : 0;
  }
  std::int64_t first_block(std::int64_t g) const {
    std::int64_t b = 0;
    for (std::int64_t h = 0; h < g; ++h) b += div_up(sizes[std::size_t(h)], width());
    return b;
  }
  std::int64_t block_rows() const { return first_block(G()) + div_up(tail, width()); }
  WgradOperands operands() const { return {M(), N, K, G(), fdy, fx, dy, x, scaling, sdy, sx, c}; }
};

// Group sizes around the block widths: empty, small, about 128 (partial and whole blocks),
// several blocks.
std::vector<std::int64_t> gen_sizes(std::int64_t max_size = 300) {
  const int G = *rc::gen::inRange(1, 5);
  std::vector<std::int64_t> s;
  for (int g = 0; g < G; ++g)
    s.push_back(std::min(max_size, *rc::gen::weightedOneOf<std::int64_t>({
                                       {2, rc::gen::just<std::int64_t>(0)},
                                       {3, rc::gen::inRange<std::int64_t>(1, 40)},
                                       {2, rc::gen::inRange<std::int64_t>(120, 140)},
                                       {1, rc::gen::inRange<std::int64_t>(200, 301)},
                                   })));
  return s;
}

// C: signed zeros, subnormals, and normals across 2^-23..2^23.
rc::Gen<float> gen_c() {
  const auto with_sign = [](std::uint32_t u, bool neg) {
    return std::bit_cast<float>(u | (neg ? 0x80000000u : 0u));
  };
  return rc::gen::weightedOneOf<float>({
      {1, rc::gen::element(0.0f, -0.0f)},
      {1, rc::gen::apply(with_sign, rc::gen::inRange<std::uint32_t>(1, 0x800000),
                         rc::gen::arbitrary<bool>())},
      {4, rc::gen::apply(with_sign, rc::gen::inRange<std::uint32_t>(0x34000000u, 0x4B000000u),
                         rc::gen::arbitrary<bool>())},
  });
}

void gen_scales(WCase& w) {
  const bool mx = w.scaling == Scaling::mx;
  const auto draw = [&](std::int64_t n) {
    return *rc::gen::container<std::vector<float>>(std::size_t(n),
                                                   mx ? test::gen_pow2_scale() : test::gen_scale());
  };
  if (w.scaling == Scaling::none) w.sdy.clear(), w.sx.clear();
  if (w.scaling == Scaling::tensorwise) w.sdy = draw(1), w.sx = draw(1);
  if (w.width() > 0) w.sdy = draw(w.block_rows() * w.N), w.sx = draw(w.block_rows() * w.K);
}

WCase gen_case(Scaling s, std::vector<std::int64_t> sizes) {
  WCase w;
  w.sizes = std::move(sizes);
  w.tail = *rc::gen::weightedOneOf<std::int64_t>(
      {{2, rc::gen::just<std::int64_t>(0)}, {1, rc::gen::inRange<std::int64_t>(1, 40)}});
  w.N = *rc::gen::inRange<std::int64_t>(1, 4), w.K = *rc::gen::inRange<std::int64_t>(1, 4);
  w.fdy = *test::gen_format(), w.fx = *test::gen_format();
  w.dy = *test::gen_codes(w.fdy, w.M() * w.N);
  w.x = *test::gen_codes(w.fx, w.M() * w.K);
  w.scaling = s;
  gen_scales(w);
  w.c = *rc::gen::container<std::vector<float>>(std::size_t(w.G() * w.N * w.K), gen_c());
  return w;
}

Scaling gen_scaling() {
  return *rc::gen::element(Scaling::none, Scaling::tensorwise, Scaling::blockwise, Scaling::mx);
}
OutDtype gen_dtype() { return *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16); }

// A model that accepts `s`, with a split-K for the hopper models.
ModelChoice gen_model(Scaling s) {
  std::vector<AccumulationModel> ok;
  for (AccumulationModel m : kAllAccumulationModels)
    if (!(needs_constant_scales(m) && (s == Scaling::blockwise || s == Scaling::mx)))
      ok.push_back(m);
  const AccumulationModel m = *rc::gen::elementOf(ok);
  ModelChoice mc{m, 1};
  if (accepts_split_k(m)) {
    if (*rc::gen::inRange(0, 4) == 0)
      mc.split_blocks = *rc::gen::inRange<std::int64_t>(1, 3);
    else
      mc.split_k = *rc::gen::inRange(1, 4);
  }
  return mc;
}

struct Run {
  std::vector<std::uint32_t> bits;  // f32 bits, or bf16 / f16 in the low 16 bits
  std::vector<double> bound;
};

Run run(const WCase& w, ModelChoice m, OutDtype d) {
  const std::size_t n = std::size_t(w.G() * w.N * w.K);
  std::vector<float> f(d == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : n);
  Run r{std::vector<std::uint32_t>(n), std::vector<double>(n)};
  grouped_gemm_wgrad(w.operands(), w.offs(), m, GemmOutput{d, f, h, r.bound});
  for (std::size_t i = 0; i < n; ++i)
    r.bits[i] = d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return r;
}

// C[g, n, k] + sum_kb sdy·sx·sum_{r in kb} dY[r, n]·X[r, k] over group g's rows, in cpp_rational.
Rational exact_element(const WCase& w, std::int64_t g, std::int64_t n, std::int64_t k) {
  const std::int64_t r0 = w.start(g), m = w.sizes[std::size_t(g)];
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m)), b(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i)
    a[std::size_t(i)] = w.dy[std::size_t((r0 + i) * w.N + n)],
    b[std::size_t(i)] = w.x[std::size_t((r0 + i) * w.K + k)];
  std::vector<float> sa{1.0f}, sb{1.0f};
  if (w.scaling == Scaling::tensorwise) sa = {w.sdy[0]}, sb = {w.sx[0]};
  const std::int64_t bw = std::max<std::int64_t>(w.width(), 128);
  if (w.width() > 0) {
    sa.clear(), sb.clear();
    for (std::int64_t j = 0; j < div_up(m, w.width()); ++j)
      sa.push_back(w.sdy[std::size_t((w.first_block(g) + j) * w.N + n)]),
          sb.push_back(w.sx[std::size_t((w.first_block(g) + j) * w.K + k)]);
  }
  const Rational c = test::to_rational(double(w.c[std::size_t((g * w.N + n) * w.K + k)]));
  return c + test::exact_dot_rational(a.data(), b.data(), m, w.fdy, w.fx, sa, sb,
                                      w.width() > 0 ? w.width() : bw);
}

bool out_finite(std::uint32_t bits, OutDtype d) {
  if (d == OutDtype::f16) return (bits & 0x7C00u) != 0x7C00u;
  return std::isfinite(std::bit_cast<float>(d == OutDtype::f32 ? bits : bits << 16));
}
Rational out_rational(std::uint32_t bits, OutDtype d) {
  if (d == OutDtype::f16) return test::f16_rational(std::uint16_t(bits));
  return test::to_rational(double(std::bit_cast<float>(d == OutDtype::f32 ? bits : bits << 16)));
}
// `bits` is x rounded once to d (RNE; an exact zero is +0).
bool rounds_once(const Rational& x, std::uint32_t bits, OutDtype d) {
  if (x == 0) return bits == 0;
  if (d == OutDtype::f16) return test::is_nearest_even_f16(x, std::uint16_t(bits));
  if (!out_finite(bits, d)) return false;  // f32 / bf16 sums here stay far below the range
  return test::is_nearest_even(x, std::bit_cast<float>(d == OutDtype::f32 ? bits : bits << 16),
                               d == OutDtype::bf16);
}

std::string where(const WCase& w, std::int64_t g, std::int64_t n, std::int64_t k) {
  return "group " + std::to_string(g) + " (" + std::to_string(w.sizes[std::size_t(g)]) +
         " rows) n " + std::to_string(n) + " k " + std::to_string(k) + " scaling " +
         to_string(w.scaling);
}

FP8REF_RC_PROP(WgradScaled, ExactIsTheRationalValueRoundedOnce, 100, ()) {
  const WCase w = gen_case(gen_scaling(), gen_sizes());
  const OutDtype d = gen_dtype();
  const Run r = run(w, {AccumulationModel::exact, 1}, d);
  RC_TAG(to_string(w.scaling));
  bool partial = false, several = false;
  for (const std::int64_t m : w.sizes)
    partial |= w.width() > 0 && m % w.width() != 0,
        several |= m > std::max<std::int64_t>(w.width(), 128);
  RC_CLASSIFY(partial, "a partial last block");
  RC_CLASSIFY(several, "a group of several blocks");
  for (std::int64_t g = 0; g < w.G(); ++g)
    for (std::int64_t n = 0; n < w.N; ++n)
      for (std::int64_t k = 0; k < w.K; ++k) {
        const std::size_t i = std::size_t((g * w.N + n) * w.K + k);
        if (w.sizes[std::size_t(g)] == 0) continue;  // EmptyGroupGivesCConverted
        if (!rounds_once(exact_element(w, g, n, k), r.bits[i], d))
          RC_FAIL("exact is not the rational value rounded once at " + where(w, g, n, k));
      }
}

FP8REF_RC_PROP(WgradScaled, EveryModelIsWithinItsBoundOfExact, 150, ()) {
  const WCase w = gen_case(gen_scaling(), gen_sizes());
  const ModelChoice m = gen_model(w.scaling);
  const OutDtype d = gen_dtype();
  const Run r = run(w, m, d);
  bool overflow = false;
  for (std::int64_t g = 0; g < w.G(); ++g)
    for (std::int64_t n = 0; n < w.N; ++n)
      for (std::int64_t k = 0; k < w.K; ++k) {
        const std::size_t i = std::size_t((g * w.N + n) * w.K + k);
        const double bound = r.bound[i];
        RC_ASSERT(!std::isnan(bound));
        // An infinite bound is claimed only for an output that overflowed (f16 at 65520).
        RC_ASSERT(std::isinf(bound) == !out_finite(r.bits[i], d));
        if (std::isinf(bound)) {
          overflow = true;
          continue;
        }
        const Rational err = abs(out_rational(r.bits[i], d) - exact_element(w, g, n, k));
        if (err > test::to_rational(bound))
          RC_FAIL(std::string(to_string(m.model)) + " outside its bound at " + where(w, g, n, k));
      }
  RC_CLASSIFY(overflow, "f16 overflow");
  RC_TAG(to_string(m.model));
}

// Empty groups give RN_out(C) under every model and scaling: f32 bitwise C (-0, NaN, Inf too),
// bf16 / f16 the nearest-even value of C (zeros keep their sign; NaN stays NaN of C's sign).
FP8REF_RC_PROP(WgradScaled, EmptyGroupGivesCConverted, 100, ()) {
  auto sizes = gen_sizes();
  sizes[std::size_t(*rc::gen::inRange<std::size_t>(0, sizes.size()))] = 0;
  WCase w = gen_case(gen_scaling(), sizes);
  for (float& c : w.c)
    c = *rc::gen::weightedOneOf<float>(
        {{4, gen_c()},
         {1, rc::gen::element(NAN, -NAN, INFINITY, -INFINITY, 65519.0f, 65520.0f, 3.0e38f)}});
  const ModelChoice m = gen_model(w.scaling);
  const OutDtype d = gen_dtype();
  const Run r = run(w, m, d);
  for (std::int64_t g = 0; g < w.G(); ++g) {
    if (w.sizes[std::size_t(g)] != 0) continue;
    for (std::int64_t i = g * w.N * w.K; i < (g + 1) * w.N * w.K; ++i) {
      const float c = w.c[std::size_t(i)];
      const std::uint32_t got = r.bits[std::size_t(i)], cb = std::bit_cast<std::uint32_t>(c);
      const std::uint32_t sign = d == OutDtype::f32 ? 0x80000000u : 0x8000u;
      if (d == OutDtype::f32) {
        RC_ASSERT(got == cb);
      } else if (std::isnan(c)) {
        RC_ASSERT(!out_finite(got, d) && (got & (d == OutDtype::bf16 ? 0x7Fu : 0x3FFu)) != 0);
        RC_ASSERT(((got & sign) != 0) == std::signbit(c));
      } else if (c == 0.0f) {
        RC_ASSERT(got == (std::signbit(c) ? sign : 0u));
      } else if (std::isinf(c) || !out_finite(got, d)) {
        // Inf stays Inf; f16 overflows to Inf from 65520 (the largest f16 is 65504).
        RC_ASSERT(!out_finite(got, d) && ((got & sign) != 0) == std::signbit(c));
        RC_ASSERT(std::isinf(c) || (d == OutDtype::f16 && std::fabs(c) >= 65520.0f));
      } else {
        RC_ASSERT(rounds_once(test::to_rational(double(c)), got, d));
      }
      RC_ASSERT(d != OutDtype::f32 || r.bound[std::size_t(i)] == 0.0 || std::isnan(c));
    }
  }
}

// With every block scale 1, blockwise is the unscaled wgrad bit for bit under exact,
// fp32_sequential and hopper_promoted_blockwise (promotion per 128 rows either way), and under
// hopper_mma_sync when each group is one block (unscaled mma_sync chains over all rows, blockwise
// promotes per block). MX with unit scales equals unscaled for exact and fp32_sequential.
FP8REF_RC_PROP(WgradScaled, UnitBlockScalesEqualUnscaled, 100, ()) {
  const bool mx = *rc::gen::arbitrary<bool>();
  const AccumulationModel model =
      mx ? *rc::gen::element(AccumulationModel::exact, AccumulationModel::fp32_sequential)
         : *rc::gen::element(AccumulationModel::exact, AccumulationModel::fp32_sequential,
                             AccumulationModel::hopper_promoted_blockwise,
                             AccumulationModel::hopper_mma_sync);
  const bool one_block = model == AccumulationModel::hopper_mma_sync;
  WCase w = gen_case(mx ? Scaling::mx : Scaling::blockwise, gen_sizes(one_block ? 128 : 300));
  std::fill(w.sdy.begin(), w.sdy.end(), 1.0f);
  std::fill(w.sx.begin(), w.sx.end(), 1.0f);
  const OutDtype d = gen_dtype();
  const Run scaled = run(w, {model, 1}, d);
  WCase u = w;
  u.scaling = Scaling::none, u.sdy.clear(), u.sx.clear();
  const Run unscaled = run(u, {model, 1}, d);
  RC_ASSERT(scaled.bits == unscaled.bits);
  RC_TAG(to_string(model));
}

FP8REF_RC_PROP(WgradScaled, ResultsDoNotDependOnThreadCount, 60, ()) {
  const WCase w = gen_case(gen_scaling(), gen_sizes());
  const ModelChoice m = gen_model(w.scaling);
  const OutDtype d = gen_dtype();
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Run one = run(w, m, d);
  omp_set_num_threads(2);
  const Run two = run(w, m, d);
  omp_set_num_threads(before);
  RC_ASSERT(one.bits == two.bits);
  for (std::size_t i = 0; i < one.bound.size(); ++i)
    RC_ASSERT(std::bit_cast<std::uint64_t>(one.bound[i]) ==
              std::bit_cast<std::uint64_t>(two.bound[i]));
}

// The block rows of the rows past the last group are never read: NaN, Inf, zero, negative or
// non-power-of-two values there change no bit of the output or of the bound.
FP8REF_RC_PROP(WgradScaled, ScalesOfRowsOfNoGroupAreNeverRead, 60, ()) {
  WCase w = gen_case(*rc::gen::element(Scaling::blockwise, Scaling::mx), gen_sizes());
  w.tail = std::max<std::int64_t>(w.tail, 1);
  w.dy.resize(std::size_t(w.M() * w.N), 0x38), w.x.resize(std::size_t(w.M() * w.K), 0x38);
  gen_scales(w);
  const ModelChoice m = gen_model(w.scaling);
  const OutDtype d = gen_dtype();
  const Run clean = run(w, m, d);
  const auto poison = rc::gen::element(NAN, -NAN, INFINITY, -INFINITY, 0.0f, -2.0f, 3.0f, 1e38f);
  for (std::int64_t i = w.first_block(w.G()) * w.N; i < std::int64_t(w.sdy.size()); ++i)
    w.sdy[std::size_t(i)] = *poison;
  for (std::int64_t i = w.first_block(w.G()) * w.K; i < std::int64_t(w.sx.size()); ++i)
    w.sx[std::size_t(i)] = *poison;
  const Run poisoned = run(w, m, d);
  RC_ASSERT(clean.bits == poisoned.bits);
  for (std::size_t i = 0; i < clean.bound.size(); ++i)
    RC_ASSERT(std::bit_cast<std::uint64_t>(clean.bound[i]) ==
              std::bit_cast<std::uint64_t>(poisoned.bound[i]));
}

// An empty group owns no block row, so inserting empty groups (with the same scale tensors)
// leaves every other group's dW bitwise unchanged, and the new groups give C.
FP8REF_RC_PROP(WgradScaled, InsertingEmptyGroupsChangesNoOtherGroup, 60, ()) {
  const WCase w = gen_case(gen_scaling(), gen_sizes());
  const ModelChoice m = gen_model(w.scaling);
  const Run before = run(w, m, OutDtype::f32);
  WCase v = w;
  std::vector<std::int64_t> from;  // group of w each group of v came from, -1 if new
  v.sizes.clear(), v.c.clear();
  const std::size_t nk = std::size_t(w.N * w.K);
  for (std::int64_t g = 0; g <= w.G(); ++g) {
    for (int e = *rc::gen::inRange(0, 3); e > 0; --e) {
      v.sizes.push_back(0), from.push_back(-1);
      for (std::size_t j = 0; j < nk; ++j) v.c.push_back(*gen_c());
    }
    if (g == w.G()) break;
    v.sizes.push_back(w.sizes[std::size_t(g)]), from.push_back(g);
    v.c.insert(v.c.end(), w.c.begin() + std::ptrdiff_t(g * nk),
               w.c.begin() + std::ptrdiff_t((g + 1) * nk));
  }
  const Run after = run(v, m, OutDtype::f32);
  for (std::size_t h = 0; h < from.size(); ++h)
    for (std::size_t j = 0; j < nk; ++j) {
      const std::uint32_t got = after.bits[h * nk + j];
      RC_ASSERT(got == (from[h] < 0 ? std::bit_cast<std::uint32_t>(v.c[h * nk + j])
                                    : before.bits[std::size_t(from[h]) * nk + j]));
    }
}

// The message of the std::invalid_argument `f` throws ("no throw" if none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no throw";
}

// Groups of 130, 0 and 130 rows and 40 rows of no group: 2 + 0 + 2 block rows of 128 for the
// groups and 1 for the tail (5; mx: 5 + 0 + 5 + 2 = 12). Every rejection leaves dW unwritten.
TEST(WgradScaled, BadScalesAreRejectedClearly) {
  WCase w;
  w.sizes = {130, 0, 130}, w.tail = 40, w.N = 2, w.K = 3;
  w.dy.assign(std::size_t(w.M() * w.N), 0x38), w.x.assign(std::size_t(w.M() * w.K), 0x38);
  w.c.assign(std::size_t(w.G() * w.N * w.K), 0.5f);
  w.scaling = Scaling::blockwise;
  w.sdy.assign(5 * 2, 1.0f), w.sx.assign(5 * 3, 1.0f);
  std::vector<float> dw(w.c.size(), -7.0f);
  const ModelChoice exact{AccumulationModel::exact, 1};
  const auto call = [&](const WCase& v, ModelChoice m) {
    return error_of([&] { grouped_gemm_wgrad(v.operands(), v.offs(), m, dw, {}); });
  };
  const auto has = [](const std::string& msg, const char* part) {
    return msg.find(part) != std::string::npos;
  };
  WCase v = w;
  v.sdy.assign(4 * 2, 1.0f);  // the groups' block rows only: the tail's row is missing
  EXPECT_TRUE(has(call(v, exact), "scale_dy has 8 elements, expected 10")) << call(v, exact);
  v = w, v.sx.resize(16, 1.0f);
  EXPECT_TRUE(has(call(v, exact), "block rows of 128 tokens")) << call(v, exact);
  v = w, v.sdy[3 * 2 + 1] = NAN;  // block row 3: rows 258..259 of group 2, column 1
  EXPECT_TRUE(has(call(v, exact), "rows 258..259 of group 2, column 1) is not finite"))
      << call(v, exact);
  v = w, v.sx[0] = INFINITY;
  EXPECT_TRUE(has(call(v, exact), "scale_x[0]")) << call(v, exact);
  EXPECT_TRUE(std::all_of(dw.begin(), dw.end(), [](float f) { return f == -7.0f; }));
  v = w, v.sdy[4 * 2] = NAN, v.sx[4 * 3 + 2] = -INFINITY;  // the tail's block row: never read
  EXPECT_EQ(call(v, exact), "no throw");
  EXPECT_TRUE(has(call(w, {AccumulationModel::hopper_promoted_tensorwise, 1}), "needs scales"));
  v = w, v.scaling = Scaling::rowwise;
  EXPECT_TRUE(has(call(v, exact), "not rowwise")) << call(v, exact);
  v = w, v.scaling = Scaling::mx, v.sdy.assign(12 * 2, 0.5f), v.sx.assign(12 * 3, 2.0f);
  EXPECT_EQ(call(v, exact), "no throw");
  v.sx[7] = 3.0f;
  EXPECT_TRUE(has(call(v, exact), "not a power of two")) << call(v, exact);
  v.sx[7] = 0.0f;
  EXPECT_TRUE(has(call(v, exact), "not a power of two")) << call(v, exact);
  v = w, v.scaling = Scaling::tensorwise, v.sdy = {NAN}, v.sx = {1.0f};
  EXPECT_TRUE(has(call(v, exact), "not finite")) << call(v, exact);
  std::vector<std::uint16_t> small(w.c.size() - 1);
  EXPECT_TRUE(has(error_of([&] {
                    grouped_gemm_wgrad(w.operands(), w.offs(), exact,
                                       GemmOutput{OutDtype::bf16, {}, small, {}});
                  }),
                  "output (bf16)"));
}

// quantize_grouped_rows (1×128 deepgemm, or 1×32 mx_floor) of dY and X feeds wgrad directly: the
// exact model gives C + sum of the dequantized products, rounded once.
FP8REF_RC_PROP(WgradScaled, QuantizeGroupedRowsComposesWithWgrad, 40, ()) {
  const bool mx = *rc::gen::arbitrary<bool>();
  const auto sizes = gen_sizes();
  WCase w = gen_case(mx ? Scaling::mx : Scaling::blockwise, sizes);
  const std::int64_t M = w.M();
  RC_PRE(M > 0);
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  const auto src = [&](std::int64_t n) {  // multiples of 2^-6 in [-62.5, 62.5], zeros included
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& f : v) f = float(std::int64_t(rng() % 8001) - 4000) / 64.0f;
    return v;
  };
  const std::vector<float> dy_src = src(M * w.N), x_src = src(M * w.K);
  const Recipe r = mx ? Recipe{RecipeKind::mx_floor, Format::e4m3, Runtime::torch_cpu, false, 0}
                      : Recipe{RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, false, 0};
  const BlockGeometry geo = mx ? BlockGeometry::b32x1 : BlockGeometry::b128x1;
  std::vector<std::int64_t> ends = w.offs();
  if (w.tail > 0) ends.push_back(M);
  const Quantized qdy =
      quantize_grouped_rows({dy_src.data(), Source::f32, M, w.N, w.N, 1}, r, geo, ends);
  const Quantized qx =
      quantize_grouped_rows({x_src.data(), Source::f32, M, w.K, w.K, 1}, r, geo, ends);
  w.fdy = w.fx = Format::e4m3;
  w.dy = qdy.codes, w.x = qx.codes, w.sdy = qdy.scale, w.sx = qx.scale;
  const OutDtype d = gen_dtype();
  const Run run_exact = run(w, {AccumulationModel::exact, 1}, d);
  const std::vector<double> ddy = dequantize(qdy), dx = dequantize(qx);
  for (std::int64_t g = 0; g < w.G(); ++g)
    for (std::int64_t n = 0; n < w.N; ++n)
      for (std::int64_t k = 0; k < w.K; ++k) {
        if (w.sizes[std::size_t(g)] == 0) continue;
        const std::size_t i = std::size_t((g * w.N + n) * w.K + k);
        Rational want = test::to_rational(double(w.c[i]));
        for (std::int64_t row = w.start(g); row < w.start(g + 1); ++row)
          want += test::to_rational(ddy[std::size_t(row * w.N + n)]) *
                  test::to_rational(dx[std::size_t(row * w.K + k)]);
        if (!rounds_once(want, run_exact.bits[i], d))
          RC_FAIL("quantize -> wgrad differs from the dequantized sum at " + where(w, g, n, k));
      }
}

}  // namespace
}  // namespace fp8ref::ref
