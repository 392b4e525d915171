// The GPU oracle's wgrad emulation (gpu/oracle/emu_wgrad.h and wgrad_view.h, compiled here for the
// host) == the CPU oracle's K-grouped wgrad (reference/grouped_wgrad.cpp) bit for bit: every
// model, scaling, dtype, split-K and epilogue over the `gemm.wgrad` group distributions, NaN / Inf
// codes and NaN / Inf / -0 in C included. Label cpu: runs in CI without a GPU.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "gpu/oracle/wgrad_view.h"
#include "proptests/gpu/oracle/wgrad_cases.h"

namespace fp8ref::test {
namespace {

std::vector<std::uint32_t> emulated_wgrad_bits(const fuzz::WgradCase& w) {
  return wgrad_bits(w, [](const WgradOperands& op, const std::vector<std::int64_t>& offs,
                          ModelChoice m, const GemmOutput& y) {
    const gpu::WgradGroups gr = gpu::wgrad_groups(op, offs);
    const gpu::WgradHostData h = gpu::wgrad_host_data(op, gr);
    const gpu::emu::WgradView v =
        gpu::make_wgrad_view(op, gr, m, y.dtype,
                             {h.dyt.data(), h.xt.data(), gr.rows.data(), gr.first_block.data(),
                              gr.cols.data(), h.sdy.data(), h.sx.data(), op.c.data()});
    for (std::int64_t g = 0; g < op.G; ++g)
      for (std::int64_t n = 0; n < op.N; ++n)
        for (std::int64_t k = 0; k < op.K; ++k) {
          const std::uint32_t bits = gpu::emu::wgrad_element(v, g, n, k);
          const std::size_t i = std::size_t((g * op.N + n) * op.K + k);
          if (y.dtype == OutDtype::f32)
            y.f32[i] = std::bit_cast<float>(bits);
          else
            y.u16[i] = std::uint16_t(bits);
        }
  });
}

RC_GTEST_PROP(GpuOracleWgradEmulated, EveryModelEqualsTheCpuOracleBitwise, ()) {
  const fuzz::WgradCase w = draw_wgrad_case();
  const std::string diff = first_dw_mismatch(w, cpu_wgrad_bits(w), emulated_wgrad_bits(w));
  RC_ASSERT(diff == "");
}

// A NaN C meets a NaN sum (a NaN code in the group): C's NaN, quieted, under every model; the
// CPU defines this order explicitly (x86 would return whichever NaN the compiler put first).
TEST(GpuOracleWgradEmulated, NanCWinsOverANanSum) {
  fuzz::WgradCase w;
  w.gs.sizes = {3, 0};
  w.M = 3, w.N = 1, w.K = 2, w.G = 2;
  w.dy = {0x38, 0x7F, 0x38};  // 1, NaN, 1
  w.x = {0x38, 0x38, 0x38, 0x38, 0x38, 0x38};
  w.c = {std::bit_cast<float>(0xFF812345u), std::bit_cast<float>(0x7FC0BEEFu), 1.0f, -0.0f};
  for (AccumulationModel m : kAllAccumulationModels)
    for (OutDtype d : {OutDtype::f32, OutDtype::bf16, OutDtype::f16}) {
      w.model = {m, 1}, w.out = d;
      const auto want = cpu_wgrad_bits(w);
      EXPECT_EQ(first_dw_mismatch(w, want, emulated_wgrad_bits(w)), "");
      if (d == OutDtype::f32) {
        EXPECT_EQ(want[0], 0xFFC12345u) << to_string(m);
      }
    }
}

}  // namespace
}  // namespace fp8ref::test
