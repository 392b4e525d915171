// Host launcher and kernel of the GPU oracle's grouped GEMMs (docs/gpu_oracle.md §4): the CPU
// reference's argument checks, the scale views of each scaling, one thread per output element
// running gpu/oracle/emu_models.h (no tensor cores, -fmad=false), transfers in and out.
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/oracle/forward_view.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/launch_util.h"

namespace fp8ref::gpu {

using namespace launch;  // NOLINT: the shared checks and buffers of launch_util.h

namespace {

struct Counts {
  std::int64_t a, a_per_row, b;
};
Counts scale_counts(const GroupedGemmOperands& op) {
  const std::int64_t nbk = ceil_div(op.K, 128), nbn = ceil_div(op.N, 128), nmx = ceil_div(op.K, 32);
  switch (op.scaling) {
    case Scaling::none: return {0, 0, 0};
    case Scaling::tensorwise: return {1, 0, op.G};
    case Scaling::rowwise: return {op.M, 1, op.G * op.N};
    case Scaling::blockwise: return {op.M * nbk, nbk, op.G * nbn * nbk};
    case Scaling::mx: return {op.M * nmx, nmx, op.G * op.N * nmx};
    case Scaling::nvfp4:
    case Scaling::mx16: break;  // refused by check_model
  }
  return {0, 0, 0};
}

void check_forward(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                   ModelChoice m, const GemmOutput& y) {
  for (Format f : {op.fa, op.fb})
    if (f != Format::e4m3 && f != Format::e5m2)
      fail("GEMM operands must be e4m3 or e5m2, got " + std::string(to_string(f)));
  if (op.M < 0 || op.N < 0 || op.K < 0 || op.G < 0) fail("negative GEMM dimension");
  expect_size("A", op.a.size(), op.M * op.K);
  expect_size("B", op.b.size(), op.G * op.N * op.K);
  expect_size("row map", row_map.size(), op.M);
  std::vector<char> used(std::size_t(op.G), 0);
  for (std::size_t r = 0; r < row_map.size(); ++r) {
    if (row_map[r] < -1 || row_map[r] >= op.G)
      fail("row map entry " + std::to_string(r) + " = " + std::to_string(row_map[r]) +
           " outside [-1, " + std::to_string(op.G) + ")");
    if (row_map[r] >= 0) used[std::size_t(row_map[r])] = 1;
  }
  check_model(m, op.scaling);
  const Counts sc = scale_counts(op);
  expect_size("scale_a", op.scale_a.size(), sc.a);
  expect_size("scale_b", op.scale_b.size(), sc.b);
  const bool pow2 = op.scaling == Scaling::mx;
  const std::int64_t b_per_group = op.G ? sc.b / op.G : 0;
  for (std::int64_t i = 0; i < sc.b; ++i)
    if (used[std::size_t(i / b_per_group)]) expect_scale("scale_b", op.scale_b, i, pow2);
  if (op.scaling == Scaling::tensorwise) expect_scale("scale_a", op.scale_a, 0, false);
  for (std::int64_t r = 0; r < op.M && sc.a_per_row; ++r)
    if (row_map[std::size_t(r)] >= 0)
      for (std::int64_t j = 0; j < sc.a_per_row; ++j)
        expect_scale("scale_a", op.scale_a, r * sc.a_per_row + j, pow2);
  const std::int64_t count = op.M * op.N;
  if (y.dtype == OutDtype::f32)
    expect_size("output (f32)", y.f32.size(), count);
  else
    expect_size("output (bf16/f16)", y.u16.size(), count);
  if (!y.bound.empty()) fail("the GPU oracle computes no error bound (use the CPU oracle)");
}

__global__ void __launch_bounds__(kOracleBlockThreads, 4)
    forward_kernel(emu::ForwardView v, bool zero_outside, std::uint32_t* out32,
                   std::uint16_t* out16) {
  const std::int64_t n = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= v.N) return;
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < v.M;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const std::int32_t g = v.row_map[r];
    if (g < 0 && !zero_outside) continue;
    const std::uint32_t bits = g < 0 ? 0u : emu::forward_element(v, r, g, n);
    if (out32)
      out32[r * v.N + n] = bits;
    else
      out16[r * v.N + n] = std::uint16_t(bits);
  }
}

// B as (G, N, K): a host copy transposed from (G, K, N) when needed.
std::vector<std::uint8_t> b_nk(const GroupedGemmOperands& op) {
  if (op.b_layout == BLayout::nk) return {};
  std::vector<std::uint8_t> t(op.b.size());
  for (std::int64_t g = 0; g < op.G; ++g)
    for (std::int64_t k = 0; k < op.K; ++k)
      for (std::int64_t n = 0; n < op.N; ++n)
        t[std::size_t((g * op.N + n) * op.K + k)] = op.b[std::size_t((g * op.K + k) * op.N + n)];
  return t;
}

void run_forward(const GroupedGemmOperands& op, std::span<const std::int32_t> row_map,
                 ModelChoice model, RowPolicy outside, const GemmOutput& y) {
  last_kernel_seconds() = 0.0;
  if (op.M == 0 || op.N == 0) return;  // nothing to write (and no empty launch)
  const std::vector<std::uint8_t> bt = b_nk(op);
  const std::uint8_t* b = op.b_layout == BLayout::nk ? op.b.data() : bt.data();
  const float one = 1.0f;
  const bool unscaled = op.scaling == Scaling::none;
  DeviceBuffer<std::uint8_t> da(op.a.data(), op.a.size()), db(b, op.b.size());
  DeviceBuffer<std::int32_t> dmap(row_map.data(), row_map.size());
  DeviceBuffer<float> dsa(unscaled ? &one : op.scale_a.data(), unscaled ? 1 : op.scale_a.size());
  DeviceBuffer<float> dsb(unscaled ? &one : op.scale_b.data(), unscaled ? 1 : op.scale_b.size());
  const std::size_t count = std::size_t(op.M * op.N);
  const bool f32 = y.dtype == OutDtype::f32;
  DeviceBuffer<std::uint32_t> out32(f32 ? count : 0);
  DeviceBuffer<std::uint16_t> out16(f32 ? 0 : count);
  if (outside == RowPolicy::untouched) {  // rows of no group keep what y holds
    if (f32)
      FP8REF_CUDA_CHECK(cudaMemcpy(out32.p, y.f32.data(), count * 4, cudaMemcpyHostToDevice));
    else
      FP8REF_CUDA_CHECK(cudaMemcpy(out16.p, y.u16.data(), count * 2, cudaMemcpyHostToDevice));
  }
  const emu::ForwardView v =
      make_forward_view(op, model, y.dtype, da.p, db.p, dmap.p, dsa.p, dsb.p);
  const dim3 block(64, kOracleBlockThreads / 64);
  const dim3 grid(unsigned(ceil_div(op.N, block.x)),
                  unsigned(std::min<std::int64_t>(ceil_div(op.M, block.y), 32768)));
  timed_launch(
      [&] { forward_kernel<<<grid, block>>>(v, outside == RowPolicy::zero, out32.p, out16.p); });
  if (f32)
    FP8REF_CUDA_CHECK(cudaMemcpy(y.f32.data(), out32.p, count * 4, cudaMemcpyDeviceToHost));
  else
    FP8REF_CUDA_CHECK(cudaMemcpy(y.u16.data(), out16.p, count * 2, cudaMemcpyDeviceToHost));
}

}  // namespace

void oracle_grouped_gemm_forward(const GroupedGemmOperands& op,
                                 std::span<const std::int32_t> row_map, ModelChoice model,
                                 RowPolicy outside, const GemmOutput& y) {
  check_forward(op, row_map, model, y);
  run_forward(op, row_map, model, outside, y);
}

void oracle_grouped_gemm_forward_offs(const GroupedGemmOperands& op,
                                      std::span<const std::int64_t> offs, ModelChoice model,
                                      RowPolicy outside, const GemmOutput& y) {
  expect_size("offs", offs.size(), op.G);
  std::vector<std::int32_t> map(std::size_t(std::max<std::int64_t>(op.M, 0)), -1);
  std::int64_t start = 0;
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::int64_t end = offs[std::size_t(g)];
    if (end < start || end > op.M)
      fail("offs[" + std::to_string(g) + "] = " + std::to_string(end) +
           " must be non-decreasing and <= M = " + std::to_string(op.M));
    for (std::int64_t r = start; r < end; ++r) map[std::size_t(r)] = std::int32_t(g);
    start = end;
  }
  oracle_grouped_gemm_forward(op, map, model, outside, y);
}

void oracle_grouped_gemm_dgrad(const DgradOperands& op, std::span<const std::int32_t> row_map,
                               ModelChoice model, RowPolicy outside, const GemmOutput& da) {
  std::vector<float> wt;  // the transposed 128×128 weight scales (dgrad_as_forward)
  const GroupedGemmOperands fwd = dgrad_as_forward(op, wt);
  oracle_grouped_gemm_forward(fwd, row_map, model, outside, da);
}

double oracle_last_kernel_seconds() { return last_kernel_seconds(); }

}  // namespace fp8ref::gpu
