// The names and parameters of the accumulation models (docs/design.md §10-12): the model and
// epilogue enums with their tokens, the scales of one output element, split-K. Part of the
// accumulation models (numerics/models.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fp8ref {

enum class AccumulationModel : std::uint8_t {
  exact,                       // real value, rounded once to the output type
  fp32_sequential,             // dequantize to f32, fmaf in increasing k
  hopper_unpromoted,           // "fast accumulation": one wgmma chain over K, scales once
  hopper_promoted_blockwise,   // T per scale block; acc = fmaf(RN(sa·sb), T, acc)
  hopper_promoted_tensorwise,  // T per 128-block summed in f32; out = RN(acc·RN(sa·sb))
  hopper_promoted_rowwise,     // T per 128-block summed in f32; out = RN(sa·RN(sb·acc))
  hopper_mma_sync,             // mma.sync FP8 emulated on sm_90 (mma_sync_step.h), over K
  // Blackwell (numerics/models/blackwell_models.h): tcgen05.mma steps chained over K, and the
  // sm_120 mma.sync forms of the same steps (the same arithmetic in MMA-Sim 2.1.1).
  blackwell_f8f6f4,        // kind::f8f6f4, unscaled steps; scalar scales after the chain
  blackwell_mxf8f6f4,      // kind::mxf8f6f4 block32, ue8m0 scales inside each step
  blackwell_mxf4,          // kind::mxf4 k64, e2m1, block32 ue8m0
  blackwell_mxf4nvf4,      // kind::mxf4nvf4 k64, e2m1, block32 ue8m0 or block16 ue4m3 (NVFP4)
  rtx_blackwell_f8f6f4,    // sm_120 mma.sync kind::f8f6f4
  rtx_blackwell_mxf8f6f4,  // sm_120 mma.sync kind::mxf8f6f4.block32
  rtx_blackwell_mxf4,      // sm_120 mma.sync kind::mxf4.block32
  rtx_blackwell_mxf4nvf4,  // sm_120 mma.sync kind::mxf4nvf4
};

inline constexpr std::array kAllAccumulationModels = {
    AccumulationModel::exact,
    AccumulationModel::fp32_sequential,
    AccumulationModel::hopper_unpromoted,
    AccumulationModel::hopper_promoted_blockwise,
    AccumulationModel::hopper_promoted_tensorwise,
    AccumulationModel::hopper_promoted_rowwise,
    AccumulationModel::hopper_mma_sync,
};
// The Blackwell models: FP8 / FP6 / FP4 operands, block scales applied by the tensor core.
inline constexpr std::array kBlackwellAccumulationModels = {
    AccumulationModel::blackwell_f8f6f4,     AccumulationModel::blackwell_mxf8f6f4,
    AccumulationModel::blackwell_mxf4,       AccumulationModel::blackwell_mxf4nvf4,
    AccumulationModel::rtx_blackwell_f8f6f4, AccumulationModel::rtx_blackwell_mxf8f6f4,
    AccumulationModel::rtx_blackwell_mxf4,   AccumulationModel::rtx_blackwell_mxf4nvf4,
};

constexpr const char* to_string(AccumulationModel m) {
  switch (m) {
    case AccumulationModel::exact: return "exact";
    case AccumulationModel::fp32_sequential: return "fp32_sequential";
    case AccumulationModel::hopper_unpromoted: return "hopper_unpromoted";
    case AccumulationModel::hopper_promoted_blockwise: return "hopper_promoted_blockwise";
    case AccumulationModel::hopper_promoted_tensorwise: return "hopper_promoted_tensorwise";
    case AccumulationModel::hopper_promoted_rowwise: return "hopper_promoted_rowwise";
    case AccumulationModel::hopper_mma_sync: return "hopper_mma_sync";
    case AccumulationModel::blackwell_f8f6f4: return "blackwell_f8f6f4";
    case AccumulationModel::blackwell_mxf8f6f4: return "blackwell_mxf8f6f4";
    case AccumulationModel::blackwell_mxf4: return "blackwell_mxf4";
    case AccumulationModel::blackwell_mxf4nvf4: return "blackwell_mxf4nvf4";
    case AccumulationModel::rtx_blackwell_f8f6f4: return "rtx_blackwell_f8f6f4";
    case AccumulationModel::rtx_blackwell_mxf8f6f4: return "rtx_blackwell_mxf8f6f4";
    case AccumulationModel::rtx_blackwell_mxf4: return "rtx_blackwell_mxf4";
    case AccumulationModel::rtx_blackwell_mxf4nvf4: return "rtx_blackwell_mxf4nvf4";
  }
  return "?";
}

inline std::optional<AccumulationModel> accumulation_model_from_string(std::string_view s) {
  for (AccumulationModel m : kAllAccumulationModels)
    if (s == to_string(m)) return m;
  for (AccumulationModel m : kBlackwellAccumulationModels)
    if (s == to_string(m)) return m;
  return std::nullopt;
}

constexpr bool is_blackwell_model(AccumulationModel m) {
  return m >= AccumulationModel::blackwell_f8f6f4;
}
// The kind of a Blackwell model, tcgen05 and sm_120 forms alike.
enum class BlackwellKind : std::uint8_t { f8f6f4, mxf8f6f4, mxf4, mxf4nvf4 };
constexpr BlackwellKind blackwell_kind(AccumulationModel m) {
  const int i = int(m) - int(AccumulationModel::blackwell_f8f6f4);
  return BlackwellKind(i % 4);
}

// Models that accept split_k > 1 (the Hopper tensor-core models).
constexpr bool accepts_split_k(AccumulationModel m) {
  return m != AccumulationModel::exact && m != AccumulationModel::fp32_sequential &&
         !is_blackwell_model(m);
}
// Models that need the scales constant over K (tensorwise, rowwise or none).
constexpr bool needs_constant_scales(AccumulationModel m) {
  return m == AccumulationModel::blackwell_f8f6f4 || m == AccumulationModel::rtx_blackwell_f8f6f4 ||
         m == AccumulationModel::hopper_unpromoted ||
         m == AccumulationModel::hopper_promoted_tensorwise ||
         m == AccumulationModel::hopper_promoted_rowwise;
}

// Width of the K blocks of promotion and of 1×128 / 128×128 scales; MX scales cover 32.
inline constexpr std::int64_t kScaleBlockK = 128;
inline constexpr std::int64_t kMxBlockK = 32;
inline constexpr std::int64_t kNvfp4BlockK = 16;  // NVFP4: ue4m3 per 16, then a tensor scale

// The decode scales that apply to one output element: sa[kb], sb[kb] for each K block kb of
// width block_k (128, or 32 for MX) when per_block, else the single pair sa[0], sb[0].
struct ElementScales {
  const float* sa;
  const float* sb;
  bool per_block;
  std::int64_t block_k = kScaleBlockK;
  // NVFP4's per-tensor decode scales (the Blackwell models with 16-wide ue4m3 blocks), applied
  // after the chain as RN(acc·RN(ta·tb)), cuBLASLt's alpha; 1 elsewhere.
  float tensor_a = 1.0f, tensor_b = 1.0f;
  // 16-wide blocks of ue8m0 scales (mx16 scaling, kind::mxf4nvf4.block16.ue8m0); 16-wide blocks
  // are ue4m3 (nvfp4) otherwise.
  bool block16_e8m0 = false;
  float a(std::int64_t kb) const { return per_block ? sa[kb] : sa[0]; }
  float b(std::int64_t kb) const { return per_block ? sb[kb] : sb[0]; }
  // Width of the blocks the promoted models promote at (the scale block, or 128).
  std::int64_t promotion_k() const { return per_block ? block_k : kScaleBlockK; }
};

constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

// Split-K: K's 128-blocks cut into contiguous slices, each accumulated from +0, the slice
// results added in f32 in slice order. Two ways of cutting, both seen in libraries:
//   SplitK(S)                  S slices of ceil(nb / S) blocks (the last ones shorter or empty);
//   SplitK::of_length(L)       slices of L blocks each (the last one shorter): the count follows
//                              from K. cuBLASLt's blockwise split-K kernels on an H100 cut K = 8192
//                              and 16384 into 24-block slices, which no S gives as ceil(nb / S).
// SplitK(1) (the default) is one slice over all of K.
struct SliceRange {
  std::int64_t first, last;
};
struct SplitK {
  int slices = 1;                 // S, when slice_blocks == 0
  std::int64_t slice_blocks = 0;  // L > 0: slices of L 128-blocks

  constexpr SplitK(int s = 1) : slices(s) {}  // NOLINT: an int is S
  static constexpr SplitK of_length(std::int64_t blocks) {
    SplitK k(1);
    k.slice_blocks = blocks;
    return k;
  }
  constexpr bool valid() const { return slice_blocks > 0 ? slices == 1 : slices >= 1; }
  // One slice over all of K for every K (what models without split-K accept).
  constexpr bool is_single() const { return slice_blocks == 0 && slices == 1; }
  // Number of slices for nb 128-blocks.
  constexpr std::int64_t count(std::int64_t nb) const {
    return slice_blocks > 0 ? std::max<std::int64_t>(1, (nb + slice_blocks - 1) / slice_blocks)
                            : slices;
  }
  constexpr SliceRange slice(std::int64_t nb, std::int64_t s) const {
    const std::int64_t per = slice_blocks > 0 ? slice_blocks : (nb + slices - 1) / slices;
    return {std::min(nb, s * per), std::min(nb, (s + 1) * per)};
  }
  // "S=3" or "L=24".
  std::string str() const {
    return slice_blocks > 0 ? "L=" + std::to_string(slice_blocks) : "S=" + std::to_string(slices);
  }
};
inline SliceRange split_k_slice(std::int64_t nblocks, SplitK split_k, int s) {
  return SplitK(split_k).slice(nblocks, s);
}

// The order in which scalar scales (tensorwise, rowwise: constant over K) meet the f32
// accumulator. Libraries differ, and with general scales the orders differ in the last bit:
enum class Epilogue : std::uint8_t {
  model,          // the model's own order (below)
  scale_product,  // RN(acc·RN(sa·sb))        cuBLASLt tensorwise; hopper_promoted_tensorwise,
                  //                          hopper_unpromoted, hopper_mma_sync
  b_then_a,  // RN(RN(acc·sb)·sa)        cuBLASLt `_scaled_mm` rowwise; hopper_promoted_rowwise
  a_then_b,  // RN(RN(acc·sa)·sb)        CUTLASS grouped rowwise: torch `_scaled_grouped_mm`
};
inline constexpr std::array kAllEpilogues = {Epilogue::model, Epilogue::scale_product,
                                             Epilogue::b_then_a, Epilogue::a_then_b};
constexpr const char* to_string(Epilogue e) {
  switch (e) {
    case Epilogue::model: return "model";
    case Epilogue::scale_product: return "scale_product";
    case Epilogue::b_then_a: return "b_then_a";
    case Epilogue::a_then_b: return "a_then_b";
  }
  return "?";
}
inline std::optional<Epilogue> epilogue_from_string(std::string_view s) {
  for (Epilogue e : kAllEpilogues)
    if (s == to_string(e)) return e;
  return std::nullopt;
}
// Models whose scales are applied after the accumulation, so that the epilogue order can be chosen.
constexpr bool accepts_epilogue(AccumulationModel m) {
  return m == AccumulationModel::hopper_unpromoted ||
         m == AccumulationModel::hopper_promoted_tensorwise ||
         m == AccumulationModel::hopper_promoted_rowwise || m == AccumulationModel::hopper_mma_sync;
}

}  // namespace fp8ref
