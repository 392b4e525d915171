// GPU data movement (gpu/pad_permute.h) vs reference/pad_permute bitwise: pad / unpad over every
// tokens-per-group distribution of the campaign generators, alignments 16 / 32 / 128 and both
// empty-group policies, with poisoned padding (NaN / garbage) that must not reach a valid row;
// permute of FP8 rows with their scale rows in TE's compact and GEMM-ready (MN-major) layouts;
// the weighted combine in both rounding orders; grid sizes change no bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "campaign/gen/group_sizes.h"
#include "gpu/device.h"
#include "gpu/pad_permute.h"
#include "numerics/scale_layout.h"
#include "reference/pad_permute.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

// A device copy of host bytes (or `n` poisoned bytes), read back with host().
struct DeviceBytes {
  void* p = nullptr;
  std::size_t n;
  explicit DeviceBytes(std::size_t bytes, std::uint8_t poison = 0xAB) : n(bytes) {
    FP8REF_CUDA_CHECK(cudaMalloc(&p, n ? n : 16));
    FP8REF_CUDA_CHECK(cudaMemset(p, poison, n ? n : 16));
  }
  template <class T>
  explicit DeviceBytes(const std::vector<T>& v) : DeviceBytes(v.size() * sizeof(T)) {
    if (n) FP8REF_CUDA_CHECK(cudaMemcpy(p, v.data(), n, cudaMemcpyHostToDevice));
  }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  std::vector<std::uint8_t> host() const {
    FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint8_t> h(n);
    if (n) FP8REF_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = std::uint8_t(rng() | 1);
  return v;
}

TEST(GpuPad, PadAndUnpadEqualOracleOnEveryDistribution) {
  FP8REF_REQUIRE_DEVICE();
  int n = 0;
  for (auto dist : gen::kSizeDists)
    for (std::int64_t align : {16, 32, 128})
      for (auto empty : {ref::EmptyGroupPolicy::keep_empty, ref::EmptyGroupPolicy::one_block})
        for (std::int64_t row_bytes : {1, 4, 16, 112, 7168}) {
          const auto sizes = gen::make_sizes(dist, 1 + n % 9, 300, align, 77 + n);
          ++n;
          const ref::PadPlan plan = ref::plan_padding(sizes, align, empty);
          const auto in = random_bytes(std::size_t(plan.rows_in * row_bytes), n);
          std::vector<std::uint8_t> want(std::size_t(plan.capacity * row_bytes));
          ref::pad_rows(plan, {in, plan.rows_in, row_bytes}, {want, plan.capacity, row_bytes});
          const auto gempty = empty == ref::EmptyGroupPolicy::keep_empty
                                  ? gpu::EmptyGroups::keep_empty
                                  : gpu::EmptyGroups::one_block;
          DeviceBytes din(in), dout(want.size());
          gpu::pad_rows({din.p, plan.rows_in, row_bytes}, sizes, align, gempty,
                        {dout.p, plan.capacity, row_bytes}, nullptr, n % 3 == 0 ? 1 : 0);
          ASSERT_EQ(dout.host(), want) << gen::to_string(dist) << " align " << align;
          // Unpad from a padded buffer whose padding rows are poisoned (0xFF: NaN in every type).
          std::vector<std::uint8_t> poisoned = want;
          std::vector<bool> valid(std::size_t(plan.capacity), false);
          for (std::size_t g = 0; g < sizes.size(); ++g)
            for (std::int64_t i = 0; i < sizes[g]; ++i)
              valid[std::size_t(plan.starts[g] + i)] = true;
          for (std::int64_t r = 0; r < plan.capacity; ++r)
            if (!valid[std::size_t(r)])
              std::memset(poisoned.data() + r * row_bytes, 0xFF, std::size_t(row_bytes));
          DeviceBytes dpad(poisoned), dback(in.size());
          gpu::unpad_rows({dpad.p, plan.capacity, row_bytes}, sizes, align, gempty,
                          {dback.p, plan.rows_in, row_bytes}, nullptr, n % 2 ? 2 : 0);
          ASSERT_EQ(dback.host(), in) << gen::to_string(dist) << " align " << align;
        }
}

struct RoutingCase {
  std::int64_t tokens, k, experts;
  std::vector<std::int32_t> expert;
  std::vector<float> prob;
};

// Mode 0: k distinct random experts (a slot dropped with probability 1/8); 1: every token to
// expert 0 first; 2: every slot dropped. Probabilities of dropped slots are NaN (poison).
RoutingCase make_routing(std::int64_t T, std::int64_t k, std::int64_t E, int mode,
                         std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  RoutingCase r{T, k, E, {}, {}};
  std::vector<std::int32_t> perm(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t e = 0; e < E; ++e) perm[std::size_t(e)] = std::int32_t(e);
    std::shuffle(perm.begin(), perm.end(), rng);
    if (mode == 1) std::swap(perm[0], *std::find(perm.begin(), perm.end(), 0));
    for (std::int64_t j = 0; j < k; ++j) {
      const bool drop = mode == 2 || (mode == 0 && rng() % 8 == 0);
      r.expert.push_back(drop ? -1 : perm[std::size_t(j)]);
      const float p = std::ldexp(float(rng() % 1000 + 1), -10);
      r.prob.push_back(drop ? std::bit_cast<float>(0x7FC00001u) : p);
    }
  }
  return r;
}

TEST(GpuPermute, RowsAndScaleRowsInBothLayoutsEqualOracle) {
  FP8REF_REQUIRE_DEVICE();
  int n = 0;
  for (int mode : {0, 1, 2})
    for (auto [T, k, E] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{0, 2, 4},
                           {1, 1, 1},
                           {37, 2, 8},
                           {300, 4, 16},
                           {129, 8, 64}}) {
      ++n;
      const RoutingCase rc = make_routing(T, k, E, mode, 1000 + n);
      const ref::Routing rr{T, k, E, rc.expert, rc.prob};
      const gpu::HostRouting gr{T, k, E, rc.expert};
      const ref::PermutePlan plan = ref::plan_permute(rr);
      const std::int64_t P = std::int64_t(plan.source_token.size()), K = 512, SC = K / 128;
      const auto codes = random_bytes(std::size_t(T * K), n);
      std::vector<std::uint8_t> want(std::size_t(P * K));
      ref::permute_rows(plan, {codes, T, K}, {want, P, K});
      DeviceBytes dc(codes), dout(want.size());
      gpu::permute_rows({dc.p, T, K}, gr, {dout.p, P, K}, nullptr, n % 2 ? 3 : 0);
      ASSERT_EQ(dout.host(), want) << "codes, mode " << mode << " T " << T;
      // Scales: compact rows (T, K/128) f32, and the GEMM-ready MN-major serialisation.
      const auto sbytes = random_bytes(std::size_t(T * SC * 4), 5 * n);
      std::vector<std::uint8_t> storage;
      const ref::RowsView ws =
          ref::permuted_scale_rows(plan, BlockGeometry::b1x128, {sbytes, T, SC * 4}, storage);
      DeviceBytes ds(sbytes), dsout(std::size_t(P * SC * 4));
      gpu::permute_rows({ds.p, T, SC * 4}, gr, {dsout.p, P, SC * 4}, nullptr);
      const std::vector<std::uint8_t> want_rows(ws.bytes.begin(), ws.bytes.end());
      ASSERT_EQ(dsout.host(), want_rows) << "compact scales, mode " << mode;
      ScaleGridF32 in_grid{1, T, SC, std::vector<std::uint32_t>(std::size_t(T * SC))},
          out_grid{1, P, SC, std::vector<std::uint32_t>(std::size_t(P * SC))};
      if (T) std::memcpy(in_grid.bits.data(), sbytes.data(), sbytes.size());
      if (P) std::memcpy(out_grid.bits.data(), want_rows.data(), want_rows.size());
      const auto in_mn = serialize(ScaleLayoutF32::tma_mn_major, in_grid);
      const auto want_mn = serialize(ScaleLayoutF32::tma_mn_major, out_grid);
      DeviceBytes dmn(in_mn), dmn_out(want_mn.size());
      gpu::permute_scales_mn_major(static_cast<const std::uint32_t*>(dmn.p), SC, gr,
                                   static_cast<std::uint32_t*>(dmn_out.p), want_mn.size() / 4,
                                   nullptr);
      ASSERT_EQ(dmn_out.host(), want_mn) << "MN-major scales, mode " << mode;
    }
}

TEST(GpuPermute, CombineEqualsOracleInBothRoundingOrders) {
  FP8REF_REQUIRE_DEVICE();
  int n = 0;
  for (int mode : {0, 1, 2})
    for (auto [T, k, E] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{0, 2, 4},
                           {37, 2, 8},
                           {300, 4, 16},
                           {129, 8, 64}})
      for (auto c : {ref::CombineRounding::mul_then_add, ref::CombineRounding::fma}) {
        ++n;
        const RoutingCase rc = make_routing(T, k, E, mode, 2000 + n);
        const ref::Routing rr{T, k, E, rc.expert, rc.prob};
        const ref::PermutePlan plan = ref::plan_permute(rr);
        const std::int64_t P = std::int64_t(plan.source_token.size()), H = 96;
        std::mt19937_64 rng(n);
        std::vector<float> y(std::size_t(P * H));
        for (auto& v : y) v = std::ldexp(float(std::int64_t(rng() % 20001) - 10000), -7);
        std::vector<float> want(std::size_t(T * H));
        ref::unpermute_combine(plan, rr, y, H, c, want);
        DeviceBytes dy(y), dp(rc.prob), dout(want.size() * 4);
        gpu::unpermute_combine(
            static_cast<const float*>(dy.p), H, {T, k, E, rc.expert},
            static_cast<const float*>(dp.p),
            c == ref::CombineRounding::fma ? gpu::Combine::fma : gpu::Combine::mul_then_add,
            static_cast<float*>(dout.p), want.size(), nullptr, n % 2 ? 5 : 0);
        std::vector<std::uint8_t> want_bytes(want.size() * 4);
        if (!want.empty()) std::memcpy(want_bytes.data(), want.data(), want_bytes.size());
        ASSERT_EQ(dout.host(), want_bytes) << "mode " << mode << " T " << T << " k " << k;
      }
}

TEST(GpuPermute, BadRoutingAndShapesAreRefusedBeforeAnyLaunch) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::int32_t> out_of_range = {0, 9}, twice = {1, 1};
  auto* fake = reinterpret_cast<void*>(std::uintptr_t(256));
  EXPECT_THROW(gpu::permute_rows({fake, 1, 16}, {1, 2, 4, out_of_range}, {fake, 2, 16}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(gpu::permute_rows({fake, 1, 16}, {1, 2, 4, twice}, {fake, 2, 16}, nullptr),
               std::invalid_argument);
  const std::vector<std::int32_t> ok = {0, 1};
  EXPECT_THROW(gpu::permute_rows({fake, 1, 16}, {1, 2, 4, ok}, {fake, 1, 16}, nullptr),
               std::invalid_argument);  // output rows != permuted rows
  const std::vector<std::int64_t> sizes = {3, 0, 5};
  EXPECT_THROW(
      gpu::pad_rows({fake, 8, 4}, sizes, 16, gpu::EmptyGroups::keep_empty, {fake, 16, 4}, nullptr),
      std::invalid_argument);  // capacity is 64 rows
  EXPECT_THROW(
      gpu::pad_rows({fake, 8, 4}, sizes, 0, gpu::EmptyGroups::keep_empty, {fake, 64, 4}, nullptr),
      std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
