// The GPU oracle's emulation (gpu/oracle/emu_*.h, compiled here for the host) == the CPU oracle
// (reference/grouped_gemm.h) bit for bit, every model × scaling × dtype × split-K × epilogue,
// NaN / Inf poison included. Label cpu: runs in CI without a GPU; the gpu suites then check only
// the kernel's launch and indexing on the device (docs/gpu_oracle.md §5).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdio>

#include "gpu/oracle/forward_view.h"
#include "proptests/gpu/oracle/oracle_cases.h"

namespace fp8ref::test {
namespace {

// The emulation's bits of every element of valid rows (rows of no group: 0xA5A5 poison, or +0).
std::vector<std::uint32_t> emulated_bits(const OracleCase& c) {
  const float one = 1.0f;
  const bool unscaled = c.p.scaling == Scaling::none;
  const gpu::emu::ForwardView v = gpu::make_forward_view(
      c.p.operands(), c.m, c.out, c.p.a.data(), c.p.b.data(), c.p.group_of.data(),
      unscaled ? &one : c.p.sa.data(), unscaled ? &one : c.p.sb.data());
  const std::uint32_t poison = c.out == OutDtype::f32 ? 0xA5A5A5A5u : 0xA5A5u;
  std::vector<std::uint32_t> bits(std::size_t(c.p.M * c.p.N), poison);
  for (std::int64_t r = 0; r < c.p.M; ++r) {
    const std::int32_t g = c.p.group_of[std::size_t(r)];
    for (std::int64_t n = 0; n < c.p.N; ++n)
      if (g >= 0)
        bits[std::size_t(r * c.p.N + n)] = gpu::emu::forward_element(v, r, g, n);
      else if (c.policy == RowPolicy::zero)
        bits[std::size_t(r * c.p.N + n)] = 0;
  }
  return bits;
}

std::string hex(std::uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

void expect_same(const OracleCase& c, const std::vector<std::uint32_t>& want,
                 const std::vector<std::uint32_t>& got) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i])
      RC_FAIL(c.describe() + ": element (" + std::to_string(i / std::size_t(c.p.N)) + ", " +
              std::to_string(i % std::size_t(c.p.N)) + ") CPU " + hex(want[i]) + " emulated " +
              hex(got[i]));
}

RC_GTEST_PROP(GpuOracleEmulated, EveryModelEqualsTheCpuOracleBitwise, ()) {
  const OracleCase c = gen_oracle_case();
  expect_same(c, cpu_bits(c), emulated_bits(c));
}

// Products across the whole exponent range and cancelling pairs, where the models disagree.
RC_GTEST_PROP(GpuOracleEmulated, CancellationAndWideExponents, ()) {
  OracleCase c = gen_oracle_case(8, 200);
  for (std::size_t i = 0; i + 1 < c.p.a.size(); i += 2) c.p.a[i + 1] = c.p.a[i] ^ 0x80;
  expect_same(c, cpu_bits(c), emulated_bits(c));
}

// Empty shapes: no rows, no columns, K = 0, no groups, every row outside every group.
TEST(GpuOracleEmulated, EmptyShapesAndGroups) {
  for (const auto& [M, N, K, G] : std::vector<std::array<std::int64_t, 4>>{
           {0, 4, 8, 2}, {3, 0, 8, 2}, {3, 4, 0, 2}, {3, 4, 8, 0}, {3, 4, 130, 3}}) {
    OracleCase c{test::make_problem(M, N, K, G, Format::e4m3, Format::e5m2,
                                    std::vector<std::uint8_t>(M * K, 0x38),
                                    std::vector<std::uint8_t>(G * N * K, 0x3C), Scaling::none, {},
                                    {}, std::vector<std::int32_t>(M, G ? std::int32_t(G - 1) : -1)),
                 {AccumulationModel::hopper_promoted_tensorwise, 1},
                 OutDtype::bf16,
                 RowPolicy::zero};
    for (AccumulationModel m : kAllAccumulationModels) {
      c.m = {m, 1};
      EXPECT_EQ(cpu_bits(c), emulated_bits(c)) << c.describe();
    }
  }
}

// +Inf in the first 128-block, -Inf in the second, NaN in the third: the promoted sums, split-K
// slices and fp32_sequential meet the default NaN of Inf - Inf and the NaN code's NaN in one
// operation, where x86 alone would let the compiler's operand order pick the bits.
TEST(GpuOracleEmulated, TwoNaNsMeetInTheOrderWritten) {
  std::vector<std::uint8_t> a(384, 0x3C), b(384, 0x3C);  // e5m2 1.0
  a[0] = 0x7C, a[128] = 0xFC, a[256] = 0x7E;             // +Inf, -Inf, NaN
  const std::vector<float> one{1.0f}, one_b{1.0f}, blk(3, 1.0f);
  for (const auto& [model, scaling, split] :
       std::vector<std::tuple<AccumulationModel, Scaling, int>>{
           {AccumulationModel::hopper_promoted_tensorwise, Scaling::tensorwise, 1},
           {AccumulationModel::hopper_promoted_rowwise, Scaling::tensorwise, 1},
           {AccumulationModel::hopper_unpromoted, Scaling::tensorwise, 3},
           {AccumulationModel::hopper_promoted_blockwise, Scaling::blockwise, 1},
           {AccumulationModel::fp32_sequential, Scaling::tensorwise, 1},
           {AccumulationModel::exact, Scaling::tensorwise, 1}}) {
    const bool bw = scaling == Scaling::blockwise;
    OracleCase c{test::make_problem(1, 1, 384, 1, Format::e5m2, Format::e5m2, a, b, scaling,
                                    bw ? blk : one, bw ? blk : one_b, std::vector<std::int32_t>{0}),
                 {model, split},
                 OutDtype::f32,
                 RowPolicy::zero};
    const auto want = cpu_bits(c);
    EXPECT_EQ(want, emulated_bits(c)) << c.describe();
    EXPECT_GT(want[0] & 0x7FFFFFFFu, 0x7F800000u) << c.describe() << ": not NaN";
  }
}

}  // namespace
}  // namespace fp8ref::test
