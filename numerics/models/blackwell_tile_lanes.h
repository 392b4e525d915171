// The lanes of numerics/models/blackwell_step_tile.h: a Blackwell instruction tile evaluated W
// outputs at a time (W consecutive columns of B, one output per lane; 8 lanes in the AVX2 copy,
// 16 in the AVX-512 copy), R rows of A per pass so that each load of B's columns serves R rows.
// Every rule is the single-step model's (numerics/models/blackwell_step.h, steps 2-4;
// docs/models.md "Blackwell"), computed without a branch per lane:
//  - E: the largest exponent sum over the products, as the f32 maximum of 2^e_a · 2^e_b (exact
//    powers of two, 0 for a zero code); "all products non-zero" and "some product non-zero" from
//    masks of the non-zero elements of the row and the column;
//  - step 3 (k32): trunc(a_k·b_k·2^u) as f32 multiplies and a conversion to int32 (exact as in
//    detail::truncated_sum), summed in two int32 halves of 16 terms (each below 2^27);
//    k64: the 16 products of a group summed exactly in f32 (integers below 2^12), each group term
//    sig·2^sh truncated through an f32 (sh <= 0) and scaled exactly (sh > 0: an f32 below 2^53);
//  - step 4: the integer sum (below 2^50) is exact in f64, and so is its scaling by 2^(E - F);
//    it is rounded by numerics/models/blackwell_lane_ops.h.
// A lane whose step takes a branch of the single-step model (a NaN / Inf operand, scale or C, or a
// product scale 2^u below 2^-100) is recomputed by that model after the pass.
// Lane masks: numerics/models/blackwell_lane_ops.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "numerics/models/blackwell_lane_ops.h"
#include "numerics/models/blackwell_step.h"
#include "numerics/models/wgmma_step.h"  // StepIsa, FP8REF_TARGET_AVX2 / AVX512, ALWAYS_INLINE

namespace fp8ref {
namespace detail {

// The columns of B for the lanes, in blocks of W columns: element k of column j at
// (j / W · K + k) · W + j % W (the last block padded with zero columns); per column (K = 1; k64:
// K = 4 groups) the mask of its non-zero elements, its scale, and -1 where the column needs the
// single-step model (a NaN / Inf code or a NaN scale; its lanes compute on zeros).
struct BwColumns {
  int W = 1, K = 0;
  std::vector<float> val;             // k32: the value; k64: 2·value
  std::vector<float> p2;              // k32: 2^(step 2's exponent), 0 for a zero
  std::vector<std::int32_t> nz;       // k32: bit k; k64: bit k - 16g of group g
  std::vector<std::int32_t> s_exp;    // k32 mx: the e8m0 code; k64: the scale's exponent
  std::vector<float> s_sig;           // k64: the scale's significand (integer)
  std::vector<std::int32_t> special;  // per column
  int s_man = 0;                      // k64: mantissa bits of the scale format
  std::size_t at(int j, int k, int k_count) const {
    return (std::size_t(j / W) * std::size_t(k_count) + std::size_t(k)) * std::size_t(W) +
           std::size_t(j % W);
  }
};

inline float pow2_f32(int e) { return std::bit_cast<float>(std::uint32_t(e + 127) << 23); }
// 2^e where nonzero is 1, +0 where it is 0 (no branch).
inline float pow2_f32_or_zero(int e, std::uint32_t nonzero) {
  return std::bit_cast<float>((std::uint32_t(e + 127) << 23) & (0u - nonzero));
}

// Fills t (reusing its storage) with the columns of a k32 tile; sb: the columns' e8m0 scales or
// null.
inline void bw_columns32(const std::vector<Operand32>& cols, const std::uint8_t* sb, int W,
                         BwColumns& t) {
  t.W = W, t.K = kBlackwellStepK;
  const int n = int(cols.size()), blocks = (n + W - 1) / W;
  t.val.assign(std::size_t(blocks) * t.K * W, 0.0f);
  t.p2.assign(t.val.size(), 0.0f);
  t.nz.assign(std::size_t(blocks) * W, 0);
  t.s_exp.assign(t.nz.size(), 127);
  t.special.assign(t.nz.size(), 0);
  for (int j = 0; j < n; ++j) {
    const Operand32& c = cols[std::size_t(j)];
    float* val = t.val.data() + t.at(j, 0, t.K);
    float* p2 = t.p2.data() + t.at(j, 0, t.K);
    std::uint32_t nz = 0;
    for (int k = 0; c.finite && k < t.K; ++k) {  // branch-free (zeros are frequent)
      const std::uint32_t nonzero = std::uint32_t(std::bit_cast<std::uint32_t>(c.val[k]) << 1 != 0);
      val[k * W] = c.val[k];
      p2[k * W] = pow2_f32_or_zero(c.exp[k], nonzero);
      nz |= nonzero << k;
    }
    t.nz[std::size_t(j)] = std::int32_t(nz);
    const bool nan_scale = sb != nullptr && sb[j] == E8m0Traits::kNan;
    if (sb != nullptr && !nan_scale) t.s_exp[std::size_t(j)] = sb[j];
    t.special[std::size_t(j)] = !c.finite || nan_scale ? -1 : 0;
  }
}

// A row of A for the lanes (finite codes): 2^(step 2's exponent) per element (0 for a zero) and
// the mask of its non-zero elements; a pass takes R of them.
struct BwRow32 {
  float p2[kBlackwellStepK];
  std::int32_t nz;
};
inline BwRow32 bw_row32(const Operand32& a) {
  BwRow32 row{};
  for (int k = 0; k < kBlackwellStepK; ++k) {
    const std::uint32_t nonzero = std::uint32_t(std::bit_cast<std::uint32_t>(a.val[k]) << 1 != 0);
    row.p2[k] = pow2_f32_or_zero(a.exp[k], nonzero);
    row.nz |= std::int32_t(nonzero << k);
  }
  return row;
}
template <int R>
struct BwRows32 {
  const Operand32* op[R];
  const BwRow32* pre[R];
  std::int32_t s_exp[R];  // mx: the e8m0 code of the row's scale
};

// E, C's truncated term and the product scale 2^u of a k32 pass's lanes; returns the lanes that
// the single-step model must redo.
template <int W, int Mode>
FP8REF_ALWAYS_INLINE std::uint32_t lanes32_terms(
    const typename BwLanes<W>::I& p_max_bits, const typename BwLanes<W>::I& nz,
    const typename BwLanes<W>::I& scale_exp, const typename BwLanes<W>::I& col_special,
    const std::conditional_t<Mode == 1, std::uint16_t, float>* c, typename BwLanes<W>::I& e_max,
    typename BwLanes<W>::I& cs, typename BwLanes<W>::F& unit) {
  using I = typename BwLanes<W>::I;
  constexpr int kF = kBlackwellFractionBits;
  constexpr int kZero = Mode == 1 ? kZeroTermExpF16 : kZeroTermExp;
  I cmag, cexp, cneg, cspecial, some, not_all, c_nonzero;
  c_lanes<W, Mode == 1>(c, cmag, cexp, cneg, cspecial);
  mask_nonzero(some, nz);
  mask_nonzero(not_all, I(~nz));
  mask_nonzero(c_nonzero, cmag);
  const I pm = (p_max_bits >> 23) - 127 + scale_exp;
  I e;
  select(e, c_nonzero, cexp, I{} - (1 << 30));
  select(e, some & ((e - pm) >> 31), pm, e);                                // products' E
  select(e, (~c_nonzero | not_all) & ((e - kZero) >> 31), I{} + kZero, e);  // e_zero
  e_max = e;
  I u = scale_exp + kF - e;
  const I low = (u + 100) >> 31;
  const std::uint32_t redo = lane_bits(I(col_special | cspecial | (some & low)));
  select(u, low, I{} - 100, u);
  const I unit_bits = ((u & some) + 127) << 23;
  bits_of(unit, unit_bits);
  // C truncated to F fraction bits below E: a shift by F - 23 + c_exp - E <= 2.
  I sh = (kF - 23) + cexp - e;
  sh = sh > kF - 23 ? I{} + (kF - 23) : sh;
  I left = sh < 0 ? I{} : sh, right = -sh;
  right = right < 0 ? I{} : right;
  right = right > 31 ? I{} + 31 : right;
  const I cm = (cmag << left) >> right;
  select(cs, cneg, I(-cm), cm);
  return redo;
}

// Outputs (i .. i + R, j0 .. j0 + W) of a k32 kind (Mode 0: f8f6f4 f32, 1: f8f6f4 f16, 2:
// mxf8f6f4 block32) into d (row stride `stride`); redo[r]: the lanes of row r that the
// single-step model must redo.
template <int W, int R, int Mode>
FP8REF_ALWAYS_INLINE void lanes32(const BwRows32<R>& rows, const BwColumns& t, int j0,
                                  const std::conditional_t<Mode == 1, std::uint16_t, float>* c,
                                  std::conditional_t<Mode == 1, std::uint16_t, float>* d,
                                  std::size_t stride, std::uint32_t (&redo)[R]) {
  using I = typename BwLanes<W>::I;
  using F = typename BwLanes<W>::F;
  constexpr int K = kBlackwellStepK, kF = kBlackwellFractionBits;
  const std::size_t blk = std::size_t(j0 / W) * K * W;
  const float* vb = t.val.data() + blk;
  const float* pb = t.p2.data() + blk;
  I nzb, col_special, sexp_b, x;
  std::memcpy(&nzb, t.nz.data() + j0, sizeof nzb);
  std::memcpy(&sexp_b, t.s_exp.data() + j0, sizeof sexp_b);
  std::memcpy(&col_special, t.special.data() + j0, sizeof col_special);
  // Step 2: the largest 2^(e_a + e_b) (non-negative f32: its bits order as integers).
  I p_max[R];
  F y;
  for (int r = 0; r < R; ++r) p_max[r] = I{};
  for (int k = 0; k < K; ++k) {
    std::memcpy(&y, pb + k * W, sizeof y);
    for (int r = 0; r < R; ++r) {
      bits_of(x, F(rows.pre[r]->p2[k] * y));
      p_max[r] = p_max[r] > x ? p_max[r] : x;
    }
  }
  F unit[R];
  I e_max[R], cs[R];
  for (int r = 0; r < R; ++r) {
    const I scale_exp = Mode == 2 ? sexp_b + (rows.s_exp[r] - 254) : I{};
    redo[r] = lanes32_terms<W, Mode>(p_max[r], I(nzb & rows.pre[r]->nz), scale_exp, col_special,
                                     c + r * stride, e_max[r], cs[r], unit[r]);
  }
  // Step 3: two int32 halves of 16 truncated terms each (|term| < 2^27).
  I acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = I{}, acc1[r] = I{};
  for (int k = 0; k < K / 2; ++k) {
    std::memcpy(&y, vb + k * W, sizeof y);
    for (int r = 0; r < R; ++r)
      acc0[r] += __builtin_convertvector(rows.op[r]->val[k] * y * unit[r], I);
  }
  for (int k = K / 2; k < K; ++k) {
    std::memcpy(&y, vb + k * W, sizeof y);
    for (int r = 0; r < R; ++r)
      acc1[r] += __builtin_convertvector(rows.op[r]->val[k] * y * unit[r], I);
  }
  // Step 4: the sum is exact in f64.
  for (int r = 0; r < R; ++r) {
    I q;
    step4_exponent_lanes(e_max[r], kF, q);
    for (int h = 0; h < 2; ++h) {
      typename BwLanes<W / 2>::D sum;
      add_half_f64<false, W>(cs[r], h, sum);
      add_half_f64<true, W>(acc0[r], h, sum);
      add_half_f64<true, W>(acc1[r], h, sum);
      finish_half_lanes<W>(sum, q, h, d + r * stride);
    }
  }
}

// k64 (kind::mxf4 / mxf4nvf4): B's columns as 2·value per element, per group of 16 the mask of
// its non-zero elements and its block scale (significand, exponent).
inline void bw_columns_e2m1(const std::vector<OperandE2m1x64>& cols, Format scale, int W,
                            BwColumns& t) {
  constexpr int G = kBlackwellMxf4StepK / kBlackwellMxf4GroupK;
  t.W = W, t.K = kBlackwellMxf4StepK, t.s_man = elem_man(scale);
  const int n = int(cols.size()), blocks = (n + W - 1) / W;
  t.val.assign(std::size_t(blocks) * t.K * W, 0.0f);
  t.nz.assign(std::size_t(blocks) * G * W, 0);
  t.s_sig.assign(t.nz.size(), 0.0f), t.s_exp.assign(t.nz.size(), 0);
  t.special.assign(std::size_t(blocks) * W, 0);
  for (int j = 0; j < n; ++j) {
    const OperandE2m1x64& c = cols[std::size_t(j)];
    float* val = t.val.data() + t.at(j, 0, t.K);
    const std::size_t g0 = t.at(j, 0, G);
    for (int g = 0; g < G; ++g) {
      std::int32_t nz = 0;
      for (int kk = 0; kk < kBlackwellMxf4GroupK; ++kk) {
        const int k = g * kBlackwellMxf4GroupK + kk;
        val[k * W] = float(c.twice[k]);
        nz |= std::int32_t(c.twice[k] != 0) << kk;
      }
      t.nz[g0 + std::size_t(g * W)] = nz;
      t.s_sig[g0 + std::size_t(g * W)] = c.scales_finite ? float(c.scale[g].sig) : 0.0f;
      t.s_exp[g0 + std::size_t(g * W)] = c.scales_finite ? c.scale[g].exp : 0;
    }
    t.special[std::size_t(j)] = c.scales_finite ? 0 : -1;
  }
}

// A k64 row of A for the lanes: 2·value per element as f32, per group the mask of its non-zero
// elements; a pass takes R of them.
struct BwRowE2m1 {
  float twice[kBlackwellMxf4StepK];
  std::int32_t nz[kBlackwellMxf4StepK / kBlackwellMxf4GroupK];
};
inline BwRowE2m1 bw_row_e2m1(const OperandE2m1x64& a) {
  BwRowE2m1 row{};
  for (int k = 0; k < kBlackwellMxf4StepK; ++k) {
    row.twice[k] = float(a.twice[k]);
    row.nz[k / kBlackwellMxf4GroupK] |= std::int32_t(a.twice[k] != 0) << (k % kBlackwellMxf4GroupK);
  }
  return row;
}
template <int R>
struct BwRowsE2m1 {
  const OperandE2m1x64* op[R];
  const BwRowE2m1* pre[R];
};

// Step 2 of kind::mxf4 / mxf4nvf4 on the block of columns at j0: per group g and row r, the
// group sum (exact in f32: integers below 2^12) times the scale significands (below 2^20) in
// sig[g][r], at the scales' exponent sum, or e_zero, in exp[g][r]; e_max[r] takes their maximum.
template <int W, int R>
FP8REF_ALWAYS_INLINE void e2m1_group_terms(
    const BwRowsE2m1<R>& rows, const BwColumns& t, int j0,
    typename BwLanes<W>::F (&sig)[kBlackwellMxf4StepK / kBlackwellMxf4GroupK][R],
    typename BwLanes<W>::I (&exp)[kBlackwellMxf4StepK / kBlackwellMxf4GroupK][R],
    typename BwLanes<W>::I (&e_max)[R]) {
  using I = typename BwLanes<W>::I;
  using F = typename BwLanes<W>::F;
  constexpr int K = kBlackwellMxf4StepK, GK = kBlackwellMxf4GroupK, G = K / GK;
  const float* vb = t.val.data() + std::size_t(j0 / W) * K * W;
  const std::size_t sblk = std::size_t(j0 / W) * G * W;
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    // four partial sums per row (short add chains; every partial sum is exact)
    F p[R][4], y, ssig;
    for (int r = 0; r < R; ++r) p[r][0] = p[r][1] = p[r][2] = p[r][3] = F{};
#pragma GCC unroll 16
    for (int kk = 0; kk < GK; ++kk) {
      const int k = g * GK + kk;
      std::memcpy(&y, vb + k * W, sizeof y);
      for (int r = 0; r < R; ++r) p[r][kk % 4] += rows.pre[r]->twice[k] * y;
    }
    I nzb, sexp, any, s_nonzero, ssig_bits;
    std::memcpy(&nzb, t.nz.data() + sblk + std::size_t(g) * W, sizeof nzb);
    std::memcpy(&ssig, t.s_sig.data() + sblk + std::size_t(g) * W, sizeof ssig);
    std::memcpy(&sexp, t.s_exp.data() + sblk + std::size_t(g) * W, sizeof sexp);
    bits_of(ssig_bits, ssig);
    mask_nonzero(s_nonzero, ssig_bits);
    for (int r = 0; r < R; ++r) {
      const ElemParts& xs = rows.op[r]->scale[g];
      sig[g][r] = ((p[r][0] + p[r][1]) + (p[r][2] + p[r][3])) * (ssig * float(xs.sig));
      mask_nonzero(any, I(nzb & rows.pre[r]->nz[g]));
      select(exp[g][r], any & s_nonzero & (xs.sig != 0 ? -1 : 0), I(sexp + xs.exp),
             I{} + kZeroTermExpMxf4);
      e_max[r] = e_max[r] > exp[g][r] ? e_max[r] : exp[g][r];
    }
  }
}

// Outputs (i .. i + R, j0 .. j0 + W) of kind::mxf4 / mxf4nvf4 (rows with finite scales).
template <int W, int R>
FP8REF_ALWAYS_INLINE void lanes_e2m1(const BwRowsE2m1<R>& rows, const BwColumns& t, int j0,
                                     const float* c, float* d, std::size_t stride,
                                     std::uint32_t (&redo)[R]) {
  using I = typename BwLanes<W>::I;
  using F = typename BwLanes<W>::F;
  constexpr int G = kBlackwellMxf4StepK / kBlackwellMxf4GroupK;
  constexpr int kF = kBlackwellMxf4FractionBits;
  I cmag[R], cexp[R], cneg[R], cspecial[R], e_max[R], col_special, c_nonzero;
  std::memcpy(&col_special, t.special.data() + j0, sizeof col_special);
  for (int r = 0; r < R; ++r) {
    c_lanes<W, false>(c + r * stride, cmag[r], cexp[r], cneg[r], cspecial[r]);
    mask_nonzero(c_nonzero, cmag[r]);
    select(e_max[r], c_nonzero, cexp[r], I{} + kZeroTermExpMxf4);
  }
  F sig[G][R];
  I exp[G][R];
  e2m1_group_terms<W, R>(rows, t, j0, sig, exp, e_max);
  // Step 3: each term truncated to 35 fraction bits below E (an f32 below 2^53), summed exactly
  // in f64 (below 2^50); step 4.
  for (int r = 0; r < R; ++r) {
    I cs, q;
    select(cs, cneg[r], I(-cmag[r]), cmag[r]);
    step4_exponent_lanes(e_max[r], kF, q);
    F term;
    typename BwLanes<W / 2>::D sum[2];
    shifted_term_lanes(F(__builtin_convertvector(cs, F)), I(cexp[r] + (kF - 23) - e_max[r]), term);
    for (int h = 0; h < 2; ++h) add_half_f64<false, W>(term, h, sum[h]);
    for (int g = 0; g < G; ++g) {
      const int sh = kF - 2 - rows.op[r]->scale[g].man - t.s_man;
      shifted_term_lanes(sig[g][r], I(exp[g][r] + sh - e_max[r]), term);
      for (int h = 0; h < 2; ++h) add_half_f64<true, W>(term, h, sum[h]);
    }
    for (int h = 0; h < 2; ++h) finish_half_lanes<W>(sum[h], q, h, d + r * stride);
    redo[r] = lane_bits(I(col_special | cspecial[r]));
  }
}

}  // namespace detail
}  // namespace fp8ref
