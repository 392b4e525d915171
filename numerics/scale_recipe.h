// Scale recipes: block amax -> decode scale s (x ~= q * s), the factor the elements are scaled
// by, and the element cast — each reproducing one library's arithmetic bit for bit
// (docs/design.md §6).
// Sources (formulas quoted in comments) and every edge case are in docs/recipes.md.
// All arithmetic is IEEE f32 / f64 round-to-nearest as the library does it; no fused operations.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/plant.h"
#include "numerics/torch_rceil_exponent.h"

namespace fp8ref {

enum class RecipeKind : std::uint8_t {
  deepgemm,
  torchao,
  te,
  mx_floor,
  mx_rceil,
  mx_ceil,
  mx_even
};

// Where the library's arithmetic runs; it changes bits, so it is part of the recipe.
//  torch_cpu:   torch eager on CPU (x86 SSE/AVX; a NaN product keeps the NaN operand's sign,
//               Inf*0 gives the negative default NaN), tensor / python-scalar is a true division.
//  torch_cuda:  torch eager on CUDA: tensor / python-scalar is a * f32(1/b)
//               (BinaryDivTrueKernel.cu "compute a * reciprocal(b)"), every NaN an f32 op
//               produces is the canonical +NaN 0x7FFFFFFF.
//  cuda_kernel: a hand-written CUDA kernel (Transformer Engine): amax by fmaxf (NaN ignored),
//               element cast __nv_cvt_float_to_fp8(.., __NV_SATFINITE) (NaN -> 0x7F).
enum class Runtime : std::uint8_t { torch_cpu, torch_cuda, cuda_kernel };

struct Recipe {
  RecipeKind kind;
  Format elem;  // e4m3 or e5m2 (deepgemm: e4m3 only)
  Runtime runtime;
  bool pow2;      // deepgemm use_ue8m0 / torchao round_scales_to_power_of_2 / te force_pow_2_scales
  float epsilon;  // te amax_epsilon (TE's default is 0); must be 0 for the other recipes
};

// How NaN elements enter the block amax.
enum class AmaxNan : std::uint8_t {
  propagate,  // torch.amax: any NaN makes the amax NaN
  ignore,     // fmaxf reduction from 0 (TE kernels): NaN elements do not count
};

// The per-block result of a recipe.
struct BlockScale {
  float s;       // decode scale (f32; MX: the E8M0 value 2^(e8m0-127) as an f32)
  float factor;  // elements are y = RN_f32(x * factor), or RN_f32(x / factor) when divide
  bool divide;
  std::uint8_t e8m0;  // MX recipes: the stored scale code; 0 otherwise
};

constexpr std::string_view to_string(RecipeKind k) {
  switch (k) {
    case RecipeKind::deepgemm: return "deepgemm";
    case RecipeKind::torchao: return "torchao";
    case RecipeKind::te: return "te";
    case RecipeKind::mx_floor: return "mx_floor";
    case RecipeKind::mx_rceil: return "mx_rceil";
    case RecipeKind::mx_ceil: return "mx_ceil";
    case RecipeKind::mx_even: return "mx_even";
  }
  return "?";
}
constexpr std::string_view to_string(Runtime r) {
  switch (r) {
    case Runtime::torch_cpu: return "torch_cpu";
    case Runtime::torch_cuda: return "torch_cuda";
    case Runtime::cuda_kernel: return "cuda_kernel";
  }
  return "?";
}
constexpr bool is_mx(RecipeKind k) {
  return k == RecipeKind::mx_floor || k == RecipeKind::mx_rceil || k == RecipeKind::mx_ceil ||
         k == RecipeKind::mx_even;
}

// Throws std::invalid_argument for a combination no library implements.
inline void validate(const Recipe& r) {
  const auto fail = [&](const char* why) {
    throw std::invalid_argument("recipe " + std::string(to_string(r.kind)) + " (" +
                                std::string(to_string(r.runtime)) + "): " + why);
  };
  if (r.elem != Format::e4m3 && r.elem != Format::e5m2) fail("element format must be e4m3 or e5m2");
  if (r.kind == RecipeKind::deepgemm && r.elem != Format::e4m3) fail("DeepGEMM casts to e4m3 only");
  const bool torch = r.runtime != Runtime::cuda_kernel;
  if (r.kind == RecipeKind::te && torch) fail("te runs as cuda_kernel");
  if (r.kind != RecipeKind::te && r.kind != RecipeKind::mx_rceil && !torch)
    fail("this recipe is a torch expression: runtime torch_cpu or torch_cuda");
  if (r.kind != RecipeKind::te && r.epsilon != 0.0f) fail("epsilon is a te parameter");
  if (!(r.epsilon >= 0.0f && r.epsilon < std::numeric_limits<float>::infinity()))
    fail("epsilon must be finite and >= 0");
  if (is_mx(r.kind) && r.pow2) fail("MX scales are powers of two already; pow2 must be false");
}

constexpr AmaxNan amax_nan_policy(const Recipe& r) {
  return r.runtime == Runtime::cuda_kernel ? AmaxNan::ignore : AmaxNan::propagate;
}

// Fold |x| into a running amax (start from +0.0f).
inline float amax_fold(AmaxNan p, float acc, float x) {
  const float a = std::fabs(x);
  if (p == AmaxNan::ignore) return std::fmax(acc, a);
  if (std::isnan(acc) || std::isnan(a)) return std::numeric_limits<float>::quiet_NaN();
  return a > acc ? a : acc;
}

namespace detail {

inline float f32_from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
inline std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

// The largest finite element value: e4m3 448, e5m2 57344, and the MXFP4 / MXFP6 elements e2m1 6,
// e2m3 7.5, e3m2 28.
inline float elem_max(Format f) {
  switch (f) {
    case Format::e4m3: return 448.0f;
    case Format::e2m1: return 6.0f;
    case Format::e2m3: return 7.5f;
    case Format::e3m2: return 28.0f;
    default: return 57344.0f;
  }
}
// OCP MX v1.0 §6.3: emax_elem, the exponent of the largest power of two of the element format.
inline int elem_emax(Format f) {
  switch (f) {
    case Format::e4m3: return 8;
    case Format::e2m1:
    case Format::e2m3: return 2;
    case Format::e3m2: return 4;
    default: return 15;
  }
}
// Mantissa bits of the element format (torchao's mbits, used by EVEN's rounding of max_abs).
inline int elem_mbits(Format f) {
  switch (f) {
    case Format::e4m3:
    case Format::e2m3: return 3;
    case Format::e2m1: return 1;
    default: return 2;  // e5m2, e3m2
  }
}

// tensor / python-scalar in torch (see Runtime).
inline float torch_div_scalar(Runtime rt, float a, float b) {
  if (rt == Runtime::torch_cuda) return a * static_cast<float>(1.0 / static_cast<double>(b));
  return a / b;
}

// Largest finite value of the quantized input type (TE value_for_inf = TypeInfo<IType>::max).
inline float source_max(Source src) {
  switch (src) {
    case Source::bf16: return f32_from_bits(0x7F7F0000u);
    case Source::f16: return 65504.0f;
    default: return std::numeric_limits<float>::max();
  }
}

// DeepGEMM deep_gemm/utils/math.py:
//   x_amax = x_view.abs().float().amax(dim).clamp(1e-4); sf = x_amax / 448.0
//   sf = ceil_to_ue8m0(sf) if use_ue8m0   (exp = ((bits>>23)&0xFF) + (mantissa != 0),
//                                          clamp(1, 254), << 23)
//   q = (x_view * (1.0 / sf)).to(torch.float8_e4m3fn)   (1.0/sf = sf.reciprocal() * 1.0)
[[gnu::always_inline]] inline BlockScale deepgemm_scale(const Recipe& r, float amax) {
  float a = std::isnan(amax) ? amax : (amax < 1e-4f ? 1e-4f : amax);  // torch.clamp keeps NaN
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(deepgemm_amax_clamp)) a = std::isnan(amax) ? amax : std::max(amax, 1e-5f);
#endif
  float sf = torch_div_scalar(r.runtime, a, 448.0f);
  if (r.pow2) {
    const std::uint32_t b = bits_of(sf) & 0x7FFFFFFFu;
    int e = int((b >> 23) & 0xFF) + ((b & 0x7FFFFFu) != 0);
    e = e < 1 ? 1 : (e > 254 ? 254 : e);
    sf = f32_from_bits(std::uint32_t(e) << 23);
  }
  return {sf, 1.0f / sf, false, 0};
}

// torchao float8/float8_utils.py amax_to_scale (tensorwise and rowwise float8 training):
//   amax = amax.to(torch.float64); res = max_pos / torch.clamp(amax, min=EPS=1e-12)
//   (python-scalar / tensor = amax.reciprocal() * max_pos, in f64); res = res.to(torch.float32)
//   round_scales_to_power_of_2: exp2(floor(log2(res))) with torch's f32 log2 (torch_log2_f32:
//   a scale just below 2^k becomes 2^k, not 2^(k-1)); scales are normal or 0 / Inf / NaN here
//   q = to_fp8_saturated(x.to(float32) * scale) = clamp(+-max_pos).to(dtype); s =
//   scale.reciprocal()
[[gnu::always_inline]] inline BlockScale torchao_scale(const Recipe& r, float amax) {
  double a = amax;
  if (!std::isnan(a) && a < 1e-12) a = 1e-12;
  float scale = static_cast<float>((1.0 / a) * static_cast<double>(elem_max(r.elem)));
  if (r.pow2 && std::isfinite(scale) && scale > 0.0f)
    scale = std::ldexp(1.0f, static_cast<int>(std::floor(torch_log2_f32(scale))));
  return {1.0f / scale, scale, false, 0};
}

// Transformer Engine common/recipe/recipe_common.cuh compute_scale_from_amax:
//   if (amax < eps) amax = eps;  if (isinf(amax) || amax == 0 || isnan(amax)) return 1;
//   scale = __fdiv_rn(max_fp8, amax); if (isinf(scale)) scale = value_for_inf (IType max);
//   if (force_pow_2_scales) scale_bits &= 0xFF800000;
// scale_inv = 1.0 / scale (quantize_transpose_{vector,square}_blockwise.cu; f64 then f32 equals
// the f32 division), q = static_cast<OType>(x * scale) (satfinite).
[[gnu::always_inline]] inline BlockScale te_scale(const Recipe& r, float amax, Source src) {
  float a = amax < r.epsilon ? r.epsilon : amax;
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(te_epsilon_ignored)) a = amax;
#endif
  float scale = 1.0f;
  if (!(std::isinf(a) || a == 0.0f || std::isnan(a))) {
    scale = elem_max(r.elem) / a;
    if (std::isinf(scale)) scale = source_max(src);
    if (r.pow2) scale = f32_from_bits(bits_of(scale) & 0xFF800000u);
  }
  return {static_cast<float>(1.0 / static_cast<double>(scale)), scale, false, 0};
}

[[gnu::always_inline]] inline BlockScale mx_scale_torchao(const Recipe& r, float amax, Source src);
[[gnu::always_inline]] inline BlockScale mx_rceil_scale(const Recipe& r, float amax, Source src);

}  // namespace detail

// The block scale of recipe r for a block whose amax (reduced with amax_nan_policy(r) over the
// block's real elements, as f32) is `amax`; `src` is the element type being quantized.
inline BlockScale block_scale(const Recipe& r, float amax, Source src) {
  switch (r.kind) {
    case RecipeKind::deepgemm: return detail::deepgemm_scale(r, amax);
    case RecipeKind::torchao: return detail::torchao_scale(r, amax);
    case RecipeKind::te: return detail::te_scale(r, amax, src);
    case RecipeKind::mx_rceil: return detail::mx_rceil_scale(r, amax, src);
    default: return detail::mx_scale_torchao(r, amax, src);
  }
}

// block_scale of n amaxes, the recipe dispatched once (the per-block scale functions, always
// inlined, compile into each loop: 1×32 blocks make this a hot path).
inline void block_scales(const Recipe& r, const float* amax, std::size_t n, Source src,
                         BlockScale* out) {
  switch (r.kind) {
    case RecipeKind::deepgemm:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::deepgemm_scale(r, amax[i]);
      return;
    case RecipeKind::torchao:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::torchao_scale(r, amax[i]);
      return;
    case RecipeKind::te:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::te_scale(r, amax[i], src);
      return;
    case RecipeKind::mx_rceil:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::mx_rceil_scale(r, amax[i], src);
      return;
    default:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::mx_scale_torchao(r, amax[i], src);
      return;
  }
}

// The element cast each recipe ends with, as an explicit codec policy.
//  deepgemm:              torch .to(float8_e4m3fn), non-saturating RNE (torch <= 2.12)
//  torchao, mx_* (torch): clamp(+-max) then the torch cast == saturating, Inf -> max
//  te, mx_rceil (kernel): __NV_SATFINITE
// NaN: torch_cpu keeps the sign of the f32 NaN; torch_cuda and cuda_kernel write 0x7F.
inline EncodeSpec element_spec(const Recipe& r) {
  const bool sat = r.kind != RecipeKind::deepgemm;
  const NanEncoding nan =
      r.runtime == Runtime::torch_cpu ? NanEncoding::quiet_signed : NanEncoding::positive_all_ones;
  return EncodeSpec{Rounding::rne, sat ? Overflow::sat : Overflow::nonsat, nan,
                    InfEncoding::saturate, 32};
}

// y = RN_f32(x * factor) (or x / factor). Only a NaN's sign can reach a code, and only under
// torch_cpu (the other runtimes write 0x7F). There, as torch 2.11's x86 kernels do it (seen on
// the GPU machine's host): a NaN factor gives its NaN; else a NaN x keeps its sign; else an
// invalid operation (0 * Inf, Inf / Inf, 0 / 0) gives the x86 default NaN, which is negative.
// Spelled out because C++ leaves the NaN of a product of two NaNs to the compiler.
inline float scale_element(float x, const BlockScale& b) {
  const float y = b.divide ? x / b.factor : x * b.factor;
  if (!std::isnan(y)) return y;
  const std::uint32_t sign = std::isnan(b.factor) ? detail::bits_of(b.factor) & 0x80000000u
                             : std::isnan(x)      ? detail::bits_of(x) & 0x80000000u
                                                  : 0x80000000u;
  return detail::f32_from_bits(0x7FC00000u | sign);
}

// Quantize one element x (exact as f32: an f32, bf16 or f16 input) with its block's scale.
inline std::uint8_t quantize_element(const Recipe& r, const EncodeSpec& spec, const BlockScale& b,
                                     float x) {
  const float y = scale_element(x, b);
  const std::uint64_t d = f32_to_f64_bits(std::bit_cast<std::uint32_t>(y));
  return r.elem == Format::e4m3 ? encode_fp8_bits<E4m3Traits>(d, spec)
                                : encode_fp8_bits<E5m2Traits>(d, spec);
}

// ---- MX (E8M0 scales) ------------------------------------------------------------------

namespace detail {

// torchao prototype/mx_formats/mx_tensor.py to_mx, FLOOR / CEIL / EVEN (amax in the input dtype,
// bf16 or f32, exact as f32):
//   eps = F32_MIN_NORMAL * (max_abs == 0)
//   EVEN: max_abs bits += 1 << (hp_mbits - mbits - 1); &= exponent mask  (NaN kept)
//   extracted_pow2 = ((bits(max_abs + eps) >> hp_mbits) & 0xFF) - hp_exp_bias
//   CEIL: extracted_pow2 += (bits & 0x7FFFFF) > 0
//   unbiased = clamp(extracted_pow2 - target_max_pow2, -127, 128); biased = unbiased + 127
//   NaN max_abs -> 255; scale_fp32 = clamp(bits(biased << 23), min=F32_MIN_NORMAL)
//   data_lp = clamp(data_hp / scale_fp32, +-max_pos).to(elem_dtype)
[[gnu::always_inline]] inline BlockScale mx_scale_torchao(const Recipe& r, float amax, Source src) {
  if (src == Source::f16 || src == Source::f64)
    throw std::invalid_argument("torchao to_mx takes bf16 or f32 input");
  std::uint32_t bits = bits_of(amax == 0.0f ? f32_from_bits(0x00800000u) : amax);
  const int mbits = elem_mbits(r.elem);
  if (r.kind == RecipeKind::mx_even && !std::isnan(amax))
    bits = (bits + (1u << (23 - mbits - 1))) & 0xFF800000u;  // bf16: same on the top half
  int p = int((bits >> 23) & 0xFF) - 127;
  if (r.kind == RecipeKind::mx_ceil) p += (bits & 0x7FFFFFu) != 0;
  int unbiased = p - elem_emax(r.elem);
  unbiased = unbiased < -127 ? -127 : (unbiased > 128 ? 128 : unbiased);
  const std::uint32_t biased = std::isnan(amax) ? 255u : std::uint32_t(unbiased + 127);
  float scale_fp32 = f32_from_bits(biased << 23);
  if (scale_fp32 < f32_from_bits(0x00800000u)) scale_fp32 = f32_from_bits(0x00800000u);
  const auto code = static_cast<std::uint8_t>(biased);
  return {static_cast<float>(decode_f64(Format::e8m0, code)), scale_fp32, true, code};
}

// RCEIL: descale = amax / max_pos rounded up to a power of two.
//  cuda_kernel (TE util/ptx.cuh, cast mxfp8 kernels): e = float_to_e8m0(amax * max_norm_rcp)
//   (cvt.rp.satfinite.ue8m0x2.f32: ceil, 0 -> 0x00, Inf -> 0xFE, (0, 2^-127] -> 0x00),
//   factor = exp2f_rcp(e) = e == 0 ? 1 : bits((254 - e) << 23)   (e = 254 gives 0.0f)
//  torch_*   (torchao 0.18 _to_mx_rceil, eager): max_abs is cast to f32 before, so
//   descale = f32 max_abs / max_pos; e = isnan ? 0xFF : isinf ? 0xFE :
//   clamp(ceil(log2(descale)), -127, 127) + 127 (torch_rceil_e8m0_log2, computed here by its
//   per-binade thresholds: torch_rceil_e8m0_threshold); factor = e == 0xFF ? descale (NaN) :
//   e == 0xFE ? 2^-127 : e == 0 ? 1.0 : exp2(127 - e); data_lp = clamp(data_hp * factor, +-max_pos)
// cvt.rp.satfinite.ue8m0x2.f32 on an f32 pattern, sign ignored: the generic
// encode_e8m0_bits(x, {ceil, saturate}) read off the f32 fields (a per-block hot path for 1×32
// blocks; tests compare the two on every exponent field and sticky pattern).
constexpr std::uint8_t e8m0_ceil_satfinite_f32(std::uint32_t u) {
  const std::uint32_t a = u & 0x7FFFFFFFu, field = a >> 23, man = a & 0x7FFFFFu;
  if (a > 0x7F800000u) return E8m0Traits::kNan;
  if (a == 0x7F800000u) return E8m0Traits::kMaxFinite;
  if (field == 0) return man > 0x400000u ? 0x01 : 0x00;  // (2^-127, 2^-126) up, (0, 2^-127] to 0x00
  const std::uint32_t e = field + (man != 0);
  return static_cast<std::uint8_t>(e > E8m0Traits::kMaxFinite ? E8m0Traits::kMaxFinite : e);
}

// The f32 value of an E8M0 code: 2^(code - 127) (0x00: the f32 subnormal 2^-127), NaN for 0xFF;
// decode_f64's value, read off the code.
constexpr float e8m0_value_f32(std::uint8_t code) {
  return code == E8m0Traits::kNan ? std::numeric_limits<float>::quiet_NaN()
         : code == 0              ? std::bit_cast<float>(0x00400000u)
                                  : std::bit_cast<float>(std::uint32_t(code) << 23);
}

[[gnu::always_inline]] inline BlockScale mx_rceil_scale(const Recipe& r, float amax, Source src) {
  const float max_pos = elem_max(r.elem);
  std::uint8_t e;
  float factor;
  if (r.runtime == Runtime::cuda_kernel) {
    const float rcp = static_cast<float>(1.0 / static_cast<double>(max_pos));
    e = e8m0_ceil_satfinite_f32(bits_of(amax * rcp));
#ifdef FP8REF_PLANT_HOOKS
    if (FP8REF_PLANTED(mx_rceil_floors) && e > 1 && e < 0xFE &&
        (bits_of(amax * rcp) & 0x7FFFFFu) != 0)
      --e;
#endif
    factor = e == 0 ? 1.0f : f32_from_bits(std::uint32_t(254 - e) << 23);
  } else {
    if (src == Source::f16 || src == Source::f64)
      throw std::invalid_argument("torchao to_mx takes bf16 or f32 input");
    const float descale = torch_div_scalar(r.runtime, amax, max_pos);
    e = torch_rceil_e8m0_threshold(descale);
#ifdef FP8REF_PLANT_HOOKS
    if (FP8REF_PLANTED(mx_rceil_floors) && e > 1 && e < 0xFF && (bits_of(descale) & 0x7FFFFFu) != 0)
      --e;
#endif
    // exp2(127 - e) for e in [1, 254] is 2^126 .. 2^-127, exact as an f64 and as an f32.
    factor = e == 0xFF ? descale
             : e == 0  ? 1.0f
                       : static_cast<float>(std::bit_cast<double>(std::uint64_t(1150 - e) << 52));
  }
  return {e8m0_value_f32(e), factor, false, e};
}

}  // namespace detail

}  // namespace fp8ref
