// Batch evaluation of the Blackwell step models (numerics/models/blackwell_step.h, docs/models.md
// "Blackwell"): one tensor-core instruction's tile of steps, D[i][j] = step(row i of A, column j
// of B, C[i][j]), as tcgen05.mma / mma.sync issue them. Each row of A and column of B is decoded
// once and reused by the n (m) steps that read it; the steps are the single-step models', bit for
// bit (proptests/numerics/models/blackwell_tile_test.cpp). The `avx2` / `avx512` copies (StepIsa,
// numerics/models/wgmma_step.h; the default is the best the processor has) evaluate 8 / 16
// outputs at a time (numerics/models/blackwell_tile_lanes.h); `baseline` one step at a time.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "numerics/models/blackwell_mxf4_lanes512.h"
#include "numerics/models/blackwell_step.h"
#include "numerics/models/blackwell_tile_lanes.h"

namespace fp8ref {

// The operands of a tile: A is m rows of k codes (row-major), B is given as its n columns, each k
// codes (B^T row-major, as a K-major B is stored); C and D are m×n row-major.
struct BlackwellTileShape {
  int m, n, k;
};

namespace detail {

// A lambda inlined where it is called: the lanes it calls are then compiled for the caller's
// instruction set (a lambda does not inherit a target attribute).
#define FP8REF_LAMBDA_ALWAYS_INLINE __attribute__((always_inline))

inline void require_tile(BlackwellTileShape s, int k_max) {
  if (s.m < 0 || s.n < 0) throw std::invalid_argument("fp8ref: a tile has m, n >= 0");
  require_step_length(s.k, k_max);
}

// The rows decoded into `out` (storage reused: the tile functions keep it per thread, so that a
// small tile such as m16n8 does not spend its time allocating).
inline void decode_rows32(const std::uint8_t* codes, int rows, int k, Format f,
                          std::vector<Operand32>& out) {
  out.resize(std::size_t(rows > 0 ? rows : 0));
  for (int r = 0; r < rows; ++r)
    decode_blackwell_operand32(codes + std::size_t(r) * k, k, f, out[std::size_t(r)]);
}

// Rows of k e2m1 codes with 64 / block scales each.
inline void decode_rows_e2m1(const std::uint8_t* codes, const std::uint8_t* scales, int rows, int k,
                             Format scale, int block, std::vector<OperandE2m1x64>& out) {
  out.resize(std::size_t(rows > 0 ? rows : 0));
  const std::size_t ns = std::size_t(kBlackwellMxf4StepK / block);
  for (int r = 0; r < rows; ++r)
    decode_blackwell_e2m1x64(codes + std::size_t(r) * k, k, scales + std::size_t(r) * ns, scale,
                             block, out[std::size_t(r)]);
}

// A tile in lanes: rows outside, column blocks inside (C and D are read and written in order; B's
// columns, 8 KiB per block of 16, stay in L2), R rows per pass where none of them needs the
// single-step model (NaN / Inf codes, a NaN scale; such a row is done by `step` alone). `pass(rows,
// i, rc, j0, c, d, stride, redo)` evaluates rows i .. i + rc (rc = R or 1) on the block at j0;
// `step(i, j, c)` is the single-step model on row i, column j, and redoes the lanes `pass` returns.
template <int W, int R, class CT, class Special, class Pass, class Step>
FP8REF_ALWAYS_INLINE void tile_lanes(int m, int n, const CT* c, CT* d, const Special& row_special,
                                     const Pass& pass, const Step& step) {
  CT cbuf[R * W], dbuf[R * W];
  for (int i = 0; i < m;) {
    if (row_special(i)) {
      for (int j = 0; j < n; ++j) d[std::size_t(i) * n + j] = step(i, j, c[std::size_t(i) * n + j]);
      ++i;
      continue;
    }
    int rc = R;
    for (int r = 1; r < R; ++r) rc = i + r < m && !row_special(i + r) ? rc : 1;
    for (int j0 = 0; j0 < n; j0 += W) {
      const int w = std::min(W, n - j0);
      std::uint32_t redo[R] = {};
      if (w == W) {
        pass(i, rc, j0, c + std::size_t(i) * n + j0, d + std::size_t(i) * n + j0, std::size_t(n),
             redo);
      } else {  // the last, partial block: through buffers of W lanes
        for (int r = 0; r < rc; ++r)
          for (int l = 0; l < W; ++l)
            cbuf[r * W + l] = l < w ? c[std::size_t(i + r) * n + j0 + l] : CT{};
        pass(i, rc, j0, cbuf, dbuf, std::size_t(W), redo);
        for (int r = 0; r < rc; ++r)
          for (int l = 0; l < w; ++l) d[std::size_t(i + r) * n + j0 + l] = dbuf[r * W + l];
      }
      for (int r = 0; r < rc; ++r)
        for (std::uint32_t bits = redo[r] & ((std::uint32_t{1} << w) - 1); bits != 0;
             bits &= bits - 1) {
          const std::size_t ij = std::size_t(i + r) * n + j0 + std::countr_zero(bits);
          d[ij] = step(i + r, j0 + std::countr_zero(bits), c[ij]);
        }
    }
    i += rc;
  }
}

// A k32 kind in lanes, four rows per pass.
template <int W, int Mode, class CT, class Step>
FP8REF_ALWAYS_INLINE void tile32_lanes(const std::vector<Operand32>& da,
                                       const std::vector<Operand32>& db, const std::uint8_t* sa,
                                       const std::uint8_t* sb, const CT* c, CT* d,
                                       const Step& step) {
  constexpr int R = 4;
  // scratch kept per thread (a tile of m16n8 would otherwise spend most of its time allocating)
  thread_local BwColumns t;
  thread_local std::vector<BwRow32> pre;
  bw_columns32(db, Mode == 2 ? sb : nullptr, W, t);
  pre.resize(da.size());
  for (std::size_t i = 0; i < da.size(); ++i)
    if (da[i].finite) pre[i] = bw_row32(da[i]);
  const auto row_special = [&](int i) {
    return !da[std::size_t(i)].finite || (Mode == 2 && sa[i] == E8m0Traits::kNan);
  };
  const auto pass = [&](int i, int rc, int j0, const CT* cp, CT* dp, std::size_t stride,
                        std::uint32_t(&redo)[R]) FP8REF_LAMBDA_ALWAYS_INLINE {
    BwRows32<R> rows{};
    for (int r = 0; r < rc; ++r)
      rows.op[r] = &da[std::size_t(i + r)], rows.pre[r] = &pre[std::size_t(i + r)],
      rows.s_exp[r] = Mode == 2 ? sa[i + r] : 127;
    if (rc == R) return lanes32<W, R, Mode>(rows, t, j0, cp, dp, stride, redo);
    const BwRows32<1> one{{rows.op[0]}, {rows.pre[0]}, {rows.s_exp[0]}};
    std::uint32_t redo1[1] = {};
    lanes32<W, 1, Mode>(one, t, j0, cp, dp, stride, redo1);
    redo[0] = redo1[0];
  };
  tile_lanes<W, R>(int(da.size()), int(db.size()), c, d, row_special, pass, step);
}

// kind::mxf4 / mxf4nvf4 in lanes, two rows per pass.
template <int W, class Step>
FP8REF_ALWAYS_INLINE void tile_e2m1_lanes(const std::vector<OperandE2m1x64>& da,
                                          const std::vector<OperandE2m1x64>& db, Format scale,
                                          const float* c, float* d, const Step& step) {
  constexpr int R = 2;
  thread_local BwColumns t;
  thread_local std::vector<BwRowE2m1> pre;
  bw_columns_e2m1(db, scale, W, t);
  pre.resize(da.size());
  for (std::size_t i = 0; i < da.size(); ++i) pre[i] = bw_row_e2m1(da[i]);
  const auto row_special = [&](int i) { return !da[std::size_t(i)].scales_finite; };
  const auto pass = [&](int i, int rc, int j0, const float* cp, float* dp, std::size_t stride,
                        std::uint32_t(&redo)[R]) FP8REF_LAMBDA_ALWAYS_INLINE {
    BwRowsE2m1<R> rows{};
    for (int r = 0; r < rc; ++r)
      rows.op[r] = &da[std::size_t(i + r)], rows.pre[r] = &pre[std::size_t(i + r)];
    if (rc == R) return lanes_e2m1<W, R>(rows, t, j0, cp, dp, stride, redo);
    const BwRowsE2m1<1> one{{rows.op[0]}, {rows.pre[0]}};
    std::uint32_t redo1[1] = {};
    lanes_e2m1<W, 1>(one, t, j0, cp, dp, stride, redo1);
    redo[0] = redo1[0];
  };
  tile_lanes<W, R>(int(da.size()), int(db.size()), c, d, row_special, pass, step);
}

// The ISA copies: 16 lanes for AVX-512 (8 when the tile has fewer than 16 columns), 8 for AVX2.
template <int Mode, class CT, class Step>
FP8REF_TARGET_AVX2 void tile32_avx2(const std::vector<Operand32>& da,
                                    const std::vector<Operand32>& db, const std::uint8_t* sa,
                                    const std::uint8_t* sb, const CT* c, CT* d, const Step& step) {
  tile32_lanes<8, Mode>(da, db, sa, sb, c, d, step);
}
template <int Mode, class CT, class Step>
FP8REF_TARGET_AVX512 void tile32_avx512(const std::vector<Operand32>& da,
                                        const std::vector<Operand32>& db, const std::uint8_t* sa,
                                        const std::uint8_t* sb, const CT* c, CT* d,
                                        const Step& step) {
  if (db.size() >= 16)
    tile32_lanes<16, Mode>(da, db, sa, sb, c, d, step);
  else
    tile32_lanes<8, Mode>(da, db, sa, sb, c, d, step);
}
template <class Step>
FP8REF_TARGET_AVX2 void tile_e2m1_avx2(const std::vector<OperandE2m1x64>& da,
                                       const std::vector<OperandE2m1x64>& db, Format scale,
                                       const float* c, float* d, const Step& step) {
  tile_e2m1_lanes<8>(da, db, scale, c, d, step);
}
#if FP8REF_STEP_HAS_AVX2
// k64 on AVX-512 by integer dot products (numerics/models/blackwell_mxf4_lanes512.h), straight
// from the codes: each row of `rows` against 16 columns of `cols` per pass (a loop of its own: a
// lambda would not inherit the target). Rows with a NaN scale and the lanes a pass returns are
// the single-step model's, `step(i, j, c)`.
struct E2m1Codes {
  const std::uint8_t* codes;   // count × k codes
  const std::uint8_t* scales;  // count × 64 / block scale codes
  int count;
};
template <class Step>
FP8REF_TARGET_AVX512 void tile_e2m1_codes512(E2m1Codes rows, E2m1Codes cols, int k, Format scale,
                                             int block, const float* c, float* d,
                                             const Step& step) {
  thread_local E2m1Columns512 t;
  thread_local std::vector<E2m1Row512> pre;
  const ElemParts* ts = elem_parts_table(scale);
  const std::size_t ns = std::size_t(kBlackwellMxf4StepK / block);
  e2m1_columns512(cols.codes, cols.scales, cols.count, k, ts, block, t);
  pre.resize(std::size_t(rows.count));
  for (std::size_t i = 0; i < pre.size(); ++i)
    e2m1_row512(rows.codes + i * std::size_t(k), rows.scales + i * ns, k, ts, block, pre[i]);
  const int man_sum = 2 * elem_man(scale), n = cols.count;
  alignas(64) float cbuf[16], dbuf[16];
  for (int i = 0; i < rows.count; ++i) {
    const std::size_t row = std::size_t(i) * n;
    if (!pre[std::size_t(i)].finite) {  // a NaN scale
      for (int j = 0; j < n; ++j) d[row + j] = step(i, j, c[row + j]);
      continue;
    }
    for (int j0 = 0; j0 < n; j0 += 16) {
      const int w = std::min(16, n - j0);
      const float* cp = c + row + j0;
      float* dp = d + row + j0;
      if (w < 16) {  // the last, partial block: through buffers of 16 lanes
        for (int l = 0; l < 16; ++l) cbuf[l] = l < w ? cp[l] : 0.0f;
        cp = cbuf, dp = dbuf;
      }
      const E2m1Row512& r = pre[std::size_t(i)];
      const E2m1Columns512::Block& b = t.blocks[std::size_t(j0 / 16)];
      const std::uint32_t redo = block == 32 ? e2m1_pass512<true>(r, b, man_sum, cp, dp)
                                             : e2m1_pass512<false>(r, b, man_sum, cp, dp);
      for (int l = 0; l < w && dp == dbuf; ++l) d[row + j0 + l] = dbuf[l];
      for (std::uint32_t bits = redo & ((std::uint32_t{1} << w) - 1); bits != 0; bits &= bits - 1)
        d[row + j0 + std::countr_zero(bits)] =
            step(i, j0 + std::countr_zero(bits), c[row + j0 + std::countr_zero(bits)]);
    }
  }
}

// kind::mxf4 on AVX-512 for a tile with 16 columns or more, else (16 rows or more) transposed:
// the step is symmetric in its operands (a product sum and a scale product), so D^T is the tile
// of B^T's rows against A's with C^T (16 lanes instead of 8).
template <class Step>
void tile_e2m1_avx512_codes(E2m1Codes a, E2m1Codes bt, int k, Format scale, int block,
                            const float* c, float* d, const Step& step) {
  if (bt.count >= 16) return tile_e2m1_codes512(a, bt, k, scale, block, c, d, step);
  const std::size_t m = std::size_t(a.count), n = std::size_t(bt.count);
  thread_local std::vector<float> ct, dt;
  ct.resize(m * n), dt.resize(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) ct[j * m + i] = c[i * n + j];
  tile_e2m1_codes512(bt, a, k, scale, block, ct.data(), dt.data(),
                     [&](int j, int i, float cij) { return step(i, j, cij); });
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) d[i * n + j] = dt[j * m + i];
}
#endif

template <class Step>
FP8REF_TARGET_AVX512 void tile_e2m1_avx512(const std::vector<OperandE2m1x64>& da,
                                           const std::vector<OperandE2m1x64>& db, Format scale,
                                           const float* c, float* d, const Step& step) {
  if (db.size() >= 16)
    tile_e2m1_lanes<16>(da, db, scale, c, d, step);
  else
    tile_e2m1_lanes<8>(da, db, scale, c, d, step);
}

// A k32 tile on `isa`: baseline one step at a time, else in lanes.
template <int Mode, class CT, class Step>
void tile32(const std::vector<Operand32>& da, const std::vector<Operand32>& db,
            const std::uint8_t* sa, const std::uint8_t* sb, const CT* c, CT* d, StepIsa isa,
            const Step& step) {
  require_isa(isa);
  const std::size_t m = da.size(), n = db.size();
  if (m == 0 || n == 0) return;
  switch (isa) {
    case StepIsa::avx512: tile32_avx512<Mode>(da, db, sa, sb, c, d, step); return;
    case StepIsa::avx2: tile32_avx2<Mode>(da, db, sa, sb, c, d, step); return;
    case StepIsa::baseline: break;
  }
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) d[i * n + j] = step(int(i), int(j), c[i * n + j]);
}

}  // namespace detail

// kind::f8f6f4, f32 accumulator.
inline void blackwell_f8f6f4_tile(const std::uint8_t* a, const std::uint8_t* bt,
                                  BlackwellTileShape s, Format fa, Format fb, const float* c,
                                  float* d, StepIsa isa = best_step_isa()) {
  detail::require_tile(s, kBlackwellStepK);
  thread_local std::vector<detail::Operand32> da, db;
  detail::decode_rows32(a, s.m, s.k, fa, da);
  detail::decode_rows32(bt, s.n, s.k, fb, db);
  detail::tile32<0>(da, db, nullptr, nullptr, c, d, isa, [&](int i, int j, float cij) {
    return blackwell_f8f6f4_step_bounded(da[std::size_t(i)], db[std::size_t(j)], cij).z;
  });
}

// kind::f8f6f4, f16 accumulator (C and D f16 bit patterns).
inline void blackwell_f8f6f4_tile_f16(const std::uint8_t* a, const std::uint8_t* bt,
                                      BlackwellTileShape s, Format fa, Format fb,
                                      const std::uint16_t* c, std::uint16_t* d,
                                      StepIsa isa = best_step_isa()) {
  detail::require_tile(s, kBlackwellStepK);
  thread_local std::vector<detail::Operand32> da, db;
  detail::decode_rows32(a, s.m, s.k, fa, da);
  detail::decode_rows32(bt, s.n, s.k, fb, db);
  detail::tile32<1>(da, db, nullptr, nullptr, c, d, isa, [&](int i, int j, std::uint16_t cij) {
    return blackwell_f8f6f4_step_f16(da[std::size_t(i)], db[std::size_t(j)], cij);
  });
}

// kind::mxf8f6f4 block32: ue8m0 scale sa[i] for row i of A, sb[j] for column j of B.
inline void blackwell_mxf8f6f4_tile(const std::uint8_t* a, const std::uint8_t* bt,
                                    BlackwellTileShape s, Format fa, Format fb,
                                    const std::uint8_t* sa, const std::uint8_t* sb, const float* c,
                                    float* d, StepIsa isa = best_step_isa()) {
  detail::require_tile(s, kBlackwellStepK);
  thread_local std::vector<detail::Operand32> da, db;
  detail::decode_rows32(a, s.m, s.k, fa, da);
  detail::decode_rows32(bt, s.n, s.k, fb, db);
  detail::tile32<2>(da, db, sa, sb, c, d, isa, [&](int i, int j, float cij) {
    return blackwell_mxf8f6f4_step_bounded(da[std::size_t(i)], db[std::size_t(j)], sa[i], sb[j],
                                           cij)
        .z;
  });
}

// kind::mxf4 / mxf4nvf4 (k <= 64, e2m1 one code per byte): row i of A takes the 64 / block scales
// sa[i·(64 / block) ...], column j of B sb[j·(64 / block) ...].
inline void blackwell_mxf4_tile(const std::uint8_t* a, const std::uint8_t* bt, BlackwellTileShape s,
                                const std::uint8_t* sa, const std::uint8_t* sb, Format scale,
                                int block, const float* c, float* d,
                                StepIsa isa = best_step_isa()) {
  detail::require_mxf4_scales(scale, block);
  detail::require_tile(s, kBlackwellMxf4StepK);
  detail::require_isa(isa);
  if (s.m == 0 || s.n == 0) return;
#if FP8REF_STEP_HAS_AVX2
  if (isa == StepIsa::avx512 && (s.m >= 16 || s.n >= 16)) {
    const std::size_t k = std::size_t(s.k), ns = std::size_t(kBlackwellMxf4StepK / block);
    detail::tile_e2m1_avx512_codes(
        {a, sa, s.m}, {bt, sb, s.n}, s.k, scale, block, c, d, [&](int i, int j, float cij) {
          return blackwell_mxf4_step(a + std::size_t(i) * k, bt + std::size_t(j) * k, s.k,
                                     sa + std::size_t(i) * ns, sb + std::size_t(j) * ns, scale,
                                     block, cij);
        });
    return;
  }
#endif
  thread_local std::vector<detail::OperandE2m1x64> da, db;
  detail::decode_rows_e2m1(a, sa, s.m, s.k, scale, block, da);
  detail::decode_rows_e2m1(bt, sb, s.n, s.k, scale, block, db);
  const auto step = [&](int i, int j, float cij) {
    return blackwell_mxf4_step_bounded(da[std::size_t(i)], db[std::size_t(j)], cij).z;
  };
  switch (isa) {
    case StepIsa::avx512: detail::tile_e2m1_avx512(da, db, scale, c, d, step); return;
    case StepIsa::avx2: detail::tile_e2m1_avx2(da, db, scale, c, d, step); return;
    case StepIsa::baseline: break;
  }
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      const std::size_t ij = std::size_t(i) * s.n + j;
      d[ij] = step(i, j, c[ij]);
    }
}

}  // namespace fp8ref
