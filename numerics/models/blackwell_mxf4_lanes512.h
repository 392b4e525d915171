// kind::mxf4 / mxf4nvf4 tiles (numerics/models/blackwell_step_tile.h) in AVX-512 lanes, 16
// outputs (columns of B) per vector, by integer dot products: the 16 e2m1 products of a group are
// a u8 x s8 dot product (vpmaddubsw + vpmaddwd) of B's 2·values offset by +12 with A's
// 2·values, the offset removed by the row's 12·sum. The rules are the single-step model's
// (numerics/models/blackwell_mxf4_step.h; docs/models.md "Blackwell"). Where no group term is
// truncated (every non-zero group's scale exponent within 33 - man_a - man_b of E), step 3's sum is
// the exact sum of the group values and of C truncated to 35 fraction bits below E: every term is a
// multiple of 2^(E - 35) below 2^47 of them, so the f64 sum (FMA: exact) is exact, and step 4 is
// the RZ conversion of it to f32. Lanes where a group would be truncated, or C / a column scale is
// NaN / Inf, are redone by the single-step model.
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/models/blackwell_mxf4_step.h"
#include "numerics/models/wgmma_step.h"  // FP8REF_STEP_HAS_AVX2, FP8REF_TARGET_AVX512

#if FP8REF_STEP_HAS_AVX2
#include <immintrin.h>

// GCC 12 warns inside the intrinsics' headers (their _mm512_undefined_* is a self-initialised
// variable) wherever they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace fp8ref {
namespace detail {

constexpr int kE2m1Groups = kBlackwellMxf4StepK / kBlackwellMxf4GroupK;  // 4
constexpr int kE2m1Offset = 12;  // largest |2·e2m1 value|: B's bytes are 2·b + 12 in [0, 24]

// B's columns in blocks of 16: per group g and dword q the bytes 2·b[16g + 4q + 0..3] + 12 of
// each column; per group the mask of the non-zero elements (0 where the scale is zero), the
// scale's exponent and its value / 4 (f64: the group sum is in units of 2^-2); -1 for a column
// with a NaN scale (its lanes are redone).
struct E2m1Columns512 {
  struct Block {
    std::int32_t bytes[kE2m1Groups][4][16];
    std::int32_t nz[kE2m1Groups][16];
    std::int32_t exp[kE2m1Groups][16];
    double scale[kE2m1Groups][16];
    std::int32_t special[16];
  };
  std::vector<Block> blocks;
};

// A row of A: per group and dword its four 2·values (s8), 12·sum of the group's 2·values, the
// mask of the non-zero elements (0 where the scale is zero), the scale's exponent and value;
// `finite` false when a scale is NaN (the row is left to the single-step model).
struct E2m1Row512 {
  std::int32_t bytes[kE2m1Groups][4];
  std::int32_t offset[kE2m1Groups];
  std::int32_t nz[kE2m1Groups];
  std::int32_t exp[kE2m1Groups];
  double scale[kE2m1Groups];
  bool finite;
};

inline double e2m1_scale_value(const ElemParts& s) {
  return double(s.sig) * pow2_f64(s.exp - s.man);
}

// The 64 e2m1 codes of an operand (one per byte, the low nibble; zero past k) as 2·values, s8.
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE __m512i e2m1_twice512(const std::uint8_t* codes, int k) {
  // 2·(0, 0.5, 1, 1.5, 2, 3, 4, 6), then the negatives (codes 8..15)
  const __m512i table = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
  const __m512i x =
      _mm512_maskz_loadu_epi8(k >= 64 ? ~__mmask64{0} : (__mmask64{1} << k) - 1, codes);
  return _mm512_shuffle_epi8(table, _mm512_and_si512(x, _mm512_set1_epi8(15)));
}

// Row r of A from its codes and 64 / block scales (ts: the scale format's parts).
FP8REF_TARGET_AVX512 inline void e2m1_row512(const std::uint8_t* codes, const std::uint8_t* s,
                                             int k, const ElemParts* ts, int block, E2m1Row512& r) {
  const __m512i v = e2m1_twice512(codes, k);
  _mm512_storeu_si512(r.bytes, v);
  const std::uint64_t nz = _mm512_test_epi8_mask(v, v);
  alignas(64) std::int32_t q[16];  // sums of four 2·values
  _mm512_store_si512(
      q, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(1), v), _mm512_set1_epi16(1)));
  r.finite = true;
  for (int g = 0; g < kE2m1Groups; ++g) {
    const ElemParts p = ts[s[g * kBlackwellMxf4GroupK / block]];
    r.finite = r.finite && p.finite;
    r.offset[g] = kE2m1Offset * (q[4 * g] + q[4 * g + 1] + q[4 * g + 2] + q[4 * g + 3]);
    r.nz[g] = p.sig != 0 ? std::int32_t((nz >> (16 * g)) & 0xFFFF) : 0;
    r.exp[g] = p.exp;
    r.scale[g] = e2m1_scale_value(p);
  }
}

// Column l of a block from its codes and scales; false for a NaN scale.
FP8REF_TARGET_AVX512 inline bool e2m1_column512(const std::uint8_t* codes, const std::uint8_t* s,
                                                int k, const ElemParts* ts, int block,
                                                E2m1Columns512::Block& b, int l,
                                                std::int32_t (&dwords)[16]) {
  const __m512i v = e2m1_twice512(codes, k);
  _mm512_storeu_si512(dwords, _mm512_add_epi8(v, _mm512_set1_epi8(kE2m1Offset)));
  const std::uint64_t nz = _mm512_test_epi8_mask(v, v);
  bool finite = true;
  for (int g = 0; g < kE2m1Groups; ++g) {
    const ElemParts p = ts[s[g * kBlackwellMxf4GroupK / block]];
    finite = finite && p.finite;
    b.nz[g][l] = p.sig != 0 ? std::int32_t((nz >> (16 * g)) & 0xFFFF) : 0;
    b.exp[g][l] = p.exp;
    b.scale[g][l] = e2m1_scale_value(p) * 0.25;
  }
  return finite;
}

// The n columns of B (k codes and 64 / block scales each) in blocks of 16 (missing columns: zero
// codes and scales).
FP8REF_TARGET_AVX512 inline void e2m1_columns512(const std::uint8_t* codes, const std::uint8_t* s,
                                                 int n, int k, const ElemParts* ts, int block,
                                                 E2m1Columns512& t) {
  const std::size_t ns = std::size_t(kBlackwellMxf4StepK / block);
  t.blocks.resize(std::size_t((n + 15) / 16));
  for (int j0 = 0; j0 < n; j0 += 16) {
    E2m1Columns512::Block& b = t.blocks[std::size_t(j0 / 16)];
    alignas(64) std::int32_t w[16][16];  // [lane][dword]
    for (int l = 0; l < 16; ++l) {
      const std::size_t j = std::size_t(j0 + l);
      const bool finite = j0 + l < n && e2m1_column512(codes + j * std::size_t(k), s + j * ns, k,
                                                       ts, block, b, l, w[l]);
      b.special[l] = j0 + l < n && !finite ? -1 : 0;
      for (int g = 0; g < kE2m1Groups && !finite; ++g)
        b.nz[g][l] = 0, b.exp[g][l] = 0, b.scale[g][l] = 0.0;
      for (int q = 0; q < 16 && !finite; ++q) w[l][q] = 0x0C0C0C0C;  // zeros (offset)
    }
    for (int g = 0; g < kE2m1Groups; ++g)
      for (int q = 0; q < 4; ++q)
        for (int l = 0; l < 16; ++l) b.bytes[g][q][l] = w[l][4 * g + q];
  }
}

// Step 1: group g's exact sum of products (units of 2^-2) of the row and the block's columns:
// pairs of products (|.| <= 576) summed in int16 (|.| <= 2304), then pairs of those in int32.
// (AVX512-VNNI's vpdpbusd measured no faster: the dot products are not the bottleneck.)
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE __m512i e2m1_group_dot512(const E2m1Row512& a,
                                                                    const E2m1Columns512::Block& b,
                                                                    int g) {
  const __m512i* bq = reinterpret_cast<const __m512i*>(b.bytes[g]);
  __m512i s16 = _mm512_maddubs_epi16(_mm512_loadu_si512(bq), _mm512_set1_epi32(a.bytes[g][0]));
  for (int q = 1; q < 4; ++q)
    s16 = _mm512_add_epi16(
        s16, _mm512_maddubs_epi16(_mm512_loadu_si512(bq + q), _mm512_set1_epi32(a.bytes[g][q])));
  return _mm512_sub_epi32(_mm512_madd_epi16(s16, _mm512_set1_epi16(1)),
                          _mm512_set1_epi32(a.offset[g]));
}

// C's step-2 exponent (subnormals at -126; e_zero for a zero C) and E over C and the groups with
// a non-zero product (e_zero where a group has none); `far` gets the lanes where a group term
// would be truncated (E above its exponent + 35 - 2 - man_sum).
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE __m512i e2m1_e_max512(__m512i cbits, const E2m1Row512& a,
                                                                const E2m1Columns512::Block& b,
                                                                int man_sum, __mmask16& far) {
  const __m512i field = _mm512_and_si512(_mm512_srli_epi32(cbits, 23), _mm512_set1_epi32(0xFF));
  const __mmask16 c_nonzero = _mm512_test_epi32_mask(cbits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512i c_exp =
      _mm512_sub_epi32(_mm512_max_epi32(field, _mm512_set1_epi32(1)), _mm512_set1_epi32(127));
  __m512i e = _mm512_mask_blend_epi32(c_nonzero, _mm512_set1_epi32(kZeroTermExpMxf4), c_exp);
  __m512i reach[kE2m1Groups];
  __mmask16 live[kE2m1Groups], any_dead = 0;
  for (int g = 0; g < kE2m1Groups; ++g) {
    const __m512i exp = _mm512_add_epi32(_mm512_loadu_si512(b.exp[g]), _mm512_set1_epi32(a.exp[g]));
    live[g] = _mm512_test_epi32_mask(_mm512_loadu_si512(b.nz[g]), _mm512_set1_epi32(a.nz[g]));
    e = _mm512_mask_max_epi32(e, live[g], e, exp);
    any_dead |= __mmask16(~live[g]);
    reach[g] = _mm512_add_epi32(exp, _mm512_set1_epi32(kBlackwellMxf4FractionBits - 2 - man_sum));
  }
  e = _mm512_mask_max_epi32(e, any_dead, e, _mm512_set1_epi32(kZeroTermExpMxf4));
  far = 0;
  for (int g = 0; g < kE2m1Groups; ++g) far |= _mm512_mask_cmpgt_epi32_mask(live[g], e, reach[g]);
  return e;
}

// C truncated to 35 fraction bits below E, in f32 (exact: |C·2^(35 - E)| < 2^36, and the
// truncated C has at most C's bits; a product below 1 that underflows truncates to 0 as well).
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE __m512 e2m1_c_term512(__m512 c, __m512i e) {
  const __m512 up =
      _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(kBlackwellMxf4FractionBits), e));
  const __m512 ct =
      _mm512_roundscale_ps(_mm512_scalef_ps(c, up), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  return _mm512_scalef_ps(ct, _mm512_sub_ps(_mm512_setzero_ps(), up));
}

// E above this: the sum may reach 2^128 (|sum| < 4·2^(E + 12) + 2^(E + 1) < 2^(E + 15)); such
// lanes are redone (step 4's ±Inf).
constexpr int kE2m1FiniteEMax = 112;

// Outputs (i, j0 .. j0 + 16) into d; returns the lanes that the single-step model must redo.
// Pairs: groups 0, 1 and 2, 3 share their scales (block32): their sums are added first.
template <bool Pairs>
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE std::uint32_t e2m1_pass512(const E2m1Row512& a,
                                                                     const E2m1Columns512::Block& b,
                                                                     int man_sum, const float* c,
                                                                     float* d) {
  constexpr int kStep = Pairs ? 2 : 1;
  __m512i dot[kE2m1Groups];
  for (int g = 0; g < kE2m1Groups; ++g) dot[g] = e2m1_group_dot512(a, b, g);
  for (int g = 0; g < kE2m1Groups && Pairs; g += 2) dot[g] = _mm512_add_epi32(dot[g], dot[g + 1]);
  const __m512i cbits = _mm512_loadu_si512(c);
  __mmask16 far;
  const __m512i e = e2m1_e_max512(cbits, a, b, man_sum, far);
  const __mmask16 redo =
      far | _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(kE2m1FiniteEMax)) |
      _mm512_cmpeq_epi32_mask(_mm512_and_si512(cbits, _mm512_set1_epi32(0x7F800000)),
                              _mm512_set1_epi32(0x7F800000)) |
      _mm512_test_epi32_mask(_mm512_loadu_si512(b.special), _mm512_set1_epi32(-1));
  const __m512 ct = e2m1_c_term512(_mm512_castsi512_ps(cbits), e);
  __m256 z[2];
  for (int h = 0; h < 2; ++h) {
    __m512d sum = _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(ct, 1) : _mm512_castps512_ps256(ct));
    for (int g = 0; g < kE2m1Groups; g += kStep) {
      const __m256i p = h ? _mm512_extracti64x4_epi64(dot[g], 1) : _mm512_castsi512_si256(dot[g]);
      const __m512d s =
          _mm512_mul_pd(_mm512_loadu_pd(b.scale[g] + 8 * h), _mm512_set1_pd(a.scale[g]));
      sum = _mm512_fmadd_pd(_mm512_cvtepi32_pd(p), s, sum);  // exact (see the header)
    }
    z[h] = _mm512_cvt_roundpd_ps(sum, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);  // step 4
  }
  // + 0: a result truncated to nothing is +0
  const __m512 zz = _mm512_insertf32x8(_mm512_castps256_ps512(z[0]), z[1], 1);
  _mm512_storeu_ps(d, _mm512_add_ps(zz, _mm512_setzero_ps()));
  return redo;
}

}  // namespace detail
}  // namespace fp8ref

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // FP8REF_STEP_HAS_AVX2
