// kind::mxf4 / mxf4nvf4 tiles (numerics/models/blackwell_step_tile.h) in AVX-512 lanes, 16
// outputs (columns of B) per vector, by integer dot products: the 16 e2m1 products of a group are
// a u8 x s8 dot product (vpmaddubsw + vpmaddwd) of B's 2·values offset by +12 with A's
// 2·values, the offset removed by the row's 12·sum. The rules are the single-step model's (numerics/models/blackwell_mxf4_step.h; docs/models.md
// "Blackwell"). Where no group term is truncated (every non-zero group's scale exponent within
// 33 - man_a - man_b of E), step 3's sum is the exact sum of the group values and of C truncated
// to 35 fraction bits below E: every term is a multiple of 2^(E - 35) below 2^47 of them, so the
// f64 sum (FMA: exact) is exact, and step 4 is the RZ conversion of it to f32. Lanes where a group
// would be truncated, or C / a column scale is NaN / Inf, are redone by the single-step model.
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/models/blackwell_mxf4_step.h"
#include "numerics/models/wgmma_step.h"  // FP8REF_STEP_HAS_AVX2, FP8REF_TARGET_AVX512

#if FP8REF_STEP_HAS_AVX2
#include <immintrin.h>

// GCC 12 warns inside the intrinsics' headers (their _mm512_undefined_* is a self-initialised
// variable) wherever they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fp8ref {
namespace detail {

constexpr int kE2m1Groups = kBlackwellMxf4StepK / kBlackwellMxf4GroupK;  // 4
constexpr int kE2m1Offset = 12;  // largest |2·e2m1 value|: B's bytes are 2·b + 12 in [0, 24]

// B's columns in blocks of 16: per group g and dword q the bytes 2·b[16g + 4q + 0..3] + 12 of
// each column; per group the mask of the non-zero elements (0 where the scale is zero), the
// scale's exponent and its value / 4 (f64: the group sum is in units of 2^-2); -1 for a column
// with a NaN scale.
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
// mask of the non-zero elements (0 where the scale is zero), the scale's exponent and value.
struct E2m1Row512 {
  std::int32_t bytes[kE2m1Groups][4];
  std::int32_t offset[kE2m1Groups];
  std::int32_t nz[kE2m1Groups];
  std::int32_t exp[kE2m1Groups];
  double scale[kE2m1Groups];
};

inline double e2m1_scale_value(const ElemParts& s) {
  return double(s.sig) * pow2_f64(s.exp - s.man);
}

// Group g of v (2·values) as four dwords of bytes (byte k of dword q = element 16g + 4q + k).
inline void e2m1_group_bytes(const std::int16_t* v, int g, int add, std::int32_t (&out)[4]) {
  for (int q = 0; q < 4; ++q) {
    std::uint32_t w = 0;
    for (int b = 0; b < 4; ++b)
      w |= std::uint32_t(std::uint8_t(v[16 * g + 4 * q + b] + add)) << (8 * b);
    out[q] = std::int32_t(w);
  }
}

inline std::int32_t e2m1_group_nz(const OperandE2m1x64& x, int g) {
  std::int32_t nz = 0;
  for (int k = 0; k < kBlackwellMxf4GroupK; ++k) nz |= std::int32_t(x.twice[16 * g + k] != 0) << k;
  return x.scale[g].sig != 0 ? nz : 0;
}

inline void e2m1_columns512(const std::vector<OperandE2m1x64>& cols, E2m1Columns512& t) {
  const int n = int(cols.size());
  t.blocks.assign(std::size_t((n + 15) / 16), E2m1Columns512::Block{});
  for (int j = 0; j < n; ++j) {
    const OperandE2m1x64& c = cols[std::size_t(j)];
    E2m1Columns512::Block& b = t.blocks[std::size_t(j / 16)];
    const int l = j % 16;
    b.special[l] = c.scales_finite ? 0 : -1;
    for (int g = 0; g < kE2m1Groups && c.scales_finite; ++g) {
      std::int32_t q4[4];
      e2m1_group_bytes(c.twice, g, kE2m1Offset, q4);
      for (int q = 0; q < 4; ++q) b.bytes[g][q][l] = q4[q];
      b.nz[g][l] = e2m1_group_nz(c, g);
      b.exp[g][l] = c.scale[g].exp;
      b.scale[g][l] = e2m1_scale_value(c.scale[g]) * 0.25;
    }
    for (int g = 0; g < kE2m1Groups && !c.scales_finite; ++g)
      for (int q = 0; q < 4; ++q) b.bytes[g][q][l] = 0x0C0C0C0C;  // zeros (offset)
  }
}

inline E2m1Row512 e2m1_row512(const OperandE2m1x64& a) {
  E2m1Row512 r{};
  for (int g = 0; g < kE2m1Groups && a.scales_finite; ++g) {
    e2m1_group_bytes(a.twice, g, 0, r.bytes[g]);
    for (int k = 0; k < kBlackwellMxf4GroupK; ++k) r.offset[g] += kE2m1Offset * a.twice[16 * g + k];
    r.nz[g] = e2m1_group_nz(a, g);
    r.exp[g] = a.scale[g].exp;
    r.scale[g] = e2m1_scale_value(a.scale[g]);
  }
  return r;
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

// Step 4 on 8 lanes: RZ-FP32 of the exact f64 v; exponent above 127 gives ±Inf.
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE __m256 e2m1_rz_f32_half(__m512d v) {
  const __m512d big = _mm512_set1_pd(0x1p128);
  const __mmask8 over = _mm512_cmp_pd_mask(v, big, _CMP_GE_OQ) |
                        _mm512_cmp_pd_mask(v, _mm512_sub_pd(_mm512_setzero_pd(), big), _CMP_LE_OQ);
  v = _mm512_mask_mul_pd(v, over, v, _mm512_set1_pd(__builtin_inf()));
  return _mm512_cvt_roundpd_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
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

// Outputs (i, j0 .. j0 + 16) into d; returns the lanes that the single-step model must redo.
FP8REF_TARGET_AVX512 FP8REF_ALWAYS_INLINE std::uint32_t e2m1_pass512(const E2m1Row512& a,
                                                                     const E2m1Columns512::Block& b,
                                                                     int man_sum, const float* c,
                                                                     float* d) {
  constexpr int kF = kBlackwellMxf4FractionBits;
  __m512i dot[kE2m1Groups];
  for (int g = 0; g < kE2m1Groups; ++g) dot[g] = e2m1_group_dot512(a, b, g);
  const __m512i cbits = _mm512_loadu_si512(c);
  __mmask16 far;
  const __m512i e = e2m1_e_max512(cbits, a, b, man_sum, far);
  const __mmask16 redo =
      far |
      _mm512_cmpeq_epi32_mask(_mm512_and_si512(cbits, _mm512_set1_epi32(0x7F800000)),
                              _mm512_set1_epi32(0x7F800000)) |
      _mm512_test_epi32_mask(_mm512_loadu_si512(b.special), _mm512_set1_epi32(-1));
  const __m512 cv = _mm512_castsi512_ps(cbits);
  __m256 z[2];
  for (int h = 0; h < 2; ++h) {
    const __m256i e_h = h ? _mm512_extracti64x4_epi64(e, 1) : _mm512_castsi512_si256(e);
    const __m512d up = _mm512_cvtepi32_pd(_mm256_sub_epi32(_mm256_set1_epi32(kF), e_h));
    const __m512d cd =
        _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(cv, 1) : _mm512_castps512_ps256(cv));
    // C truncated to 35 fraction bits below E (exact scalings: |C·2^(35 - E)| < 2^36)
    const __m512d ct =
        _mm512_roundscale_pd(_mm512_scalef_pd(cd, up), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512d sum = _mm512_scalef_pd(ct, _mm512_sub_pd(_mm512_setzero_pd(), up));
    for (int g = 0; g < kE2m1Groups; ++g) {
      const __m256i p = h ? _mm512_extracti64x4_epi64(dot[g], 1) : _mm512_castsi512_si256(dot[g]);
      const __m512d s =
          _mm512_mul_pd(_mm512_loadu_pd(b.scale[g] + 8 * h), _mm512_set1_pd(a.scale[g]));
      sum = _mm512_fmadd_pd(_mm512_cvtepi32_pd(p), s, sum);  // exact (see the header)
    }
    z[h] = e2m1_rz_f32_half(sum);
  }
  const __m512 zz = _mm512_insertf32x8(_mm512_castps256_ps512(z[0]), z[1], 1);
  // a result truncated to nothing is +0
  const __mmask16 nonzero =
      _mm512_test_epi32_mask(_mm512_castps_si512(zz), _mm512_set1_epi32(0x7FFFFFFF));
  _mm512_storeu_ps(d, _mm512_maskz_mov_ps(nonzero, zz));
  return redo;
}

}  // namespace detail
}  // namespace fp8ref

#pragma GCC diagnostic pop
#endif  // FP8REF_STEP_HAS_AVX2
