// Scale layouts: byte-level serialisers and deserialisers between a logical scale grid and the
// bytes a particular GEMM reads (docs/design.md §7). f32 scales are written little-endian; padding
// bytes are defined (zero, or 1.0f where the consumer multiplies by the padding). docs/recipes.md
// names the source of each layout.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/plant.h"

namespace fp8ref {

// Logical f32 scales (bit patterns), (groups, rows, cols) row-major: 1x128 activation scales are
// (1, M, ceil(K/128)); 128x128 weight scales are (G, ceil(N/128), ceil(K/128)).
struct ScaleGridF32 {
  std::int64_t groups, rows, cols;
  std::vector<std::uint32_t> bits;
  friend bool operator==(const ScaleGridF32&, const ScaleGridF32&) = default;
};
// Logical E8M0 codes, (groups, rows, cols) row-major: 1x32 scales are (1, M, ceil(K/32)).
struct ScaleGridE8m0 {
  std::int64_t groups, rows, cols;
  std::vector<std::uint8_t> codes;
  friend bool operator==(const ScaleGridE8m0&, const ScaleGridE8m0&) = default;
};

enum class ScaleLayoutF32 : std::uint8_t {
  row_major,            // [g][r][c]: 1x128 (M, K/128); 128x128 (G, N/128, K/128); TE compact
  col_major,            // [g][c][r]: torchao column-major 1x128; the transposed 128x128 grid
  tma_mn_major,         // [g][c][align(r,4)], pad 0: DeepGEMM SM90 get_mn_major_tma_aligned_tensor,
                        // TE GEMM_READY 1x128 (scale_inv shape (K/128, round_up(M,4)))
  te_compact,           // TE COMPACT 1x128: (M, K/128) row-major, no padding
  cublas_k_major_pad4,  // [g][r][align(c,4)], pad 1.0f: cuBLASLt 128x128 scales, K contiguous
};
enum class ScaleLayoutE8m0 : std::uint8_t {
  row_major,        // [g][r][c]
  blocked_128x4,    // cuBLAS / torchao to_blocked: 128x4 tiles, row-major over
                    // (ceil(r/128), ceil(c/4)); inside a tile (r%32)*16 + (r/32)*4 + c; pad 0
  deepgemm_packed,  // DeepGEMM SM100 packed UE8M0: int32 [g][align(c,4)/4][align(r,4)], byte j
                    // of word (kk, r) = code (r, 4kk+j) (little-endian); pad 0
};

constexpr std::string_view to_string(ScaleLayoutF32 l) {
  switch (l) {
    case ScaleLayoutF32::row_major: return "row_major";
    case ScaleLayoutF32::col_major: return "col_major";
    case ScaleLayoutF32::tma_mn_major: return "tma_mn_major";
    case ScaleLayoutF32::te_compact: return "te_compact";
    case ScaleLayoutF32::cublas_k_major_pad4: return "cublas_k_major_pad4";
  }
  return "?";
}
constexpr std::string_view to_string(ScaleLayoutE8m0 l) {
  switch (l) {
    case ScaleLayoutE8m0::row_major: return "e8m0_row_major";
    case ScaleLayoutE8m0::blocked_128x4: return "e8m0_blocked_128x4";
    case ScaleLayoutE8m0::deepgemm_packed: return "deepgemm_packed_ue8m0";
  }
  return "?";
}

namespace detail {

constexpr std::int64_t align_up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

// Byte offset of f32 grid element (g, r, c) in layout l; the layout's padded shape per group.
struct F32Geometry {
  std::int64_t outer, inner;  // per group: outer x inner words
  bool transposed;            // outer runs over c
  std::uint32_t pad;          // padding word
};
inline F32Geometry f32_geometry(ScaleLayoutF32 l, std::int64_t rows, std::int64_t cols) {
  switch (l) {
    case ScaleLayoutF32::row_major:
    case ScaleLayoutF32::te_compact: return {rows, cols, false, 0};
    case ScaleLayoutF32::col_major: return {cols, rows, true, 0};
    case ScaleLayoutF32::tma_mn_major: return {cols, align_up(rows, 4), true, 0};
    case ScaleLayoutF32::cublas_k_major_pad4: return {rows, align_up(cols, 4), false, 0x3F800000u};
  }
  throw std::invalid_argument("unknown f32 scale layout");
}

inline void check_grid(std::int64_t g, std::int64_t r, std::int64_t c, std::size_t n) {
  if (g < 0 || r < 0 || c < 0 || std::uint64_t(g * r * c) != n)
    throw std::invalid_argument("scale grid: shape (" + std::to_string(g) + "," +
                                std::to_string(r) + "," + std::to_string(c) + ") does not match " +
                                std::to_string(n) + " entries");
}

inline std::int64_t blocked_offset(std::int64_t r, std::int64_t c, std::int64_t tiles_c) {
  const std::int64_t tile = (r / 128) * tiles_c + c / 4;
  const std::int64_t rr = r % 128;
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(swizzle_128x4_dropped)) return tile * 512 + rr * 4 + c % 4;
#endif
  return tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + c % 4;
}

}  // namespace detail

// Size in bytes of a serialised grid.
inline std::size_t serialized_size(ScaleLayoutF32 l, std::int64_t g, std::int64_t r,
                                   std::int64_t c) {
  const auto geo = detail::f32_geometry(l, r, c);
  return std::size_t(g * geo.outer * geo.inner * 4);
}
inline std::size_t serialized_size(ScaleLayoutE8m0 l, std::int64_t g, std::int64_t r,
                                   std::int64_t c) {
  switch (l) {
    case ScaleLayoutE8m0::row_major: return std::size_t(g * r * c);
    case ScaleLayoutE8m0::blocked_128x4:
      return std::size_t(g * detail::align_up(r, 128) * detail::align_up(c, 4));
    case ScaleLayoutE8m0::deepgemm_packed:
      return std::size_t(g * detail::align_up(c, 4) * detail::align_up(r, 4));
  }
  throw std::invalid_argument("unknown e8m0 scale layout");
}

inline std::vector<std::uint8_t> serialize(ScaleLayoutF32 l, const ScaleGridF32& s) {
  detail::check_grid(s.groups, s.rows, s.cols, s.bits.size());
  const auto geo = detail::f32_geometry(l, s.rows, s.cols);
  std::vector<std::uint32_t> words(std::size_t(s.groups * geo.outer * geo.inner), geo.pad);
  for (std::int64_t g = 0; g < s.groups; ++g)
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t c = 0; c < s.cols; ++c) {
        const std::int64_t o = geo.transposed ? c : r, i = geo.transposed ? r : c;
        words[std::size_t((g * geo.outer + o) * geo.inner + i)] =
            s.bits[std::size_t((g * s.rows + r) * s.cols + c)];
      }
  std::vector<std::uint8_t> out(words.size() * 4);
  for (std::size_t w = 0; w < words.size(); ++w)
    for (int b = 0; b < 4; ++b) out[w * 4 + b] = std::uint8_t(words[w] >> (8 * b));
  return out;
}

// Inverse of serialize; padding is not read back. Throws on a size mismatch.
inline ScaleGridF32 deserialize(ScaleLayoutF32 l, std::span<const std::uint8_t> bytes,
                                std::int64_t groups, std::int64_t rows, std::int64_t cols) {
  if (groups < 0 || rows < 0 || cols < 0 || bytes.size() != serialized_size(l, groups, rows, cols))
    throw std::invalid_argument("scale layout " + std::string(to_string(l)) + ": " +
                                std::to_string(bytes.size()) + " bytes do not fit the grid");
  const auto geo = detail::f32_geometry(l, rows, cols);
  ScaleGridF32 s{groups, rows, cols, std::vector<std::uint32_t>(std::size_t(groups * rows * cols))};
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t o = geo.transposed ? c : r, i = geo.transposed ? r : c;
        const std::size_t w = std::size_t((g * geo.outer + o) * geo.inner + i) * 4;
        s.bits[std::size_t((g * rows + r) * cols + c)] =
            std::uint32_t(bytes[w]) | std::uint32_t(bytes[w + 1]) << 8 |
            std::uint32_t(bytes[w + 2]) << 16 | std::uint32_t(bytes[w + 3]) << 24;
      }
  return s;
}

namespace detail {
// Byte offset of code (g, r, c) in an E8M0 layout.
inline std::size_t e8m0_offset(ScaleLayoutE8m0 l, std::int64_t g, std::int64_t r, std::int64_t c,
                               std::int64_t rows, std::int64_t cols) {
  switch (l) {
    case ScaleLayoutE8m0::row_major: return std::size_t((g * rows + r) * cols + c);
    case ScaleLayoutE8m0::blocked_128x4: {
      const std::int64_t per_group = align_up(rows, 128) * align_up(cols, 4);
      return std::size_t(g * per_group + blocked_offset(r, c, align_up(cols, 4) / 4));
    }
    case ScaleLayoutE8m0::deepgemm_packed: {
      const std::int64_t am = align_up(rows, 4), kk = align_up(cols, 4) / 4;
#ifdef FP8REF_PLANT_HOOKS
      if (FP8REF_PLANTED(packed_bytes_swapped))
        return std::size_t(((g * kk + c / 4) * am + r) * 4 + 3 - c % 4);
#endif
      return std::size_t(((g * kk + c / 4) * am + r) * 4 + c % 4);
    }
  }
  throw std::invalid_argument("unknown e8m0 scale layout");
}
}  // namespace detail

// serialize() of a (groups, rows, cols) grid of f32 values, as f32 values rather than bytes (the
// layout's padding word included): the form a device buffer of scales is uploaded from.
inline std::vector<float> serialize_f32(ScaleLayoutF32 l, std::int64_t groups, std::int64_t rows,
                                        std::int64_t cols, std::span<const float> values) {
  ScaleGridF32 grid{groups, rows, cols, std::vector<std::uint32_t>(values.size())};
  for (std::size_t i = 0; i < values.size(); ++i)
    grid.bits[i] = std::bit_cast<std::uint32_t>(values[i]);
  const std::vector<std::uint8_t> bytes = serialize(l, grid);
  std::vector<float> out(bytes.size() / 4);
  for (std::size_t w = 0; w < out.size(); ++w) {
    std::uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= std::uint32_t(bytes[w * 4 + b]) << (8 * b);
    out[w] = std::bit_cast<float>(u);
  }
  return out;
}

inline std::vector<std::uint8_t> serialize(ScaleLayoutE8m0 l, const ScaleGridE8m0& s) {
  detail::check_grid(s.groups, s.rows, s.cols, s.codes.size());
  std::vector<std::uint8_t> out(serialized_size(l, s.groups, s.rows, s.cols), 0);
  for (std::int64_t g = 0; g < s.groups; ++g)
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t c = 0; c < s.cols; ++c)
        out[detail::e8m0_offset(l, g, r, c, s.rows, s.cols)] =
            s.codes[std::size_t((g * s.rows + r) * s.cols + c)];
  return out;
}

inline ScaleGridE8m0 deserialize(ScaleLayoutE8m0 l, std::span<const std::uint8_t> bytes,
                                 std::int64_t groups, std::int64_t rows, std::int64_t cols) {
  if (groups < 0 || rows < 0 || cols < 0 || bytes.size() != serialized_size(l, groups, rows, cols))
    throw std::invalid_argument("scale layout " + std::string(to_string(l)) + ": " +
                                std::to_string(bytes.size()) + " bytes do not fit the grid");
  ScaleGridE8m0 s{groups, rows, cols, std::vector<std::uint8_t>(std::size_t(groups * rows * cols))};
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        s.codes[std::size_t((g * rows + r) * cols + c)] =
            bytes[detail::e8m0_offset(l, g, r, c, rows, cols)];
  return s;
}

// Power-of-two f32 scales (DeepGEMM use_ue8m0) as E8M0 codes: the biased exponent field
// (DeepGEMM pack_ue8m0_to_int: bits >> 23). Throws if a scale is not a positive normal power of 2.
inline ScaleGridE8m0 ue8m0_from_f32(const ScaleGridF32& s) {
  ScaleGridE8m0 e{s.groups, s.rows, s.cols, std::vector<std::uint8_t>(s.bits.size())};
  for (std::size_t i = 0; i < s.bits.size(); ++i) {
    if ((s.bits[i] & 0x807FFFFFu) != 0 || (s.bits[i] >> 23) == 0 || (s.bits[i] >> 23) == 0xFF)
      throw std::invalid_argument("ue8m0_from_f32: scale is not a normal power of two");
    e.codes[i] = std::uint8_t(s.bits[i] >> 23);
  }
  return e;
}

}  // namespace fp8ref
