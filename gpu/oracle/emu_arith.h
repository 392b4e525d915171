// The arithmetic of the GPU oracle (docs/gpu_oracle.md §2), written once as __host__ __device__
// code so that the host build is checked bitwise against reference/ without a GPU: bit casts,
// FP8 fields, IEEE f32 / f64 operations with x86's NaN results, and the rounding of an f32 or of
// an exact value to the output types (docs/design.md §4). Integer arithmetic except where a
// model names an f32 operation; on the device those are __fadd_rn / __fmul_rn / __fmaf_rn.
#pragma once

#include <cstdint>
#include <cstring>

#include "numerics/format.h"
#include "numerics/out_dtype.h"

#if defined(__CUDACC__)
#define FP8REF_HD __host__ __device__ __forceinline__
#else
#include <cmath>
#define FP8REF_HD inline
#endif

namespace fp8ref::gpu::emu {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

FP8REF_HD std::uint32_t bits_of(float x) {
  std::uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
FP8REF_HD float float_of(std::uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}
FP8REF_HD std::uint64_t bits_of(double x) {
  std::uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}
FP8REF_HD double double_of(std::uint64_t u) {
  double x;
  memcpy(&x, &u, 8);
  return x;
}
FP8REF_HD bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
FP8REF_HD bool is_nan(double x) {
  return (bits_of(x) & ~(std::uint64_t{1} << 63)) > 0x7FF0ull << 48;
}
FP8REF_HD bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }
// 2^e as an f64, -1022 <= e <= 1023.
FP8REF_HD double pow2(int e) { return double_of(std::uint64_t(e + 1023) << 52); }
FP8REF_HD int bit_length(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return 64 - __clzll(static_cast<long long>(x));
#else
  return x ? 64 - __builtin_clzll(x) : 0;
#endif
}
FP8REF_HD int count_trailing_zeros(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return x ? __ffsll(static_cast<long long>(x)) - 1 : 64;
#else
  return x ? __builtin_ctzll(x) : 64;
#endif
}

// ---- IEEE operations with x86 SSE NaN results ------------------------------------------------
// The CPU oracle runs on x86-64, where an operation with a NaN operand returns the first NaN
// operand (quieted) and an invalid operation (Inf - Inf, 0·Inf) the default NaN with the sign
// set (f32 0xFFC00000, f64 0xFFF8000000000000). CUDA returns its canonical NaN instead, so every
// NaN result is rewritten to the x86 one: the same bits on both sides.
FP8REF_HD float nan_result(float a, float b, float c) {
  if (is_nan(a)) return float_of(bits_of(a) | 0x00400000u);
  if (is_nan(b)) return float_of(bits_of(b) | 0x00400000u);
  if (is_nan(c)) return float_of(bits_of(c) | 0x00400000u);
  return float_of(0xFFC00000u);
}
FP8REF_HD double nan_result(double a, double b) {
  if (is_nan(a)) return double_of(bits_of(a) | (std::uint64_t{1} << 51));
  if (is_nan(b)) return double_of(bits_of(b) | (std::uint64_t{1} << 51));
  return double_of(0xFFF8000000000000ull);
}
FP8REF_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float r = __fadd_rn(a, b);
#else
  const float r = a + b;
#endif
  return is_nan(r) ? nan_result(a, b, 0.0f) : r;
}
FP8REF_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float r = __fmul_rn(a, b);
#else
  const float r = a * b;
#endif
  return is_nan(r) ? nan_result(a, b, 1.0f) : r;
}
FP8REF_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  const float r = __fmaf_rn(a, b, c);
#else
  const float r = std::fmaf(a, b, c);
#endif
  return is_nan(r) ? nan_result(a, b, c) : r;
}
FP8REF_HD double dadd_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  const double r = __dadd_rn(a, b);
#else
  const double r = a + b;
#endif
  return is_nan(r) ? nan_result(a, b) : r;
}
FP8REF_HD double dmul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  const double r = __dmul_rn(a, b);
#else
  const double r = a * b;
#endif
  return is_nan(r) ? nan_result(a, b) : r;
}
// f64 -> f32, RN; a NaN keeps its sign and the top of its payload (as cvtsd2ss).
FP8REF_HD float to_f32_rn(double x) {
  if (is_nan(x)) {
    const std::uint64_t u = bits_of(x);
    return float_of(std::uint32_t(u >> 32 & 0x80000000u) | 0x7FC00000u |
                    std::uint32_t(u >> 29 & 0x003FFFFFu));
  }
#if defined(__CUDA_ARCH__)
  return __double2float_rn(x);
#else
  return float(x);
#endif
}

// ---- FP8 fields ------------------------------------------------------------------------------
// value = sig·2^(exp - man) with the raw exponent of the encoding (subnormals and zero at emin),
// sig the signed significand with the hidden bit; finite false for NaN / Inf.
struct Fp8 {
  int sig;
  int exp;
  bool finite;
  bool nan;
  bool neg;
};
FP8REF_HD int man_bits(Format f) { return f == Format::e4m3 ? 3 : 2; }
FP8REF_HD int emin(Format f) { return f == Format::e4m3 ? -6 : -14; }
FP8REF_HD Fp8 fp8(Format f, std::uint8_t code) {
  const bool e4 = f == Format::e4m3;
  const int p = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  const int field = (code & 0x7F) >> p, man = code & ((1 << p) - 1);
  const bool nan = e4 ? (code & 0x7F) == 0x7F : (field == 31 && man != 0);
  const bool finite = e4 ? !nan : field != 31;
  const int mag = field ? (1 << p) + man : man;
  const bool neg = (code & 0x80) != 0;
  return {neg ? -mag : mag, (field ? field : 1) - bias, finite, nan, neg};
}
// The exact value as an f64 (NaN codes: the positive quiet NaN; Inf codes: ±Inf).
FP8REF_HD double fp8_value(Format f, std::uint8_t code) {
  const Fp8 x = fp8(f, code);
  if (x.nan) return double_of(0x7FF8000000000000ull);
  if (!x.finite) return double_of((x.neg ? 0xFFF0000000000000ull : 0x7FF0000000000000ull));
  return double(x.sig) * pow2(x.exp - man_bits(f));
}

// ---- Output conversion -----------------------------------------------------------------------
// Significant bits and smallest normal exponent of an output type (numerics/out_dtype.h).
FP8REF_HD int precision(OutDtype d) {
  return d == OutDtype::f32 ? 24 : d == OutDtype::bf16 ? 8 : 11;
}
FP8REF_HD int min_exp(OutDtype d) { return d == OutDtype::f16 ? -14 : -126; }

// keep·2^q, keep <= 2^precision, exactly, as the bits of `d` (±Inf at or past 2^(max_exp+1)).
FP8REF_HD std::uint32_t out_bits_of_exact(std::uint64_t keep, int q, bool neg, OutDtype d) {
  const std::uint32_t sign16 = neg ? 0x8000u : 0u;
  if (d != OutDtype::f16) {
    const int top = bit_length(keep) - 1 + q;
    std::uint32_t u;
    if (keep == 0)
      u = 0;
    else if (top >= 128)
      u = 0x7F800000u;
    else
      u = bits_of(float(double(keep) * pow2(q)));  // exact: keep has <= 24 bits
    u |= neg ? 0x80000000u : 0u;
    return d == OutDtype::f32 ? u : u >> 16;
  }
  if (keep == 0) return sign16;
  const int top = bit_length(keep) - 1 + q;
  if (top >= 16) return sign16 | 0x7C00u;
  if (top < -14) return sign16 | std::uint32_t(keep << (q + 24));  // subnormal: q >= -24
  const std::uint64_t m = q + 10 - top >= 0 ? keep << (q + 10 - top) : keep >> (top - q - 10);
  return sign16 | std::uint32_t(top + 15) << 10 | std::uint32_t(m & 0x3FF);
}

// |mag|·2^exp rounded once (RNE) to `d` with gradual underflow and overflow to ±Inf. mag < 2^63.
FP8REF_HD std::uint32_t round_to_out(std::uint64_t mag, int exp, bool neg, OutDtype d) {
  if (mag == 0) return d == OutDtype::f16 ? 0u : 0u;
  const int prec = precision(d), emn = min_exp(d);
  const int lead = exp + bit_length(mag) - 1;
  const int q = (lead > emn ? lead : emn) - (prec - 1);
  const int s = q - exp;
  if (s <= 0) return out_bits_of_exact(mag << -s, q, neg, d);
  if (s > 64) return out_bits_of_exact(0, q, neg, d);
  std::uint64_t keep = s == 64 ? 0 : mag >> s;
  const bool half = (mag >> (s - 1)) & 1;
  const bool sticky = s > 1 && (mag & ((std::uint64_t{1} << (s - 1)) - 1)) != 0;
  if (half && (sticky || (keep & 1))) ++keep;
  return out_bits_of_exact(keep, q, neg, d);
}

// A model's f32 result to the output type, RNE (cvt.rn): f32 unchanged; bf16 with NaN quieted
// (sign kept); f16 with NaN -> sign | 0x7E00.
FP8REF_HD std::uint32_t f32_to_out(float x, OutDtype d) {
  const std::uint32_t u = bits_of(x);
  if (d == OutDtype::f32) return u;
  if (d == OutDtype::bf16) {
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x0040u;
    return (u + 0x7FFFu + ((u >> 16) & 1)) >> 16;
  }
  const std::uint32_t sign16 = (u >> 16) & 0x8000u;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return sign16 | 0x7E00u;
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return sign16 | 0x7C00u;
  const int field = int(u >> 23 & 0xFF);
  const std::uint64_t mag = field ? (u & 0x7FFFFFu) | 0x800000u : (u & 0x7FFFFFu);
  if (mag == 0) return sign16;
  return round_to_out(mag, (field ? field : 1) - 150, (u >> 31) != 0, d);
}

// A non-finite f64 result (the exact model's IEEE path) to the output type.
FP8REF_HD std::uint32_t nonfinite_to_out(double z, OutDtype d) {
  const bool neg = (bits_of(z) >> 63) != 0;
  if (d == OutDtype::f16) return (neg ? 0x8000u : 0u) | (is_nan(z) ? 0x7E00u : 0x7C00u);
  const std::uint32_t u = bits_of(to_f32_rn(z));
  return d == OutDtype::f32 ? u : u >> 16;
}

}  // namespace fp8ref::gpu::emu
