// Sharded weights (docs/recipes.md "Sharded weights"): FSDP-style all-gather of
// quantized shards equals quantizing the whole bitwise when every shard starts on a block
// boundary; otherwise each shard's blocks restart at its start (the per-group blocking of the
// whole) and shifted blocks take their own amax; dequantizing gathered shards = the whole's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cases/compare.h"
#include "proptests/common/test_level.h"
#include "proptests/reference/quantize/scale_case.h"
#include "proptests/reference/quantize/scale_gen.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
namespace {

using test::require;
using test::ScaleCase;

// Block extent along dim (0 rows, 1 cols) of the geometries whose extent there is fixed.
std::int64_t extent(BlockGeometry g, int dim) {
  const BlockShape b = block_shape(g, 1 << 20, 1 << 20);
  return dim == 0 ? b.rows : b.cols;
}
BlockGeometry transposed(BlockGeometry g) {
  switch (g) {
    case BlockGeometry::rowwise: return BlockGeometry::per_channel;
    case BlockGeometry::per_channel: return BlockGeometry::rowwise;
    case BlockGeometry::b1x128: return BlockGeometry::b128x1;
    case BlockGeometry::b128x1: return BlockGeometry::b1x128;
    case BlockGeometry::b1x32: return BlockGeometry::b32x1;
    case BlockGeometry::b32x1: return BlockGeometry::b1x32;
    default: return g;
  }
}
// Geometries with a fixed extent along dim: shards can start on their block boundaries.
BlockGeometry gen_shardable(int dim, bool extent_above_one) {
  std::vector<BlockGeometry> gs{BlockGeometry::b1x128, BlockGeometry::b128x1,
                                BlockGeometry::b128x128, BlockGeometry::b1x32,
                                BlockGeometry::b32x1};
  if (!extent_above_one)
    gs.push_back(dim == 0 ? BlockGeometry::rowwise : BlockGeometry::per_channel);
  std::erase_if(gs, [&](BlockGeometry g) { return extent(g, dim) == 1 && extent_above_one; });
  return *rc::gen::elementOf(gs);
}

// Quantize shard [b, e) of x (m x k, row-major) along dim.
std::vector<Quantized> quantize_shards(const std::vector<float>& x, std::int64_t m, std::int64_t k,
                                       int dim, const std::vector<std::int64_t>& ends,
                                       const Recipe& r, BlockGeometry g) {
  std::vector<Quantized> out;
  std::int64_t b = 0;
  for (const std::int64_t e : ends) {
    const SourceView2d v = dim == 0 ? SourceView2d{x.data() + b * k, Source::f32, e - b, k, k, 1}
                                    : SourceView2d{x.data() + b, Source::f32, m, e - b, k, 1};
    out.push_back(quantize(v, r, g));
    b = e;
  }
  return out;
}

// What an all-gather of FP8 shards and their scale grids holds, concatenated along dim.
Quantized gather(const std::vector<Quantized>& shards, int dim, std::int64_t m, std::int64_t k) {
  Quantized z = shards.front();
  z.rows = m, z.cols = k;
  z.codes.clear(), z.scale.clear(), z.e8m0.clear();
  if (dim == 0) {
    z.scale_rows = 0, z.block_row_start = {0};
    for (const Quantized& s : shards) {
      z.codes.insert(z.codes.end(), s.codes.begin(), s.codes.end());
      z.scale.insert(z.scale.end(), s.scale.begin(), s.scale.end());
      z.e8m0.insert(z.e8m0.end(), s.e8m0.begin(), s.e8m0.end());
      for (std::int64_t i = 1; i <= s.scale_rows; ++i)
        z.block_row_start.push_back(z.block_row_start.back() -
                                    s.block_row_start[std::size_t(i) - 1] +
                                    s.block_row_start[std::size_t(i)]);
      z.scale_rows += s.scale_rows;
    }
    return z;
  }
  z.scale_cols = 0;
  for (const Quantized& s : shards) z.scale_cols += s.scale_cols;
  for (std::int64_t i = 0; i < m; ++i)
    for (const Quantized& s : shards)
      z.codes.insert(z.codes.end(), s.codes.begin() + i * s.cols,
                     s.codes.begin() + (i + 1) * s.cols);
  for (std::int64_t i = 0; i < z.scale_rows; ++i)
    for (const Quantized& s : shards) {
      const auto at = std::size_t(i * s.scale_cols), n = std::size_t(s.scale_cols);
      z.scale.insert(z.scale.end(), s.scale.begin() + at, s.scale.begin() + at + n);
      if (!s.e8m0.empty())
        z.e8m0.insert(z.e8m0.end(), s.e8m0.begin() + at, s.e8m0.begin() + at + n);
    }
  return z;
}

using cases::same_bits;

// Shard sizes along a dimension: multiples of the block extent (0..2 blocks each), the last one
// possibly partial; at least one element in all.
std::vector<std::int64_t> gen_aligned_ends(std::int64_t e) {
  auto sizes = *rc::gen::container<std::vector<std::int64_t>>(
      *rc::gen::inRange<std::size_t>(1, 5),
      rc::gen::map(rc::gen::inRange(0, 3), [e](int v) { return v * e; }));
  sizes.back() += *rc::gen::inRange<std::int64_t>(0, e);
  std::vector<std::int64_t> ends;
  std::int64_t acc = 0;
  for (const auto s : sizes) ends.push_back(acc += s);
  RC_PRE(acc > 0);
  return ends;
}

FP8REF_RC_PROP(ShardedWeights, GatheredShardsEqualWholeWhenShardsStartOnBlockBoundaries, 80, ()) {
  const Recipe r = *test::gen_recipe();
  const int dim = *rc::gen::elementOf(std::vector<int>{0, 1});
  const BlockGeometry g = gen_shardable(dim, false);
  const auto ends = gen_aligned_ends(extent(g, dim));
  const std::int64_t other = *test::gen_extent(150, 1);
  const std::int64_t m = dim == 0 ? ends.back() : other, k = dim == 0 ? other : ends.back();
  const auto x = *test::gen_matrix(m, k, true);
  const ScaleCase c{"shard_aligned", &x, m, k, r, g};
  test::classify_block_amax(x, m, k, g, amax_nan_policy(r));
  RC_CLASSIFY(dim == 0, "dim 0");
  RC_CLASSIFY(ends.back() % extent(g, dim) != 0, "last shard partial");
  RC_CLASSIFY(std::adjacent_find(ends.begin(), ends.end()) != ends.end() || ends.front() == 0,
              "empty shard");
  const Quantized whole = quantize({x.data(), Source::f32, m, k, k, 1}, r, g);
  const Quantized z = gather(quantize_shards(x, m, k, dim, ends, r, g), dim, m, k);
  require(z.scale_rows == whole.scale_rows && z.scale_cols == whole.scale_cols,
          "scale grids differ", c);
  require(z.codes == whole.codes, "codes differ", c);
  require(same_bits(z.scale, whole.scale) && z.e8m0 == whole.e8m0, "scales differ", c);
}

FP8REF_RC_PROP(ShardedWeights, DequantizingGatheredFp8ShardsEqualsDequantizingTheWhole, 60, ()) {
  const Recipe r = *test::gen_recipe();
  const int dim = *rc::gen::elementOf(std::vector<int>{0, 1});
  const BlockGeometry g = gen_shardable(dim, false);
  const auto ends = gen_aligned_ends(extent(g, dim));
  const std::int64_t other = *test::gen_extent(150, 1);
  const std::int64_t m = dim == 0 ? ends.back() : other, k = dim == 0 ? other : ends.back();
  const auto x = *test::gen_matrix(m, k, true);
  const ScaleCase c{"shard_dequantize", &x, m, k, r, g};
  test::classify_block_amax(x, m, k, g, amax_nan_policy(r));
  const auto shards = quantize_shards(x, m, k, dim, ends, r, g);
  Quantized gathered = gather(shards, dim, m, k);
  const Quantized whole = quantize({x.data(), Source::f32, m, k, k, 1}, r, g);
  gathered.block_row_start = whole.block_row_start;  // dim 1: the shards' common row blocks
  const auto zg = dequantize(gathered), zw = dequantize(whole);
  require(zg.size() == zw.size() &&
              (zg.size() * 8 == 0 || std::memcmp(zg.data(), zw.data(), zg.size() * 8) == 0),
          "dequantized gather differs from the dequantized whole", c);
  // Gather-then-dequantize == dequantize-then-gather (the bf16 all-gather moves twice the bytes).
  std::vector<double> zs(std::size_t(m * k));
  std::int64_t b = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const auto d = dequantize(shards[s]);
    for (std::int64_t i = 0; i < shards[s].rows; ++i)
      for (std::int64_t j = 0; j < shards[s].cols; ++j)
        zs[std::size_t(dim == 0 ? (b + i) * k + j : i * k + b + j)] =
            d[std::size_t(i * shards[s].cols + j)];
    b = ends[s];
  }
  require((zs.size() * 8 == 0 || std::memcmp(zs.data(), zw.data(), zs.size() * 8) == 0),
          "per-shard dequantize differs", c);
}

// A matrix x (m, k) sharded along dim at the cumulative ends, quantized under r with blocks g.
struct ShardedCase {
  const std::vector<float>& x;
  std::int64_t m, k;
  int dim;
  const std::vector<std::int64_t>& ends;
  Recipe r;
  BlockGeometry g;
};

// The gathered shards z are exactly the per-group blocking of the whole (dim 1: of its transpose).
void require_per_group_blocking(const ShardedCase& t, const Quantized& z, const ScaleCase& c) {
  const std::int64_t m = t.m, k = t.k;
  const Quantized grouped =
      t.dim == 0 ? quantize_grouped_rows({t.x.data(), Source::f32, m, k, k, 1}, t.r, t.g, t.ends)
                 : quantize_grouped_rows({t.x.data(), Source::f32, k, m, 1, k}, t.r,
                                         transposed(t.g), t.ends);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j)
      require(z.codes[std::size_t(i * k + j)] ==
                  grouped.codes[std::size_t(t.dim == 0 ? i * k + j : j * m + i)],
              "codes differ from per-group blocking", c);
}

// Piece by piece along dim (a piece: one restarted block of a shard): its scale is the recipe of
// its own amax, and equals the whole's where the piece coincides with a block of the whole.
// Returns how many piece scales differ from the whole's.
std::int64_t require_piece_scales(const ShardedCase& t, const Quantized& z, const Quantized& whole,
                                  const ScaleCase& c) {
  const std::int64_t m = t.m, k = t.k, e = extent(t.g, t.dim), n = t.ends.back();
  const std::int64_t nother = t.dim == 0 ? z.scale_cols : z.scale_rows, bo = extent(t.g, 1 - t.dim);
  std::int64_t begin = 0, piece = 0, differing = 0;
  for (std::size_t s = 0; s < t.ends.size(); ++s) {
    for (std::int64_t p0 = begin; p0 < t.ends[s]; p0 += e, ++piece) {
      const std::int64_t p1 = std::min(t.ends[s], p0 + e), w = p0 / e;
      const bool coincides = p0 % e == 0 && p1 == std::min(n, p0 + e);
      for (std::int64_t o = 0; o < nother; ++o) {
        const std::int64_t o0 = o * bo, o1 = std::min(t.dim == 0 ? k : m, o0 + bo);
        float amax = 0.0f;
        for (std::int64_t a = p0; a < p1; ++a)
          for (std::int64_t bb = o0; bb < o1; ++bb)
            amax = amax_fold(amax_nan_policy(t.r), amax,
                             t.x[std::size_t(t.dim == 0 ? a * k + bb : bb * k + a)]);
        const float got =
            z.scale[std::size_t(t.dim == 0 ? piece * nother + o : o * z.scale_cols + piece)];
        const float want_whole =
            whole.scale[std::size_t(t.dim == 0 ? w * nother + o : o * whole.scale_cols + w)];
        const float own = block_scale(t.r, amax, Source::f32).s;
        require(std::memcmp(&got, &own, 4) == 0, "piece scale is not the recipe of its own amax",
                c);
        if (coincides)
          require(std::memcmp(&got, &want_whole, 4) == 0, "coinciding piece differs from the whole",
                  c);
        differing += std::memcmp(&got, &want_whole, 4) != 0;
      }
    }
    begin = t.ends[s];
  }
  require(piece == (t.dim == 0 ? z.scale_rows : z.scale_cols), "piece count", c);
  return differing;
}

// A shard that starts off a block boundary restarts its blocks there: the sharded result is the
// per-group blocking of the whole with the shards as groups (dim 1: of the transpose). Pieces
// that coincide with a block of the whole are bit-identical to it; every other piece takes the
// scale of its own amax (real elements only), so it differs wherever that amax does.
FP8REF_RC_PROP(ShardedWeights, MisalignedShardsRestartBlocksAtTheirStart, 80, ()) {
  const Recipe r = *test::gen_recipe();
  const int dim = *rc::gen::elementOf(std::vector<int>{0, 1});
  const BlockGeometry g = gen_shardable(dim, true);
  const std::int64_t e = extent(g, dim);
  auto sizes = *rc::gen::container<std::vector<std::int64_t>>(
      *rc::gen::inRange<std::size_t>(2, 5), rc::gen::inRange<std::int64_t>(0, 2 * e + 3));
  std::vector<std::int64_t> ends;
  std::int64_t n = 0;
  for (const auto s : sizes) ends.push_back(n += s);
  RC_PRE(n > 0 &&
         std::any_of(ends.begin(), ends.end() - 1, [&](std::int64_t b) { return b % e != 0; }));
  const std::int64_t other = *rc::gen::inRange(1, 100);
  const std::int64_t m = dim == 0 ? n : other, k = dim == 0 ? other : n;
  const auto x = *test::gen_matrix(m, k, true);
  const ScaleCase c{"shard_misaligned", &x, m, k, r, g};
  test::classify_block_amax(x, m, k, g, amax_nan_policy(r));
  const auto shards = quantize_shards(x, m, k, dim, ends, r, g);
  const Quantized z = gather(shards, dim, m, k);
  const Quantized whole = quantize({x.data(), Source::f32, m, k, k, 1}, r, g);
  const ShardedCase t{x, m, k, dim, ends, r, g};
  require_per_group_blocking(t, z, c);
  const std::int64_t differing = require_piece_scales(t, z, whole, c);
  RC_CLASSIFY(differing > 0, "some piece's scale differs from the whole's");
}

// A concrete case: 1x128 blocks, a row of 256 sharded at column 64. The whole tensor's first
// block holds the spike 448 and the 1.0s in columns 64..127 quantize against it; the second
// shard's first block [64, 192) sees only 1.0s and 2.0s and scales them up to the top binade.
TEST(ShardedWeights, MisalignedShardChangesCodesOfShiftedBlocks) {
  std::vector<float> x(256, 1.0f);
  x[0] = 448.0f;
  for (int j = 128; j < 256; ++j) x[std::size_t(j)] = 2.0f;
  const Recipe r{RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cpu, false, 0.0f};
  const Quantized whole =
      quantize({x.data(), Source::f32, 1, 256, 256, 1}, r, BlockGeometry::b1x128);
  const Quantized right =
      quantize({x.data() + 64, Source::f32, 1, 192, 256, 1}, r, BlockGeometry::b1x128);
  EXPECT_EQ(whole.codes[64], 0x38);  // 1.0 with scale 1
  EXPECT_EQ(right.codes[0], 0x76);   // 1.0 * 448 / 2 = 224
  EXPECT_EQ(right.scale[0], 2.0f / 448.0f);
  EXPECT_EQ(whole.scale[1], right.scale[0]);  // [128, 256) and [64, 192) share amax 2.0
  EXPECT_EQ(whole.codes[128], right.codes[64]);
}

}  // namespace
}  // namespace fp8ref::ref
