// The accumulation models of one output element in the GPU oracle (docs/gpu_oracle.md §2-3,
// docs/models.md): exact, fp32_sequential, hopper_unpromoted, hopper_promoted_tensorwise |
// rowwise | blockwise, hopper_mma_sync, with split-K slices and the epilogue orders, on one
// (row, column) of an M-grouped forward. __host__ __device__: the kernel and the host test run
// this same code; reference/ is the independent CPU oracle it is held to bit for bit.
#pragma once

#include <cstdint>

#include "gpu/oracle/emu_arith.h"
#include "gpu/oracle/emu_exact.h"
#include "gpu/oracle/emu_steps.h"
#include "numerics/models/model_types.h"

namespace fp8ref::gpu::emu {

// The scales of one operand: element (row or column) i, K block kb reads
// data[group·group_stride + (i / div)·stride + (per_block ? kb : 0)].
struct ScaleView {
  const float* data;
  std::int64_t group_stride, stride, div;
};

// The M-grouped forward Y[r] = A[r]·B[g(r)]^T on codes, B as (G, N, K); row_map[r] in [-1, G).
struct ForwardView {
  std::int64_t M, N, K, G;
  Format fa, fb;
  const std::uint8_t* a;
  const std::uint8_t* b;
  const std::int32_t* row_map;
  ScaleView sa, sb;
  bool per_block;        // scales vary over K (blockwise, mx)
  std::int64_t block_k;  // width of a scale block: 128, or 32 for mx
  AccumulationModel model;
  int split_slices;           // S (when split_blocks == 0)
  std::int64_t split_blocks;  // L > 0: slices of L 128-blocks
  Epilogue epilogue;
  OutDtype out;
};

// The scales of one element.
struct Scales {
  const float* a;
  const float* b;
  bool per_block;
  std::int64_t block_k;
  FP8REF_HD float at_a(std::int64_t kb) const { return per_block ? a[kb] : a[0]; }
  FP8REF_HD float at_b(std::int64_t kb) const { return per_block ? b[kb] : b[0]; }
  FP8REF_HD std::int64_t promotion_k() const { return per_block ? block_k : 128; }
};

FP8REF_HD Scales element_scales(const ForwardView& v, std::int64_t r, std::int64_t g,
                                std::int64_t n) {
  return {v.sa.data + (r / v.sa.div) * v.sa.stride,
          v.sb.data + g * v.sb.group_stride + (n / v.sb.div) * v.sb.stride, v.per_block, v.block_k};
}

// ---- fp32_sequential and exact --------------------------------------------------------------

FP8REF_HD float fp32_sequential(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                Format fa, Format fb, const Scales& sc) {
  float acc = 0.0f;
  for (std::int64_t k = 0; k < K; ++k) {
    const std::int64_t kb = k / sc.block_k;
    const float x = to_f32_rn(dmul_rn(fp8_value(fa, a[k]), double(sc.at_a(kb))));
    const float w = to_f32_rn(dmul_rn(fp8_value(fb, b[k]), double(sc.at_b(kb))));
    acc = fma_rn(x, w, acc);
  }
  return acc;
}

// `exact` with a non-finite code: the IEEE f64 sum s += sa·sb·a_k·b_k in increasing k.
FP8REF_HD double exact_nonfinite(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                 Format fa, Format fb, const Scales& sc) {
  const std::int64_t w = sc.promotion_k();
  double s = 0.0;
  for (std::int64_t k = 0; k < K; ++k) {
    const double p = dmul_rn(
        dmul_rn(dmul_rn(double(sc.at_a(k / w)), double(sc.at_b(k / w))), fp8_value(fa, a[k])),
        fp8_value(fb, b[k]));
    s = dadd_rn(s, p);
  }
  return s;
}

FP8REF_HD std::uint32_t exact_bits(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K,
                                   Format fa, Format fb, const Scales& sc, OutDtype out) {
  bool finite = true;
  for (std::int64_t k = 0; k < K; ++k)
    finite = finite && fp8(fa, a[k]).finite && fp8(fb, b[k]).finite;
  if (!finite) return nonfinite_to_out(exact_nonfinite(a, b, K, fa, fb, sc), out);
  const std::int64_t w = sc.promotion_k();
  const int unit = emin(fa) - man_bits(fa) + emin(fb) - man_bits(fb);
  FixedAccumulator acc;
  for (std::int64_t k0 = 0; k0 < K; k0 += w) {
    const std::int64_t len = K - k0 < w ? K - k0 : w;
    const i128 p = block_units(a + k0, b + k0, len, fa, fb);
    const OddParts x = odd_parts(sc.at_a(k0 / w)), y = odd_parts(sc.at_b(k0 / w));
    acc.add(p * i128(x.sig * y.sig), unit + x.exp + y.exp);
  }
  return acc.round(out);
}

// ---- the Hopper models ----------------------------------------------------------------------

struct Split {
  int slices;
  std::int64_t blocks;  // L > 0: slices of L 128-blocks
  FP8REF_HD std::int64_t count(std::int64_t nb) const {
    if (blocks > 0) return nb + blocks - 1 < blocks ? 1 : (nb + blocks - 1) / blocks;
    return slices;
  }
  FP8REF_HD std::int64_t per(std::int64_t nb) const {
    return blocks > 0 ? blocks : (nb + slices - 1) / slices;
  }
};

enum class Promote : std::uint8_t { none, f32_sum, fma_scaled };

// One split-K slice [k0, k1): a chain over it from +0 (Promote::none), or per promotion block of
// width w a chain from +0 combined by acc + T (f32_sum) or fmaf(RN(sa·sb), T, acc) (fma_scaled).
template <bool kMmaSync>
FP8REF_HD float slice_value(const std::uint8_t* a, const std::uint8_t* b, std::int64_t k0,
                            std::int64_t k1, Format fa, Format fb, Promote pr, std::int64_t w,
                            const Scales& sc) {
  if (pr == Promote::none) return step_chain<kMmaSync>(a + k0, b + k0, k1 - k0, fa, fb, 0.0f);
  float acc = 0.0f;
  for (std::int64_t k = k0; k < k1; k += w) {
    const std::int64_t len = k1 - k < w ? k1 - k : w;
    const float t = step_chain<kMmaSync>(a + k, b + k, len, fa, fb, 0.0f);
    if (pr == Promote::f32_sum)
      acc = add_rn(acc, t);
    else
      acc = fma_rn(mul_rn(sc.at_a(k / w), sc.at_b(k / w)), t, acc);
  }
  return acc;
}

// Split-K slices of whole 128-blocks, each from +0, added in f32 in slice order.
template <bool kMmaSync>
FP8REF_HD float sliced(const std::uint8_t* a, const std::uint8_t* b, std::int64_t K, Format fa,
                       Format fb, Promote pr, std::int64_t w, const Scales& sc, Split sp) {
  const std::int64_t nb = (K + 127) / 128, n = sp.count(nb), per = sp.per(nb);
  float r = 0.0f;
  bool first = true;
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t f = s * per < nb ? s * per : nb, l = (s + 1) * per < nb ? (s + 1) * per : nb;
    if (f >= l && !first) continue;
    const std::int64_t k0 = f * 128, k1 = l * 128 < K ? l * 128 : K;
    const float v = slice_value<kMmaSync>(a, b, k0, k1, fa, fb, pr, w, sc);
    r = first ? v : add_rn(r, v);
    first = false;
  }
  return r;
}

// The model's f32 accumulator before any scalar scale (scales constant over K), or the whole
// result of a per-block model; formats as template arguments, so that the inlined steps decode
// with constants.
template <Format kFa, Format kFb>
FP8REF_HD float accumulate_formats(const ForwardView& v, const std::uint8_t* a,
                                   const std::uint8_t* b, const Scales& sc) {
  const Split sp{v.split_slices, v.split_blocks};
  switch (v.model) {
    case AccumulationModel::hopper_unpromoted:
      return sliced<false>(a, b, v.K, kFa, kFb, Promote::none, 128, sc, sp);
    case AccumulationModel::hopper_promoted_blockwise:
      return sliced<false>(a, b, v.K, kFa, kFb, Promote::fma_scaled, sc.promotion_k(), sc, sp);
    case AccumulationModel::hopper_mma_sync:
      if (sc.per_block)
        return sliced<true>(a, b, v.K, kFa, kFb, Promote::fma_scaled, sc.promotion_k(), sc, sp);
      return sliced<true>(a, b, v.K, kFa, kFb, Promote::none, 128, sc, sp);
    default: return sliced<false>(a, b, v.K, kFa, kFb, Promote::f32_sum, 128, sc, sp);
  }
}

FP8REF_HD float accumulate(const ForwardView& v, const std::uint8_t* a, const std::uint8_t* b,
                           const Scales& sc) {
  if (v.fa == Format::e4m3)
    return v.fb == Format::e4m3 ? accumulate_formats<Format::e4m3, Format::e4m3>(v, a, b, sc)
                                : accumulate_formats<Format::e4m3, Format::e5m2>(v, a, b, sc);
  return v.fb == Format::e4m3 ? accumulate_formats<Format::e5m2, Format::e4m3>(v, a, b, sc)
                              : accumulate_formats<Format::e5m2, Format::e5m2>(v, a, b, sc);
}

// The scalar scales applied to acc in the order `ep`.
FP8REF_HD float epilogue(float acc, Epilogue ep, float sa, float sb) {
  switch (ep) {
    case Epilogue::b_then_a: return mul_rn(mul_rn(acc, sb), sa);
    case Epilogue::a_then_b: return mul_rn(mul_rn(acc, sa), sb);
    default: return mul_rn(acc, mul_rn(sa, sb));
  }
}

// The model's own epilogue order.
FP8REF_HD Epilogue own_epilogue(AccumulationModel m) {
  return m == AccumulationModel::hopper_promoted_rowwise ? Epilogue::b_then_a
                                                         : Epilogue::scale_product;
}

// The f32 result of a model other than `exact` on one run of v.K codes: the value the CPU's
// model_dot returns, before the output conversion (the forward converts it; wgrad adds C first).
FP8REF_HD float model_f32(const ForwardView& v, const std::uint8_t* a, const std::uint8_t* b,
                          const Scales& sc) {
  if (v.model == AccumulationModel::fp32_sequential)
    return fp32_sequential(a, b, v.K, v.fa, v.fb, sc);
  const float acc = accumulate(v, a, b, sc);
  const bool per_block_model = v.model == AccumulationModel::hopper_promoted_blockwise ||
                               (v.model == AccumulationModel::hopper_mma_sync && sc.per_block);
  if (per_block_model) return acc;
  const Epilogue ep = v.epilogue == Epilogue::model ? own_epilogue(v.model) : v.epilogue;
  return epilogue(acc, ep, sc.at_a(0), sc.at_b(0));
}

// Output bits of element (r, n) of a row r that belongs to group g >= 0.
FP8REF_HD std::uint32_t forward_element(const ForwardView& v, std::int64_t r, std::int64_t g,
                                        std::int64_t n) {
  const Scales sc = element_scales(v, r, g, n);
  const std::uint8_t* a = v.a + r * v.K;
  const std::uint8_t* b = v.b + (g * v.N + n) * v.K;
  if (v.model == AccumulationModel::exact) return exact_bits(a, b, v.K, v.fa, v.fb, sc, v.out);
  return f32_to_out(model_f32(v, a, b, sc), v.out);
}

}  // namespace fp8ref::gpu::emu
