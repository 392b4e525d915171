// CPU reference K-grouped wgrad dW[g] = C[g] + sum_{r in g} dY[r]^T X[r] (docs/design.md §9) with
// unscaled, tensorwise, 1×128-along-tokens (blockwise) or MX 1×32-along-tokens scales whose
// blocks restart at each group (the per-group quantization along tokens of quantize.h), output
// f32 / bf16 / f16. Argument checks, the group's columns gathered contiguous, then one model
// evaluation per element. See grouped_gemm.h for the shapes and docs/models.md ("wgrad").
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "numerics/models.h"
#include "numerics/plant.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"
#include "reference/grouped_gemm_detail.h"

namespace fp8ref::ref {
namespace {

using namespace detail;  // NOLINT: the shared checks and stores of grouped_gemm_detail.h

// The token blocks of blockwise / mx scales: width (0 for none / tensorwise), the first block row
// of each group (G + 1 entries; first[G] = the block rows of all groups) and the block rows of
// the scale tensors, those of the rows past offs[G-1] included.
struct TokenBlocks {
  std::int64_t width = 0;
  std::vector<std::int64_t> first;
  std::int64_t rows = 0;
};

TokenBlocks token_blocks(const WgradOperands& op, std::span<const std::int64_t> offs) {
  TokenBlocks tb;
  tb.width = op.scaling == Scaling::blockwise ? kScaleBlockK
             : op.scaling == Scaling::mx      ? kMxBlockK
                                              : 0;
  tb.first.assign(std::size_t(op.G) + 1, 0);
  const std::int64_t w = std::max<std::int64_t>(tb.width, 1);
  std::int64_t begin = 0;
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::int64_t end = offs[std::size_t(g)];
    tb.first[std::size_t(g) + 1] = tb.first[std::size_t(g)] + ceil_div(end - begin, w);
    begin = end;
  }
  tb.rows = tb.first[std::size_t(op.G)] + ceil_div(op.M - begin, w);
  return tb;
}

// Every scale of the block rows of groups is finite (a power of two for mx); the block rows
// past offs[G-1] are not read and not checked.
void check_block_scales(const char* name, std::span<const float> s, std::int64_t cols,
                        const TokenBlocks& tb, std::span<const std::int64_t> offs, bool pow2) {
  const std::int64_t n_checked = tb.first.back() * cols;
  for (std::int64_t i = 0; i < n_checked; ++i) {
    const float v = s[std::size_t(i)];
    if (std::isfinite(v) && (!pow2 || (v > 0.0f && f32_parts_odd(v).sig == 1))) continue;
    const std::int64_t b = i / cols;
    const std::int64_t g =
        std::int64_t(std::upper_bound(tb.first.begin(), tb.first.end(), b) - tb.first.begin()) - 1;
    const std::int64_t r0 =
        (g ? offs[std::size_t(g - 1)] : 0) + (b - tb.first[std::size_t(g)]) * tb.width;
    const std::int64_t r1 = std::min(offs[std::size_t(g)], r0 + tb.width);
    fail(std::string(name) + "[" + str(i) + "] = " + std::to_string(v) + " (block row " + str(b) +
         ": rows " + str(r0) + ".." + str(r1 - 1) + " of group " + str(g) + ", column " +
         str(i % cols) + ") is " +
         (std::isfinite(v) ? "not a power of two (mx scales are E8M0 values)" : "not finite"));
  }
}

void check_scale_size(const char* name, std::size_t got, const TokenBlocks& tb, std::int64_t cols,
                      const char* cols_name) {
  const std::int64_t want = tb.rows * cols;
  if (std::int64_t(got) == want) return;
  fail(std::string(name) + " has " + str(std::int64_t(got)) + " elements, expected " + str(want) +
       " (" + str(tb.rows) + " block rows of " + str(tb.width) +
       " tokens, restarting at each group and at offs[G-1], × " + cols_name + " = " + str(cols) +
       ")");
}

TokenBlocks check_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, const GemmOutput& dw) {
  require_operand_format(op.fdy);
  require_operand_format(op.fx);
  if (op.M < 0 || op.N < 0 || op.K < 0 || op.G < 0) fail("negative wgrad dimension");
  expect_size("dY", op.dy.size(), op.M * op.N);
  expect_size("X", op.x.size(), op.M * op.K);
  expect_size("C", op.c.size(), op.G * op.N * op.K);
  check_output(dw, op.G * op.N * op.K);
  expect_size("offs", offs.size(), op.G);
  validate_offsets(offs, op.M, 1);
  if (is_blackwell_model(model.model))
    fail(std::string("wgrad does not take the Blackwell models (") + to_string(model.model) + ")");
  if (op.scaling == Scaling::rowwise || op.scaling == Scaling::nvfp4 || op.scaling == Scaling::mx16)
    fail(
        "wgrad takes scaling none, tensorwise, blockwise (1×128 along tokens) or mx (1×32 along "
        "tokens), not " +
        std::string(to_string(op.scaling)));
  check_model(model, op.scaling);
  const TokenBlocks tb = token_blocks(op, offs);
  if (tb.width == 0) {
    const std::int64_t n = op.scaling == Scaling::tensorwise ? 1 : 0;
    expect_size("scale_dy", op.scale_dy.size(), n);
    expect_size("scale_x", op.scale_x.size(), n);
    for (std::int64_t i = 0; i < n; ++i)
      expect_scale("scale_dy", op.scale_dy, i, false),
          expect_scale("scale_x", op.scale_x, i, false);
    return tb;
  }
  check_scale_size("scale_dy", op.scale_dy.size(), tb, op.N, "N");
  check_scale_size("scale_x", op.scale_x.size(), tb, op.K, "K");
  const bool pow2 = op.scaling == Scaling::mx;
  check_block_scales("scale_dy", op.scale_dy, op.N, tb, offs, pow2);
  check_block_scales("scale_x", op.scale_x, op.K, tb, offs, pow2);
  return tb;
}

// RN_out(c + sum_kb sa_kb·sb_kb·sum_{k in kb} dy_k·x_k): the exact value rounded once, blocks of
// sc.promotion_k() from the group's first row. NaN / Inf codes give the IEEE f64 evaluation.
double exact_wgrad_element(const DotRun& x, std::int64_t m, ElementScales sc, float c, OutDtype d) {
  if (std::isnan(c)) return double(c);  // a NaN C wins over a NaN sum, as add_f32(c, acc)
  if (dot_has_nonfinite(x.a, x.b, m, x.fa, x.fb))
    return double(c) + exact_dot(x.a, x.b, m, x.fa, x.fb, sc, OutDtype::f32);  // NaN or ±Inf
  if (!std::isfinite(c)) return double(c);  // ±Inf or NaN plus a finite sum
  ExactAccumulator acc;
  const F32Parts cp = f32_parts(c);
  acc.add(cp.sig, cp.exp);
  const int unit = product_unit_exp(x.fa, x.fb);
  const std::int64_t w = sc.promotion_k();
  for (std::int64_t k0 = 0; k0 < m; k0 += w) {
    const i128 p = exact_dot_units(x.a + k0, x.b + k0, std::min(w, m - k0), x.fa, x.fb);
    const F32Parts sa = f32_parts_odd(sc.a(k0 / w)), sb = f32_parts_odd(sc.b(k0 / w));
    acc.add(p * i128(sa.sig * sb.sig), unit + sa.exp + sb.exp);  // |.| < 2^71 · 2^48
  }
  return acc.round_to(d);
}

// One group's operands with the group's rows contiguous: dY's columns (N, m), X's columns
// (K, m), their planes for the wgmma models, and per-block scales (N, nb) and (K, nb).
struct GroupColumns {
  std::int64_t m = 0, nb = 0, width = 0;
  std::vector<std::uint8_t> dy, x;
  Planes pdy, px;
  std::vector<float> sdy, sx;
};

void gather_columns(const std::uint8_t* src, std::int64_t r0, std::int64_t m, std::int64_t cols,
                    std::vector<std::uint8_t>& out) {
  out.resize(std::size_t(cols * m));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < cols; ++j) out[std::size_t(j * m + i)] = src[(r0 + i) * cols + j];
}

void gather_scales(std::span<const float> s, std::int64_t b0, std::int64_t nb, std::int64_t cols,
                   std::vector<float>& out) {
  out.resize(std::size_t(cols * nb));
  for (std::int64_t j = 0; j < nb; ++j)
    for (std::int64_t c = 0; c < cols; ++c)
      out[std::size_t(c * nb + j)] = s[std::size_t((b0 + j) * cols + c)];
}

void gather_group(const WgradOperands& op, const TokenBlocks& tb, std::int64_t g, std::int64_t r0,
                  std::int64_t m, bool planes, GroupColumns& gc) {
  gc.m = m, gc.width = tb.width;
  gather_columns(op.dy.data(), r0, m, op.N, gc.dy);
  gather_columns(op.x.data(), r0, m, op.K, gc.x);
  if (planes) {
    gc.pdy.decode(op.fdy, gc.dy.data(), op.N * m);
    gc.px.decode(op.fx, gc.x.data(), op.K * m);
  }
  if (tb.width == 0) return;
  gc.nb = ceil_div(m, tb.width);
  gather_scales(op.scale_dy, tb.first[std::size_t(g)], gc.nb, op.N, gc.sdy);
  gather_scales(op.scale_x, tb.first[std::size_t(g)], gc.nb, op.K, gc.sx);
}

// An empty group's element: RN_out(C[g]); its bound is the distance from C (0 when equal, Inf
// included; NaN for a NaN C, as `exact` gives).
void store_c(const GemmOutput& y, std::size_t i, float c) {
  const std::uint32_t bits = f32_to_out_bits(c, y.dtype);
  put_bits(y, i, bits);
  if (y.bound.empty()) return;
  const double v = out_value(bits, y.dtype);
  y.bound[i] = v == double(c) ? 0.0 : std::fabs(v - double(c));
}

// dW[g] of a group with m > 0 rows, one element per iteration (no reduction across threads).
void wgrad_group(const WgradOperands& op, std::int64_t g, const GroupColumns& gc, ModelChoice model,
                 const GemmOutput& dw) {
  const std::int64_t m = gc.m, nk = op.N * op.K;
  const bool per_block = gc.width > 0;
  const float* sdy = per_block                     ? gc.sdy.data()
                     : op.scaling == Scaling::none ? &kOne
                                                   : op.scale_dy.data();
  const float* sx = per_block                     ? gc.sx.data()
                    : op.scaling == Scaling::none ? &kOne
                                                  : op.scale_x.data();
  const bool exact = model.model == AccumulationModel::exact;
  const std::optional<CheckedModel> checked =
      exact ? std::nullopt
            : std::optional(CheckedModel(model.model, per_block, model.split(), model.epilogue));
#pragma omp parallel for schedule(dynamic, 16)
  for (std::int64_t e = 0; e < nk; ++e) {
    const std::int64_t n = e / op.K, k = e % op.K;
    const std::size_t i = std::size_t(g * nk + e);
    const float c = op.c[i];
    DotRun x{gc.dy.data() + n * m, gc.x.data() + k * m, op.fdy, op.fx};
    if (!gc.pdy.value.empty()) x.pa = gc.pdy.at(n * m), x.pb = gc.px.at(k * m);
    const ElementScales sc = per_block
                                 ? ElementScales{sdy + n * gc.nb, sx + k * gc.nb, true, gc.width}
                                 : ElementScales{sdy, sx, false};
    if (exact) {
      store_exact(dw, i, exact_wgrad_element(x, m, sc, c, dw.dtype));
      continue;
    }
    const Bounded z = model_dot(*checked, x, m, sc);
    const float zf = add_f32(c, z.z);  // RN_f32(C + acc); a NaN C wins over a NaN acc
    store_model(dw, i, {zf, (z.bound + f32_rounding_bound(zf)) * kBoundSlack});
  }
}

}  // namespace

void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, const GemmOutput& dw) {
  const TokenBlocks tb = check_wgrad(op, offs, model, dw);
  const std::int64_t nk = op.N * op.K;
  GroupColumns gc;
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::int64_t r0 = g ? offs[std::size_t(g - 1)] : 0, m = offs[std::size_t(g)] - r0;
    if (m == 0) {  // empty group: RN_out(C[g]) under every model, exactly C[g] for f32
      for (std::int64_t e = g * nk; e < (g + 1) * nk; ++e)
#ifdef FP8REF_PLANT_HOOKS
        store_c(dw, std::size_t(e),
                FP8REF_PLANTED(empty_wgrad_zeroed) ? 0.0f : op.c[std::size_t(e)]);
#else
        store_c(dw, std::size_t(e), op.c[std::size_t(e)]);
#endif
      continue;
    }
    gather_group(op, tb, g, r0, m, steps_on_planes(model.model), gc);
    wgrad_group(op, g, gc, model, dw);
  }
}

void grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                        ModelChoice model, std::span<float> dw, std::span<double> bound) {
  grouped_gemm_wgrad(op, offs, model, GemmOutput{OutDtype::f32, dw, {}, bound});
}

}  // namespace fp8ref::ref
