// The GPU oracle on the device (gpu/oracle/grouped_gemm_oracle.h) == the CPU oracle
// (reference/grouped_gemm.h) bit for bit: random cases of every model, scaling, dtype, split-K
// and epilogue with NaN / Inf poison; empty shapes and groups; a group of exactly 128 rows with
// K not a multiple of 128; dgrad on both layouts. The emulation itself is checked on the host by
// oracle_emulated_test.cpp; these tests pin the launch, indexing and transfers (docs/gpu_oracle.md
// §5).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "gpu/device.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "proptests/gpu/oracle/oracle_cases.h"

namespace fp8ref::test {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

std::vector<std::uint32_t> gpu_bits(const OracleCase& c) {
  const std::size_t n = std::size_t(c.p.M * c.p.N);
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0, std::bit_cast<float>(0xA5A5A5A5u));
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n, 0xA5A5);
  gpu::oracle_grouped_gemm_forward(c.p.operands(), c.p.group_of, c.m, c.policy, {c.out, f, h, {}});
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

TEST(GpuOracle, EveryModelEqualsTheCpuOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("GPU oracle == CPU oracle", [] {
    const OracleCase c = gen_oracle_case();
    RC_ASSERT(cpu_bits(c) == gpu_bits(c));
  }));
}

TEST(GpuOracle, EmptyShapesAndGroups) {
  FP8REF_REQUIRE_DEVICE();
  for (const auto& [M, N, K, G] : std::vector<std::array<std::int64_t, 4>>{
           {0, 4, 8, 2}, {3, 0, 8, 2}, {3, 4, 0, 2}, {3, 4, 8, 0}, {0, 0, 0, 0}}) {
    OracleCase c{test::make_problem(M, N, K, G, Format::e4m3, Format::e4m3,
                                    std::vector<std::uint8_t>(M * K, 0x38),
                                    std::vector<std::uint8_t>(G * N * K, 0x38), Scaling::none, {},
                                    {}, std::vector<std::int32_t>(M, G ? std::int32_t(G - 1) : -1)),
                 {AccumulationModel::exact, 1},
                 OutDtype::f32,
                 RowPolicy::zero};
    for (AccumulationModel m : kAllAccumulationModels) {
      c.m = {m, 1};
      EXPECT_EQ(cpu_bits(c), gpu_bits(c)) << c.describe();
    }
  }
}

// Groups of 0, 128 (exactly one promotion block of rows), 1 and 129 rows; K = 300 (blocks of 128,
// 128 and 44); every model; the oracle's rows spread over several blocks of the grid.
TEST(GpuOracle, Exact128GroupsAndPartialBlocks) {
  FP8REF_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("exact-128 groups", [] {
    std::vector<std::int32_t> map;
    for (std::int32_t g : {1, 2, 3})
      map.insert(map.end(), std::size_t(g == 1 ? 128 : g == 2 ? 1 : 129), g);
    OracleCase c = gen_oracle_case();
    c.p = gen_problem(map, 4, 150, 300);
    c.m = gen_model(c.p.scaling);
    RC_ASSERT(cpu_bits(c) == gpu_bits(c));
  }));
}

TEST(GpuOracle, DgradEqualsTheCpuOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("dgrad", [] {
    const std::int64_t G = *rc::gen::inRange<std::int64_t>(1, 4);
    const auto map = gen_map(G);
    const std::int64_t M = std::int64_t(map.size()), N = *rc::gen::inRange<std::int64_t>(0, 300),
                       K = *rc::gen::inRange<std::int64_t>(1, 140);
    const Format f = *gen_format();
    const auto dy = *gen_codes(f, M * N), w = *gen_codes(f, G * N * K);
    const BLayout lay = *rc::gen::element(BLayout::nk, BLayout::kn);
    const std::int64_t nb = G * ceil_div(N, 128) * ceil_div(K, 128);
    const auto sdy =
        *rc::gen::container<std::vector<float>>(std::size_t(M * ceil_div(N, 128)), gen_scale());
    const auto sw = *rc::gen::container<std::vector<float>>(std::size_t(nb), gen_scale());
    const DgradOperands op{M, N, K, G, f, f, dy, w, lay, Scaling::blockwise, sdy, sw};
    const ModelChoice m{
        *rc::gen::element(AccumulationModel::exact, AccumulationModel::hopper_promoted_blockwise,
                          AccumulationModel::fp32_sequential),
        1};
    std::vector<float> want(std::size_t(M * K), 7.0f), got(want);
    ref::grouped_gemm_dgrad(op, map, m, RowPolicy::untouched, {OutDtype::f32, want, {}, {}});
    gpu::oracle_grouped_gemm_dgrad(op, map, m, RowPolicy::untouched, {OutDtype::f32, got, {}, {}});
    for (std::size_t i = 0; i < want.size(); ++i)
      RC_ASSERT(std::bit_cast<std::uint32_t>(want[i]) == std::bit_cast<std::uint32_t>(got[i]));
  }));
}

TEST(GpuOracle, RejectsWhatTheCpuRejects) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::uint8_t> a(4 * 8, 0x38), b(8 * 8, 0x38);
  const std::vector<float> sa(4 * 1, 1.0f), sb(1, 1.0f);
  std::vector<float> y(4 * 8);
  const GroupedGemmOperands op{
      4, 8, 8, 1, Format::e4m3, Format::e4m3, a, b, BLayout::nk, Scaling::blockwise, sa, sb};
  const std::vector<std::int32_t> map{0, 0, -1, 0};
  EXPECT_THROW(gpu::oracle_grouped_gemm_forward(op, map, {AccumulationModel::hopper_unpromoted, 1},
                                                RowPolicy::zero, {OutDtype::f32, y, {}, {}}),
               std::invalid_argument);
  const std::vector<std::int32_t> bad{0, 0, 5, 0};
  EXPECT_THROW(gpu::oracle_grouped_gemm_forward(op, bad, {AccumulationModel::exact, 1},
                                                RowPolicy::zero, {OutDtype::f32, y, {}, {}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref::test
