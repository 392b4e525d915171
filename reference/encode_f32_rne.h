// Round-to-nearest-even encoding of f32 bit patterns into e4m3 / e5m2 without branches: the
// element cast of the quantize hot loop (reference/quantize.cpp). It equals
// numerics/codec.h encode_fp8_bits(f32_to_f64_bits(b), {rne, overflow, nan, Inf -> saturate})
// for every f32 pattern b; proptests/reference/quantize/encode_f32_rne_test.cpp checks that by
// rounding class (every sign x exponent x kept/guard/sticky pattern), and over all 2^32 patterns at
// level 3.
#pragma once

#include <bit>
#include <cstdint>

#include "numerics/format.h"
#include "numerics/plant.h"

// Forced inline: quantize's cast loops vectorize only with this inside them, and GCC's inliner
// leaves it out of line in the larger row kernels (torch_cpu's signed-NaN casts: one call per
// element, about half of a 1x32 quantize).
#if defined(__GNUC__)
#define FP8REF_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FP8REF_ALWAYS_INLINE inline
#endif

namespace fp8ref::ref {

// kSat: Overflow::sat (finite overflow and +-Inf -> +-max) else nonsat (-> Inf / NaN).
// kNanPositive: NanEncoding::positive_all_ones (0x7F) else quiet_signed (0x7F | sign).
// Written without branches (selects only) so that loops over it vectorize (GCC needs
// -fno-trapping-math to if-convert the f32 addition; values do not depend on it). Step 2 uses one
// f32 addition in the default round-to-nearest-even mode, which quantize's x * factor needs too.
template <class T, bool kSat, bool kNanPositive>
FP8REF_ALWAYS_INLINE std::uint8_t encode_f32_rne(std::uint32_t bits) {
  // Magnitudes are below 2^31, so every comparison is a signed 32-bit one (SSE2 has those).
  constexpr int p = T::kManBits;
  constexpr int drop = 23 - p;  // f32 fraction bits below the kept ones, normal targets
  constexpr int emin = T::kMinNormalExp;
  constexpr std::int32_t kInf = 0x7F800000;
  constexpr std::int32_t kMinNormal = (127 + emin) << 23;  // 2^emin
  constexpr std::int32_t kOverflow = kSat ? T::kMaxFinite : (T::kHasInf ? T::kInf : T::kQuietNan);
  const std::int32_t s = std::int32_t(bits >> 24) & 0x80;
  const std::int32_t a = std::int32_t(bits & 0x7FFFFFFFu);
  // 1. Normal target (2^emin <= |x|, Inf included): rebias the exponent field, add half an ulp
  //    minus one plus the kept parity (ties to even), truncate; a carry runs into the exponent.
  std::int32_t t = a - ((127 - T::kBias) << 23);
#ifdef FP8REF_PLANT_HOOKS
  t += (1 << (drop - 1)) - (FP8REF_PLANTED(quantize_ties_away) ? 0 : 1 - ((t >> drop) & 1));
#else
  t += (1 << (drop - 1)) - 1 + ((t >> drop) & 1);
#endif
  const std::int32_t normal = t >> drop;
  // 2. Subnormal target (|x| < 2^emin, f32 subnormals and zero included): C = 2^(emin-p+23) has
  //    ulp 2^(emin-p), the FP8 subnormal quantum, and |x| + C stays in C's binade, so the f32
  //    sum is C + RNE(|x| / quantum) * quantum; a round up to 2^emin gives the min normal code.
  constexpr std::int32_t kMagic = (127 + emin - p + 23) << 23;
  const std::int32_t sub =
      std::bit_cast<std::int32_t>(std::bit_cast<float>(a) + std::bit_cast<float>(kMagic)) - kMagic;
  std::int32_t code = a < kMinNormal ? sub : normal;
  // 3. Past max finite (e4m3: the 0x7F slot is NaN) and +-Inf: saturate or overflow.
  code = code > T::kMaxFinite ? kOverflow : code;
  // 4. NaN.
  constexpr std::int32_t kNanSignMask = kNanPositive ? 0 : 0x80;
  return std::uint8_t(a > kInf ? (0x7F | (s & kNanSignMask)) : (code | s));
}

}  // namespace fp8ref::ref
