// Batch evaluation of the Blackwell step models (numerics/models/blackwell_step.h, docs/models.md
// "Blackwell"): one tensor-core instruction's tile of steps, D[i][j] = step(row i of A, column j
// of B, C[i][j]), as tcgen05.mma / mma.sync issue them. Each row of A and column of B is decoded
// once and reused by the n (m) steps that read it; the steps are the single-step models', bit for
// bit (proptests/numerics/models/blackwell_tile_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/models/blackwell_step.h"

namespace fp8ref {

// The operands of a tile: A is m rows of k codes (row-major), B is given as its n columns, each k
// codes (B^T row-major, as a K-major B is stored); C and D are m×n row-major.
struct BlackwellTileShape {
  int m, n, k;
};

namespace detail {

inline void require_tile(BlackwellTileShape s, int k_max) {
  if (s.m < 0 || s.n < 0) throw std::invalid_argument("fp8ref: a tile has m, n >= 0");
  require_step_length(s.k, k_max);
}

inline std::vector<Operand32> decode_rows32(const std::uint8_t* codes, int rows, int k, Format f) {
  std::vector<Operand32> out(std::size_t(rows > 0 ? rows : 0));
  for (int r = 0; r < rows; ++r)
    decode_blackwell_operand32(codes + std::size_t(r) * k, k, f, out[r]);
  return out;
}

// Rows of k e2m1 codes with 64 / block scales each.
inline std::vector<OperandE2m1x64> decode_rows_e2m1(const std::uint8_t* codes,
                                                    const std::uint8_t* scales, int rows, int k,
                                                    Format scale, int block) {
  std::vector<OperandE2m1x64> out(std::size_t(rows > 0 ? rows : 0));
  const std::size_t ns = std::size_t(kBlackwellMxf4StepK / block);
  for (int r = 0; r < rows; ++r)
    decode_blackwell_e2m1x64(codes + std::size_t(r) * k, k, scales + std::size_t(r) * ns, scale,
                             block, out[r]);
  return out;
}

}  // namespace detail

// kind::f8f6f4, f32 accumulator.
inline void blackwell_f8f6f4_tile(const std::uint8_t* a, const std::uint8_t* bt,
                                  BlackwellTileShape s, Format fa, Format fb, const float* c,
                                  float* d) {
  detail::require_tile(s, kBlackwellStepK);
  const auto da = detail::decode_rows32(a, s.m, s.k, fa),
             db = detail::decode_rows32(bt, s.n, s.k, fb);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      const std::size_t ij = std::size_t(i) * s.n + j;
      d[ij] = blackwell_f8f6f4_step_bounded(da[i], db[j], c[ij]).z;
    }
}

// kind::f8f6f4, f16 accumulator (C and D f16 bit patterns).
inline void blackwell_f8f6f4_tile_f16(const std::uint8_t* a, const std::uint8_t* bt,
                                      BlackwellTileShape s, Format fa, Format fb,
                                      const std::uint16_t* c, std::uint16_t* d) {
  detail::require_tile(s, kBlackwellStepK);
  const auto da = detail::decode_rows32(a, s.m, s.k, fa),
             db = detail::decode_rows32(bt, s.n, s.k, fb);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      const std::size_t ij = std::size_t(i) * s.n + j;
      d[ij] = blackwell_f8f6f4_step_f16(da[i], db[j], c[ij]);
    }
}

// kind::mxf8f6f4 block32: ue8m0 scale sa[i] for row i of A, sb[j] for column j of B.
inline void blackwell_mxf8f6f4_tile(const std::uint8_t* a, const std::uint8_t* bt,
                                    BlackwellTileShape s, Format fa, Format fb,
                                    const std::uint8_t* sa, const std::uint8_t* sb, const float* c,
                                    float* d) {
  detail::require_tile(s, kBlackwellStepK);
  const auto da = detail::decode_rows32(a, s.m, s.k, fa),
             db = detail::decode_rows32(bt, s.n, s.k, fb);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      const std::size_t ij = std::size_t(i) * s.n + j;
      d[ij] = blackwell_mxf8f6f4_step_bounded(da[i], db[j], sa[i], sb[j], c[ij]).z;
    }
}

// kind::mxf4 / mxf4nvf4 (k <= 64, e2m1 one code per byte): row i of A takes the 64 / block scales
// sa[i·(64 / block) ...], column j of B sb[j·(64 / block) ...].
inline void blackwell_mxf4_tile(const std::uint8_t* a, const std::uint8_t* bt, BlackwellTileShape s,
                                const std::uint8_t* sa, const std::uint8_t* sb, Format scale,
                                int block, const float* c, float* d) {
  detail::require_mxf4_scales(scale, block);
  detail::require_tile(s, kBlackwellMxf4StepK);
  const auto da = detail::decode_rows_e2m1(a, sa, s.m, s.k, scale, block);
  const auto db = detail::decode_rows_e2m1(bt, sb, s.n, s.k, scale, block);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      const std::size_t ij = std::size_t(i) * s.n + j;
      d[ij] = blackwell_mxf4_step_bounded(da[i], db[j], c[ij]).z;
    }
}

}  // namespace fp8ref
