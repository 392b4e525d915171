// Scale layouts (docs/design.md §7): every serialiser round-trips, sizes and padding are as
// specified, and spot offsets match the layouts' defining formulas written out independently.
#include "numerics/scale_layout.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cstring>

namespace fp8ref {
namespace {

// A drawn f32 layout and a grid of arbitrary bit patterns (NaN payloads included) for it.
struct DrawnF32Grid {
  ScaleLayoutF32 l;
  ScaleGridF32 s;
};
DrawnF32Grid draw_f32_grid() {
  const auto l = *rc::gen::elementOf(std::vector<ScaleLayoutF32>{
      ScaleLayoutF32::row_major, ScaleLayoutF32::col_major, ScaleLayoutF32::tma_mn_major,
      ScaleLayoutF32::te_compact, ScaleLayoutF32::cublas_k_major_pad4});
  const std::int64_t g = *rc::gen::inRange(1, 4), r = *rc::gen::inRange(0, 300),
                     c = *rc::gen::inRange(0, 70);
  return {l, ScaleGridF32{g, r, c,
                          *rc::gen::container<std::vector<std::uint32_t>>(
                              std::size_t(g * r * c), rc::gen::arbitrary<std::uint32_t>())}};
}

RC_GTEST_PROP(ScaleLayout, F32LayoutsRoundTrip, ()) {
  const auto [l, s] = draw_f32_grid();
  const std::int64_t g = s.groups, r = s.rows, c = s.cols;
  const auto bytes = serialize(l, s);
  RC_ASSERT(bytes.size() == serialized_size(l, g, r, c));
  RC_ASSERT(deserialize(l, bytes, g, r, c) == s);
}

// serialize_f32 is serialize() read back as f32 words, NaN payloads and padding included.
RC_GTEST_PROP(ScaleLayout, F32ValuesSerialiseAsTheirBytes, ()) {
  const auto [l, s] = draw_f32_grid();
  const std::int64_t g = s.groups, r = s.rows, c = s.cols;
  std::vector<float> values(s.bits.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::bit_cast<float>(s.bits[i]);
  const std::vector<float> got = serialize_f32(l, g, r, c, values);
  const std::vector<std::uint8_t> want = serialize(l, s);
  RC_ASSERT(got.size() * 4 == want.size());
  for (std::size_t w = 0; w < got.size(); ++w) {
    std::uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= std::uint32_t(want[w * 4 + b]) << (8 * b);
    RC_ASSERT(std::bit_cast<std::uint32_t>(got[w]) == u);
  }
}

RC_GTEST_PROP(ScaleLayout, E8m0LayoutsRoundTrip, ()) {
  const auto l = *rc::gen::elementOf(
      std::vector<ScaleLayoutE8m0>{ScaleLayoutE8m0::row_major, ScaleLayoutE8m0::blocked_128x4,
                                   ScaleLayoutE8m0::deepgemm_packed});
  const std::int64_t g = *rc::gen::inRange(1, 4), r = *rc::gen::inRange(0, 300),
                     c = *rc::gen::inRange(0, 70);
  ScaleGridE8m0 s{g, r, c,
                  *rc::gen::container<std::vector<std::uint8_t>>(
                      std::size_t(g * r * c), rc::gen::arbitrary<std::uint8_t>())};
  const auto bytes = serialize(l, s);
  RC_ASSERT(bytes.size() == serialized_size(l, g, r, c));
  RC_ASSERT(deserialize(l, bytes, g, r, c) == s);
}

TEST(ScaleLayout, BlockedSwizzleOffsetsAndZeroPadding) {
  // 130 x 5 codes -> 2 x 2 tiles of 128 x 4 (padded to 256 x 8).
  ScaleGridE8m0 s{1, 130, 5, std::vector<std::uint8_t>(650)};
  for (std::size_t i = 0; i < s.codes.size(); ++i) s.codes[i] = std::uint8_t(1 + i % 250);
  const auto b = serialize(ScaleLayoutE8m0::blocked_128x4, s);
  ASSERT_EQ(b.size(), 256u * 8u);
  // (r, c) = (37, 2): tile 0, (37 % 32) * 16 + (37 / 32) * 4 + 2 = 86.
  EXPECT_EQ(b[86], s.codes[37 * 5 + 2]);
  // (r, c) = (129, 4): tile (1, 1) -> 3 * 512; inside r=1, c=0: 16.
  EXPECT_EQ(b[3 * 512 + 16], s.codes[129 * 5 + 4]);
  // (r, c) = (100, 3): tile 0, 4*16 + 3*4 + 3 = 79.
  EXPECT_EQ(b[79], s.codes[100 * 5 + 3]);
  std::size_t nonzero = 0;
  for (auto v : b) nonzero += v != 0;
  EXPECT_EQ(nonzero, 650u);  // every padding byte is zero
}

TEST(ScaleLayout, DeepGemmPackedUe8m0Words) {
  // 5 rows x 6 k-blocks -> int32 [2][8]; word (kk, r) little-endian holds codes (r, 4kk..4kk+3).
  ScaleGridE8m0 s{1, 5, 6, std::vector<std::uint8_t>(30)};
  for (std::size_t i = 0; i < 30; ++i) s.codes[i] = std::uint8_t(100 + i);
  const auto b = serialize(ScaleLayoutE8m0::deepgemm_packed, s);
  ASSERT_EQ(b.size(), 2u * 8u * 4u);
  std::uint32_t w;
  std::memcpy(&w, &b[(1 * 8 + 3) * 4], 4);  // kk = 1, r = 3: codes (3,4), (3,5), pad, pad
  EXPECT_EQ(w, std::uint32_t(s.codes[3 * 6 + 4]) | std::uint32_t(s.codes[3 * 6 + 5]) << 8);
  std::memcpy(&w, &b[(0 * 8 + 6) * 4], 4);  // padding row 6
  EXPECT_EQ(w, 0u);
}

TEST(ScaleLayout, TmaAlignedAndCublasPadding) {
  ScaleGridF32 s{1, 5, 3, std::vector<std::uint32_t>(15, 0x40000000u)};  // 2.0f
  const auto t = serialize(ScaleLayoutF32::tma_mn_major, s);
  ASSERT_EQ(t.size(), 3u * 8u * 4u);  // [K/128 = 3][align(5, 4) = 8]
  std::uint32_t w;
  std::memcpy(&w, &t[(2 * 8 + 4) * 4], 4);
  EXPECT_EQ(w, 0x40000000u);
  std::memcpy(&w, &t[(2 * 8 + 5) * 4], 4);
  EXPECT_EQ(w, 0u);
  const auto c = serialize(ScaleLayoutF32::cublas_k_major_pad4, s);
  ASSERT_EQ(c.size(), 5u * 4u * 4u);
  std::memcpy(&w, &c[(4 * 4 + 3) * 4], 4);
  EXPECT_EQ(w, 0x3F800000u);  // padded with 1.0f
}

TEST(ScaleLayout, BadSizesThrow) {
  std::vector<std::uint8_t> b(7);
  EXPECT_THROW(deserialize(ScaleLayoutF32::row_major, b, 1, 1, 2), std::invalid_argument);
  EXPECT_THROW(deserialize(ScaleLayoutE8m0::blocked_128x4, b, 1, 1, 1), std::invalid_argument);
  EXPECT_THROW(serialize(ScaleLayoutF32::row_major, ScaleGridF32{1, 2, 2, {1, 2, 3, 4, 5}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
