// Grouped GEMM reference and group descriptors (docs/design.md §8-9): descriptor validation and
// conversions, thread-count invariance, padding independence, empty-group invariance, layout
// equivalence, agreement with the rational oracle, wgrad's empty group == C.
#include "reference/grouped_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "proptests/common/test_level.h"
#include "proptests/reference/gemm_problem.h"
#include "reference/group_desc.h"

namespace fp8ref::ref {
namespace {

using test::gen_map;
using test::gen_model;
using test::gen_problem;
using test::gen_sizes;
using test::Problem;
using test::run_f32;
using test::same_bits;

TEST(GroupDescriptors, ValidationNamesTheProblem) {
  const std::vector<std::int64_t> ok{0, 3, 3, 8};
  EXPECT_NO_THROW(validate_offsets(ok, 8, 1));
  auto msg = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no throw");
  };
  EXPECT_NE(msg([] {
              validate_offsets(std::vector<std::int64_t>{4, 2}, 8, 1);
            }).find("non-monotonic"),
            std::string::npos);
  EXPECT_NE(msg([] {
              validate_offsets(std::vector<std::int64_t>{4, 9}, 8, 1);
            }).find("beyond M"),
            std::string::npos);
  EXPECT_NE(msg([] { validate_offsets(std::vector<std::int64_t>{-1}, 8, 1); }).find("negative"),
            std::string::npos);
  EXPECT_NE(msg([] {
              validate_offsets(std::vector<std::int64_t>{4, 6}, 8, 4);
            }).find("alignment"),
            std::string::npos);
  EXPECT_NE(msg([] {
              validate_sizes(std::vector<std::int64_t>{2, -1}, 8);
            }).find("negative"),
            std::string::npos);
  EXPECT_NE(msg([] {
              validate_row_map(std::vector<std::int32_t>{0, 2}, 2);
            }).find("outside"),
            std::string::npos);
  EXPECT_NE(msg([] { validate_masked(std::vector<std::int64_t>{5}, 4); }).find("beyond M_max"),
            std::string::npos);
  AlignedLayout l{{0, 6}, {3, 2}, 4, 8};
  EXPECT_NE(msg([&] { validate_aligned_layout(l, 16); }).find("misaligned"), std::string::npos);
  EXPECT_NE(msg([] {
              offsets_from_row_map(std::vector<std::int32_t>{0, -1, 1}, 2);
            }).find("padding"),
            std::string::npos);
  EXPECT_NE(msg([] {
              offsets_from_row_map(std::vector<std::int32_t>{1, 0}, 2);
            }).find("ascending"),
            std::string::npos);
}

FP8REF_RC_PROP(GroupDescriptors, ConversionsRoundTrip, 100, ()) {
  const auto sizes = *gen_sizes();
  const auto offs = offsets_from_sizes(sizes);
  RC_ASSERT(sizes_from_offsets(offs) == sizes);
  const std::int64_t M = (offs.empty() ? 0 : offs.back()) + *rc::gen::inRange(0, 5);
  const auto map = row_map_from_offsets(offs, M);
  RC_ASSERT(offsets_from_row_map(map, std::int64_t(sizes.size())) == offs);
  const std::int64_t align = *rc::gen::element<std::int64_t>(1, 16, 32, 128);
  const AlignedLayout l = aligned_layout_from_sizes(sizes, align);
  const auto amap = row_map_from_aligned(l, l.total);
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    RC_ASSERT(l.starts[g] % align == 0);
    RC_ASSERT(std::count(amap.begin(), amap.end(), std::int32_t(g)) == sizes[g]);
  }
  const std::int64_t m_max = *rc::gen::inRange(20, 24);
  const auto mmap = row_map_from_masked(sizes, m_max);
  for (std::size_t g = 0; g < sizes.size(); ++g)
    for (std::int64_t i = 0; i < m_max; ++i)
      RC_ASSERT(mmap[g * std::size_t(m_max) + std::size_t(i)] ==
                (i < sizes[g] ? std::int32_t(g) : -1));
}

FP8REF_RC_PROP(GroupedGemm, ResultsDoNotDependOnThreadCount, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 4);
  const Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  omp_set_num_threads(1);
  const auto y1 = run_f32(p, m, RowPolicy::zero, 0.0f);
  omp_set_num_threads(2);
  const auto y2 = run_f32(p, m, RowPolicy::zero, 0.0f);
  RC_ASSERT((y1.size() * sizeof(float) == 0 ||
             std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0));
}

FP8REF_RC_PROP(GroupedGemm, PaddingContentDoesNotChangeValidRows, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 4);
  Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  const auto y = run_f32(p, m, RowPolicy::untouched, -7.0f);
  const std::uint8_t poison = *rc::gen::element<std::uint8_t>(0x7F, 0xFF, 0x7C, 0x55);
  const std::int64_t per_row = sa_per_row(p);
  for (std::int64_t r = 0; r < p.M; ++r) {
    if (p.group_of[std::size_t(r)] >= 0) continue;
    for (std::int64_t k = 0; k < p.K; ++k) p.a[std::size_t(r * p.K + k)] = poison;
    for (std::int64_t j = 0; j < per_row; ++j) p.sa[std::size_t(r * per_row + j)] = NAN;
  }
  const auto yp = run_f32(p, m, RowPolicy::untouched, -7.0f);
  const auto yz = run_f32(p, m, RowPolicy::zero, -7.0f);
  for (std::int64_t r = 0; r < p.M; ++r)
    for (std::int64_t n = 0; n < p.N; ++n) {
      const std::size_t i = std::size_t(r * p.N + n);
      RC_ASSERT(same_bits(y[i], yp[i]));
      if (p.group_of[std::size_t(r)] < 0) {
        RC_ASSERT(same_bits(yp[i], -7.0f));
        RC_ASSERT(same_bits(yz[i], 0.0f));
      } else {
        RC_ASSERT(same_bits(yz[i], yp[i]));
      }
    }
}

// Inserting empty groups (with arbitrary B and scales for them) into torch-style offsets
// changes nothing.
FP8REF_RC_PROP(GroupedGemm, AddingEmptyGroupsDoesNotChangeOutput, 100, ()) {
  const auto sizes = *gen_sizes();
  RC_PRE(!sizes.empty());
  const auto offs = offsets_from_sizes(sizes);
  const std::int64_t G = std::int64_t(sizes.size());
  Problem p = gen_problem(row_map_from_offsets(offs, offs.back()), G);
  RC_PRE(p.scaling == Scaling::none ||
         p.scaling == Scaling::tensorwise);  // per-group B scales below
  const ModelChoice m = gen_model(p.scaling);
  std::vector<float> y(std::size_t(p.M * p.N));
  grouped_gemm_forward_offs(p.operands(), offs, m, RowPolicy::zero, {OutDtype::f32, y, {}, {}});
  // Insert an empty group before group `at`.
  const std::size_t at = std::size_t(*rc::gen::inRange<std::int64_t>(0, G + 1));
  std::vector<std::int64_t> offs2(offs.begin(), offs.end());
  offs2.insert(offs2.begin() + std::ptrdiff_t(at), at ? offs[at - 1] : 0);
  Problem q = p;
  q.G = G + 1;
  const auto extra = *test::gen_codes(p.fb, p.N * p.K);
  q.b.insert(q.b.begin() + std::ptrdiff_t(at * std::size_t(p.N * p.K)), extra.begin(), extra.end());
  if (p.scaling == Scaling::tensorwise) q.sb.insert(q.sb.begin() + std::ptrdiff_t(at), 3.0f);
  std::vector<float> y2(y.size());
  grouped_gemm_forward_offs(q.operands(), offs2, m, RowPolicy::zero, {OutDtype::f32, y2, {}, {}});
  RC_ASSERT((y.size() * sizeof(float) == 0 ||
             std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)) == 0));
}

FP8REF_RC_PROP(GroupedGemm, BLayoutKnEqualsNk, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 3);
  const Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  std::vector<std::uint8_t> bkn(p.b.size());
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < p.N; ++n)
      for (std::int64_t k = 0; k < p.K; ++k)
        bkn[std::size_t((g * p.K + k) * p.N + n)] = p.b[std::size_t((g * p.N + n) * p.K + k)];
  GroupedGemmOperands op = p.operands();
  op.b = bkn, op.b_layout = BLayout::kn;
  std::vector<std::uint16_t> y1(std::size_t(p.M * p.N)), y2(y1.size());  // bf16
  grouped_gemm_forward(p.operands(), p.group_of, m, RowPolicy::zero, {OutDtype::bf16, {}, y1, {}});
  grouped_gemm_forward(op, p.group_of, m, RowPolicy::zero, {OutDtype::bf16, {}, y2, {}});
  RC_ASSERT(y1 == y2);
}

// Every output element, under every model and output type, lies within its reported bound of
// the rational result; `exact` is the rational result rounded once (RN-even, checked against
// the neighbouring values of the output type).
FP8REF_RC_PROP(GroupedGemm, OutputsWithinBoundOfRationalOracle, 100, ()) {
  const std::int64_t G = *rc::gen::inRange(1, 3);
  const Problem p = gen_problem(gen_map(G), G);
  const ModelChoice m = gen_model(p.scaling);
  const OutDtype d = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  std::vector<double> bound;
  const auto bits = test::run_bits(p, m, RowPolicy::zero, d, &bound);
  std::vector<std::int64_t> valid;
  for (std::int64_t q = 0; q < p.M; ++q)
    if (p.group_of[std::size_t(q)] >= 0) valid.push_back(q);
  RC_PRE(!valid.empty());
  const std::int64_t r = *rc::gen::elementOf(valid);
  const std::int64_t g = p.group_of[std::size_t(r)], n = *rc::gen::inRange<std::int64_t>(0, p.N);
  const test::OracleScales os = test::oracle_scales(p, r, g, n);
  const test::Rational exact =
      test::exact_dot_rational(p.a.data() + r * p.K, p.b.data() + (g * p.N + n) * p.K, p.K, p.fa,
                               p.fb, os.sa, os.sb, os.block);
  const std::size_t i = std::size_t(r * p.N + n);
  const double got = out_value(bits[i], d);
  RC_CLASSIFY(d == OutDtype::f16, "f16");
  RC_CLASSIFY(p.scaling == Scaling::mx, "mx");
  if (m.model == AccumulationModel::exact && d == OutDtype::f16)
    RC_ASSERT(test::is_nearest_even_f16(exact, std::uint16_t(bits[i])));
  if (!std::isfinite(got)) RC_ASSERT(d == OutDtype::f16);  // only f16 can overflow here
  if (!std::isfinite(got)) return;
  RC_ASSERT(abs(test::to_rational(got) - exact) <= test::to_rational(bound[i]));
  if (m.model == AccumulationModel::exact && d != OutDtype::f16)
    RC_ASSERT(test::is_nearest_even(exact, float(got), d == OutDtype::bf16));
}

TEST(GroupedGemm, BadArgumentsAreRejectedClearly) {
  const std::vector<std::uint8_t> a(4 * 8, 0x38), b(2 * 3 * 8, 0x38);
  std::vector<float> y(4 * 3);
  GroupedGemmOperands op{4,  3, 8, 2, Format::e4m3, Format::e4m3, a, b, BLayout::nk, Scaling::none,
                         {}, {}};
  const GemmOutput out{OutDtype::f32, y, {}, {}};
  const std::vector<std::int64_t> offs{3, 2};
  EXPECT_THROW(
      grouped_gemm_forward_offs(op, offs, {AccumulationModel::exact, 1}, RowPolicy::zero, out),
      std::invalid_argument);
  const std::vector<std::int32_t> map{0, 1, -1, 0};
  EXPECT_THROW(grouped_gemm_forward(op, map, {AccumulationModel::exact, 2}, RowPolicy::zero, out),
               std::invalid_argument);
  op.fa = Format::e8m0;
  EXPECT_THROW(grouped_gemm_forward(op, map, {AccumulationModel::exact, 1}, RowPolicy::zero, out),
               std::invalid_argument);
  op.fa = Format::e4m3;
  const std::vector<float> sa{NAN}, sb{1.0f, 1.0f};
  op.scaling = Scaling::tensorwise, op.scale_a = sa, op.scale_b = sb;
  EXPECT_THROW(grouped_gemm_forward(op, map, {AccumulationModel::exact, 1}, RowPolicy::zero, out),
               std::invalid_argument);
}

FP8REF_RC_PROP(GroupedGemmWgrad, EmptyGroupIsExactlyC, 100, ()) {
  auto sizes = *gen_sizes();
  RC_PRE(std::find(sizes.begin(), sizes.end(), 0) != sizes.end());
  const auto offs = offsets_from_sizes(sizes);
  const std::int64_t M = offs.back(), G = std::int64_t(sizes.size());
  const std::int64_t N = *rc::gen::inRange(1, 6), K = *rc::gen::inRange(1, 6);
  const Format f = *test::gen_format();
  const auto dy = *test::gen_codes(f, M * N);
  const auto x = *test::gen_codes(f, M * K);
  const auto c = *rc::gen::container<std::vector<float>>(
      std::size_t(G * N * K), rc::gen::element(-0.0f, 0.0f, 1.5f, -3e-41f, 7.25e20f));
  const ModelChoice m{
      *rc::gen::element(AccumulationModel::exact, AccumulationModel::fp32_sequential,
                        AccumulationModel::hopper_promoted_blockwise),
      1};
  std::vector<float> dw(c.size());
  grouped_gemm_wgrad({M, N, K, G, f, f, dy, x, Scaling::none, {}, {}, c}, offs, m, dw, {});
  for (std::int64_t g = 0; g < G; ++g) {
    if (sizes[std::size_t(g)] != 0) continue;
    for (std::int64_t i = g * N * K; i < (g + 1) * N * K; ++i)
      RC_ASSERT(same_bits(dw[std::size_t(i)], c[std::size_t(i)]));
  }
}

// wgrad `exact`: RN_f32(C + sum of the group's products), against the rational oracle.
FP8REF_RC_PROP(GroupedGemmWgrad, ExactIsRationalRoundedOnce, 100, ()) {
  const auto sizes = *gen_sizes();
  RC_PRE(!sizes.empty());
  const auto offs = offsets_from_sizes(sizes);
  const std::int64_t M = offs.back(), G = std::int64_t(sizes.size()), N = 2, K = 3;
  const Format f = *test::gen_format();
  const auto dy = *test::gen_codes(f, M * N);
  const auto x = *test::gen_codes(f, M * K);
  const auto c = *rc::gen::container<std::vector<float>>(std::size_t(G * N * K),
                                                         rc::gen::element(0.0f, 1.0f, -0.3f));
  std::vector<float> dw(c.size());
  grouped_gemm_wgrad({M, N, K, G, f, f, dy, x, Scaling::none, {}, {}, c}, offs,
                     {AccumulationModel::exact, 1}, dw, {});
  const std::int64_t g = *rc::gen::inRange<std::int64_t>(0, G),
                     n = *rc::gen::inRange<std::int64_t>(0, N),
                     k = *rc::gen::inRange<std::int64_t>(0, K);
  test::Rational want = test::to_rational(double(c[std::size_t((g * N + n) * K + k)]));
  for (std::int64_t r = g ? offs[std::size_t(g - 1)] : 0; r < offs[std::size_t(g)]; ++r)
    want += test::fp8_rational(f, dy[std::size_t(r * N + n)]) *
            test::fp8_rational(f, x[std::size_t(r * K + k)]);
  RC_ASSERT(test::is_nearest_even(want, dw[std::size_t((g * N + n) * K + k)], false));
}

}  // namespace
}  // namespace fp8ref::ref
