// CPU reference M-grouped forward and dgrad (docs/design.md §9-10): argument checks, operand
// gathering, and the per-element model evaluation; `exact` on whole groups through exact_gemm.h.
// The K-grouped wgrad is in grouped_wgrad.cpp. See grouped_gemm.h.
#include "reference/grouped_gemm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/models.h"
#include "reference/exact_gemm.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm_detail.h"

namespace fp8ref::ref {
namespace {

using namespace detail;  // NOLINT: the shared checks and stores of grouped_gemm_detail.h

// Scale entries per A row (0: one shared scale) and in scale_b, for the forward's scaling.
struct ScaleCounts {
  std::int64_t a, a_per_row, b;
};
ScaleCounts scale_counts(const GroupedGemmOperands& op) {
  const std::int64_t nbk = ceil_div(op.K, kScaleBlockK), nbn = ceil_div(op.N, kScaleBlockK);
  const std::int64_t nmx = ceil_div(op.K, kMxBlockK), nnv = ceil_div(op.K, kNvfp4BlockK);
  switch (op.scaling) {
    case Scaling::nvfp4: return {op.M * nnv, nnv, op.G * op.N * nnv};
    case Scaling::none: return {0, 0, 0};
    case Scaling::tensorwise: return {1, 0, op.G};
    case Scaling::rowwise: return {op.M, 1, op.G * op.N};
    case Scaling::blockwise: return {op.M * nbk, nbk, op.G * nbn * nbk};
    case Scaling::mx: return {op.M * nmx, nmx, op.G * op.N * nmx};
    case Scaling::mx16: return {op.M * nnv, nnv, op.G * op.N * nnv};
  }
  return {0, 0, 0};
}

// Scale checks the Blackwell models add: each block scale a ue8m0 / ue4m3 value, the nvfp4
// tensor scales finite (1 and G of them, or none).
void check_blackwell_scales(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                            const ScaleCounts& sc) {
  const bool nv = op.scaling == Scaling::nvfp4;
  if (!nv && !(op.tensor_scale_a.empty() && op.tensor_scale_b.empty()))
    fail("tensor scales apply to nvfp4 scaling only");
  if (nv && !(op.tensor_scale_a.empty() && op.tensor_scale_b.empty())) {
    expect_size("tensor_scale_a", op.tensor_scale_a.size(), 1);
    expect_size("tensor_scale_b", op.tensor_scale_b.size(), op.G);
    expect_scale("tensor_scale_a", op.tensor_scale_a, 0, false);
    for (std::int64_t g = 0; g < op.G; ++g)
      expect_scale("tensor_scale_b", op.tensor_scale_b, g, false);
  }
  if (!nv && op.scaling != Scaling::mx && op.scaling != Scaling::mx16) return;
  std::vector<char> used(std::size_t(op.G), 0);
  for (const std::int32_t g : row_map)
    if (g >= 0) used[std::size_t(g)] = 1;
  const std::int64_t per_group = op.G ? sc.b / op.G : 0;
  for (std::int64_t i = 0; i < sc.b; ++i)
    if (used[std::size_t(i / per_group)]) expect_scale_code("scale_b", op.scale_b, i, op.scaling);
  for (std::int64_t r = 0; r < op.M; ++r)
    if (row_map[std::size_t(r)] >= 0)
      for (std::int64_t j = 0; j < sc.a_per_row; ++j)
        expect_scale_code("scale_a", op.scale_a, r * sc.a_per_row + j, op.scaling);
}

// `exact` takes FP8, FP6 and FP4 operands; its 16-wide scalings (mx16, nvfp4) only the e2m1
// operands of kind::mxf4nvf4, the one instruction with such blocks (docs/models.md "`exact`").
void check_exact_operands(const GroupedGemmOperands& op) {
  require_exact_operand_format(op.fa);
  require_exact_operand_format(op.fb);
  if ((op.scaling == Scaling::mx16 || op.scaling == Scaling::nvfp4) &&
      !(op.fa == Format::e2m1 && op.fb == Format::e2m1))
    fail(std::string("exact takes ") + to_string(op.scaling) +
         " scaling on e2m1 operands only, not " + std::string(to_string(op.fa)) + " x " +
         std::string(to_string(op.fb)));
}

void check_forward(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                   ModelChoice m, const GemmOutput& y) {
  if (is_blackwell_model(m.model)) {
    try {
      fp8ref::detail::require_blackwell_operands(m.model, op.fa, op.fb);
    } catch (const std::invalid_argument& e) {
      fail(e.what() + 8);
    }
  } else if (m.model == AccumulationModel::exact) {
    check_exact_operands(op);
  } else {
    require_operand_format(op.fa);
    require_operand_format(op.fb);
  }
  if (op.M < 0 || op.N < 0 || op.K < 0 || op.G < 0) fail("negative GEMM dimension");
  expect_size("A", op.a.size(), op.M * op.K);
  expect_size("B", op.b.size(), op.G * op.N * op.K);
  expect_size("row map", row_map.size(), op.M);
  validate_row_map(row_map, op.G);
  check_model(m, op.scaling);
  const ScaleCounts sc = scale_counts(op);
  expect_size("scale_a", op.scale_a.size(), sc.a);
  expect_size("scale_b", op.scale_b.size(), sc.b);
  const bool block16 = op.scaling == Scaling::mx16 || op.scaling == Scaling::nvfp4;
  if (is_blackwell_model(m.model) || block16) check_blackwell_scales(op, row_map, sc);
  const bool pow2 = op.scaling == Scaling::mx || op.scaling == Scaling::mx16;
  // Only the scales a valid row reads are checked: a group without rows (an idle expert) may
  // hold anything in its B scales, as rows of no group may in their A scales.
  std::vector<char> used(std::size_t(op.G), 0);
  for (const std::int32_t g : row_map)
    if (g >= 0) used[std::size_t(g)] = 1;
  const std::int64_t b_per_group = op.G ? sc.b / op.G : 0;
  for (std::int64_t i = 0; i < sc.b; ++i)
    if (used[std::size_t(i / b_per_group)]) expect_scale("scale_b", op.scale_b, i, pow2);
  if (op.scaling == Scaling::tensorwise) expect_scale("scale_a", op.scale_a, 0, false);
  for (std::int64_t r = 0; r < op.M && sc.a_per_row; ++r)
    if (row_map[std::size_t(r)] >= 0)
      for (std::int64_t j = 0; j < sc.a_per_row; ++j)
        expect_scale("scale_a", op.scale_a, r * sc.a_per_row + j, pow2);
  check_output(y, op.M * op.N);
}

// B as (G, N, K): a copy transposed from (G, K, N) when needed.
std::vector<std::uint8_t> b_nk(const GroupedGemmOperands& op) {
  if (op.b_layout == BLayout::nk) return {};
  std::vector<std::uint8_t> t(op.b.size());
  for (std::int64_t g = 0; g < op.G; ++g)
    for (std::int64_t k = 0; k < op.K; ++k)
      for (std::int64_t n = 0; n < op.N; ++n)
        t[std::size_t((g * op.N + n) * op.K + k)] = op.b[std::size_t((g * op.K + k) * op.N + n)];
  return t;
}

// The scales of A (by row) and of group g's B (by column).
detail::ScaleGrid grid_a(const GroupedGemmOperands& op) {
  const std::int64_t nbk = ceil_div(op.K, kScaleBlockK), nmx = ceil_div(op.K, kMxBlockK);
  switch (op.scaling) {
    case Scaling::none: return {&kOne, 0, 1, false, kScaleBlockK};
    case Scaling::tensorwise: return {op.scale_a.data(), 0, 1, false, kScaleBlockK};
    case Scaling::rowwise: return {op.scale_a.data(), 1, 1, false, kScaleBlockK};
    case Scaling::blockwise: return {op.scale_a.data(), nbk, 1, true, kScaleBlockK};
    case Scaling::mx: return {op.scale_a.data(), nmx, 1, true, kMxBlockK};
    case Scaling::nvfp4:
    case Scaling::mx16:
      return {op.scale_a.data(), ceil_div(op.K, kNvfp4BlockK), 1, true, kNvfp4BlockK};
  }
  return {&kOne, 0, 1, false, kScaleBlockK};
}
detail::ScaleGrid grid_b(const GroupedGemmOperands& op, std::int64_t g) {
  const std::int64_t nbk = ceil_div(op.K, kScaleBlockK), nbn = ceil_div(op.N, kScaleBlockK);
  const std::int64_t nmx = ceil_div(op.K, kMxBlockK);
  const float* s = op.scale_b.data();
  switch (op.scaling) {
    case Scaling::none: return {&kOne, 0, 1, false, kScaleBlockK};
    case Scaling::tensorwise: return {s + g, 0, 1, false, kScaleBlockK};
    case Scaling::rowwise: return {s + g * op.N, 1, 1, false, kScaleBlockK};
    case Scaling::blockwise: return {s + g * nbn * nbk, nbk, kScaleBlockK, true, kScaleBlockK};
    case Scaling::mx: return {s + g * op.N * nmx, nmx, 1, true, kMxBlockK};
    case Scaling::nvfp4:
    case Scaling::mx16: {
      const std::int64_t nnv = ceil_div(op.K, kNvfp4BlockK);
      return {s + g * op.N * nnv, nnv, 1, true, kNvfp4BlockK};
    }
  }
  return {&kOne, 0, 1, false, kScaleBlockK};
}

void forward_exact(const GroupedGemmOperands& op, const std::uint8_t* b,
                   std::span<const std::int32_t> row_map, const GemmOutput& y) {
  detail::ScaleGrid ga = grid_a(op);
  const bool tensor = op.scaling == Scaling::nvfp4 && !op.tensor_scale_a.empty();
  if (tensor) ga.tensor = op.tensor_scale_a[0];
  std::vector<double> z;
  const auto groups = rows_by_group(row_map, op.G);
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::vector<std::int64_t>& rows = groups[std::size_t(g)];
    if (rows.empty()) continue;
    const std::uint8_t* bg = b + g * op.N * op.K;
    detail::ScaleGrid gb = grid_b(op, g);
    if (tensor) gb.tensor = op.tensor_scale_b[std::size_t(g)];
    const std::int64_t m = std::int64_t(rows.size());
    z.resize(std::size_t(m * op.N));
    if (!detail::exact_group_forward({op.N, op.K, op.fa, op.fb, op.a.data(), rows, bg, ga, gb},
                                     y.dtype, z)) {
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t n = 0; n < op.N; ++n) {
          ElementScales sc{ga.at(rows[std::size_t(i)]), gb.at(n), ga.per_block, ga.block_k};
          sc.tensor_a = ga.tensor, sc.tensor_b = gb.tensor;
          z[std::size_t(i * op.N + n)] = exact_dot(op.a.data() + rows[std::size_t(i)] * op.K,
                                                   bg + n * op.K, op.K, op.fa, op.fb, sc, y.dtype);
        }
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t n = 0; n < op.N; ++n)
        store_exact(y, std::size_t(rows[std::size_t(i)] * op.N + n), z[std::size_t(i * op.N + n)]);
  }
}

// Columns of B decoded at a time: about 2^22 codes (24 MiB of planes) whatever N and K are.
constexpr std::int64_t kPlaneCodes = std::int64_t{1} << 22;

void forward_on_planes(const GroupedGemmOperands& op, const std::uint8_t* b,
                       std::span<const std::int32_t> row_map, ModelChoice model,
                       const GemmOutput& y) {
  const detail::ScaleGrid ga = grid_a(op);
  const CheckedModel checked(model.model, ga.per_block, model.split(), model.epilogue);
  const auto groups = rows_by_group(row_map, op.G);
  const std::int64_t chunk =
      std::max<std::int64_t>(1, kPlaneCodes / std::max<std::int64_t>(op.K, 1));
  Planes pb;
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::vector<std::int64_t>& rows = groups[std::size_t(g)];
    const detail::ScaleGrid gb = grid_b(op, g);
    for (std::int64_t n0 = 0; n0 < op.N && !rows.empty(); n0 += chunk) {
      const std::int64_t n1 = std::min(op.N, n0 + chunk);
      const std::uint8_t* bg = b + (g * op.N + n0) * op.K;
      pb.decode(op.fb, bg, (n1 - n0) * op.K);
      const std::int64_t m = std::int64_t(rows.size());
      // One row per iteration, each element computed by one thread: no cross-thread reduction.
#pragma omp parallel
      {
        Planes pa;
#pragma omp for schedule(dynamic, 4)
        for (std::int64_t i = 0; i < m; ++i) {
          const std::int64_t r = rows[std::size_t(i)];
          const std::uint8_t* a_row = op.a.data() + r * op.K;
          pa.decode(op.fa, a_row, op.K);
          for (std::int64_t n = n0; n < n1; ++n) {
            const std::int64_t j = (n - n0) * op.K;
            const DotRun x{a_row, bg + j, op.fa, op.fb, pa.at(0), pb.at(j)};
            const ElementScales sc{ga.at(r), gb.at(n), ga.per_block, ga.block_k};
            store_model(y, std::size_t(r * op.N + n), model_dot(checked, x, op.K, sc));
          }
        }
      }
    }
  }
}

}  // namespace

void grouped_gemm_forward(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                          ModelChoice model, RowPolicy outside, const GemmOutput& y) {
  check_forward(op, row_map, model, y);
  const std::vector<std::uint8_t> bt = b_nk(op);
  const std::uint8_t* b = op.b_layout == BLayout::nk ? op.b.data() : bt.data();
  if (outside == RowPolicy::zero)
    for (std::int64_t r = 0; r < op.M; ++r)
      if (row_map[std::size_t(r)] < 0)
        for (std::int64_t n = 0; n < op.N; ++n) store_exact(y, std::size_t(r * op.N + n), 0.0);
  if (model.model == AccumulationModel::exact) return forward_exact(op, b, row_map, y);
  if (steps_on_planes(model.model)) return forward_on_planes(op, b, row_map, model, y);
  const detail::ScaleGrid ga = grid_a(op);
  const CheckedModel checked(model.model, ga.per_block, model.split(), model.epilogue);
  // One row per iteration, each element computed by one thread: no cross-thread reduction.
#pragma omp parallel for schedule(dynamic, 4)
  for (std::int64_t r = 0; r < op.M; ++r) {
    const std::int64_t g = row_map[std::size_t(r)];
    if (g < 0) continue;
    const detail::ScaleGrid gb = grid_b(op, g);
    const std::uint8_t* a_row = op.a.data() + r * op.K;
    for (std::int64_t n = 0; n < op.N; ++n) {
      ElementScales sc{ga.at(r), gb.at(n), ga.per_block, ga.block_k};
      sc.block16_e8m0 = op.scaling == Scaling::mx16;
      if (!op.tensor_scale_a.empty())
        sc.tensor_a = op.tensor_scale_a[0], sc.tensor_b = op.tensor_scale_b[std::size_t(g)];
      store_model(y, std::size_t(r * op.N + n),
                  model_dot(checked, {a_row, b + (g * op.N + n) * op.K, op.fa, op.fb}, op.K, sc));
    }
  }
}

void grouped_gemm_dgrad(const DgradOperands& op, std::span<const std::int32_t> row_map,
                        ModelChoice model, RowPolicy outside, const GemmOutput& da) {
  std::vector<float> wt;  // the transposed 128×128 weight scales (dgrad_as_forward)
  const GroupedGemmOperands fwd = dgrad_as_forward(op, wt);
  grouped_gemm_forward(fwd, row_map, model, outside, da);
}

void grouped_gemm_forward_offs(const GroupedGemmOperands& op, std::span<const std::int64_t> offs,
                               ModelChoice model, RowPolicy outside, const GemmOutput& y) {
  expect_size("offs", offs.size(), op.G);
  const std::vector<std::int32_t> map = row_map_from_offsets(offs, op.M);
  grouped_gemm_forward(op, map, model, outside, y);
}

}  // namespace fp8ref::ref
