// quantize_3d (reference/quantize.h): G per-expert planes of a strided 3-D view,
// group_stride elements apart, each equal to quantize() of a contiguous copy of that plane made
// here with its own index arithmetic (so the plane offsets, in elements of each source type, and
// the plane strides are checked, not assumed).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "proptests/common/test_level.h"
#include "proptests/reference/quantize/scale_case.h"
#include "proptests/reference/quantize/scale_gen.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
namespace {

using test::require;
using test::ScaleCase;

bool same(const Quantized& a, const Quantized& b) {
  return a.rows == b.rows && a.cols == b.cols && a.codes == b.codes &&
         a.scale_rows == b.scale_rows && a.scale_cols == b.scale_cols && a.e8m0 == b.e8m0 &&
         a.block_row_start == b.block_row_start && a.scale.size() == b.scale.size() &&
         (a.scale.empty() ||
          std::memcmp(a.scale.data(), b.scale.data(), a.scale.size() * sizeof(float)) == 0);
}

// Source patterns of one plane: f32 bits, or for 16-bit sources the top half of each f32 pattern
// (read as bf16 that is the value truncated; read as f16 it is some pattern of every class).
std::vector<std::uint32_t> plane_bits(const std::vector<float>& x, Source src) {
  std::vector<std::uint32_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    b[i] = std::bit_cast<std::uint32_t>(x[i]) >> (src == Source::f32 ? 0 : 16);
  return b;
}

// Planes stored (i, j) -> p * group_stride + i * rs + j * cs with rs, cs one of: row-major, the
// transpose (column-major plane), padded rows; group_stride is 0 (every plane the same memory,
// a broadcast) or at least the plane's span, plus a gap. Elements outside the planes hold NaN.
FP8REF_RC_PROP(Quantize3d, EachPlaneEqualsQuantizeOfItsContiguousCopy, 150, ()) {
  const Recipe r = *test::gen_recipe();
  const BlockGeometry g = test::gen_geometry();
  const bool torch_mx = is_mx(r.kind) && r.runtime != Runtime::cuda_kernel;  // bf16 / f32 only
  const Source src =
      *rc::gen::elementOf(torch_mx ? std::vector<Source>{Source::f32, Source::bf16}
                                   : std::vector<Source>{Source::f32, Source::bf16, Source::f16});
  const std::int64_t groups = *rc::gen::weightedOneOf<std::int64_t>(
      {{1, rc::gen::just<std::int64_t>(0)},
       {5, rc::gen::resize(100, rc::gen::inRange<std::int64_t>(1, 5))}});
  const std::int64_t n = *test::gen_extent(150, 1), k = *test::gen_extent(150, 1);
  const int layout =
      *rc::gen::elementOf(std::vector<int>{0, 1, 2});  // 0 row-major, 1 transposed, 2 padded rows
  const std::int64_t rs = layout == 1 ? 1 : (layout == 2 ? k + 5 : k), cs = layout == 1 ? n : 1;
  const std::int64_t span = (n - 1) * rs + (k - 1) * cs + 1;
  const bool broadcast =
      *rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {4, rc::gen::just(false)}});
  const std::int64_t gs = broadcast ? 0 : span + *rc::gen::inRange<std::int64_t>(0, 9);
  const std::size_t total = std::size_t(groups > 0 ? (groups - 1) * gs + span : 0);
  const std::uint32_t poison =
      src == Source::f32 ? 0x7FC00000u : (src == Source::bf16 ? 0x7FC0u : 0x7E00u);
  std::vector<std::uint32_t> s32(src == Source::f32 ? total : 0, poison);
  std::vector<std::uint16_t> s16(src == Source::f32 ? 0 : total, std::uint16_t(poison));
  std::vector<std::vector<std::uint32_t>> planes;  // row-major source bits of each plane
  for (std::int64_t p = 0; p < groups; ++p) {
    planes.push_back(p > 0 && broadcast ? planes.back()
                                        : plane_bits(*test::gen_matrix(n, k, true), src));
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::size_t at = std::size_t(p * gs + i * rs + j * cs);
        const std::uint32_t b = planes.back()[std::size_t(i * k + j)];
        if (src == Source::f32)
          s32[at] = b;
        else
          s16[at] = std::uint16_t(b);
      }
  }
  const void* data = src == Source::f32 ? static_cast<const void*>(s32.data()) : s16.data();
  RC_CLASSIFY(groups == 0, "no planes");
  RC_CLASSIFY(broadcast, "group_stride 0");
  RC_TAG(std::string(to_string(src)) +
         (layout == 1 ? " transposed" : (layout == 2 ? " padded" : " row-major")));
  const std::vector<Quantized> got = quantize_3d({{data, src, n, k, rs, cs}, groups, gs}, r, g);
  RC_ASSERT(std::int64_t(got.size()) == groups);
  for (std::int64_t p = 0; p < groups; ++p) {
    const auto& bits = planes[std::size_t(p)];
    std::vector<float> logical(bits.size());  // for the failure dump only
    for (std::size_t e = 0; e < bits.size(); ++e)
      logical[e] = std::bit_cast<float>(src == Source::f32 ? bits[e] : bits[e] << 16);
    const ScaleCase c{"scale_quantize_3d", &logical, n, k, r, g};
    const std::vector<std::uint16_t> b16(bits.begin(), bits.end());
    const void* copy = src == Source::f32 ? static_cast<const void*>(bits.data()) : b16.data();
    require(same(got[std::size_t(p)], quantize({copy, src, n, k, k, 1}, r, g)),
            ("plane " + std::to_string(p) + " differs from quantize of its copy").c_str(), c);
  }
}

TEST(Quantize3d, BadGroupsThrowNamingQuantize3d) {
  const std::vector<float> x(4, 1.0f);
  const Recipe r{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const SourceView2d plane{x.data(), Source::f32, 2, 2, 2, 1};
  for (const auto& [groups, stride] : {std::pair{-1, 4}, std::pair{1, -4}}) {
    try {
      quantize_3d({plane, groups, stride}, r, BlockGeometry::b1x128);
      ADD_FAILURE() << "no exception for groups " << groups << ", group_stride " << stride;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("quantize_3d"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(quantize_3d({plane, 0, 4}, r, BlockGeometry::b1x128).empty());
}

}  // namespace
}  // namespace fp8ref::ref
