// The view the GPU oracle's wgrad kernel reads (emu::WgradView) built from the wgrad's operands
// (docs/gpu_oracle.md §4a): group rows and token blocks from the offsets, dY and X transposed so
// that each group's rows of a column are contiguous, per-block scales transposed likewise.
// Host code; the view's pointers may be host (the emulation test) or device (the launcher) memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/oracle/emu_wgrad.h"
#include "numerics/grouped_gemm_types.h"

namespace fp8ref::gpu {

// rows[g] .. rows[g + 1]: group g's rows (G + 1 entries); first_block[g]: its first token block
// row; R: the block rows of the scale tensors (those past offs[G-1] included), group_blocks: the
// block rows of groups. width 0 for none / tensorwise. cols[g]: group g's first column in the
// transposed operands, each a multiple of 16 (cols[G]: their padded width).
struct WgradGroups {
  std::vector<std::int64_t> rows, first_block, cols;
  std::int64_t width = 0, R = 0, group_blocks = 0;
};

// offs must be valid (non-decreasing, <= M): the launcher checks them first.
inline WgradGroups wgrad_groups(const WgradOperands& op, std::span<const std::int64_t> offs) {
  WgradGroups gr;
  gr.width = op.scaling == Scaling::blockwise ? 128 : op.scaling == Scaling::mx ? 32 : 0;
  const std::int64_t w = std::max<std::int64_t>(gr.width, 1);
  gr.rows.push_back(0);
  gr.cols.push_back(0);
  for (std::int64_t g = 0; g < op.G; ++g) {
    gr.cols.push_back(gr.cols.back() + ceil_div(offs[std::size_t(g)] - gr.rows.back(), 16) * 16);
    gr.first_block.push_back(gr.R);
    gr.R += ceil_div(offs[std::size_t(g)] - gr.rows.back(), w);
    gr.rows.push_back(offs[std::size_t(g)]);
  }
  gr.group_blocks = gr.R;
  gr.R += ceil_div(op.M - gr.rows.back(), w);
  return gr;
}

// (rows, cols) row-major -> (cols, rows), in tiles so both sides stay in cache.
template <class T>
std::vector<T> transposed(std::span<const T> src, std::int64_t rows, std::int64_t cols) {
  std::vector<T> t(src.size());
  constexpr std::int64_t kTile = 64;
  for (std::int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (std::int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (std::int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (std::int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          t[std::size_t(c * rows + r)] = src[std::size_t(r * cols + c)];
  return t;
}

// The rows of every group of src (M, C) as columns: (C, cols[G]), group g at column cols[g],
// zero padding between groups; rows past the last group are left out.
inline std::vector<std::uint8_t> group_columns(std::span<const std::uint8_t> src, std::int64_t C,
                                               const WgradGroups& gr) {
  const std::int64_t W = gr.cols.back();
  std::vector<std::uint8_t> t(std::size_t(C * W), 0);
  constexpr std::int64_t kTile = 64;
  for (std::size_t g = 0; g + 1 < gr.rows.size(); ++g) {
    const std::int64_t r0 = gr.rows[g], m = gr.rows[g + 1] - r0, c0 = gr.cols[g];
    for (std::int64_t i0 = 0; i0 < m; i0 += kTile)
      for (std::int64_t j0 = 0; j0 < C; j0 += kTile)
        for (std::int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
          for (std::int64_t j = j0; j < std::min(C, j0 + kTile); ++j)
            t[std::size_t(j * W + c0 + i)] = src[std::size_t((r0 + i) * C + j)];
  }
  return t;
}

// The host side of a view: dY^T (N, cols[G]), X^T (K, cols[G]), and the scales the kernel reads
// (per-block: (N, R) and (K, R); else one each, 1.0f when unscaled).
struct WgradHostData {
  std::vector<std::uint8_t> dyt, xt;
  std::vector<float> sdy, sx;
};

inline WgradHostData wgrad_host_data(const WgradOperands& op, const WgradGroups& gr) {
  WgradHostData h{group_columns(op.dy, op.N, gr), group_columns(op.x, op.K, gr), {}, {}};
  if (gr.width > 0) {
    h.sdy = transposed(op.scale_dy, gr.R, op.N), h.sx = transposed(op.scale_x, gr.R, op.K);
  } else {
    const bool scaled = op.scaling == Scaling::tensorwise;
    h.sdy = {scaled ? op.scale_dy[0] : 1.0f}, h.sx = {scaled ? op.scale_x[0] : 1.0f};
  }
  return h;
}

// Where the kernel finds what wgrad_groups / wgrad_host_data made (host or device copies):
// {dyt, xt, rows, first_block, cols, sdy, sx, c}.
struct WgradPointers {
  const std::uint8_t *dyt, *xt;
  const std::int64_t *rows, *first_block, *cols;
  const float *sdy, *sx, *c;
};

inline emu::WgradView make_wgrad_view(const WgradOperands& op, const WgradGroups& gr, ModelChoice m,
                                      OutDtype out, const WgradPointers& p) {
  const bool per_block = gr.width > 0;
  // M: the row stride of the transposed operands (their padded width).
  return {gr.cols.back(),
          op.N,
          op.K,
          op.G,
          op.fdy,
          op.fx,
          p.dyt,
          p.xt,
          p.rows,
          p.first_block,
          p.cols,
          p.sdy,
          p.sx,
          gr.R,
          per_block,
          per_block ? gr.width : 128,
          m.model,
          m.split_k,
          m.split_blocks,
          m.epilogue,
          out,
          p.c};
}

}  // namespace fp8ref::gpu
