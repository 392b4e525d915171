// NVFP4 quantization recipes (docs/recipes.md "NVFP4"): e2m1 elements in 16-element blocks with a
// UE4M3 block scale and an f32 per-tensor scale, as two libraries compute them bit for bit:
//   nvfp4_te       Transformer Engine's cast kernels (common/cast/nvfp4/core_nvfp4.cuh):
//                  S_enc = fminf(448·6 / amax, FLT_MAX) (amax 0 or S_enc 0 -> 1);
//                  block code = e4m3_satfinite(block_amax · (S_enc · RN(1/6)));
//                  element factor = fminf(1 / (float(block) · RN(1 / S_enc)), FLT_MAX);
//                  element = cvt.rn.satfinite.e2m1(x · factor). Blocks 1×16, or 16×16 (weights).
//   nvfp4_torchao  (alias nvfp4_torchao_0.16) torchao 0.13.0-0.16.0 prototype/mx_formats/
//                  nvfp4_tensor.py nvfp4_quantize with a per-tensor scale: pts = amax / (448·6);
//                  s = max_abs / 6; scaled = clamp(s / pts, 2^-6, 448); block code = e4m3(scaled);
//                  total = pts · float(block); element = e2m1_rne(clamp(x / total, ±6)).
//   nvfp4_torchao_single_level  the same without a per-tensor scale (torchao 0.12.0-0.17.0):
//                  block code = e4m3(clamp(s, 2^-6, 448)), element = e2m1_rne(clamp(x /
//                  float(block), ±6)).
//   nvfp4_torchao_rcp  (alias nvfp4_torchao_0.18) torchao 0.17.0-0.18.0 nvfp4_quantize: the same
//                  block codes, elements multiplied by the reciprocal of the combined scale as its
//                  MSLK Triton kernel does: e2m1_rne(clamp(x · ((1 / pts) / float(block)), ±6)).
// "tensor / python scalar" is a division on torch_cpu and a·RN_f32(1/b) on torch_cuda (see
// Runtime in scale_recipe.h); tensor / tensor is a division on both.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/codec.h"
#include "numerics/format.h"
#include "numerics/scale_recipe.h"

namespace fp8ref {

enum class Nvfp4Recipe : std::uint8_t { te, torchao, torchao_single_level, torchao_rcp };

constexpr const char* to_string(Nvfp4Recipe r) {
  switch (r) {
    case Nvfp4Recipe::te: return "nvfp4_te";
    case Nvfp4Recipe::torchao: return "nvfp4_torchao";
    case Nvfp4Recipe::torchao_single_level: return "nvfp4_torchao_single_level";
    case Nvfp4Recipe::torchao_rcp: return "nvfp4_torchao_rcp";
  }
  return "?";
}

// The recipe a name denotes: to_string's names, and the torchao forms under the torchao release
// they reproduce (docs/recipes.md "NVFP4": nvfp4_torchao keeps its meaning, the division form).
inline std::optional<Nvfp4Recipe> nvfp4_recipe_from_name(std::string_view name) {
  for (const Nvfp4Recipe r : {Nvfp4Recipe::te, Nvfp4Recipe::torchao,
                              Nvfp4Recipe::torchao_single_level, Nvfp4Recipe::torchao_rcp})
    if (name == to_string(r)) return r;
  if (name == "nvfp4_torchao_0.16") return Nvfp4Recipe::torchao;
  if (name == "nvfp4_torchao_0.18") return Nvfp4Recipe::torchao_rcp;
  return std::nullopt;
}

// The result of quantizing a (rows, cols) f32 matrix: e2m1 codes one per byte (rows, cols),
// UE4M3 block scale codes (rows, ceil(cols / 16)) (a 16×16 block's code repeated on its 16 rows),
// the f32 per-tensor decode scale (x ~= e2m1 · ue4m3 · global_decode).
struct Nvfp4Quantized {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
  float global_decode;
};

namespace detail {

inline constexpr float kFltMax = std::numeric_limits<float>::max();

// cvt.rn.satfinite.e4m3x2.f32 (NaN -> 0x7F) and the torch cast of a value already clamped to
// [2^-6, 448] (nothing overflows there; NaN keeps its sign on torch_cpu, 0x7F on torch_cuda).
inline std::uint8_t e4m3_code(float x, bool satfinite, Runtime rt) {
  const NanEncoding nan =
      rt == Runtime::torch_cpu ? NanEncoding::quiet_signed : NanEncoding::positive_all_ones;
  const EncodeSpec spec{Rounding::rne, satfinite ? Overflow::sat : Overflow::nonsat, nan,
                        InfEncoding::saturate, 32};
  return encode_fp8_bits<E4m3Traits>(f32_to_f64_bits(std::bit_cast<std::uint32_t>(x)), spec);
}
// RNE to e2m1, saturating (cvt.rn.satfinite.e2m1x2.f32; torchao clamps to ±6 first). NaN: ±max
// (not measured on hardware).
inline std::uint8_t e2m1_code(float x) {
  const EncodeSpec spec{Rounding::rne, Overflow::sat, NanEncoding::quiet_signed,
                        InfEncoding::saturate, 32};
  return encode_fp8_bits<E2m1Traits>(f32_to_f64_bits(std::bit_cast<std::uint32_t>(x)), spec);
}
inline float torch_clamp(float x, float lo, float hi) {
  return std::isnan(x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}

// TE: S_enc from the tensor amax (fmaxf reduction: NaN ignored).
inline float te_global_encode(float amax) {
  float s = 448.0f * 6.0f / amax;
  s = std::fmin(s, kFltMax);
  return (amax == 0.0f || s == 0.0f) ? 1.0f : s;
}

}  // namespace detail

// nvfp4_quantize(recipe, runtime, x, rows, cols, block_rows) is in numerics/nvfp4_quantize.h:
// block_rows 1 (1×16 blocks) or 16 (16×16, nvfp4_te weights).

}  // namespace fp8ref

#include "numerics/nvfp4_quantize.h"  // IWYU pragma: export
