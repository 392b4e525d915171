// The GPU oracle's K-grouped wgrad on the device (gpu/oracle/grouped_wgrad_oracle.h) == the CPU
// oracle (reference/grouped_wgrad.cpp) bit for bit: the `gemm.wgrad` draws with NaN / Inf poison,
// groups of exactly 128 and 129 tokens beside empty ones, empty shapes, the CPU's rejections. The
// emulation itself is checked on the host by wgrad_emulated_test.cpp; these tests pin the launch,
// indexing, transposes and transfers (docs/gpu_oracle.md §5).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "gpu/device.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#include "proptests/gpu/oracle/wgrad_cases.h"

namespace fp8ref::test {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

std::vector<std::uint32_t> gpu_wgrad_bits(const fuzz::WgradCase& w) {
  return wgrad_bits(w, [](const auto& op, const auto& offs, auto m, const GemmOutput& y) {
    gpu::oracle_grouped_gemm_wgrad(op, offs, m, y);
  });
}

TEST(GpuOracleWgrad, EveryModelEqualsTheCpuOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("GPU wgrad == CPU wgrad", [] {
    const fuzz::WgradCase w = draw_wgrad_case();
    RC_ASSERT(first_dw_mismatch(w, cpu_wgrad_bits(w), gpu_wgrad_bits(w)) == "");
  }));
}

// Groups of 128 (one whole token block), 0, 129 (a block and one token) and 1 token, K and N
// spanning several blocks of the grid; the scales of the rows past the last group are NaN (never
// read).
TEST(GpuOracleWgrad, Exact128GroupsAndEmptyOnes) {
  FP8REF_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("exact-128 groups", [] {
    fuzz::WgradCase w = draw_wgrad_case();
    w.gs.sizes = {128, 0, 129, 1}, w.gs.tail = 3;
    w.G = 4, w.M = 261, w.N = *rc::gen::inRange<std::int64_t>(1, 70);
    w.K = *rc::gen::inRange<std::int64_t>(1, 150);
    const std::int64_t R = w.block_rows();
    w.dy = *gen_codes(w.fdy, w.M * w.N), w.x = *gen_codes(w.fx, w.M * w.K);
    const bool per_block = w.scaling == Scaling::blockwise || w.scaling == Scaling::mx;
    const float pad = std::bit_cast<float>(0x7FC00000u);
    if (per_block) {
      const std::int64_t tail_rows = 1;  // the 3 rows past the last group: one block row
      w.s_dy.assign(std::size_t(R * w.N), w.scaling == Scaling::mx ? 0.5f : 0.75f);
      w.s_x.assign(std::size_t(R * w.K), 2.0f);
      std::fill(w.s_dy.end() - tail_rows * w.N, w.s_dy.end(), pad);
      std::fill(w.s_x.end() - tail_rows * w.K, w.s_x.end(), pad);
    }
    w.c.assign(std::size_t(w.G * w.N * w.K), -1.5f);
    RC_ASSERT(first_dw_mismatch(w, cpu_wgrad_bits(w), gpu_wgrad_bits(w)) == "");
  }));
}

TEST(GpuOracleWgrad, EmptyShapes) {
  FP8REF_REQUIRE_DEVICE();
  for (const auto& [sizes, N, K] :
       std::vector<std::tuple<std::vector<std::int64_t>, std::int64_t, std::int64_t>>{
           {{0, 0}, 3, 4}, {{2, 1}, 0, 4}, {{2, 1}, 3, 0}, {{0}, 0, 0}, {{4}, 1, 1}}) {
    fuzz::WgradCase w;
    w.gs.sizes = sizes;
    w.G = std::int64_t(sizes.size()), w.M = w.gs.total(), w.N = N, w.K = K;
    w.dy.assign(std::size_t(w.M * N), 0x38), w.x.assign(std::size_t(w.M * K), 0x40);
    w.c.assign(std::size_t(w.G * N * K), -0.0f);
    for (AccumulationModel m : kAllAccumulationModels) {
      w.model = {m, 1};
      EXPECT_EQ(first_dw_mismatch(w, cpu_wgrad_bits(w), gpu_wgrad_bits(w)), "") << describe(w);
    }
  }
}

TEST(GpuOracleWgrad, RejectsWhatTheCpuRejects) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::uint8_t> dy(4 * 2, 0x38), x(4 * 3, 0x38);
  const std::vector<float> c(2 * 2 * 3, 0.0f), one{1.0f}, nan{std::bit_cast<float>(0x7FC00000u)};
  std::vector<float> out(c.size());
  const std::vector<std::int64_t> offs{2, 4}, bad{3, 2};
  const WgradOperands op{4, 2, 3, 2, Format::e4m3, Format::e4m3, dy, x, Scaling::none, {}, {}, c};
  auto throws = [&](const WgradOperands& o, std::span<const std::int64_t> of, ModelChoice m) {
    EXPECT_THROW(ref::grouped_gemm_wgrad(o, of, m, {OutDtype::f32, out, {}, {}}),
                 std::invalid_argument);
    EXPECT_THROW(gpu::oracle_grouped_gemm_wgrad(o, of, m, {OutDtype::f32, out, {}, {}}),
                 std::invalid_argument);
  };
  throws(op, bad, {AccumulationModel::exact, 1});
  throws(op, offs, {AccumulationModel::blackwell_f8f6f4, 1});
  throws(op, offs, {AccumulationModel::exact, 2});  // split-K on a model without slices
  WgradOperands rowwise = op;
  rowwise.scaling = Scaling::rowwise;
  throws(rowwise, offs, {AccumulationModel::exact, 1});
  WgradOperands tw = op;
  tw.scaling = Scaling::tensorwise, tw.scale_dy = nan, tw.scale_x = one;
  throws(tw, offs, {AccumulationModel::exact, 1});
  std::vector<double> bound(c.size());
  EXPECT_THROW(gpu::oracle_grouped_gemm_wgrad(op, offs, {AccumulationModel::exact, 1},
                                              {OutDtype::f32, out, {}, bound}),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref::test
