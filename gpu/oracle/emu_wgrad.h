// One element of the K-grouped wgrad in the GPU oracle (docs/gpu_oracle.md §4a): dW[g][n][k] =
// C[g][n][k] + the model over the group's rows of dY[:, n]·X[:, k], as reference/grouped_wgrad.cpp
// defines it (numerics/grouped_gemm_types.h, WgradOperands). __host__ __device__: the kernel and
// the host test run this same code; reference/ is the independent CPU oracle it is held to.
#pragma once

#include <cstdint>

#include "gpu/oracle/emu_models.h"

namespace fp8ref::gpu::emu {

// The wgrad operands with each group's rows contiguous per column: dY^T (N, M) and X^T (K, M),
// M here the padded width of the transposed rows (group g starts at column cols[g], a multiple
// of 16, so that full steps load aligned 16-byte words); per-block scales transposed to (N, R)
// and (K, R), R token blocks that restart at each group.
struct WgradView {
  std::int64_t M, N, K, G;
  Format fdy, fx;
  const std::uint8_t* dyt;          // (N, M)
  const std::uint8_t* xt;           // (K, M)
  const std::int64_t* rows;         // G + 1 entries: group g owns rows [rows[g], rows[g + 1])
  const std::int64_t* first_block;  // G entries: group g's first token block row
  const std::int64_t* cols;         // G entries: group g's first column in dY^T and X^T
  const float* sdy;                 // per_block: (N, R); else one scale (1.0f when unscaled)
  const float* sx;                  // per_block: (K, R); else one scale
  std::int64_t R;
  bool per_block;
  std::int64_t block_k;  // 128, or 32 for mx
  AccumulationModel model;
  int split_slices;
  std::int64_t split_blocks;
  Epilogue epilogue;
  OutDtype out;
  const float* c;  // (G, N, K)
};

// An f32 as an f64, exactly; a NaN quieted with its sign and payload kept (as x86 cvtss2sd).
FP8REF_HD double to_f64(float x) {
  const std::uint32_t u = bits_of(x);
  if (is_nan(x))
    return double_of(std::uint64_t(u & 0x80000000u) << 32 | 0x7FF8000000000000ull |
                     std::uint64_t(u & 0x003FFFFFu) << 29);
  return double(x);
}

// `exact`: RN_out(C + the exact sum), rounded once. With a NaN / Inf code the IEEE f64 value
// C + (s += sa·sb·dy_k·x_k in increasing k); a non-finite C with finite codes gives C itself.
FP8REF_HD std::uint32_t exact_wgrad_bits(const std::uint8_t* a, const std::uint8_t* b,
                                         std::int64_t m, Format fa, Format fb, const Scales& sc,
                                         float c, OutDtype out) {
  bool finite = true;
  for (std::int64_t k = 0; k < m; ++k)
    finite = finite && fp8(fa, a[k]).finite && fp8(fb, b[k]).finite;
  if (!finite)
    return nonfinite_to_out(dadd_rn(to_f64(c), exact_nonfinite(a, b, m, fa, fb, sc)), out);
  if (!is_finite(c)) return nonfinite_to_out(to_f64(c), out);
  const std::int64_t w = sc.promotion_k();
  const int unit = emin(fa) - man_bits(fa) + emin(fb) - man_bits(fb);
  FixedAccumulator acc;
  const OddParts cp = odd_parts(c);  // |c| < 2^128: bits below 512 of the accumulator
  acc.add(i128(cp.sig), cp.exp);
  for (std::int64_t k0 = 0; k0 < m; k0 += w) {
    const std::int64_t len = m - k0 < w ? m - k0 : w;
    const i128 p = block_units(a + k0, b + k0, len, fa, fb);
    const OddParts x = odd_parts(sc.at_a(k0 / w)), y = odd_parts(sc.at_b(k0 / w));
    acc.add(p * i128(x.sig * y.sig), unit + x.exp + y.exp);
  }
  return acc.round(out);
}

// Output bits of dW[g][n][k].
FP8REF_HD std::uint32_t wgrad_element(const WgradView& v, std::int64_t g, std::int64_t n,
                                      std::int64_t k) {
  const float c = v.c[(g * v.N + n) * v.K + k];
  const std::int64_t r0 = v.rows[g], m = v.rows[g + 1] - r0;
  if (m == 0) return f32_to_out(c, v.out);  // an empty group: C converted once
  const std::uint8_t* a = v.dyt + n * v.M + v.cols[g];
  const std::uint8_t* b = v.xt + k * v.M + v.cols[g];
  const std::int64_t fb = v.per_block ? v.first_block[g] : 0;
  const Scales sc = v.per_block ? Scales{v.sdy + n * v.R + fb, v.sx + k * v.R + fb, true, v.block_k}
                                : Scales{v.sdy, v.sx, false, 128};
  if (v.model == AccumulationModel::exact)
    return exact_wgrad_bits(a, b, m, v.fdy, v.fx, sc, c, v.out);
  const ForwardView f{v.M,
                      v.N,
                      m,
                      v.G,
                      v.fdy,
                      v.fx,
                      a,
                      b,
                      nullptr,
                      {},
                      {},
                      v.per_block,
                      v.block_k,
                      v.model,
                      v.split_slices,
                      v.split_blocks,
                      v.epilogue,
                      v.out};
  return f32_to_out(add_rn(c, model_f32(f, a, b, sc)), v.out);  // RN_f32(C + acc), then cvt.rn
}

}  // namespace fp8ref::gpu::emu
