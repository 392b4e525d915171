// Grouped 128x4 blocked layouts (numerics/scale_layout_grouped.h): round trips, each M group
// starting on a 128-row tile with zero padding, one group equal to blocked_128x4, and K groups
// padded to 4 columns, against offsets written out from the layout's formula.
#include "numerics/scale_layout_grouped.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <vector>

namespace fp8ref {
namespace {

std::vector<std::int64_t> draw_ends(std::int64_t* total) {
  const int g = *rc::gen::inRange(1, 5);
  std::vector<std::int64_t> ends;
  std::int64_t e = 0;
  for (int i = 0; i < g; ++i) ends.push_back(e += *rc::gen::inRange(0, 300));  // empty groups too
  *total = e;
  return ends;
}

ScaleGridE8m0 draw_grid(std::int64_t rows, std::int64_t cols) {
  return {1, rows, cols,
          *rc::gen::container<std::vector<std::uint8_t>>(std::size_t(rows * cols),
                                                         rc::gen::inRange<std::uint8_t>(1, 255))};
}

RC_GTEST_PROP(ScaleLayoutGrouped, MGroupsRoundTripAndStartOnTheirOwnTile, ()) {
  std::int64_t rows = 0;
  const auto ends = draw_ends(&rows);
  const std::int64_t cols = *rc::gen::inRange(0, 20);
  const ScaleGridE8m0 s = draw_grid(rows, cols);
  const auto bytes = serialize_blocked_grouped_rows(s, ends);
  RC_ASSERT(deserialize_blocked_grouped_rows(bytes, ends, cols) == s);
  std::int64_t tile = 0, start = 0, used = 0;
  const std::int64_t cols4 = (cols + 3) / 4 * 4;
  for (const std::int64_t e : ends) {  // first code of each non-empty group at (tile, 0, 0)
    if (e > start && cols > 0)
      RC_ASSERT(bytes[std::size_t(tile * 128 * cols4)] == s.codes[std::size_t(start * cols)]);
    used += (e - start) * cols;
    tile += (e - start + 127) / 128, start = e;
  }
  std::int64_t nonzero = 0;
  for (const std::uint8_t b : bytes) nonzero += b != 0;
  RC_ASSERT(nonzero == used);  // padding is zero, every code lands once
}

RC_GTEST_PROP(ScaleLayoutGrouped, OneMGroupIsBlocked128x4, ()) {
  const std::int64_t rows = *rc::gen::inRange(0, 400), cols = *rc::gen::inRange(0, 20);
  const ScaleGridE8m0 s = draw_grid(rows, cols);
  const std::vector<std::int64_t> ends{rows};
  RC_ASSERT(serialize_blocked_grouped_rows(s, ends) ==
            serialize(ScaleLayoutE8m0::blocked_128x4, s));
}

RC_GTEST_PROP(ScaleLayoutGrouped, KGroupsArePaddedToFourColumns, ()) {
  std::int64_t cols = 0;
  const auto ends = draw_ends(&cols);
  const std::int64_t rows = *rc::gen::inRange(0, 200);
  const ScaleGridE8m0 s = draw_grid(rows, cols);
  const auto bytes = serialize_blocked_grouped_cols(s, ends);
  std::int64_t padded = 0, prev = 0;
  for (const std::int64_t e : ends) padded += (e - prev + 3) / 4 * 4, prev = e;
  RC_ASSERT(bytes.size() == std::size_t((rows + 127) / 128 * 128 * padded));
  prev = 0;
  std::int64_t base = 0;
  for (const std::int64_t e : ends) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = prev; c < e; ++c) {
        const std::int64_t pc =
            base + c - prev;  // (r%32)*16 + (r%128/32)*4 + pc%4 in tile (r/128, pc/4)
        const std::int64_t off =
            ((r / 128) * (padded / 4) + pc / 4) * 512 + (r % 32) * 16 + (r % 128 / 32) * 4 + pc % 4;
        RC_ASSERT(bytes[std::size_t(off)] == s.codes[std::size_t(r * cols + c)]);
      }
    base += (e - prev + 3) / 4 * 4, prev = e;
  }
}

TEST(ScaleLayoutGrouped, RejectsEndsThatDoNotCoverTheGrid) {
  const ScaleGridE8m0 s{1, 10, 2, std::vector<std::uint8_t>(20, 1)};
  const std::vector<std::int64_t> short_ends{4, 8}, backwards{6, 4, 10};
  EXPECT_THROW(serialize_blocked_grouped_rows(s, short_ends), std::invalid_argument);
  EXPECT_THROW(serialize_blocked_grouped_rows(s, backwards), std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
