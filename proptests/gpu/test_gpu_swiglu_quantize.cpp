// SwiGLU then quantize on the GPU (gpu/quantize.h swiglu_quantize) vs the oracle
// (reference/swiglu.h swiglu_merged_bf16, then reference/quantize of the f32 result): codes and
// scales bitwise for every GPU recipe over 1x128 (MX: 1x32) blocks and every layout, on finite
// bf16 gate/up values of every generator class plus the exp edges (exp(-g) overflowing,
// underflowing, subnormal); the kernel's exp path alone for all 2^16 bf16 gates; grid size
// changes no bit; bad input is refused before any launch.
// Inputs holding NaN or Inf are outside the bitwise contract (a NaN made inside SwiGLU takes the
// platform's sign), docs/recipes.md "SwiGLU".
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "campaign/gpu_quantize_case.h"
#include "cases/value_class.h"
#include "gpu/device.h"
#include "gpu/quantize.h"
#include "gpu/quantize_kernels.h"
#include "reference/swiglu.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

DeviceBuffer device_bytes(std::size_t n, std::uint8_t poison) {
  void* p = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&p, n ? n : 16));
  FP8REF_CUDA_CHECK(cudaMemset(p, poison, n ? n : 16));
  return DeviceBuffer(p);
}

std::vector<std::uint8_t> host_of(const DeviceBuffer& d, std::size_t n) {
  std::vector<std::uint8_t> h(n);
  if (n) FP8REF_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n, cudaMemcpyDeviceToHost));
  return h;
}

// A merged (rows, 2H) bf16 gate/up: generator values, non-finite ones replaced, and every 7th
// gate an exp edge (exp(-g) past f32 max, below the smallest subnormal, subnormal, near 1).
std::vector<std::uint16_t> make_gate_up(std::int64_t rows, std::int64_t H, int variant) {
  const auto vc = cases::kValueClasses[std::size_t(variant) % cases::kValueClasses.size()];
  const auto f32 = cases::fill_f32(vc, rows * 2 * H, variant % 7 - 3, 99 + variant);
  const float edges[] = {-89.0f, -88.5f, 104.0f, 88.0f, 95.0f, -1e-30f, 1e-30f, 3e38f, -3e38f};
  std::vector<std::uint16_t> gu;
  for (std::size_t i = 0; i < f32.size(); ++i) {
    std::uint32_t b = f32[i];
    if ((b & 0x7F800000u) == 0x7F800000u) b = 0x3F800000u | (b & 0x80000000u);
    if (i % 7 == 0 && std::int64_t(i) % (2 * H) < H)
      b = std::bit_cast<std::uint32_t>(edges[(i / 7) % std::size(edges)]);
    gu.push_back(std::uint16_t(b >> 16));
  }
  return gu;
}

// "" when the kernel equals the oracle, else the first difference.
std::string compare(const Recipe& r, std::int64_t rows, std::int64_t H, int variant,
                    gpu::LaunchOptions opt = {}) {
  const bool mx = is_mx(r.kind);
  const BlockGeometry g = mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
  const auto f32l = ScaleLayoutF32(variant % 5);
  const auto e8l = ScaleLayoutE8m0(variant % 3);
  const std::vector<std::uint16_t> gu = make_gate_up(rows, H, variant);
  const std::size_t n = std::size_t(rows * H);
  gpu::QuantizeOutput out{nullptr, n, nullptr, 0, f32l, e8l};
  out.scales_bytes = gpu::scale_bytes(r, g, rows, H, {}, out);
  DeviceBuffer dx = device_bytes(gu.size() * 2, 0), dc = device_bytes(n, 0xCD),
               ds = device_bytes(out.scales_bytes, 0xCD);
  if (!gu.empty())
    FP8REF_CUDA_CHECK(cudaMemcpy(dx.get(), gu.data(), gu.size() * 2, cudaMemcpyHostToDevice));
  out.codes = static_cast<std::uint8_t*>(dc.get()), out.scales = ds.get();
  gpu::swiglu_quantize({dx.get(), Source::bf16, rows, 2 * H}, r, out, nullptr, opt);
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> h = ref::swiglu_merged_bf16(gu, rows, H);
  const fuzz::ExpectedQuantize want =
      fuzz::expected_quantize(h.data(), Source::f32, rows, H, r, g, {}, f32l, e8l);
  const auto codes = host_of(dc, n), scales = host_of(ds, out.scales_bytes);
  for (std::size_t i = 0; i < n; ++i)
    if (codes[i] != want.q.codes[i])
      return "code " + std::to_string(i) + ": kernel " + std::to_string(codes[i]) + " oracle " +
             std::to_string(want.q.codes[i]) + " (h = " + std::to_string(h[i]) + ")";
  if (scales != want.scales) return "scales differ";
  return "";
}

std::string name_of(const Recipe& r, std::int64_t rows, std::int64_t H, int variant) {
  return std::string(to_string(r.kind)) + (r.elem == Format::e4m3 ? " e4m3" : " e5m2") +
         (r.pow2 ? " pow2 " : " ") + std::to_string(rows) + "x" + std::to_string(H) + " variant " +
         std::to_string(variant);
}

TEST(GpuSwigluQuantize, EqualsOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 128}, {64, 256}, {130, 384}, {32, 128}, {96, 1024}};
  int variant = 0, cases = 0, refused = 0;
  for (const Recipe& r : fuzz::gpu_recipes())
    for (auto [m, H] : shapes) {
      ++variant;
      const bool mx = is_mx(r.kind);
      const auto g = mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
      if (library_shape_check(r, g, m, H).rule != ShapeRule::accepted) {
        EXPECT_THROW(compare(r, m, H, variant), std::invalid_argument);
        ++refused;
        continue;
      }
      EXPECT_EQ(compare(r, m, H, variant), "") << name_of(r, m, H, variant);
      ++cases;
    }
  EXPECT_GT(cases, 0);
  std::printf("%d SwiGLU cases equal the oracle, %d shapes refused as the library does\n", cases,
              refused);
}

// The kernel's exp path alone (its table, filled once per device, and the cut-offs |g| < 2^-25
// -> 1, |g| >= 128 -> 0 / +Inf) for every one of the 2^16 bf16 gate patterns, the kernel's only
// input type: bitwise the oracle's exp_f32_correctly_rounded(-g); a NaN g gives a NaN (its sign
// and payload are the platform's, outside the bitwise contract, docs/recipes.md "SwiGLU").
TEST(GpuSwigluQuantize, ExpTableEqualsOracleForEveryBf16) {
  FP8REF_REQUIRE_DEVICE();
  DeviceBuffer d = device_bytes(65536 * 4, 0xCD);
  gpu::detail::swiglu_exp_probe(static_cast<float*>(d.get()), nullptr);
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<std::uint8_t> bytes = host_of(d, 65536 * 4);
  int mismatches = 0, nans = 0;
  std::string first;
  for (std::uint32_t g = 0; g < 65536; ++g) {
    std::uint32_t got = 0;
    std::memcpy(&got, bytes.data() + 4 * g, 4);
    const float x = std::bit_cast<float>(g << 16);
    const std::uint32_t want = std::bit_cast<std::uint32_t>(ref::exp_f32_correctly_rounded(-x));
    const bool ok = std::isnan(x) ? std::isnan(std::bit_cast<float>(got)) : got == want;
    nans += std::isnan(x);
    if (!ok && mismatches++ == 0)
      first = "g " + std::to_string(g) + ": kernel " + std::to_string(got) + " oracle " +
              std::to_string(want);
  }
  EXPECT_EQ(mismatches, 0) << first;
  EXPECT_EQ(nans, 2 * 127);  // every NaN pattern was checked as a NaN
  std::printf("65536 bf16 gates: exp(-g) bitwise the oracle's (%d NaN gates give NaN)\n", nans);
}

TEST(GpuSwigluQuantize, GridSizeChangesNoBit) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Recipe mx{RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  for (const Recipe& r : {te, mx})
    for (int blocks : {1, 5, 0})
      EXPECT_EQ(compare(r, 256, 512, 3, {blocks}), "")
          << name_of(r, 256, 512, 3) << " grid " << blocks;
}

TEST(GpuSwigluQuantize, BadInputIsRefusedBeforeAnyLaunch) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t(256));
  const gpu::QuantizeOutput ok{fake, 64 * 128, fake, 1 << 20};
  EXPECT_THROW(gpu::swiglu_quantize({fake, Source::f32, 64, 256}, te, ok, nullptr),
               std::invalid_argument);  // not bf16
  EXPECT_THROW(gpu::swiglu_quantize({fake, Source::bf16, 64, 200}, te, ok, nullptr),
               std::invalid_argument);  // H % 128 != 0
  gpu::QuantizeOutput small = ok;
  small.codes_bytes = 64 * 128 - 1;
  EXPECT_THROW(gpu::swiglu_quantize({fake, Source::bf16, 64, 256}, te, small, nullptr),
               std::invalid_argument);
  EXPECT_THROW(gpu::swiglu_quantize({fake + 2, Source::bf16, 64, 256}, te, ok, nullptr),
               std::invalid_argument);  // misaligned
}

}  // namespace
}  // namespace fp8ref
