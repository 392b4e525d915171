// Dual-orientation quantize (gpu/quantize.h quantize_dual) vs the oracle (reference/quantize,
// serialised by numerics/scale_layout.h): the rowwise output equals the oracle's 1x128 (MX: 1x32)
// quantization and the columnwise output its 128x1 (32x1) quantization, codes and scales bitwise,
// for every GPU recipe, bf16 (one read) and f32 (two quantizes), partial last tiles, every
// layout; grid size changes no bit; bad input is refused before any launch.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "campaign/gpu_quantize_case.h"
#include "cases/value_class.h"
#include "gpu/device.h"
#include "gpu/quantize.h"

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

struct Case {
  Recipe r;
  Source src;
  std::int64_t rows, cols;
  ScaleLayoutF32 f32l;
  ScaleLayoutE8m0 e8l;
  int variant;
};

// "" when both orientations equal the oracle, else the first difference.
std::string compare_dual(const Case& c, gpu::LaunchOptions opt = {}) {
  const auto vc = cases::kValueClasses[std::size_t(c.variant) % cases::kValueClasses.size()];
  const std::vector<std::uint32_t> f32 =
      cases::fill_f32(vc, c.rows * c.cols, c.variant % 11 - 5, 4321 + c.variant);
  std::vector<std::uint16_t> bf16;
  for (auto b : f32) bf16.push_back(std::uint16_t(b >> 16));
  const void* host = c.src == Source::f32 ? static_cast<const void*>(f32.data()) : bf16.data();
  const std::size_t n = std::size_t(c.rows * c.cols), elem = c.src == Source::f32 ? 4 : 2;
  const bool mx = is_mx(c.r.kind);
  const BlockGeometry gr = mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
  const BlockGeometry gc = mx ? BlockGeometry::b32x1 : BlockGeometry::b128x1;
  gpu::QuantizeOutput row{nullptr, n, nullptr, 0, c.f32l, c.e8l};
  gpu::QuantizeOutput col = row;
  row.scales_bytes = gpu::scale_bytes(c.r, gr, c.rows, c.cols, {}, row);
  col.scales_bytes = gpu::scale_bytes(c.r, gc, c.rows, c.cols, {}, col);
  DeviceBuffer dx = device_bytes(n * elem, 0), drc = device_bytes(n, 0xCD),
               drs = device_bytes(row.scales_bytes, 0xCD), dcc = device_bytes(n, 0xCD),
               dcs = device_bytes(col.scales_bytes, 0xCD);
  if (n) FP8REF_CUDA_CHECK(cudaMemcpy(dx.get(), host, n * elem, cudaMemcpyHostToDevice));
  row.codes = static_cast<std::uint8_t*>(drc.get()), row.scales = drs.get();
  col.codes = static_cast<std::uint8_t*>(dcc.get()), col.scales = dcs.get();
  gpu::quantize_dual({dx.get(), c.src, c.rows, c.cols}, c.r, row, col, nullptr, opt);
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::pair<BlockGeometry, const gpu::QuantizeOutput*> sides[] = {{gr, &row}, {gc, &col}};
  const DeviceBuffer* bufs[2][2] = {{&drc, &drs}, {&dcc, &dcs}};
  for (int s = 0; s < 2; ++s) {
    const auto& [g, out] = sides[s];
    const fuzz::ExpectedQuantize want =
        fuzz::expected_quantize(host, c.src, c.rows, c.cols, c.r, g, {}, c.f32l, c.e8l);
    const auto codes = host_of(*bufs[s][0], n), scales = host_of(*bufs[s][1], out->scales_bytes);
    const char* side = s == 0 ? "rowwise" : "columnwise";
    for (std::size_t i = 0; i < n; ++i)
      if (codes[i] != want.q.codes[i])
        return std::string(side) + " code " + std::to_string(i) + ": kernel " +
               std::to_string(codes[i]) + " oracle " + std::to_string(want.q.codes[i]);
    if (scales != want.scales) {
      std::size_t i = 0;
      while (i < scales.size() && i < want.scales.size() && scales[i] == want.scales[i]) ++i;
      return std::string(side) + " scale byte " + std::to_string(i) + " of " +
             std::to_string(scales.size()) + "/" + std::to_string(want.scales.size());
    }
  }
  return "";
}

std::string name_of(const Case& c) {
  return std::string(to_string(c.r.kind)) + (c.r.elem == Format::e4m3 ? " e4m3" : " e5m2") +
         (c.r.pow2 ? " pow2" : "") + (c.src == Source::bf16 ? " bf16 " : " f32 ") +
         std::to_string(c.rows) + "x" + std::to_string(c.cols) + " variant " +
         std::to_string(c.variant);
}

TEST(GpuQuantizeDual, BothOrientationsEqualOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {128, 128}, {256, 384}, {130, 256}, {32, 128}, {96, 1024}, {1, 128}};
  int variant = 0, cases = 0, refused = 0;
  for (const Recipe& r : fuzz::gpu_recipes())
    for (Source src : {Source::bf16, Source::f32})
      for (auto [m, k] : shapes) {
        const Case c{r,        src, m, k, ScaleLayoutF32(variant % 5), ScaleLayoutE8m0(variant % 3),
                     ++variant};
        const bool mx = is_mx(r.kind);
        const auto rule_r =
            library_shape_check(r, mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128, m, k).rule;
        const auto rule_c =
            library_shape_check(r, mx ? BlockGeometry::b32x1 : BlockGeometry::b128x1, m, k).rule;
        if (rule_r != ShapeRule::accepted || rule_c != ShapeRule::accepted) {
          EXPECT_THROW(compare_dual(c), std::invalid_argument) << name_of(c);
          ++refused;
          continue;
        }
        EXPECT_EQ(compare_dual(c), "") << name_of(c);
        ++cases;
      }
  EXPECT_GT(cases, 0);
  std::printf("%d dual cases equal the oracle, %d shapes refused as the library does\n", cases,
              refused);
}

TEST(GpuQuantizeDual, GridSizeChangesNoBit) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Recipe mx{RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  // deepgemm: its tiles with a NaN or Inf (value class nan_inf, variant 5) are cast again with
  // the non-saturating fix (gpu/quantize_dual_kernels.cu fix_tile), also in the strided grid loop.
  const Recipe dg{RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, true, 0.0f};
  // MX with row-major E8M0 scales takes the packed row-scale stores (a barrier a grid step).
  for (const Recipe& r : {te, dg, mx})
    for (ScaleLayoutE8m0 e8l : {ScaleLayoutE8m0::blocked_128x4, ScaleLayoutE8m0::row_major})
      for (int variant : {9, 5})           // value classes near_max, nan_inf
        for (int blocks : {1, 3, 7, 0}) {  // 7: a grid stride that leaves a tail
          const Case c{r, Source::bf16, 384, 512, ScaleLayoutF32::tma_mn_major, e8l, variant};
          EXPECT_EQ(compare_dual(c, {blocks}), "") << name_of(c) << " with " << blocks << " blocks";
        }
}

TEST(GpuQuantizeDual, BadInputIsRefusedBeforeAnyLaunch) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t(256));
  const gpu::QuantizeOutput ok{fake, 64 * 128, fake, 1 << 20};
  gpu::QuantizeOutput small = ok;
  small.codes_bytes = 64 * 128 - 1;
  EXPECT_THROW(gpu::quantize_dual({fake, Source::bf16, 64, 128}, te, ok, small, nullptr),
               std::invalid_argument);
  EXPECT_THROW(gpu::quantize_dual({fake, Source::bf16, 64, 128}, te, small, ok, nullptr),
               std::invalid_argument);
  small = ok;
  small.scales_bytes = 4;
  EXPECT_THROW(gpu::quantize_dual({fake, Source::bf16, 64, 128}, te, ok, small, nullptr),
               std::invalid_argument);
  const Recipe cpu{RecipeKind::torchao, Format::e4m3, Runtime::torch_cpu, false, 0.0f};
  EXPECT_THROW(gpu::quantize_dual({fake, Source::bf16, 64, 128}, cpu, ok, ok, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
