// The K-grouped wgrad kernel (gpu/grouped_gemm.h grouped_gemm_wgrad) == ref::grouped_gemm_wgrad
// under the declared model, bitwise (docs/gpu_gemm.md §5): drawn group sizes (multiples of 16,
// empty groups, padding tokens with NaN codes and NaN scales), blockwise and tensorwise, e4m3 /
// e5m2, f32 and bf16; an empty group's dW is C exactly (-0 included); bad input refused.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "campaign/gen/values.h"
#include "gpu/device.h"
#include "gpu/grouped_gemm.h"
#include "proptests/common/test_level.h"
#include "reference/grouped_gemm.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

struct WgradCase {
  std::int64_t M = 0, N = 0, K = 0, G = 0;
  Format fdy = Format::e4m3, fx = Format::e4m3;
  Scaling scaling = Scaling::blockwise;
  OutDtype out = OutDtype::f32;
  std::vector<std::uint8_t> dy, x, dy_t, x_t;  // (M, N), (M, K) and their transposes
  std::vector<float> sdy, sx, c;
  std::vector<std::int64_t> offs;
};

std::vector<std::uint8_t> transpose(const std::vector<std::uint8_t>& a, std::int64_t rows,
                                    std::int64_t cols) {
  std::vector<std::uint8_t> t(a.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[std::size_t(c * rows + r)] = a[std::size_t(r * cols + c)];
  return t;
}

// Sizes and tail multiples of 16; padding tokens hold NaN codes, their scale rows NaN.
WgradCase make_wgrad(std::vector<std::int64_t> sizes, std::int64_t tail, std::int64_t N,
                     std::int64_t K, Scaling s, Format fdy, Format fx, OutDtype out,
                     std::uint64_t seed) {
  WgradCase w;
  w.N = N, w.K = K, w.G = std::int64_t(sizes.size()), w.scaling = s, w.fdy = fdy, w.fx = fx;
  w.out = out;
  std::int64_t rows = 0;
  for (auto m : sizes) w.offs.push_back(w.M += m), rows += (m + 127) / 128;
  const std::int64_t valid = w.M, tail_rows = (tail + 127) / 128;
  w.M += tail;
  w.dy = gen::fill_codes(fdy, gen::ValueClass::normal, w.M * N, seed);
  w.x = gen::fill_codes(fx, gen::ValueClass::outliers, w.M * K, seed + 1);
  std::fill(w.dy.begin() + valid * N, w.dy.end(), std::uint8_t(0x7F));
  std::fill(w.x.begin() + valid * K, w.x.end(), std::uint8_t(0x7F));
  w.dy_t = transpose(w.dy, w.M, N), w.x_t = transpose(w.x, w.M, K);
  std::mt19937_64 rng(seed + 2);
  const auto scale = [&] {
    return std::ldexp(1.0f + float(rng() % 8) / 8.0f, int(rng() % 17) - 8);
  };
  const std::int64_t srows = s == Scaling::blockwise ? rows + tail_rows : 1;
  for (std::int64_t i = 0; i < srows * (s == Scaling::blockwise ? N : 1); ++i)
    w.sdy.push_back(i >= rows * N && s == Scaling::blockwise ? NAN : scale());
  for (std::int64_t i = 0; i < srows * (s == Scaling::blockwise ? K : 1); ++i)
    w.sx.push_back(i >= rows * K && s == Scaling::blockwise ? NAN : scale());
  for (std::int64_t i = 0; i < w.G * N * K; ++i)
    w.c.push_back(i % 97 == 0 ? -0.0f
                              : std::ldexp(float(rng() % 200) - 100.0f, int(rng() % 9) - 4));
  return w;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& f, const std::vector<std::uint16_t>& h,
                                   OutDtype d) {
  std::vector<std::uint32_t> b;
  if (d == OutDtype::f32)
    for (float v : f) b.push_back(std::bit_cast<std::uint32_t>(v));
  else
    b.assign(h.begin(), h.end());
  return b;
}

std::vector<std::uint32_t> oracle_bits(const WgradCase& w) {
  std::vector<float> f(w.out == OutDtype::f32 ? std::size_t(w.G * w.N * w.K) : 0);
  std::vector<std::uint16_t> h(w.out == OutDtype::f32 ? 0 : std::size_t(w.G * w.N * w.K));
  const ref::WgradOperands op{w.M,  w.N, w.K,       w.G,   w.fdy, w.fx,
                              w.dy, w.x, w.scaling, w.sdy, w.sx,  w.c};
  ref::grouped_gemm_wgrad(op, w.offs, gpu::grouped_gemm_declared_model(w.scaling),
                          GemmOutput{w.out, f, h, {}});
  return bits_of(f, h, w.out);
}

std::vector<std::uint32_t> kernel_bits(const WgradCase& w) {
  std::vector<float> f(w.out == OutDtype::f32 ? std::size_t(w.G * w.N * w.K) : 0);
  std::vector<std::uint16_t> h(w.out == OutDtype::f32 ? 0 : std::size_t(w.G * w.N * w.K));
  const gpu::HostWgradOperands op{w.M,    w.N,   w.K,       w.G,   w.fdy, w.fx,
                                  w.dy_t, w.x_t, w.scaling, w.sdy, w.sx,  w.c};
  gpu::grouped_gemm_wgrad_host(op, w.offs, GemmOutput{w.out, f, h, {}});
  return bits_of(f, h, w.out);
}

std::string first_mismatch(const WgradCase& w, const std::vector<std::uint32_t>& got,
                           const std::vector<std::uint32_t>& want) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      const std::int64_t g = std::int64_t(i) / (w.N * w.K), n = std::int64_t(i) / w.K % w.N;
      return "group " + std::to_string(g) + " n " + std::to_string(n) + " k " +
             std::to_string(std::int64_t(i) % w.K) + ": kernel " + std::to_string(got[i]) +
             ", model " + std::to_string(want[i]) + " (" + to_string(w.scaling) + ", " +
             to_string(w.out) + ", M " + std::to_string(w.M) + ")";
    }
  return got.size() == want.size() ? "" : "sizes differ";
}

TEST(GpuGroupedWgrad, FixedGroupsEqualTheDeclaredModelBitwise) {
  FP8REF_REQUIRE_DEVICE();
  for (Scaling s : {Scaling::blockwise, Scaling::tensorwise})
    for (OutDtype out : {OutDtype::f32, OutDtype::bf16})
      for (auto [fdy, fx] : {std::pair{Format::e4m3, Format::e4m3}, {Format::e5m2, Format::e4m3}}) {
        const WgradCase w = make_wgrad({0, 48, 256, 0, 400, 16}, 32, 256, 384, s, fdy, fx, out, 17);
        EXPECT_EQ(first_mismatch(w, kernel_bits(w), oracle_bits(w)), "");
      }
}

TEST(GpuGroupedWgrad, EmptyGroupGivesCExactly) {
  FP8REF_REQUIRE_DEVICE();
  const WgradCase w = make_wgrad({0, 64, 0}, 0, 128, 128, Scaling::blockwise, Format::e4m3,
                                 Format::e4m3, OutDtype::f32, 5);
  const auto got = kernel_bits(w);
  for (std::int64_t g : {0, 2})
    for (std::int64_t i = 0; i < w.N * w.K; ++i)
      ASSERT_EQ(got[std::size_t(g * w.N * w.K + i)],
                std::bit_cast<std::uint32_t>(w.c[std::size_t(g * w.N * w.K + i)]));
}

TEST(GpuGroupedWgrad, DrawnGroupsEqualTheDeclaredModelBitwise) {
  FP8REF_REQUIRE_DEVICE();
  test::check_property(rc::detail::toProperty([] {
                         const auto G = *rc::gen::inRange<std::int64_t>(1, 9);
                         std::vector<std::int64_t> sizes;
                         for (std::int64_t g = 0; g < G; ++g)
                           sizes.push_back(16 * *rc::gen::weightedOneOf<std::int64_t>(
                                                    {{1, rc::gen::just<std::int64_t>(0)},
                                                     {3, rc::gen::inRange<std::int64_t>(1, 26)}}));
                         const auto tail = 16 * *rc::gen::inRange<std::int64_t>(0, 10);
                         const auto s = *rc::gen::element(Scaling::blockwise, Scaling::tensorwise);
                         const auto out = *rc::gen::element(OutDtype::f32, OutDtype::bf16);
                         const auto f = *rc::gen::element(Format::e4m3, Format::e5m2);
                         const WgradCase w =
                             make_wgrad(sizes, tail, 128 * *rc::gen::inRange(1, 3),
                                        128 * *rc::gen::inRange(1, 3), s, f, Format::e4m3, out,
                                        *rc::gen::arbitrary<std::uint64_t>());
                         RC_ASSERT(first_mismatch(w, kernel_bits(w), oracle_bits(w)) == "");
                       }),
                       30);
}

TEST(GpuGroupedWgrad, BadInputIsRefusedBeforeAnyLaunch) {
  const auto* p8 = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(1) << 20);
  const auto* pf = reinterpret_cast<const float*>(std::uintptr_t(1) << 21);
  void* py = reinterpret_cast<void*>(std::uintptr_t(1) << 22);
  // M = 256 tokens, groups of 128 and 128: 2 scale rows.
  const gpu::DeviceWgradOperands ok{
      256,     128, 256,     2, Format::e4m3, Format::e4m3, p8, p8, Scaling::blockwise, pf,
      2 * 128, pf,  2 * 256, pf};
  const gpu::DeviceGemmOutput dw{OutDtype::f32, py, 2 * 128 * 256};
  const std::vector<std::int64_t> offs = {128, 256};
  auto op = ok;
  EXPECT_THROW(gpu::grouped_gemm_wgrad(op, std::vector<std::int64_t>{120, 256}, dw, nullptr),
               std::invalid_argument);  // offset not a multiple of 16
  EXPECT_THROW(gpu::grouped_gemm_wgrad(op, std::vector<std::int64_t>{200, 128}, dw, nullptr),
               std::invalid_argument);  // out of order
  op.scale_x_size = 7;
  EXPECT_THROW(gpu::grouped_gemm_wgrad(op, offs, dw, nullptr), std::invalid_argument);
  op = ok, op.K = 200;
  EXPECT_THROW(gpu::grouped_gemm_wgrad(op, offs, dw, nullptr), std::invalid_argument);
  op = ok, op.scaling = Scaling::rowwise;
  EXPECT_THROW(gpu::grouped_gemm_wgrad(op, offs, dw, nullptr), std::invalid_argument);
  EXPECT_THROW(gpu::grouped_gemm_wgrad(ok, offs, {OutDtype::f32, py, 5}, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
