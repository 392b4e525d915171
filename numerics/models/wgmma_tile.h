// One Hopper wgmma FP8 instruction m{M}n{N}k32 under the hopper_wgmma step model
// (docs/design.md §10, numerics/models/wgmma_step.h): the operands decoded once, each output one
// step, vectorised across consecutive columns, four rows at a time, in the AVX2 / AVX-512 copies.
// The like-for-like of MMA-Sim's WGMMA(A, B, C). Part of the accumulation models
// (numerics/models.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "numerics/models/wgmma_step.h"

namespace fp8ref {
namespace detail {

// One instruction's operands decoded: the rows of A (M, 32) as planes, and B either as its rows
// (N, 32) for the per-output path (vb, eb), or, for the column lanes below, in blocks of W
// columns, each block k-major (32, W) and contiguous, with int32 exponents (vbt, ebt): column j,
// k at ((j / W) * 32 + k) * W + j % W, the last block padded. The lanes' rare per-output fallback
// gathers a column.
struct TilePlanes {
  int M, N, W = 1;
  const float* va;
  const std::int16_t* ea;
  const float* vb = nullptr;
  const std::int16_t* eb = nullptr;
  const float* vbt = nullptr;
  const std::int32_t* ebt = nullptr;
};

// Output (i, j) as one step on its row and column planes (the per-output path).
FP8REF_ALWAYS_INLINE float tile_output(const TilePlanes& t, int i, int j, float c) {
  constexpr int K = kHopperWgmmaK;
  const WgmmaPlanes pa{t.va + std::size_t(i) * K, t.ea + std::size_t(i) * K};
  if (t.vb != nullptr)
    return step_on_planes<false>(pa, {t.vb + std::size_t(j) * K, t.eb + std::size_t(j) * K}, K, c)
        .z;
  float vb[K];
  std::int16_t eb[K];
  for (int k = 0; k < K; ++k) {
    const std::size_t at =
        (std::size_t(j / t.W) * K + std::size_t(k)) * std::size_t(t.W) + std::size_t(j % t.W);
    vb[k] = t.vbt[at], eb[k] = std::int16_t(t.ebt[at]);
  }
  return step_on_planes<false>(pa, WgmmaPlanes{vb, eb}, K, c).z;
}

// W lanes of f32 / int32 (GCC / Clang vector extensions): 8 in the AVX2 copy (one register), 16
// in the AVX-512 copy. The baseline copy keeps the per-output path: without AVX these vectors
// lower to slow code. No function takes or returns a lane vector (no vector ABI is involved).
template <int W>
struct Lanes {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef std::int32_t I __attribute__((vector_size(4 * W)));
};

// Outputs (i .. i + R, j0 .. j0 + W) as lanes: the same steps 2-6 as wgmma_step_core, vectorised
// across the columns instead of across k (no horizontal reductions), R rows at a time so that each
// load of B's planes serves R independent chains. A row whose lanes need a branch of the core (a
// NaN / Inf product or C, no product term, a result scale below the f32 normal range) goes to
// tile_output, lane by lane: a block with such a row is done one row at a time (R = 1), so that
// every lane computed is one kept (no conversion of a NaN or out-of-range value).
inline constexpr int kTileRows = 4;

// Step 3 for R rows x W columns: the largest raw product exponent of each lane (a sentinel far
// below every exponent when all products are zero; far above when one is NaN / Inf).
template <int W, int R>
FP8REF_ALWAYS_INLINE void lane_product_exponents(const TilePlanes& t, int i, int j0,
                                                 typename Lanes<W>::I (&e_prod)[R]) {
  using I = typename Lanes<W>::I;
  constexpr int K = kHopperWgmmaK;
  const std::int16_t* ea = t.ea + std::size_t(i) * K;
  const std::int32_t* ebt = t.ebt + std::size_t(j0) * K;  // the block of columns j0 .. j0 + W
  I e, eb;
  for (int r = 0; r < R; ++r) e_prod[r] = I{} + 2 * kStepNoTerm;
  for (int k = 0; k < K; ++k) {
    std::memcpy(&eb, ebt + k * W, sizeof eb);
    for (int r = 0; r < R; ++r) {
      e = eb + ea[r * K + k];
      e_prod[r] = e_prod[r] > e ? e_prod[r] : e;
    }
  }
}

// With C: E of each lane, the scales 2^(13-E) and 2^(E-13) of steps 4 and 6, and C itself.
// Returns a bit per row whose lanes need a branch of the core (the per-output path).
template <int W, int R>
FP8REF_ALWAYS_INLINE unsigned lane_scales(const float* c, std::size_t stride,
                                          const typename Lanes<W>::I (&e_prod)[R],
                                          typename Lanes<W>::F (&cv)[R],
                                          typename Lanes<W>::F (&scale)[R],
                                          typename Lanes<W>::F (&out_scale)[R]) {
  using I = typename Lanes<W>::I;
  constexpr int kF = kHopperFp8FractionBits;
  unsigned fallback = 0;
  for (int r = 0; r < R; ++r) {
    I cu;
    std::memcpy(&cv[r], c + r * stride, sizeof cv[r]);
    std::memcpy(&cu, c + r * stride, sizeof cu);
    const I field = (cu >> 23) & 0xFF;
    const I ec = (field > 0 ? field : I{} + 1) - 127;
    const I e_max = (cu & 0x7FFFFFFF) != 0 ? (e_prod[r] > ec ? e_prod[r] : ec) : e_prod[r];
    // The row needs the per-output path iff one of these is negative in some lane: a NaN / Inf
    // product (e_prod > 4096), no product term (e_prod < -4096), a NaN / Inf C (field 255), a
    // result scale 2^(E-13) below 2^-126. Sign bits ORed over the lanes (no vector compare: they
    // lower badly).
    const I branch = (kStepSpecialAbove - e_prod[r]) | (e_prod[r] - kStepNoTermBelow) |
                     (254 - field) | (e_max - kF + 126);
    std::uint64_t words[W / 2], any = 0;
    std::memcpy(words, &branch, sizeof words);
    for (int l = 0; l < W / 2; ++l) any |= words[l];
    if (any & 0x8000000080000000u) fallback |= 1u << r;
    const I scale_bits = (127 + kF - e_max) << 23, out_bits = (e_max - kF + 127) << 23;
    std::memcpy(&scale[r], &scale_bits, sizeof scale[r]);
    std::memcpy(&out_scale[r], &out_bits, sizeof out_scale[r]);
  }
  return fallback;
}

// Steps 4-6 on lanes that need no branch: the truncated terms summed exactly in int32, the sum
// normalised and truncated to 14 significant bits, scaled back by 2^(E-13) into d.
template <int W, int R>
FP8REF_ALWAYS_INLINE void lane_sums(const TilePlanes& t, int i, int j0, std::size_t stride,
                                    const typename Lanes<W>::F (&cv)[R],
                                    const typename Lanes<W>::F (&scale)[R],
                                    const typename Lanes<W>::F (&out_scale)[R], float* d) {
  using I = typename Lanes<W>::I;
  using F = typename Lanes<W>::F;
  constexpr int K = kHopperWgmmaK;
  const float* va = t.va + std::size_t(i) * K;
  const float* vbt = t.vbt + std::size_t(j0) * K;
  F vb;
  I s[R];
  for (int r = 0; r < R; ++r) s[r] = __builtin_convertvector(cv[r] * scale[r], I);
  for (int k = 0; k < K; ++k) {
    std::memcpy(&vb, vbt + k * W, sizeof vb);
    for (int r = 0; r < R; ++r) s[r] += __builtin_convertvector(va[r * K + k] * vb * scale[r], I);
  }
  for (int r = 0; r < R; ++r) {
    const F fs = __builtin_convertvector(s[r], F);
    I t14;
    std::memcpy(&t14, &fs, sizeof t14);
#ifdef FP8REF_PLANT_HOOKS
    t14 &=
        static_cast<std::int32_t>(FP8REF_PLANTED(wgmma_keeps_14_bits) ? 0xFFFFFE00u : 0xFFFFFC00u);
#else
    t14 &= static_cast<std::int32_t>(0xFFFFFC00u);
#endif
    F z;
    std::memcpy(&z, &t14, sizeof z);
    z *= out_scale[r];  // exact: |t14| >= 1 and 2^(E-13) >= 2^-126, or t14 = +0
    std::memcpy(d + r * stride, &z, sizeof z);
  }
}

template <int W, int R>
FP8REF_ALWAYS_INLINE void tile_lanes(const TilePlanes& t, int i, int j0, const float* c, float* d) {
  const std::size_t stride = std::size_t(t.N);
  typename Lanes<W>::I e_prod[R];
  typename Lanes<W>::F cv[R], scale[R], out_scale[R];
  lane_product_exponents<W, R>(t, i, j0, e_prod);
  if (lane_scales<W, R>(c, stride, e_prod, cv, scale, out_scale) != 0) {
    if constexpr (R == 1) {
      for (int l = 0; l < W; ++l) d[l] = tile_output(t, i, j0 + l, c[l]);
    } else {
      for (int r = 0; r < R; ++r) tile_lanes<W, 1>(t, i + r, j0, c + r * stride, d + r * stride);
    }
    return;
  }
  lane_sums<W, R>(t, i, j0, stride, cv, scale, out_scale, d);
}

// W = 1: every output through tile_output (the baseline copy).
template <int W>
// Column blocks outside, rows inside: a block's B planes (32 x W) stay in L1 across the rows.
FP8REF_ALWAYS_INLINE void tile_on_planes(const TilePlanes& t, const float* c, float* d) {
  const std::size_t n = std::size_t(t.N);
  int j = 0;
  if constexpr (W > 1)
    for (; j + W <= t.N; j += W) {
      int i = 0;
      for (; i + kTileRows <= t.M; i += kTileRows)
        tile_lanes<W, kTileRows>(t, i, j, c + i * n + j, d + i * n + j);
      for (; i < t.M; ++i) tile_lanes<W, 1>(t, i, j, c + i * n + j, d + i * n + j);
    }
  for (; j < t.N; ++j)
    for (int i = 0; i < t.M; ++i) d[i * n + j] = tile_output(t, i, j, c[i * n + j]);
}
FP8REF_TARGET_AVX2 inline void tile_on_planes_avx2(const TilePlanes& t, const float* c, float* d) {
  tile_on_planes<8>(t, c, d);
}
FP8REF_TARGET_AVX512 inline void tile_on_planes_avx512(const TilePlanes& t, const float* c,
                                                       float* d) {
  tile_on_planes<16>(t, c, d);
}

}  // namespace detail

// One wgmma instruction m{M}n{N}k32: D (M, N) = A (M, 32) · B (N, 32)ᵀ + C (M, N), row-major, each
// output one step (what MMA-Sim's WGMMA("Hopper", "mMnNk32.f32.<fa>.<fb>") computes; B given as
// its N columns of 32 codes). Every row of A and of B is decoded to planes once. d may alias c.
inline void hopper_wgmma_tile(Format fa, Format fb, int M, int N, const std::uint8_t* a,
                              const std::uint8_t* b, const float* c, float* d,
                              StepIsa isa = best_step_isa()) {
  detail::require_isa(isa);
  constexpr int K = kHopperWgmmaK;
  std::vector<float> va(std::size_t(M) * K), vb(std::size_t(N) * K);
  std::vector<std::int16_t> ea(va.size()), eb;
  std::vector<std::int32_t> ebt;
  decode_wgmma_planes(fa, a, std::int64_t(M) * K, va.data(), ea.data());
  detail::TilePlanes t{M, N,
                       isa == StepIsa::avx512 ? 16
                       : isa == StepIsa::avx2 ? 8
                                              : 1,
                       va.data(), ea.data()};
  if (isa == StepIsa::baseline) {
    eb.resize(vb.size());
    decode_wgmma_planes(fb, b, std::int64_t(N) * K, vb.data(), eb.data());
    t.vb = vb.data(), t.eb = eb.data();
  } else {
    require_operand_format(fb);
    const std::size_t W = std::size_t(t.W), blocks = (std::size_t(N) + W - 1) / W;
    vb.assign(blocks * K * W, 0.0f);
    ebt.assign(vb.size(), 0);
    const detail::StepCode* tb = detail::step_code_table(fb);
    for (std::size_t j = 0; j < std::size_t(N); ++j)
      for (std::size_t k = 0; k < std::size_t(K); ++k) {
        const detail::StepCode x = tb[b[j * K + k]];
        const std::size_t at = (j / W * K + k) * W + j % W;
        vb[at] = x.value, ebt[at] = x.exp;
      }
    t.vbt = vb.data(), t.ebt = ebt.data();
  }
  switch (isa) {
    case StepIsa::avx512: detail::tile_on_planes_avx512(t, c, d); break;
    case StepIsa::avx2: detail::tile_on_planes_avx2(t, c, d); break;
    case StepIsa::baseline: detail::tile_on_planes<1>(t, c, d); break;
  }
}

}  // namespace fp8ref
