// Properties of quantize / dequantize (docs/recipes.md): the per-element definition on every source
// type and stride, the derived error bound, the dgrad transpose identity, per-group vs global
// blocking, thread-count invariance. Case counts scale with FP8REF_TEST_LEVEL.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/source.h"
#include "proptests/common/test_level.h"
#include "proptests/reference/quantize/scale_case.h"
#include "proptests/reference/quantize/scale_gen.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
namespace {

using test::amax_class;
using test::classify_block_amax;
using test::gen_geometry;
using test::gen_matrix;
using test::gen_recipe;
using test::require;
using test::ScaleCase;

SourceView2d view(const std::vector<float>& x, std::int64_t m, std::int64_t k) {
  return {x.data(), Source::f32, m, k, k, 1};
}

// Spacing of the FP8 format at magnitude v (the binade clamped at the subnormal range).
double fp8_ulp(Format f, double v) {
  const int p = f == Format::e4m3 ? 3 : 2, emin = f == Format::e4m3 ? -6 : -14;
  const int e = v == 0.0 ? emin : std::max(emin, std::ilogb(v));
  return std::ldexp(1.0, e - p);
}

// |q*s - x| <= ulp/2 * s                 (rounding y to FP8, |q - y| <= ulp(max(|q|,|y|))/2)
//            + s * (2^-24 |x m| + 2^-150) (y = RN_f32(x m): f32 rounding incl. subnormals)
//            + |x| |m s - 1|              (s is not exactly 1/m), evaluated in f64 + 2^-40 rel.
// Saturated elements (|y| > max finite) are checked for the saturation code instead.
FP8REF_RC_PROP(Quantize, DequantizeErrorWithinHalfFp8UlpTimesScale, 200, ()) {
  const Recipe r = *gen_recipe();
  const BlockGeometry g = gen_geometry();
  const std::int64_t m = *test::gen_extent(160, 1), k = *test::gen_extent(160, 1);
  const auto x = *gen_matrix(m, k, false);
  const ScaleCase c{"scale_dequantize_error", &x, m, k, r, g};
  classify_block_amax(x, m, k, g, amax_nan_policy(r));
  const Quantized q = quantize(view(x, m, k), r, g);
  const auto z = dequantize(q);
  const BlockShape b = block_shape(g, m, k);
  const double maxf = r.elem == Format::e4m3 ? 448.0 : 57344.0;
  RC_CLASSIFY(q.scale.size() == 1, "single block");
  RC_CLASSIFY(r.pow2, "pow2");
  std::vector<float> amax(q.scale.size(), 0.0f);  // per block, over its real elements
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      float& a = amax[std::size_t((i / b.rows) * q.scale_cols + j / b.cols)];
      a = amax_fold(amax_nan_policy(r), a, x[std::size_t(i * k + j)]);
    }
  int saturated = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      const BlockScale bs =
          block_scale(r, amax[std::size_t((i / b.rows) * q.scale_cols + j / b.cols)], Source::f32);
      const double xv = x[std::size_t(i * k + j)], s = bs.s;
      const double mul = bs.divide ? 1.0 / double(bs.factor) : double(bs.factor);
      const double y = bs.divide ? double(float(xv) / bs.factor) : double(float(xv) * bs.factor);
      require(double(q.scale[std::size_t((i / b.rows) * q.scale_cols + j / b.cols)]) == s ||
                  std::isnan(s),
              "block scale differs from the recipe's formula", c);
      if (!std::isfinite(s) || s == 0.0) continue;
      const std::uint8_t code = q.codes[std::size_t(i * k + j)];
      if (std::fabs(y) > maxf) {
        ++saturated;
        const bool sat_code = (code & 0x7F) == (r.elem == Format::e4m3 ? 0x7E : 0x7B);
        require(sat_code || (r.kind == RecipeKind::deepgemm && std::fabs(y) >= 464.0),
                "overflowing element is neither saturated nor (deepgemm) NaN", c);
        continue;
      }
      const double qv = decode_f64(r.elem, code);
      const double ulp = fp8_ulp(r.elem, std::max(std::fabs(qv), std::fabs(y)));
      const double bound =
          (0.5 * ulp * s + s * (std::ldexp(std::fabs(xv * mul), -24) + std::ldexp(1.0, -150)) +
           std::fabs(xv) * std::fabs(mul * s - 1.0)) *
          (1.0 + std::ldexp(1.0, -40));
      require(std::fabs(z[std::size_t(i * k + j)] - xv) <= bound,
              "dequantize error above the bound", c);
    }
  RC_CLASSIFY(saturated > 0, "some elements saturate");
}

// dgrad identity: 128x128 blocks of W^T are the transposes of W's blocks.
FP8REF_RC_PROP(Quantize, Block128x128OfTransposeIsTransposeBitwise, 100, ()) {
  const Recipe r = *gen_recipe();
  const std::int64_t n = *test::gen_extent(300, 6), k = *test::gen_extent(300, 6);
  const auto w = *gen_matrix(n, k, true);
  const ScaleCase c{"scale_transpose_identity", &w, n, k, r, BlockGeometry::b128x128};
  classify_block_amax(w, n, k, BlockGeometry::b128x128, amax_nan_policy(r));
  const Quantized a = quantize(view(w, n, k), r, BlockGeometry::b128x128);
  const Quantized t = quantize({w.data(), Source::f32, k, n, 1, k}, r, BlockGeometry::b128x128);
  require(a.scale_rows == t.scale_cols && a.scale_cols == t.scale_rows,
          "scale grids not transposed", c);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j)
      require(a.codes[std::size_t(i * k + j)] == t.codes[std::size_t(j * n + i)], "codes differ",
              c);
  for (std::int64_t i = 0; i < a.scale_rows; ++i)
    for (std::int64_t j = 0; j < a.scale_cols; ++j) {
      const std::size_t ai = std::size_t(i * a.scale_cols + j),
                        ti = std::size_t(j * t.scale_cols + i);
      require(std::memcmp(&a.scale[ai], &t.scale[ti], 4) == 0, "scales differ", c);
      if (is_mx(r.kind)) require(a.e8m0[ai] == t.e8m0[ti], "E8M0 codes differ", c);
    }
  require(a.e8m0.size() == t.e8m0.size() && a.e8m0.size() == (is_mx(r.kind) ? a.scale.size() : 0),
          "E8M0 grids differ in size", c);
}

std::vector<std::int64_t> ends_of(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> e;
  std::int64_t acc = 0;
  for (auto s : sizes) e.push_back(acc += s);
  return e;
}

BlockGeometry gen_row_blocked() {
  return *rc::gen::elementOf(std::vector<BlockGeometry>{
      BlockGeometry::b128x1, BlockGeometry::b128x128, BlockGeometry::b32x1});
}

// Blocks restart at each group start; when every group starts on a block boundary the two
// blockings coincide (the last group may end anywhere).
FP8REF_RC_PROP(Quantize, PerGroupEqualsGlobalWhenGroupStartsAreBlockAligned, 60, ()) {
  const Recipe r = *gen_recipe();
  const BlockGeometry g = gen_row_blocked();
  const std::int64_t h = block_shape(g, 1, 1).rows;
  auto sizes = *rc::gen::container<std::vector<std::int64_t>>(
      *rc::gen::inRange<std::size_t>(1, 5),
      rc::gen::map(rc::gen::inRange(0, 3), [h](int v) { return v * h; }));
  sizes.back() += *rc::gen::inRange<std::int64_t>(0, h);  // the last group may be partial
  const auto ends = ends_of(sizes);
  const std::int64_t t = ends.back(), k = *rc::gen::inRange(1, 200);
  const auto x = *gen_matrix(t, k, true);
  const ScaleCase c{"scale_per_group_aligned", &x, t, k, r, g};
  classify_block_amax(x, t, k, g, amax_nan_policy(r));
  RC_CLASSIFY(std::count(sizes.begin(), sizes.end(), 0) > 0, "has empty groups");
  const Quantized a = quantize_grouped_rows(view(x, t, k), r, g, ends),
                  b = quantize(view(x, t, k), r, g);
  require(a.codes == b.codes, "codes differ", c);
  require(a.block_row_start == b.block_row_start, "block rows differ", c);
  require((a.scale.size() * 4 == 0 ||
           std::memcmp(a.scale.data(), b.scale.data(), a.scale.size() * 4) == 0),
          "scales differ", c);
}

// Conversely, a group that starts off a block boundary gives a different quantization: a spike in
// its first row lands in the previous group's global block and changes that row's codes.
FP8REF_RC_PROP(Quantize, PerGroupDiffersFromGlobalWhenAGroupStartIsMisaligned, 100, ()) {
  const Recipe r = *gen_recipe();
  const BlockGeometry g = gen_row_blocked();
  const std::int64_t h = block_shape(g, 1, 1).rows;
  const std::int64_t first = *rc::gen::inRange<std::int64_t>(1, 3 * h);
  RC_PRE(first % h != 0);
  const std::int64_t second = *rc::gen::inRange<std::int64_t>(1, 2 * h),
                     k = *rc::gen::inRange(1, 64);
  const std::vector<std::int64_t> ends{first, first + second};
  std::vector<float> x(std::size_t((first + second) * k), 1.0f);
  for (std::int64_t j = 0; j < k; ++j) x[std::size_t(first * k + j)] = 65536.0f;
  const Quantized a = quantize_grouped_rows(view(x, first + second, k), r, g, ends);
  const Quantized b = quantize(view(x, first + second, k), r, g);
  const std::size_t row = std::size_t((first - 1) * k);
  RC_ASSERT(!std::equal(a.codes.begin() + row, a.codes.begin() + row + k, b.codes.begin() + row));
}

FP8REF_RC_PROP(Quantize, ResultIndependentOfThreadCount, 40, ()) {
  const Recipe r = *gen_recipe();
  const BlockGeometry g = gen_geometry();
  const std::int64_t m = *test::gen_extent(300, 1), k = *test::gen_extent(300, 1);
  const auto x = *gen_matrix(m, k, true);
  const ScaleCase c{"scale_thread_count", &x, m, k, r, g};
  classify_block_amax(x, m, k, g, amax_nan_policy(r));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Quantized a = quantize(view(x, m, k), r, g);
  omp_set_num_threads(*rc::gen::inRange(2, 9));
  const Quantized b = quantize(view(x, m, k), r, g);
  omp_set_num_threads(saved);
  require(a.codes == b.codes && a.e8m0 == b.e8m0, "codes differ", c);
  require((a.scale.size() * 4 == 0 ||
           std::memcmp(a.scale.data(), b.scale.data(), a.scale.size() * 4) == 0),
          "scales differ", c);
}

// Amax classes reach every recipe: zero, subnormal, power of two, NaN, Inf. The scale a recipe
// gives a block equals its formula on the amax alone (partial blocks: real elements only).
FP8REF_RC_PROP(Quantize, ScaleDependsOnRealElementsOnly, 100, ()) {
  const Recipe r = *gen_recipe();
  const std::int64_t m = *rc::gen::inRange(1, 40), k = *rc::gen::inRange(1, 300);
  const auto x = *gen_matrix(m, k, true);
  const ScaleCase c{"scale_real_elements", &x, m, k, r, BlockGeometry::b1x128};
  const Quantized q = quantize(view(x, m, k), r, BlockGeometry::b1x128);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t bc = 0; bc < q.scale_cols; ++bc) {
      float a = 0.0f;
      for (std::int64_t j = bc * 128; j < std::min(k, (bc + 1) * 128); ++j)
        a = amax_fold(amax_nan_policy(r), a, x[std::size_t(i * k + j)]);
      if (i == 0 && bc == q.scale_cols - 1) RC_CLASSIFY(true, amax_class(a));
      const float want = block_scale(r, a, Source::f32).s,
                  got = q.scale[std::size_t(i * q.scale_cols + bc)];
      require(std::memcmp(&want, &got, 4) == 0,
              "scale differs from the recipe on the real elements", c);
    }
}

// Source bits of one class-weighted tensor in the chosen type: bf16 keeps the top half of each
// f32 (NaN patterns stay NaN), f16 draws its own patterns (all 2^16, or one binade band).
std::vector<std::uint16_t> gen_f16_bits(std::int64_t n) {
  const int e0 = *rc::gen::inRange(0, 29);
  return *rc::gen::container<std::vector<std::uint16_t>>(
      std::size_t(n),
      rc::gen::weightedOneOf<std::uint16_t>(
          {{1, rc::gen::arbitrary<std::uint16_t>()},
           {3, rc::gen::map(rc::gen::inRange(0, 1 << 13), [e0](int v) {
              return std::uint16_t((v >> 12) << 15 | (e0 + ((v >> 10) & 3)) << 10 | (v & 0x3FF));
            })}}));
}

// Exact value of a source pattern as an f32 (numerics/source.h widening).
float widen(Source src, std::uint32_t bits) {
  return float(std::bit_cast<double>(source_to_f64_bits(src, bits)));
}

// Source bit patterns of an (m, k) matrix of `src`: f32 / bf16 from class-weighted f32 values,
// f16 from its own generator.
std::vector<std::uint32_t> gen_source_bits(Source src, std::int64_t m, std::int64_t k) {
  const auto xf = *gen_matrix(m, k, true);
  std::vector<std::uint32_t> bits(std::size_t(m * k));
  if (src == Source::f16) {
    const auto h = gen_f16_bits(m * k);
    std::copy(h.begin(), h.end(), bits.begin());
  } else {
    for (std::size_t i = 0; i < bits.size(); ++i)
      bits[i] = std::bit_cast<std::uint32_t>(xf[i]) >> (src == Source::bf16 ? 16 : 0);
  }
  return bits;
}

// The matrix stored with element (i, j) at offset i * rs + j * cs: layout 0 row-major, 1
// transposed storage, 2 rows padded by 3 elements (the padding holds NaN patterns).
struct StridedSource {
  std::vector<std::uint32_t> s32;
  std::vector<std::uint16_t> s16;
  std::int64_t rs, cs;
  const void* data() const {
    return s32.empty() ? static_cast<const void*>(s16.data()) : s32.data();
  }
};
StridedSource store_strided(const std::vector<std::uint32_t>& bits, Source src, std::int64_t m,
                            std::int64_t k, int layout) {
  StridedSource st;
  st.rs = layout == 1 ? 1 : (layout == 2 ? k + 3 : k), st.cs = layout == 1 ? m : 1;
  const std::size_t storage = std::size_t(layout == 2 ? m * (k + 3) : m * k);
  st.s32.assign(src == Source::f32 ? storage : 0, 0xFFC00000u);
  st.s16.assign(src == Source::f32 ? 0 : storage, 0xFE00);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      const std::uint32_t b = bits[std::size_t(i * k + j)];
      if (src == Source::f32)
        st.s32[std::size_t(i * st.rs + j * st.cs)] = b;
      else
        st.s16[std::size_t(i * st.rs + j * st.cs)] = std::uint16_t(b);
    }
  return st;
}

// Every block of q against the definition: amax_fold over the block's logical values,
// block_scale, and quantize_element for each of its codes.
void require_blocks_match_definition(const Quantized& q, Source src,
                                     const std::vector<float>& logical, const ScaleCase& c) {
  const Recipe& r = q.recipe;
  const std::int64_t m = q.rows, k = q.cols;
  const BlockShape b = block_shape(q.geometry, m, k);
  const EncodeSpec spec = element_spec(r);
  for (std::int64_t br = 0; br < q.scale_rows; ++br)
    for (std::int64_t bc = 0; bc < q.scale_cols; ++bc) {
      const std::int64_t r0 = br * b.rows, r1 = std::min(m, r0 + b.rows);
      const std::int64_t c0 = bc * b.cols, c1 = std::min(k, c0 + b.cols);
      float amax = 0.0f;
      for (std::int64_t i = r0; i < r1; ++i)
        for (std::int64_t j = c0; j < c1; ++j)
          amax = amax_fold(amax_nan_policy(r), amax, logical[std::size_t(i * k + j)]);
      const BlockScale bs = block_scale(r, amax, src);
      const float got_s = q.scale[std::size_t(br * q.scale_cols + bc)];
      require(std::memcmp(&got_s, &bs.s, 4) == 0, "block scale differs", c);
      if (is_mx(r.kind))
        require(q.e8m0[std::size_t(br * q.scale_cols + bc)] == bs.e8m0, "e8m0 differs", c);
      for (std::int64_t i = r0; i < r1; ++i)
        for (std::int64_t j = c0; j < c1; ++j)
          require(q.codes[std::size_t(i * k + j)] ==
                      quantize_element(r, spec, bs, logical[std::size_t(i * k + j)]),
                  "code differs from quantize_element", c);
    }
}

// The fast kernels (reference/encode_f32_rne.h, templated loaders) against the recipe's
// per-element definition: amax_fold over the block, block_scale, quantize_element — for every
// source type, a transposed view and a padded row stride; quantize_into on a reused output too.
FP8REF_RC_PROP(Quantize, CodesAndScalesMatchPerElementDefinition, 300, ()) {
  const Recipe r = *gen_recipe();
  const BlockGeometry g = gen_geometry();
  const std::int64_t m = *test::gen_extent(160, 1), k = *test::gen_extent(160, 1);
  const Source src =
      *rc::gen::elementOf(std::vector<Source>{Source::f32, Source::bf16, Source::f16});
  RC_PRE(!(src == Source::f16 && is_mx(r.kind) &&
           r.runtime != Runtime::cuda_kernel));  // torchao: bf16 / f32 only
  const int layout = *rc::gen::elementOf(
      std::vector<int>{0, 1, 2});  // 0 row-major, 1 transposed storage, 2 padded rows
  const std::vector<std::uint32_t> bits = gen_source_bits(src, m, k);
  std::vector<float> logical(bits.size());  // for the failure dump
  for (std::size_t i = 0; i < bits.size(); ++i) logical[i] = widen(src, bits[i]);
  const ScaleCase c{"scale_per_element_definition", &logical, m, k, r, g};
  classify_block_amax(logical, m, k, g, amax_nan_policy(r));
  const StridedSource st = store_strided(bits, src, m, k, layout);
  const Quantized q = quantize({st.data(), src, m, k, st.rs, st.cs}, r, g);
  RC_CLASSIFY(true, std::string(to_string(src)) + (layout == 1   ? " transposed"
                                                   : layout == 2 ? " padded"
                                                                 : " row-major"));
  const Recipe other{RecipeKind::mx_rceil, Format::e5m2, Runtime::cuda_kernel, false, 0.0f};
  Quantized reused =
      quantize({st.data(), src, k, m, st.cs, st.rs}, other, BlockGeometry::b1x32);  // dirty
  quantize_into({st.data(), src, m, k, st.rs, st.cs}, r, g, reused);
  require(reused.codes == q.codes && reused.e8m0 == q.e8m0 &&
              reused.block_row_start == q.block_row_start &&
              reused.scale.size() == q.scale.size() &&
              (q.scale.size() * 4 == 0 ||
               std::memcmp(reused.scale.data(), q.scale.data(), q.scale.size() * 4) == 0),
          "quantize_into on a reused output differs from quantize", c);
  require_blocks_match_definition(q, src, logical, c);
}

}  // namespace
}  // namespace fp8ref::ref
