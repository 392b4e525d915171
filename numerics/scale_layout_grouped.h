// Grouped variants of the 128x4 "blocked" scale layout (docs/design.md §7; docs/recipes.md "Layouts"),
// for E8M0 (MX) and UE4M3 (NVFP4) scale codes of grouped GEMMs, where each group's scales must
// start on a tile boundary:
//   M-grouped (forward / dgrad): the rows of group g (scale rows [ends[g-1], ends[g])) form their
//     own run of 128-row tiles: group g starts at tile row sum_{h<g} ceil(m_h / 128), padded with
//     zero codes; the columns are padded to 4 as in blocked_128x4.
//   K-grouped (wgrad, scales along tokens): the scale columns of group g start at column
//     sum_{h<g} align(c_h, 4) of a (align(R, 128), sum_h align(c_h, 4)) grid laid out as
//     blocked_128x4.
// Inside a tile the byte offset is (r % 32)·16 + (r % 128 / 32)·4 + c % 4 (scale_layout.h).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/plant.h"
#include "numerics/scale_layout.h"

namespace fp8ref {

namespace detail {
inline void check_ends(std::span<const std::int64_t> ends, std::int64_t total, const char* what) {
  std::int64_t prev = 0;
  for (const std::int64_t e : ends) {
    if (e < prev || e > total)
      throw std::invalid_argument(
          std::string(what) +
          ": group ends must be non-decreasing and <= " + std::to_string(total));
    prev = e;
  }
  if (!ends.empty() && ends.back() != total)
    throw std::invalid_argument(std::string(what) + ": the last group must end at " +
                                std::to_string(total));
}
}  // namespace detail

// Serialised size of the M-grouped layout of a (rows, cols) grid with row-group ends `ends`.
inline std::size_t blocked_grouped_rows_size(std::span<const std::int64_t> ends,
                                             std::int64_t cols) {
  std::int64_t tiles = 0, prev = 0;
  for (const std::int64_t e : ends) tiles += (e - prev + 127) / 128, prev = e;
  return std::size_t(tiles * 128 * detail::align_up(cols, 4));
}

// Byte offset of code (r, c) in the M-grouped layout (ends checked by the callers).
inline std::size_t blocked_grouped_rows_offset(std::span<const std::int64_t> ends,
                                               std::int64_t cols, std::int64_t r, std::int64_t c) {
  std::int64_t tile_row = 0, start = 0;
  for (const std::int64_t e : ends) {
    if (r < e) break;
    tile_row += (e - start + 127) / 128, start = e;
  }
  const std::int64_t local = r - start, tiles_c = detail::align_up(cols, 4) / 4;
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(grouped_no_restart))  // one blocked grid over all rows
    return std::size_t((r / 128) * tiles_c * 512 + detail::blocked_offset(r % 128, c, tiles_c));
#endif
  return std::size_t((tile_row + local / 128) * tiles_c * 512 +
                     detail::blocked_offset(local % 128, c, tiles_c));
}

inline std::vector<std::uint8_t> serialize_blocked_grouped_rows(
    const ScaleGridE8m0& s, std::span<const std::int64_t> ends) {
  detail::check_grid(s.groups, s.rows, s.cols, s.codes.size());
  if (s.groups != 1) throw std::invalid_argument("grouped blocked layout: one (rows, cols) grid");
  detail::check_ends(ends, s.rows, "blocked_grouped_rows");
  std::vector<std::uint8_t> out(blocked_grouped_rows_size(ends, s.cols), 0);
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c)
      out[blocked_grouped_rows_offset(ends, s.cols, r, c)] = s.codes[std::size_t(r * s.cols + c)];
  return out;
}

inline ScaleGridE8m0 deserialize_blocked_grouped_rows(std::span<const std::uint8_t> bytes,
                                                      std::span<const std::int64_t> ends,
                                                      std::int64_t cols) {
  const std::int64_t rows = ends.empty() ? 0 : ends.back();
  detail::check_ends(ends, rows, "blocked_grouped_rows");
  if (cols < 0 || bytes.size() != blocked_grouped_rows_size(ends, cols))
    throw std::invalid_argument("blocked_grouped_rows: " + std::to_string(bytes.size()) +
                                " bytes do not fit the groups");
  ScaleGridE8m0 s{1, rows, cols, std::vector<std::uint8_t>(std::size_t(rows * cols))};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      s.codes[std::size_t(r * cols + c)] = bytes[blocked_grouped_rows_offset(ends, cols, r, c)];
  return s;
}

// K-grouped: the column groups (ends over cols) padded to 4 columns each, then blocked_128x4.
inline std::vector<std::uint8_t> serialize_blocked_grouped_cols(
    const ScaleGridE8m0& s, std::span<const std::int64_t> ends) {
  detail::check_grid(s.groups, s.rows, s.cols, s.codes.size());
  if (s.groups != 1) throw std::invalid_argument("grouped blocked layout: one (rows, cols) grid");
  detail::check_ends(ends, s.cols, "blocked_grouped_cols");
  std::vector<std::int64_t> col_of(std::size_t(s.cols));
  std::int64_t padded = 0, prev = 0;
  for (const std::int64_t e : ends) {
    for (std::int64_t c = prev; c < e; ++c) col_of[std::size_t(c)] = padded + (c - prev);
    padded += detail::align_up(e - prev, 4), prev = e;
  }
  ScaleGridE8m0 wide{1, s.rows, padded, std::vector<std::uint8_t>(std::size_t(s.rows * padded), 0)};
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c)
      wide.codes[std::size_t(r * padded + col_of[std::size_t(c)])] =
          s.codes[std::size_t(r * s.cols + c)];
  return serialize(ScaleLayoutE8m0::blocked_128x4, wide);
}

}  // namespace fp8ref
