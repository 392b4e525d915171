// The library's bad-input errors (docs/design.md §16; docs/recipes.md "Shapes" and "NaN
// input"): each is a std::invalid_argument whose message names the problem. Which shapes each
// library rejects is restated here from docs/recipes.md and compared on every recipe, geometry
// and a grid of shapes; NaN rejection names the first NaN of a strided view of each source type.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "proptests/common/test_level.h"
#include "proptests/reference/quantize/scale_gen.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
namespace {

// Runs f; expects std::invalid_argument whose message contains every one of `parts`.
void expect_invalid(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one naming '" << parts.front() << "'";
  } catch (const std::invalid_argument& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' does not name '" << p << "'";
  }
}

constexpr BlockGeometry kGeometries[] = {BlockGeometry::tensorwise,  BlockGeometry::rowwise,
                                         BlockGeometry::per_channel, BlockGeometry::b1x128,
                                         BlockGeometry::b128x1,      BlockGeometry::b128x128,
                                         BlockGeometry::b1x32,       BlockGeometry::b32x1};

// docs/recipes.md "Shapes", restated: the rule broken (accepted if none) and a word of its reason.
std::pair<ShapeRule, std::string> documented_rule(const Recipe& r, BlockGeometry g, std::int64_t m,
                                                  std::int64_t k) {
  // Block extents that must divide the dimension (0: none, the extent is 1 or the whole dimension).
  const std::string t(to_string(g));
  const std::int64_t br = t == "128x1" || t == "128x128" ? 128 : (t == "32x1" ? 32 : 0);
  const std::int64_t bc = t == "1x128" || t == "128x128" ? 128 : (t == "1x32" ? 32 : 0);
  const auto rule = [](bool rejects, ShapeRule broken) {
    return rejects ? broken : ShapeRule::accepted;
  };
  if (r.kind == RecipeKind::te) return {ShapeRule::accepted, ""};
  if (r.kind == RecipeKind::deepgemm)  // per_channel_cast_to_fp8: 128x1 / 32x1 need rows % block
    return {rule(bc == 0 && br > 0 && m % br != 0, ShapeRule::deepgemm_channel_rows),
            "per_channel_cast_to_fp8"};
  if (r.kind == RecipeKind::mx_rceil && r.runtime == Runtime::cuda_kernel)
    return {rule(m % 32 != 0 || k % 32 != 0, ShapeRule::te_mxfp8_dims), "divisible by 32"};
  return {rule((br > 0 && m % br != 0) || (bc > 0 && k % bc != 0),  // torchao
               ShapeRule::torchao_extent_divides),
          "divide"};
}

TEST(QuantizeErrors, LibraryShapeRulesAsDocumented) {
  const std::int64_t sizes[] = {1, 31, 32, 33, 64, 96, 127, 128, 129, 256, 384};
  int rejected = 0, accepted = 0;
  for (const Recipe& r : test::all_recipes())
    for (const BlockGeometry g : kGeometries)
      for (const std::int64_t m : sizes)
        for (const std::int64_t k : sizes) {
          const auto [want_rule, reason] = documented_rule(r, g, m, k);
          const bool rejects = want_rule != ShapeRule::accepted;
          const ShapeCheck got = library_shape_check(r, g, m, k);
          const std::string& why = got.reason;
          const std::string where =
              std::string(to_string(r.kind)) + " " + std::string(to_string(r.runtime)) + " " +
              std::string(to_string(g)) + " (" + std::to_string(m) + ", " + std::to_string(k) + ")";
          ASSERT_EQ(got.rule, want_rule) << where << ": " << why;
          ASSERT_EQ(!why.empty(), rejects) << where << ": " << why;
          if (!rejects) {
            EXPECT_NO_THROW(require_library_shape(r, g, m, k)) << where;
            ++accepted;
            continue;
          }
          ++rejected;
          expect_invalid([&] { require_library_shape(r, g, m, k); },
                         {why, std::string("recipe ") + std::string(to_string(r.kind)),
                          "block " + std::string(to_string(g)),
                          "shape (" + std::to_string(m) + ", " + std::to_string(k) + ")", reason});
        }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);
}

// NaN patterns of each source type (quiet and signalling, both signs) and an Inf, which is not NaN.
std::vector<std::uint32_t> nan_patterns(Source s) {
  if (s == Source::f32) return {0x7FC00000u, 0xFF800001u, 0x7F800001u, 0xFFFFFFFFu};
  if (s == Source::bf16) return {0x7FC0u, 0xFF81u, 0x7F81u, 0xFFFFu};
  return {0x7E00u, 0xFC01u, 0x7C01u, 0xFFFFu};
}
std::uint32_t inf_pattern(Source s) {
  return s == Source::f32 ? 0xFF800000u : (s == Source::bf16 ? 0xFF80u : 0xFC00u);
}

// A strided view (row-major, transposed or padded storage; padding holds NaN) with 0..3 NaN and
// some Inf elements: `reject` names the first NaN in row-major (i, j) order, `propagate` passes,
// and a view with only Inf passes both.
FP8REF_RC_PROP(QuantizeErrors, RejectNamesTheFirstNanOfTheView, 200, ()) {
  const Source src =
      *rc::gen::elementOf(std::vector<Source>{Source::f32, Source::bf16, Source::f16});
  const std::int64_t m = *rc::gen::inRange(1, 40), k = *rc::gen::inRange(1, 40);
  const int layout = *rc::gen::elementOf(std::vector<int>{0, 1, 2});
  const std::int64_t rs = layout == 1 ? 1 : (layout == 2 ? k + 2 : k), cs = layout == 1 ? m : 1;
  const std::size_t storage = std::size_t((m - 1) * rs + (k - 1) * cs + 1);
  std::vector<std::uint32_t> logical(std::size_t(m * k),
                                     src == Source::f32 ? 0x3F800000u : 0x3C00u);
  for (int t = *rc::gen::elementOf(std::vector<int>{0, 1, 3}); t > 0; --t)
    logical[*rc::gen::inRange<std::size_t>(0, logical.size())] = inf_pattern(src);
  const auto nans = *rc::gen::container<std::vector<std::size_t>>(
      *rc::gen::elementOf(std::vector<std::size_t>{0, 1, 1, 2, 3}),
      rc::gen::inRange<std::size_t>(0, logical.size()));
  for (const std::size_t at : nans) logical[at] = *rc::gen::elementOf(nan_patterns(src));
  std::vector<std::uint32_t> s32(src == Source::f32 ? storage : 0, 0x7FC00000u);
  std::vector<std::uint16_t> s16(src == Source::f32 ? 0 : storage, 0x7E00u);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      const std::uint32_t b = logical[std::size_t(i * k + j)];
      if (src == Source::f32)
        s32[std::size_t(i * rs + j * cs)] = b;
      else
        s16[std::size_t(i * rs + j * cs)] = std::uint16_t(b);
    }
  const SourceView2d v{
      src == Source::f32 ? static_cast<const void*>(s32.data()) : s16.data(), src, m, k, rs, cs};
  RC_CLASSIFY(nans.empty(), "no NaN");
  RC_CLASSIFY(layout == 2, "padded (padding is NaN)");
  check_nan_input(v, NanInput::propagate);  // never throws
  if (nans.empty()) {
    check_nan_input(v, NanInput::reject);
    return;
  }
  const std::size_t first = *std::min_element(nans.begin(), nans.end());
  const std::string at = "NaN at (" + std::to_string(first / std::size_t(k)) + ", " +
                         std::to_string(first % std::size_t(k)) + ")";
  try {
    check_nan_input(v, NanInput::reject);
    RC_FAIL("no exception; expected " + at);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    RC_ASSERT(what.find(at) != std::string::npos && what.find("reject") != std::string::npos);
  }
}

const Recipe kTe{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};

// Quantizes v under r with 1x32 blocks (the geometry is never what a test here gets wrong).
void quantize_1x32(const SourceView2d& v, const Recipe& r) { quantize(v, r, BlockGeometry::b1x32); }

// Views with an unsupported source, a negative extent or stride, or no data.
void expect_bad_views_throw(const std::vector<float>& x) {
  const auto q = [](SourceView2d v) { quantize_1x32(v, kTe); };
  expect_invalid(
      [&] {
        q({x.data(), Source::f64, 8, 8, 8, 1});
      },
      {"source must be f32, bf16 or f16"});
  expect_invalid([&] { q({x.data(), Source::f32, -1, 8, 8, 1}); }, {"negative shape"});
  expect_invalid([&] { q({x.data(), Source::f32, 8, 8, 8, -1}); }, {"stride"});
  expect_invalid([&] { q({nullptr, Source::f32, 8, 8, 8, 1}); }, {"null data"});
  expect_invalid(
      [&] {
        check_nan_input({nullptr, Source::f32, 8, 8, 8, 1}, NanInput::reject);
      },
      {"null data"});
}

// Recipes whose fields contradict their library: element format, runtime, pow2, epsilon, source.
void expect_bad_recipes_throw(const SourceView2d& ok) {
  const auto q = [&](Recipe r) { quantize_1x32(ok, r); };
  expect_invalid(
      [&] {
        q({RecipeKind::deepgemm, Format::e5m2, Runtime::torch_cuda, false, 0});
      },
      {"deepgemm", "e4m3 only"});
  expect_invalid(
      [&] {
        q({RecipeKind::te, Format::e4m3, Runtime::torch_cpu, false, 0});
      },
      {"te", "cuda_kernel"});
  expect_invalid(
      [&] {
        q({RecipeKind::mx_floor, Format::e4m3, Runtime::cuda_kernel, false, 0});
      },
      {"mx_floor", "torch_cpu or torch_cuda"});
  expect_invalid(
      [&] {
        q({RecipeKind::torchao, Format::e4m3, Runtime::torch_cpu, false, 1});
      },
      {"torchao", "epsilon is a te parameter"});
  expect_invalid(
      [&] {
        q({RecipeKind::mx_ceil, Format::e4m3, Runtime::torch_cpu, true, 0});
      },
      {"mx_ceil", "pow2 must be false"});
  for (const float eps :
       {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    expect_invalid(
        [&] {
          q({RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, eps});
        },
        {"epsilon must be finite and >= 0"});
  const std::vector<std::uint16_t> h(64, 0x3C00);
  for (const RecipeKind kind : {RecipeKind::mx_floor, RecipeKind::mx_rceil})
    expect_invalid(
        [&] {
          quantize_1x32({h.data(), Source::f16, 8, 8, 8, 1},
                        {kind, Format::e4m3, Runtime::torch_cuda, false, 0});
        },
        {"to_mx takes bf16 or f32"});
}

// Group ends that do not end at the row count or decrease.
void expect_bad_group_ends_throw(const SourceView2d& ok) {
  const auto grouped = [&](std::vector<std::int64_t> ends) {
    quantize_grouped_rows(ok, kTe, BlockGeometry::b32x1, ends);
  };
  expect_invalid([&] { grouped({}); }, {"last group end must equal rows (8)"});
  expect_invalid([&] { grouped({4, 7}); }, {"last group end must equal rows (8)"});
  expect_invalid([&] { grouped({5, 3, 8}); }, {"group ends decrease"});
  expect_invalid([&] { grouped({-1, 8}); }, {"group ends decrease"});
}

TEST(QuantizeErrors, BadViewsRecipesAndGroupsThrowWithTheirReason) {
  const std::vector<float> x(64, 1.0f);
  const SourceView2d ok{x.data(), Source::f32, 8, 8, 8, 1};
  expect_bad_views_throw(x);
  expect_bad_recipes_throw(ok);
  expect_bad_group_ends_throw(ok);
}

}  // namespace
}  // namespace fp8ref::ref
