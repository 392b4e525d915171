// Grouped GEMM ops beyond the plain forward (docs/design.md §9-13): the integer-block `exact` path
// equals exact_dot element by element; dgrad against the rational oracle and across layouts;
// invariance under group reordering and batch composition; merged gate/up == separate.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "proptests/common/test_level.h"
#include "proptests/reference/gemm_problem.h"
#include "reference/merged_gate_up.h"

namespace fp8ref::ref {
namespace {

using test::gen_map;
using test::gen_model;
using test::gen_problem;
using test::Problem;
using test::run_bits;

rc::Gen<OutDtype> gen_out() {
  return rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
}

// Large e5m2 values push integer block products past 2^53 (the per-element fallback), NaN codes
// make the whole group fall back: either way the bits are exact_dot's.
FP8REF_RC_PROP(GroupedGemmExact, GroupPathEqualsExactDotPerElement, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 3);
  Problem p = gen_problem(gen_map(G), G, 40, 400);
  const int extra = *rc::gen::inRange(0, 3);  // 0: as drawn, 1: e5m2 maxima, 2: a NaN code
  if (extra == 1 && !p.b.empty())
    p.fa = p.fb = Format::e5m2, p.a.assign(p.a.size(), 0x7B), p.b[0] = 0x7B;
  if (extra == 2 && !p.a.empty())
    p.a[std::size_t(*rc::gen::inRange<std::size_t>(0, p.a.size()))] = 0x7F;
  RC_CLASSIFY(extra == 1, "e5m2 maxima");
  const OutDtype d = *gen_out();
  const auto got = run_bits(p, {AccumulationModel::exact, 1}, RowPolicy::zero, d);
  for (std::int64_t r = 0; r < p.M; ++r) {
    const std::int64_t g = p.group_of[std::size_t(r)];
    if (g < 0) continue;
    for (std::int64_t n = 0; n < p.N; ++n) {
      const test::OracleScales os = test::oracle_scales(p, r, g, n);
      const ElementScales sc{os.sa.data(), os.sb.data(), os.sa.size() > 1, os.block};
      const double z =
          exact_dot(p.a.data() + r * p.K, p.b.data() + (g * p.N + n) * p.K, p.K, p.fa, p.fb, sc, d);
      const std::uint32_t want = out_bits(z, d), have = got[std::size_t(r * p.N + n)];
      RC_ASSERT(have == want || (std::isnan(z) && std::isnan(out_value(have, d))));
    }
  }
}

// dgrad dA[r, k] = sum_n dY[r, n]·W[g, n, k] with the scales of grouped_gemm.h: within each
// model's bound of the rational value, `exact` rounded once, and the W layout irrelevant.
FP8REF_RC_PROP(GroupedGemmDgrad, WithinBoundOfRationalOracleInBothLayouts, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 3);
  const auto map = gen_map(G, 12);
  const std::int64_t M = std::int64_t(map.size()), N = *rc::gen::inRange<std::int64_t>(0, 300),
                     K = *rc::gen::inRange<std::int64_t>(1, 140);
  const Format fdy = *test::gen_format(), fw = *test::gen_format();
  const auto dy = *test::gen_codes(fdy, M * N);
  const auto w = *test::gen_codes(fw, G * N * K);  // (G, N, K)
  const Scaling s = *rc::gen::element(Scaling::none, Scaling::tensorwise, Scaling::rowwise,
                                      Scaling::blockwise, Scaling::mx);
  const std::int64_t nbn = ceil_div(N, 128), nbk = ceil_div(K, 128), nmx = ceil_div(N, 32);
  const std::int64_t na[] = {0, 1, M, M * nbn, M * nmx},
                     nw[] = {0, G, G * K, G * nbn * nbk, G * K * nmx};
  const auto scale = s == Scaling::mx ? test::gen_pow2_scale() : test::gen_scale();
  const auto sdy = *rc::gen::container<std::vector<float>>(std::size_t(na[int(s)]), scale);
  const auto sw = *rc::gen::container<std::vector<float>>(std::size_t(nw[int(s)]), scale);
  const ModelChoice m = gen_model(s);
  std::vector<std::uint8_t> w_kn(w.size());
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t k = 0; k < K; ++k)
        w_kn[std::size_t((g * K + k) * N + n)] = w[std::size_t((g * N + n) * K + k)];
  std::vector<float> da(std::size_t(M * K)), da_kn(da.size());
  std::vector<double> bound(da.size());
  grouped_gemm_dgrad({M, N, K, G, fdy, fw, dy, w, BLayout::nk, s, sdy, sw}, map, m, RowPolicy::zero,
                     {OutDtype::f32, da, {}, bound});
  grouped_gemm_dgrad({M, N, K, G, fdy, fw, dy, w_kn, BLayout::kn, s, sdy, sw}, map, m,
                     RowPolicy::zero, {OutDtype::f32, da_kn, {}, {}});
  RC_ASSERT((da.size() * sizeof(float) == 0 ||
             std::memcmp(da.data(), da_kn.data(), da.size() * sizeof(float)) == 0));
  std::vector<std::int64_t> valid;
  for (std::int64_t q = 0; q < M; ++q)
    if (map[std::size_t(q)] >= 0) valid.push_back(q);
  RC_PRE(!valid.empty());
  const std::int64_t r = *rc::gen::elementOf(valid), g = map[std::size_t(r)];
  const std::int64_t k = *rc::gen::inRange<std::int64_t>(0, K);
  std::vector<std::uint8_t> col(static_cast<std::size_t>(N));  // W[g, :, k]
  for (std::int64_t n = 0; n < N; ++n) col[std::size_t(n)] = w[std::size_t((g * N + n) * K + k)];
  std::vector<float> a{1.0f}, b{1.0f};
  std::int64_t block = 128;
  auto slice = [](const std::vector<float>& v, std::int64_t at, std::int64_t len) {
    return std::vector<float>(v.begin() + at, v.begin() + at + len);
  };
  if (s == Scaling::tensorwise) a = {sdy[0]}, b = {sw[std::size_t(g)]};
  if (s == Scaling::rowwise) a = {sdy[std::size_t(r)]}, b = {sw[std::size_t(g * K + k)]};
  if (s == Scaling::blockwise) {
    a = slice(sdy, r * nbn, nbn), b.clear();
    for (std::int64_t i = 0; i < nbn; ++i)
      b.push_back(sw[std::size_t((g * nbn + i) * nbk + k / 128)]);
  }
  if (s == Scaling::mx)
    a = slice(sdy, r * nmx, nmx), b = slice(sw, (g * K + k) * nmx, nmx), block = 32;
  if (a.size() <= 1) a = {a.empty() ? 1.0f : a[0]}, b = {b.empty() ? 1.0f : b[0]};
  const test::Rational exact =
      test::exact_dot_rational(dy.data() + r * N, col.data(), N, fdy, fw, a, b, block);
  const std::size_t i = std::size_t(r * K + k);
  RC_PRE(std::isfinite(da[i]));
  RC_ASSERT(abs(test::to_rational(double(da[i])) - exact) <= test::to_rational(bound[i]));
  if (m.model == AccumulationModel::exact) RC_ASSERT(test::is_nearest_even(exact, da[i], false));
}

// Relabelling the groups (B planes and per-group scales moved along) changes no output bit.
FP8REF_RC_PROP(GroupedGemm, GroupReorderingDoesNotChangeOutput, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(2, 5);
  const Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(G));  // group g becomes perm[g]
  std::iota(perm.begin(), perm.end(), 0);
  perm = test::shuffled(perm);
  Problem q = p;
  const std::int64_t nb = p.N * p.K, ns = sb_per_group(p);
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t to = perm[std::size_t(g)];
    std::copy_n(p.b.begin() + g * nb, nb, q.b.begin() + to * nb);
    std::copy_n(p.sb.begin() + g * ns, ns, q.sb.begin() + to * ns);
  }
  for (auto& g : q.group_of)
    if (g >= 0) g = perm[std::size_t(g)];
  const OutDtype d = *gen_out();
  RC_ASSERT(run_bits(p, m, RowPolicy::zero, d) == run_bits(q, m, RowPolicy::zero, d));
}

// Batch invariance: a row's output depends on its own A row, its scales and its group's B only,
// not on which other rows (of any group) share the batch.
FP8REF_RC_PROP(GroupedGemm, RowOutputDoesNotDependOnTheRestOfTheBatch, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 4);
  const Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  const OutDtype d = *gen_out();
  const auto full = run_bits(p, m, RowPolicy::zero, d);
  std::vector<std::int64_t> keep;  // a random sub-batch, in a random order
  for (std::int64_t r = 0; r < p.M; ++r)
    if (*rc::gen::arbitrary<bool>()) keep.push_back(r);
  keep = test::shuffled(keep);
  Problem q = p;
  q.M = std::int64_t(keep.size());
  q.a.clear(), q.group_of.clear();
  const std::int64_t per_row = sa_per_row(p);
  if (per_row) q.sa.clear();
  for (std::int64_t r : keep) {
    q.a.insert(q.a.end(), p.a.begin() + r * p.K, p.a.begin() + (r + 1) * p.K);
    q.group_of.push_back(p.group_of[std::size_t(r)]);
    if (per_row)
      q.sa.insert(q.sa.end(), p.sa.begin() + r * per_row, p.sa.begin() + (r + 1) * per_row);
  }
  const auto part = run_bits(q, m, RowPolicy::zero, d);
  for (std::size_t i = 0; i < keep.size(); ++i)
    for (std::int64_t n = 0; n < p.N; ++n)
      RC_ASSERT(part[i * std::size_t(p.N) + std::size_t(n)] ==
                full[std::size_t(keep[i] * p.N + n)]);
}

// Y13 = X·W13^T equals [X·W1^T, X·W3^T] bitwise (H % 128 == 0 whenever scales are 128×128).
FP8REF_RC_PROP(MergedGateUp, MergedForwardEqualsSeparateForward, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 3);
  const Problem p1 = gen_problem(gen_map(G, 10), G, 300, 260);
  const std::int64_t H =
      p1.scaling == Scaling::blockwise ? 128 * *rc::gen::inRange<std::int64_t>(1, 3) : p1.N;
  RC_PRE(H == p1.N || p1.scaling == Scaling::blockwise);
  Problem q1 = p1;
  q1.N = H, q1.b = *test::gen_codes(p1.fb, G * H * p1.K);
  test::gen_scales(q1);
  q1.sa = p1.sa;  // A and its scales shared by both projections
  Problem q3 = q1;
  q3.b = *test::gen_codes(p1.fb, G * H * p1.K);
  q3.sb = *rc::gen::container<std::vector<float>>(
      q1.sb.size(), p1.scaling == Scaling::mx ? test::gen_pow2_scale() : test::gen_scale());
  if (p1.scaling == Scaling::tensorwise) q3.sb = q1.sb;  // one scale per expert for W13
  Problem m13 = q1;
  m13.N = 2 * H;
  m13.b = merge_gate_up_weights(q1.b, q3.b, G, H, p1.K, BLayout::nk);
  m13.sb = merge_gate_up_scales(p1.scaling, q1.sb, q3.sb, G, H, p1.K);
  const ModelChoice m = gen_model(p1.scaling);
  const OutDtype d = *gen_out();
  const auto y1 = run_bits(q1, m, RowPolicy::zero, d), y3 = run_bits(q3, m, RowPolicy::zero, d);
  const auto y13 = run_bits(m13, m, RowPolicy::zero, d);
  for (std::int64_t r = 0; r < p1.M; ++r)
    for (std::int64_t n = 0; n < H; ++n) {
      RC_ASSERT(y13[std::size_t(r * 2 * H + n)] == y1[std::size_t(r * H + n)]);
      RC_ASSERT(y13[std::size_t(r * 2 * H + H + n)] == y3[std::size_t(r * H + n)]);
    }
}

TEST(MergedGateUp, KnMergeIsTheTransposeOfNkMerge) {
  const std::int64_t G = 2, H = 3, K = 4;
  std::vector<std::uint8_t> w1(G * H * K), w3(w1.size());
  std::iota(w1.begin(), w1.end(), 0);
  std::iota(w3.begin(), w3.end(), 100);
  auto to_kn = [](const std::vector<std::uint8_t>& v, std::int64_t g_, std::int64_t n_,
                  std::int64_t k_) {
    std::vector<std::uint8_t> t(v.size());
    for (std::int64_t g = 0; g < g_; ++g)
      for (std::int64_t n = 0; n < n_; ++n)
        for (std::int64_t k = 0; k < k_; ++k)
          t[std::size_t((g * k_ + k) * n_ + n)] = v[std::size_t((g * n_ + n) * k_ + k)];
    return t;
  };
  const auto nk = merge_gate_up_weights(w1, w3, G, H, K, BLayout::nk);
  EXPECT_EQ(merge_gate_up_weights(to_kn(w1, G, H, K), to_kn(w3, G, H, K), G, H, K, BLayout::kn),
            to_kn(nk, G, 2 * H, K));
  EXPECT_EQ(nk[std::size_t(H * K)], 100);  // group 0: W3's first row follows W1's H rows
}

TEST(MergedGateUp, ScalesThatCannotCarryOverAreRejected) {
  const std::vector<float> a{1.0f, 2.0f}, b{1.0f, 3.0f};
  EXPECT_THROW(merge_gate_up_scales(Scaling::tensorwise, a, b, 2, 64, 64), std::invalid_argument);
  const std::vector<float> blk(2, 1.0f);
  EXPECT_THROW(merge_gate_up_scales(Scaling::blockwise, blk, blk, 2, 96, 128),
               std::invalid_argument);
  EXPECT_NO_THROW(merge_gate_up_scales(Scaling::blockwise, blk, blk, 2, 128, 128));
}

// Merged dgrad sums over 2H, so it is compared with the exact value (docs/design.md §13), not with
// the two separate dgrads: `exact` on (dY13, W13) is the rational sum over both halves rounded
// once.
FP8REF_RC_PROP(MergedGateUp, MergedDgradExactIsRoundedSumOfHalves, 100, ()) {
  const std::int64_t G = 1, H = *rc::gen::inRange<std::int64_t>(1, 200),
                     K = *rc::gen::inRange<std::int64_t>(1, 20);
  const Format f = *test::gen_format();
  const auto dy1 = *test::gen_codes(f, H), dy3 = *test::gen_codes(f, H);
  const auto w1 = *test::gen_codes(f, H * K), w3 = *test::gen_codes(f, H * K);
  std::vector<std::uint8_t> dy13(dy1);
  dy13.insert(dy13.end(), dy3.begin(), dy3.end());
  const auto w13 = merge_gate_up_weights(w1, w3, G, H, K, BLayout::nk);
  std::vector<float> dx(static_cast<std::size_t>(K));
  const std::vector<std::int32_t> map{0};
  grouped_gemm_dgrad({1, 2 * H, K, G, f, f, dy13, w13, BLayout::nk, Scaling::none, {}, {}}, map,
                     {AccumulationModel::exact, 1}, RowPolicy::zero, {OutDtype::f32, dx, {}, {}});
  const std::int64_t k = *rc::gen::inRange<std::int64_t>(0, K);
  test::Rational want = 0;
  for (std::int64_t n = 0; n < H; ++n)
    want += test::fp8_rational(f, dy1[std::size_t(n)]) *
                test::fp8_rational(f, w1[std::size_t(n * K + k)]) +
            test::fp8_rational(f, dy3[std::size_t(n)]) *
                test::fp8_rational(f, w3[std::size_t(n * K + k)]);
  RC_ASSERT(test::is_nearest_even(want, dx[std::size_t(k)], false));
}

}  // namespace
}  // namespace fp8ref::ref
