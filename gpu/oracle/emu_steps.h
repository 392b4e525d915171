// The Hopper tensor-core steps of the GPU oracle in integer arithmetic (docs/gpu_oracle.md §2):
// one wgmma FP8 step (MMA-Sim's WGMMA model: terms aligned to the largest raw exponent, truncated
// to 13 fraction bits, summed exactly, result truncated to 14 significant bits) and one emulated
// mma.sync m16n8k32 step (two f16 HMMAs at 25 fraction bits, C added last in RN), as
// docs/models.md defines them; __host__ __device__, held bitwise to numerics/models/.
#pragma once

#include <cstdint>

#include "gpu/oracle/emu_arith.h"

namespace fp8ref::gpu::emu {

inline constexpr int kWgmmaK = 32;
inline constexpr int kWgmmaFractionBits = 13;
inline constexpr int kHmmaFractionBits = 25;
inline constexpr std::uint32_t kStepNan = 0x7FFFFFFFu;  // the NaN a step returns

// Step 1 of both steps: the result when an operand or C is NaN / Inf. The f64 sum of C and the
// products is NaN (a NaN operand, 0·Inf, or infinities of both signs) or that infinity.
struct Specials {
  bool any = false, nan = false, pos_inf = false, neg_inf = false;
  FP8REF_HD void product(const Fp8& x, const Fp8& y) {
    if (x.finite && y.finite) return;
    any = true;
    if (x.nan || y.nan || x.sig == 0 || y.sig == 0)
      nan = true;  // NaN, or Inf·0 (a zero code)
    else if (x.neg != y.neg)
      neg_inf = true;
    else
      pos_inf = true;
  }
  FP8REF_HD void accumulator(float c) {
    if (is_finite(c)) return;
    any = true;
    if (is_nan(c))
      nan = true;
    else if (bits_of(c) >> 31)
      neg_inf = true;
    else
      pos_inf = true;
  }
  FP8REF_HD float result() const {
    if (nan || (pos_inf && neg_inf)) return float_of(kStepNan);
    return float_of(neg_inf ? 0xFF800000u : 0x7F800000u);
  }
};

// |m|·2^sh truncated toward zero, sign of m (sh may be negative).
FP8REF_HD std::int64_t shift_trunc(std::int64_t m, int sh) {
  const std::int64_t mag = m < 0 ? -m : m;
  const std::int64_t r = sh >= 0 ? mag << sh : (-sh >= 63 ? 0 : mag >> -sh);
  return m < 0 ? -r : r;
}

// f32 c as sig·2^(exp - 23), |sig| < 2^24, exp of the encoding (subnormal at -126).
struct F32Fields {
  std::int64_t sig;
  int exp;
};
FP8REF_HD F32Fields f32_fields(float c) {
  const std::uint32_t u = bits_of(c);
  const int field = int(u >> 23 & 0xFF);
  const std::int64_t mag = field ? (u & 0x7FFFFF) | 0x800000 : (u & 0x7FFFFF);
  return {(u >> 31) ? -mag : mag, (field ? field : 1) - 127};
}

// 32 codes from p (n <= 32 of them; lanes past n read 0, a zero code), packed 4 to a word. On
// the device a full run at a 16-byte aligned address is two 16-byte loads.
FP8REF_HD void load_codes(const std::uint8_t* p, int n, std::uint32_t w[8]) {
#if defined(__CUDA_ARCH__)
  if (n == 32 && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
    const uint4 x = reinterpret_cast<const uint4*>(p)[0], y = reinterpret_cast<const uint4*>(p)[1];
    w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w, w[4] = y.x, w[5] = y.y, w[6] = y.z, w[7] = y.w;
    return;
  }
#endif
  // Constant indices only (unrolled on the device), so w stays in registers, never local memory.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) {
    std::uint32_t x = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 4; ++j)
      if (4 * i + j < n) x |= std::uint32_t(p[4 * i + j]) << (8 * j);
    w[i] = x;
  }
}

// Whether any of the 4 codes in w is NaN / Inf: e4m3 S.1111.111, e5m2 S.11111.xx (a byte of
// (w & mask) ^ mask is zero).
FP8REF_HD bool has_special(std::uint32_t w, Format f) {
  const std::uint32_t mask = f == Format::e4m3 ? 0x7F7F7F7Fu : 0x7C7C7C7Cu;
  const std::uint32_t v = (w & mask) ^ mask;
  return ((v - 0x01010101u) & ~v & 0x80808080u) != 0;
}

// The special result of a step (some code or c is NaN / Inf).
FP8REF_HD float wgmma_special(const std::uint32_t* wa, const std::uint32_t* wb, Format fa,
                              Format fb, float c) {
  Specials sp;
  sp.accumulator(c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kWgmmaK; ++k) {
    const int sh = (k & 3) * 8;
    sp.product(fp8(fa, std::uint8_t(wa[k >> 2] >> sh)), fp8(fb, std::uint8_t(wb[k >> 2] >> sh)));
  }
  return sp.result();
}

// |significand| and max(exponent field, 1) of the finite code in bits [sh, sh + 8) of w: the
// value is ±mag·2^(field - bias - man_bits). A few shifts and masks with the format constant.
template <Format kF>
FP8REF_HD void code_fields(std::uint32_t w, int sh, std::uint32_t& mag, int& field) {
  constexpr int p = kF == Format::e4m3 ? 3 : 2;
  constexpr std::uint32_t field_mask = kF == Format::e4m3 ? 15u : 31u;
  const std::uint32_t f = (w >> (sh + p)) & field_mask;
  mag = ((w >> sh) & ((1u << p) - 1)) | (f != 0 ? 1u << p : 0u);
  field = f > 1 ? int(f) : 1;
}

// The finite part of one wgmma step on 32 packed codes of each operand (zero codes past n):
// formats as template parameters, so the decode of every lane folds to a few integer operations.
// Exponents are kept biased (field_a + field_b; C's exponent + bias_a + bias_b), which leaves
// every difference of exponents unchanged.
template <Format kFa, Format kFb>
FP8REF_HD float wgmma_terms(const std::uint32_t wa[8], const std::uint32_t wb[8], float c) {
  constexpr int pab = (kFa == Format::e4m3 ? 3 : 2) + (kFb == Format::e4m3 ? 3 : 2);
  constexpr int bias = (kFa == Format::e4m3 ? 7 : 15) + (kFb == Format::e4m3 ? 7 : 15);
  constexpr int kNone = -100000;
  const F32Fields cf = f32_fields(c);
  int e_max = cf.sig != 0 ? cf.exp + bias : kNone;
  std::uint32_t m16[kWgmmaK];  // |sig_a·sig_b| << 16 (below 2^31: |sig_a·sig_b| <= 225)
  int pexp[kWgmmaK];           // field_a + field_b
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kWgmmaK; ++k) {
    const int sh = (k & 3) * 8;
    std::uint32_t ma, mb;
    int fa, fb;
    code_fields<kFa>(wa[k >> 2], sh, ma, fa);
    code_fields<kFb>(wb[k >> 2], sh, mb, fb);
    m16[k] = (ma * mb) << 16, pexp[k] = fa + fb;
    if (m16[k] != 0 && pexp[k] > e_max) e_max = pexp[k];
  }
  if (e_max == kNone) return 0.0f;
  constexpr int kF = kWgmmaFractionBits;
  const int e_top = e_max - bias;  // the largest raw exponent E
  // Terms in units of 2^(E - 13): a product sig_a·sig_b·2^(ea + eb - pa - pb), C sig·2^(ec - 23).
  // Every term is below 2^17 in magnitude, the sum of 33 below 2^23: int32 arithmetic. A
  // product's |term| is m16 >> (16 - sh), sh = ea + eb - pa - pb - E + 13 <= 13 - pab: the
  // magnitude truncated (shifts past 31 give 0, as m16 < 2^31).
  std::int32_t s = std::int32_t(shift_trunc(cf.sig, cf.exp - 23 - e_top + kF));
  const int base = e_max + 16 + pab - kF;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kWgmmaK; ++k) {
    const int sh = (k & 3) * 8;
    const std::uint32_t r =
        std::uint32_t(base - pexp[k]) < 31u ? std::uint32_t(base - pexp[k]) : 31u;
    const std::int32_t t = std::int32_t(m16[k] >> r);
    const std::int32_t neg = -std::int32_t(((wa[k >> 2] ^ wb[k >> 2]) >> (sh + 7)) & 1u);
    s += (t ^ neg) - neg;
  }
  if (s == 0) return 0.0f;
  std::uint32_t mag = std::uint32_t(s < 0 ? -s : s);
  const int width = bit_length(mag);
  if (width > 14) mag &= ~((1u << (width - 14)) - 1);  // 14 significant bits
  if (e_top - kF + width - 1 > 127) return float_of(s < 0 ? 0xFF800000u : 0x7F800000u);
  const float z = float(double(mag) * pow2(e_top - kF));  // exact (multiple of 2^-149)
  return s < 0 ? -z : z;
}

// One wgmma step: D = sum_{k<n} a_k·b_k + c, n <= 32. The 32 lanes are unrolled (lanes past n
// hold zero codes, which are no terms), so the decoded products stay in registers.
FP8REF_HD float wgmma_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                           Format fb, float c) {
  std::uint32_t wa[8], wb[8];
  load_codes(a, n, wa);
  load_codes(b, n, wb);
  bool special = !is_finite(c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) special = special || has_special(wa[i], fa) || has_special(wb[i], fb);
  if (special) return wgmma_special(wa, wb, fa, fb, c);
  if (fa == Format::e4m3)
    return fb == Format::e4m3 ? wgmma_terms<Format::e4m3, Format::e4m3>(wa, wb, c)
                              : wgmma_terms<Format::e4m3, Format::e5m2>(wa, wb, c);
  return fb == Format::e4m3 ? wgmma_terms<Format::e5m2, Format::e4m3>(wa, wb, c)
                            : wgmma_terms<Format::e5m2, Format::e5m2>(wa, wb, c);
}

// The f16 an FP8 code converts to: sig·2^(exp - 10), e4m3 subnormals normalised (f16 emin -14).
FP8REF_HD Fp8 as_f16(Format f, const Fp8& x) {
  int mag = x.sig < 0 ? -x.sig : x.sig, e = x.exp;
  const int p = man_bits(f);
  while (mag != 0 && mag < (1 << p) && e > -14) mag <<= 1, --e;
  mag <<= 10 - p;
  return {x.sig < 0 ? -mag : mag, e, x.finite, x.nan, x.neg};
}

// One HMMA.16816.F32 over the products k < n with (k mod 4) / 2 == half, plus c.
FP8REF_HD float hmma_half(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb,
                          int half, float c) {
  Specials sp;
  sp.accumulator(c);
  const F32Fields cf = f32_fields(c);
  int e_max = cf.sig != 0 ? cf.exp : -100000;
  for (int k = 0; k < n; ++k) {
    if ((k & 3) / 2 != half) continue;
    const Fp8 x = as_f16(fa, fp8(fa, a[k])), y = as_f16(fb, fp8(fb, b[k]));
    sp.product(x, y);
    if (x.sig != 0 && y.sig != 0 && x.exp + y.exp > e_max) e_max = x.exp + y.exp;
  }
  if (sp.any) return sp.result();
  if (e_max == -100000) return 0.0f;
  constexpr int kF = kHmmaFractionBits;
  std::int64_t s = shift_trunc(cf.sig, kF + cf.exp - e_max - 23);
  for (int k = 0; k < n; ++k) {
    if ((k & 3) / 2 != half) continue;
    const Fp8 x = as_f16(fa, fp8(fa, a[k])), y = as_f16(fb, fp8(fb, b[k]));
    if (x.sig == 0 || y.sig == 0) continue;
    s += shift_trunc(std::int64_t(x.sig) * y.sig, kF + x.exp + y.exp - e_max - 20);
  }
  if (s == 0) return 0.0f;
  std::uint64_t mag = std::uint64_t(s < 0 ? -s : s);
  int q = e_max - kF;
  const int width = bit_length(mag), lead = q + width - 1;
  if (lead > 127) return float_of(s < 0 ? 0xFF800000u : 0x7F800000u);
  const int drop = lead >= -126 ? width - 24 : -149 - q;  // RZ to 24 bits / to 2^-149
  if (drop > 0) mag >>= drop, q += drop;
  const float z = float(double(mag) * pow2(q));
  return s < 0 ? -z : z;
}

// One mma.sync FP8 step: HMMA over k mod 4 in {0,1} from +0, then {2,3} from that, then C + T
// in f32 RN (a NaN result is 0x7FFFFFFF).
FP8REF_HD float mma_sync_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa,
                              Format fb, float c) {
  const float t1 = hmma_half(a, b, n, fa, fb, 0, 0.0f);
  const float t2 = hmma_half(a, b, n, fa, fb, 1, t1);
  const float d = add_rn(c, t2);
  return is_nan(d) ? float_of(kStepNan) : d;
}

// A chain of steps over [0, len) from c, 32 products a step (a short last step).
template <bool kMmaSync>
FP8REF_HD float step_chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len,
                           Format fa, Format fb, float c) {
  for (std::int64_t k = 0; k < len; k += kWgmmaK) {
    const int n = int(len - k < kWgmmaK ? len - k : kWgmmaK);
    c = kMmaSync ? mma_sync_step(a + k, b + k, n, fa, fb, c)
                 : wgmma_step(a + k, b + k, n, fa, fb, c);
  }
  return c;
}

}  // namespace fp8ref::gpu::emu
