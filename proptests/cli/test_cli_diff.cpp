// Tests for the diff/inspect computations behind fp8-check: ULP distance on the format's number
// line (sign-aware, ±0 equal, NaN/Inf as classes), metrics (incl. per-element bounds),
// groups/padding rows, HTML report.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <memory>

#include "cli/diff.h"
#include "cli/errors.h"
#include "cli/inspect.h"
#include "cli/report.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::cli {
namespace {

using tensor_io::DType;
using tensor_io::Tensor;

Tensor e4m3(std::vector<std::uint8_t> codes, std::vector<std::int64_t> shape) {
  return {DType::F8_E4M3, std::move(shape), std::move(codes)};
}

Tensor f32(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  Tensor t{DType::F32, std::move(shape), {}};
  for (float x : v) {
    for (int b = 0; b < 4; ++b)
      t.data.push_back(static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(x) >> (8 * b)));
  }
  return t;
}

Metric bound_metric(Tensor bound) {
  Metric m = parse_metric("bound:unused.safetensors:b");
  m.bound = std::make_shared<const Tensor>(std::move(bound));
  return m;
}

TEST(Diff, UlpDistanceCrossesZeroSignAware) {
  // 0x01 = +2^-9, 0x81 = -2^-9: two steps apart through ±0; 0x00 vs 0x80 (+0 / -0): 0 ULP, not
  // bitwise.
  const TensorDiff d =
      diff_tensors("x", e4m3({0x01, 0x00, 0x7e}, {3}), e4m3({0x81, 0x80, 0x7d}, {3}),
                   parse_metric("ulp:1"), nullptr, 10);
  EXPECT_EQ(d.status, DiffStatus::differs);
  EXPECT_EQ(d.bitwise_mismatches, 3u);
  EXPECT_EQ(d.max_ulp, 2u);
  EXPECT_EQ(d.metric_failures, 1u);
  ASSERT_EQ(d.first.size(), 3u);
  EXPECT_EQ(d.first[1].ulp, 0);
}

TEST(Diff, NanIsAClassNotADistance) {
  const TensorDiff d = diff_tensors("x", e4m3({0x7f, 0x7e}, {2}), e4m3({0xff, 0x7f}, {2}),
                                    parse_metric("ulp:1000"), nullptr, 10);
  EXPECT_EQ(d.class_mismatches, 1u);  // 448 vs NaN
  EXPECT_EQ(d.metric_failures, 1u);   // NaN vs -NaN is the same class: within any ULP metric
  EXPECT_EQ(d.status, DiffStatus::differs);
}

TEST(Diff, ToleranceMetricAndEqualTensors) {
  const Tensor a = e4m3({0x38, 0x40}, {2}), b = e4m3({0x39, 0x40}, {2});  // 1.0 vs 1.125
  EXPECT_EQ(diff_tensors("x", a, b, parse_metric("tol:0.2,0"), nullptr, 10).status,
            DiffStatus::within);
  EXPECT_EQ(diff_tensors("x", a, b, parse_metric("tol:0.1,0"), nullptr, 10).status,
            DiffStatus::differs);
  EXPECT_EQ(diff_tensors("x", a, a, parse_metric("bitwise"), nullptr, 10).status,
            DiffStatus::equal);
  EXPECT_EQ(diff_tensors("x", a, e4m3({0x38}, {1}), parse_metric("bitwise"), nullptr, 10).status,
            DiffStatus::shape_mismatch);
}

TEST(Diff, GroupsAndPaddingRowsFromOffsets) {
  // 5 rows x 2 cols; offs {1, 1, 3}: group 0 = row 0, group 1 empty, group 2 = rows 1-2, rows 3-4
  // padding.
  std::vector<std::uint8_t> a(10, 0x38), b(10, 0x38);
  b[2 * 2 + 1] = 0x39;  // row 2 -> group 2
  b[2 * 4] = 0x40;      // row 4 -> padding
  const std::vector<std::int64_t> offs = {1, 1, 3};
  const TensorDiff d =
      diff_tensors("x", e4m3(a, {5, 2}), e4m3(b, {5, 2}), parse_metric("bitwise"), &offs, 10);
  ASSERT_EQ(d.groups.size(), 4u);
  EXPECT_EQ(d.groups[1].rows, 0u);
  EXPECT_EQ(d.groups[2].mismatches, 1u);
  EXPECT_EQ(d.groups[3].group, -1);
  EXPECT_EQ(d.groups[3].rows, 2u);
  EXPECT_EQ(d.groups[3].mismatches, 1u);
  EXPECT_EQ(d.first.at(0).group, 2);
  EXPECT_EQ(d.first.at(1).group, -1);
  EXPECT_EQ(d.first.at(1).multi_index, (std::vector<std::int64_t>{4, 0}));
}

TEST(Diff, MetricParsing) {
  EXPECT_EQ(parse_metric("ulp:3").ulp, 3u);
  EXPECT_DOUBLE_EQ(parse_metric("tol:1e-3,0.5").rtol, 0.5);
  for (const char* bad : {"ulp:", "ulp:-1", "ulp:2x", "tol:1", "tol:a,b", "exact"})
    EXPECT_THROW(parse_metric(bad), UsageError) << bad;
}

// got 1, 1.125, 2, NaN, 448 vs ref 1, 1, 2.5, -NaN, NaN (codes 0x38 0x39 0x40 0x7f 0x7e / 0x38 0x38
// 0x42 0xff 0x7f).
TEST(DiffBound, PassIffAbsErrorWithinTheElementsBoundAndClassesAgree) {
  const Tensor a = e4m3({0x38, 0x39, 0x40, 0x7f, 0x7e}, {5}),
               b = e4m3({0x38, 0x38, 0x42, 0xff, 0x7f}, {5});
  const TensorDiff d =
      diff_tensors("x", a, b, bound_metric(f32({0, 0.125f, 0.25f, 0, 1e30f}, {5})), nullptr, 10);
  EXPECT_EQ(d.metric_failures,
            2u);  // 0.5 > 0.25 at [2]; 448 vs NaN at [4] is a class mismatch, whatever the bound
  EXPECT_EQ(d.status, DiffStatus::differs);
  EXPECT_DOUBLE_EQ(d.max_bound_ratio, 2.0);
  ASSERT_EQ(d.first.size(), 4u);
  EXPECT_DOUBLE_EQ(d.first[0].bound, 0.125);  // [1]: 0.125 <= 0.125 passes (bound is inclusive)
  const TensorDiff ok =
      diff_tensors("x", a, b, bound_metric(f32({0, 0.125f, 0.5f, 0, 0}, {5})), nullptr, 10);
  EXPECT_EQ(ok.metric_failures, 1u);  // only the class mismatch is left
}

TEST(DiffBound, NanBoundFailsInfBoundPassesAndOneElementBroadcasts) {
  const Tensor a = e4m3({0x38, 0x48}, {2}), b = e4m3({0x39, 0x38}, {2});  // |err| 0.125 and 3
  EXPECT_EQ(
      diff_tensors("x", a, b, bound_metric(f32({NAN, INFINITY}, {2})), nullptr, 10).metric_failures,
      1u);
  EXPECT_EQ(diff_tensors("x", a, b, bound_metric(f32({3}, {})), nullptr, 10).status,
            DiffStatus::within);
  EXPECT_EQ(diff_tensors("x", a, b, bound_metric(f32({2.5f}, {1})), nullptr, 10).metric_failures,
            1u);
  EXPECT_THROW(diff_tensors("x", a, b, bound_metric(f32({1, 1, 1}, {3})), nullptr, 10), UsageError);
}

TEST(DiffBound, BoundFileIsLoadedByNameAndNegativeBoundsAreRefused) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("fp8ref_bound_" + std::to_string(::getpid()) + ".safetensors");
  tensor_io::TensorFile tf;
  tf.tensors.push_back({"ok", f32({0.5f, 0}, {2})});
  tf.tensors.push_back({"neg", f32({0.5f, -0.25f}, {2})});
  tensor_io::write_safetensors(path.string(), tf);
  Metric m = parse_metric("bound:" + path.string() + ":ok");
  ASSERT_EQ(m.kind, Metric::Kind::Bound);
  load_bound_tensor(m);
  ASSERT_TRUE(m.bound);
  EXPECT_EQ(m.bound->shape, (std::vector<std::int64_t>{2}));
  Metric neg = parse_metric("bound:" + path.string() + ":neg");
  EXPECT_THROW(load_bound_tensor(neg), UsageError);
  Metric unnamed = parse_metric("bound:" + path.string());
  EXPECT_THROW(load_bound_tensor(unnamed), UsageError) << "two tensors: the name is required";
  Metric missing = parse_metric("bound:" + path.string() + ":nope");
  EXPECT_THROW(load_bound_tensor(missing), UsageError);
  EXPECT_THROW(parse_metric("bound:"), UsageError);
  std::filesystem::remove(path);
}

TEST(Report, HtmlIsSelfContainedWithHeatmapAndHistogram) {
  const std::vector<std::int64_t> offs = {2};
  const TensorDiff d =
      diff_tensors("w<1>", e4m3({0x38, 0x38, 0x38, 0x38}, {4}), e4m3({0x38, 0x3a, 0x38, 0x7f}, {4}),
                   parse_metric("bitwise"), &offs, 10);
  const std::string html = render_html_report("a vs b", parse_metric("bitwise"), {d});
  EXPECT_NE(html.find("<svg class=\"heatmap\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"ulp-histogram\""), std::string::npos);
  EXPECT_NE(html.find("w&lt;1&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
}

TEST(Inspect, StatsDecodeFp8AndCountSpecials) {
  const TensorStats s = compute_stats(e4m3({0x38, 0x38, 0xc0, 0x7f}, {4}), 2);  // 1, 1, -2, NaN
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.finite, 3u);
  EXPECT_DOUBLE_EQ(s.min, -2.0);
  EXPECT_DOUBLE_EQ(s.max, 1.0);
  ASSERT_EQ(s.top_codes.size(), 2u);
  EXPECT_EQ(s.top_codes[0], (std::pair<std::uint32_t, std::uint64_t>{0x38, 2}));
  const TensorStats e5 =
      compute_stats(Tensor{DType::F8_E5M2, {3}, {0x7c, 0xfc, 0x7b}}, 4);  // +Inf, -Inf, 57344
  EXPECT_EQ(e5.pos_inf, 1u);
  EXPECT_EQ(e5.neg_inf, 1u);
  EXPECT_DOUBLE_EQ(e5.max, 57344.0);
}

}  // namespace
}  // namespace fp8ref::cli
