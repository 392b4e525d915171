// Host launcher and kernel of the GPU oracle's K-grouped wgrad (docs/gpu_oracle.md §4a): the CPU
// reference's argument checks, dY and X transposed on the host so that each group's rows of a
// column are contiguous (per-block scales likewise), one thread per dW element running
// gpu/oracle/emu_wgrad.h (no tensor cores, -fmad=false), transfers in and out.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#include "gpu/oracle/launch_util.h"
#include "gpu/oracle/wgrad_view.h"

namespace fp8ref::gpu {
namespace {

using namespace launch;  // NOLINT: the shared checks and buffers of launch_util.h

// offs non-decreasing, each <= M; then the groups and token blocks.
WgradGroups check_offsets(const WgradOperands& op, std::span<const std::int64_t> offs) {
  expect_size("offs", offs.size(), op.G);
  std::int64_t begin = 0;
  for (std::int64_t g = 0; g < op.G; ++g) {
    const std::int64_t end = offs[std::size_t(g)];
    if (end < begin || end > op.M)
      fail("offs[" + std::to_string(g) + "] = " + std::to_string(end) +
           " must be non-decreasing and <= M = " + std::to_string(op.M));
    begin = end;
  }
  return wgrad_groups(op, offs);
}

// The scales of the groups' block rows are finite (powers of two for mx); the block rows past
// offs[G-1] are not read and not checked.
void check_scales(const WgradOperands& op, const WgradGroups& gr) {
  if (gr.width == 0) {
    const std::int64_t n = op.scaling == Scaling::tensorwise ? 1 : 0;
    expect_size("scale_dy", op.scale_dy.size(), n);
    expect_size("scale_x", op.scale_x.size(), n);
    for (std::int64_t i = 0; i < n; ++i)
      expect_scale("scale_dy", op.scale_dy, i, false),
          expect_scale("scale_x", op.scale_x, i, false);
    return;
  }
  expect_size("scale_dy", op.scale_dy.size(), gr.R * op.N);
  expect_size("scale_x", op.scale_x.size(), gr.R * op.K);
  const std::int64_t used = gr.group_blocks;
  const bool pow2 = op.scaling == Scaling::mx;
  for (std::int64_t i = 0; i < used * op.N; ++i) expect_scale("scale_dy", op.scale_dy, i, pow2);
  for (std::int64_t i = 0; i < used * op.K; ++i) expect_scale("scale_x", op.scale_x, i, pow2);
}

WgradGroups check_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs, ModelChoice m,
                        const GemmOutput& dw) {
  for (Format f : {op.fdy, op.fx})
    if (f != Format::e4m3 && f != Format::e5m2)
      fail("GEMM operands must be e4m3 or e5m2, got " + std::string(to_string(f)));
  if (op.M < 0 || op.N < 0 || op.K < 0 || op.G < 0) fail("negative wgrad dimension");
  expect_size("dY", op.dy.size(), op.M * op.N);
  expect_size("X", op.x.size(), op.M * op.K);
  expect_size("C", op.c.size(), op.G * op.N * op.K);
  const std::int64_t count = op.G * op.N * op.K;
  if (dw.dtype == OutDtype::f32)
    expect_size("output (f32)", dw.f32.size(), count);
  else
    expect_size("output (bf16/f16)", dw.u16.size(), count);
  if (!dw.bound.empty()) fail("the GPU oracle computes no error bound (use the CPU oracle)");
  const WgradGroups gr = check_offsets(op, offs);
  if (op.scaling == Scaling::rowwise || op.scaling == Scaling::nvfp4 || op.scaling == Scaling::mx16)
    fail(
        "wgrad takes scaling none, tensorwise, blockwise (1×128 along tokens) or mx (1×32 along "
        "tokens), not " +
        std::string(to_string(op.scaling)));
  check_model(m, op.scaling);
  check_scales(op, gr);
  return gr;
}

// Thread (x: k, y: n, z: g); n and g in grid-stride loops.
__global__ void __launch_bounds__(kOracleBlockThreads, 4)
    wgrad_kernel(emu::WgradView v, std::uint32_t* out32, std::uint16_t* out16) {
  const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= v.K) return;
  for (std::int64_t g = blockIdx.z; g < v.G; g += gridDim.z)
    for (std::int64_t n = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; n < v.N;
         n += std::int64_t(gridDim.y) * blockDim.y) {
      const std::uint32_t bits = emu::wgrad_element(v, g, n, k);
      const std::int64_t i = (g * v.N + n) * v.K + k;
      if (out32)
        out32[i] = bits;
      else
        out16[i] = std::uint16_t(bits);
    }
}

void run_wgrad(const WgradOperands& op, const WgradGroups& gr, ModelChoice m,
               const GemmOutput& dw) {
  last_kernel_seconds() = 0.0;
  const std::size_t count = std::size_t(op.G * op.N * op.K);
  if (count == 0) return;  // nothing to write (and no empty launch)
  const WgradHostData h = wgrad_host_data(op, gr);
  DeviceBuffer<std::uint8_t> dyt(h.dyt.data(), h.dyt.size()), xt(h.xt.data(), h.xt.size());
  DeviceBuffer<std::int64_t> rows(gr.rows.data(), gr.rows.size()),
      first(gr.first_block.data(), gr.first_block.size()), cols(gr.cols.data(), gr.cols.size());
  DeviceBuffer<float> sdy(h.sdy.data(), h.sdy.size()), sx(h.sx.data(), h.sx.size()),
      c(op.c.data(), op.c.size());
  const bool f32 = dw.dtype == OutDtype::f32;
  DeviceBuffer<std::uint32_t> out32(f32 ? count : 0);
  DeviceBuffer<std::uint16_t> out16(f32 ? 0 : count);
  const emu::WgradView v = make_wgrad_view(
      op, gr, m, dw.dtype, {dyt.p, xt.p, rows.p, first.p, cols.p, sdy.p, sx.p, c.p});
  const dim3 block(64, kOracleBlockThreads / 64);
  const dim3 grid(unsigned(ceil_div(op.K, block.x)),
                  unsigned(std::min<std::int64_t>(ceil_div(op.N, block.y), 32768)),
                  unsigned(std::min<std::int64_t>(op.G, 65535)));
  timed_launch([&] { wgrad_kernel<<<grid, block>>>(v, out32.p, out16.p); });
  if (f32)
    FP8REF_CUDA_CHECK(cudaMemcpy(dw.f32.data(), out32.p, count * 4, cudaMemcpyDeviceToHost));
  else
    FP8REF_CUDA_CHECK(cudaMemcpy(dw.u16.data(), out16.p, count * 2, cudaMemcpyDeviceToHost));
}

}  // namespace

void oracle_grouped_gemm_wgrad(const WgradOperands& op, std::span<const std::int64_t> offs,
                               ModelChoice model, const GemmOutput& dw) {
  const WgradGroups gr = check_wgrad(op, offs, model, dw);
  run_wgrad(op, gr, model, dw);
}

}  // namespace fp8ref::gpu
