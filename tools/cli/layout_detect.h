// `fp8-check layout detect` (docs/cli.md "layout detect"): which named scale layout of
// numerics/scale_layout.h a dumped scale tensor is in, or where it departs from each. The dump is
// compared byte for byte with the logical scales (--canonical) serialised under every layout, in
// both senses (the scales and their reciprocals) and, for power-of-two scales, as UE8M0 codes;
// with only the codes' shape (--like + --block) the sizes and padding bytes are checked.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace fp8ref::cli {

// One layout serialised for a grid: the bytes it expects (empty without canonical values) and,
// per byte, the logical element it holds (-1: padding).
struct LayoutImage {
  std::string name;
  std::vector<std::uint8_t> bytes;
  std::vector<std::int64_t> owner;
  int element_bytes = 4;    // 4: f32 words, 1: E8M0 codes
  bool reciprocal = false;  // holds 1/s for the canonical s (scale vs scale_inv)
};

// Every candidate image for a (groups, rows, cols) grid of f32 bit patterns: the five f32
// layouts, their reciprocal variants, and the E8M0 layouts when every scale is a power of two.
std::vector<LayoutImage> layout_candidates_f32(std::int64_t g, std::int64_t r, std::int64_t c,
                                               const std::vector<std::uint32_t>& bits);
// The three E8M0 layouts for a grid of codes.
std::vector<LayoutImage> layout_candidates_e8m0(std::int64_t g, std::int64_t r, std::int64_t c,
                                                const std::vector<std::uint8_t>& codes);

void add_layout_command(CLI::App& app);

}  // namespace fp8ref::cli
