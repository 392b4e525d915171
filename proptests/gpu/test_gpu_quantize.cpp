// GPU quantize kernels (gpu/quantize.h) vs the oracle (reference/quantize, serialised by
// numerics/scale_layout.h): every GPU recipe x geometry x source type x scale layout, global and
// per-group blocking, bitwise; grid size and stream change no bit; bad input is refused with
// std::invalid_argument before any launch (docs/recipes.md "GPU kernels").
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "campaign/gen/values.h"
#include "campaign/gpu_quantize_case.h"
#include "gpu/device.h"
#include "gpu/quantize.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

struct Input {
  Source src;
  std::int64_t rows, cols;
  std::vector<std::uint32_t> f32;
  std::vector<std::uint16_t> bf16;
  const void* data() const {
    return src == Source::f32 ? static_cast<const void*>(f32.data()) : bf16.data();
  }
};

Input make_input(Source src, std::int64_t rows, std::int64_t cols, int variant) {
  const auto v = gen::kValueClasses[std::size_t(variant) % gen::kValueClasses.size()];
  Input in{src, rows, cols, gen::fill_f32(v, rows * cols, variant % 11 - 5, 1234 + variant), {}};
  for (auto b : in.f32) in.bf16.push_back(std::uint16_t(b >> 16));
  return in;
}

// Runs the kernel and the oracle; returns "" when equal, else where they differ.
std::string compare(const Input& in, const Recipe& r, BlockGeometry g,
                    const std::vector<std::int64_t>& ends, ScaleLayoutF32 f32l, ScaleLayoutE8m0 e8l,
                    gpu::LaunchOptions opt = {}) {
  const gpu::HostQuantized got =
      gpu::quantize_host(in.data(), in.src, in.rows, in.cols, r, g, ends, f32l, e8l, opt);
  const fuzz::ExpectedQuantize want =
      fuzz::expected_quantize(in.data(), in.src, in.rows, in.cols, r, g, ends, f32l, e8l);
  const auto first = [](const auto& a, const auto& b) {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
  };
  char buf[200];
  if (got.codes != want.q.codes) {
    const std::size_t i = first(got.codes, want.q.codes);
    std::snprintf(buf, sizeof buf, "code %zu: kernel 0x%02x oracle 0x%02x", i,
                  i < got.codes.size() ? got.codes[i] : 0,
                  i < want.q.codes.size() ? want.q.codes[i] : 0);
    return buf;
  }
  if (got.scales != want.scales) {
    const std::size_t i = first(got.scales, want.scales);
    std::snprintf(buf, sizeof buf, "scale byte %zu of %zu/%zu: kernel 0x%02x oracle 0x%02x", i,
                  got.scales.size(), want.scales.size(), i < got.scales.size() ? got.scales[i] : 0,
                  i < want.scales.size() ? want.scales[i] : 0);
    return buf;
  }
  return "";
}

std::string name_of(const Recipe& r, BlockGeometry g, Source src, std::int64_t m, std::int64_t k) {
  return std::string(to_string(r.kind)) + (r.elem == Format::e4m3 ? " e4m3" : " e5m2") +
         (r.pow2 ? " pow2" : "") + (r.epsilon != 0.0f ? " eps" : "") + " " +
         std::string(to_string(g)) + (src == Source::bf16 ? " bf16 " : " f32 ") +
         std::to_string(m) + "x" + std::to_string(k);
}

std::vector<BlockGeometry> geometries_of(const Recipe& r) {
  if (is_mx(r.kind)) return {BlockGeometry::b1x32, BlockGeometry::b32x1};
  return {BlockGeometry::b1x128,  BlockGeometry::b128x128,   BlockGeometry::b128x1,
          BlockGeometry::rowwise, BlockGeometry::tensorwise, BlockGeometry::per_channel};
}

TEST(GpuQuantize, EveryRecipeGeometryAndLayoutEqualsOracleBitwise) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {0, 128}, {1, 32}, {128, 256}, {130, 200}, {256, 1024}, {96, 64}};
  int variant = 0, cases = 0, refused = 0;
  for (const Recipe& r : fuzz::gpu_recipes())
    for (BlockGeometry g : geometries_of(r))
      for (Source src : {Source::bf16, Source::f32})
        for (auto [m, k] : shapes) {
          const Input in = make_input(src, m, k, ++variant);
          const auto f32l = ScaleLayoutF32(variant % 5);
          const auto e8l = ScaleLayoutE8m0(variant % 3);
          if (library_shape_check(r, g, m, k).rule != ShapeRule::accepted) {
            EXPECT_THROW(compare(in, r, g, {}, f32l, e8l), std::invalid_argument);
            ++refused;
            continue;
          }
          EXPECT_EQ(compare(in, r, g, {}, f32l, e8l), "") << name_of(r, g, src, m, k);
          ++cases;
        }
  std::printf("%d cases equal the oracle, %d shapes refused as the library does\n", cases, refused);
}

TEST(GpuQuantize, GroupedBlocksRestartAtGroupStarts) {
  FP8REF_REQUIRE_DEVICE();
  const std::vector<std::vector<std::int64_t>> ends_list = {
      {0}, {0, 0, 0}, {1, 1, 129}, {128, 256}, {5, 200, 200, 333}, {127, 127, 255}};
  int variant = 100;
  for (const Recipe& r : fuzz::gpu_recipes())
    for (BlockGeometry g : geometries_of(r))
      for (const auto& ends : ends_list) {
        const Input in = make_input(Source::bf16, ends.back(), 128, ++variant);
        if (library_shape_check(r, g, in.rows, in.cols).rule != ShapeRule::accepted) continue;
        EXPECT_EQ(
            compare(in, r, g, ends, ScaleLayoutF32(variant % 5), ScaleLayoutE8m0(variant % 3)), "")
            << name_of(r, g, Source::bf16, in.rows, in.cols) << " grouped, " << ends.size()
            << " groups";
      }
}

TEST(GpuQuantize, GridSizeAndStreamChangeNoBit) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Recipe mx{RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Input in = make_input(Source::bf16, 512, 512, 7);
  for (const auto& [r, g] : {std::pair{te, BlockGeometry::b1x128},
                             {te, BlockGeometry::b128x128},
                             {te, BlockGeometry::tensorwise},
                             {te, BlockGeometry::rowwise},
                             {te, BlockGeometry::b128x1},
                             {mx, BlockGeometry::b1x32}})
    for (int blocks : {1, 3, 64, 0})
      EXPECT_EQ(
          compare(in, r, g, {}, ScaleLayoutF32::row_major, ScaleLayoutE8m0::row_major, {blocks}),
          "")
          << to_string(g) << " with " << blocks << " blocks";
}

TEST(GpuQuantize, ChunksPerLaneChangeNoBit) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Recipe mx{RecipeKind::mx_floor, Format::e4m3, Runtime::torch_cuda, false, 0.0f};
  const Input in = make_input(Source::bf16, 384, 640, 11);
  for (const auto& [r, g] : {std::pair{te, BlockGeometry::b1x128}, {mx, BlockGeometry::b1x32}})
    for (int chunks : {4, 8, 16})
      for (int blocks : {0, 7})
        EXPECT_EQ(compare(in, r, g, {}, ScaleLayoutF32::tma_mn_major,
                          ScaleLayoutE8m0::blocked_128x4, {blocks, chunks}),
                  "")
            << to_string(g) << " with " << chunks << " chunks a lane, " << blocks << " blocks";
}

TEST(GpuQuantize, BadInputIsRefusedBeforeAnyLaunch) {
  FP8REF_REQUIRE_DEVICE();
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Input in = make_input(Source::bf16, 64, 128, 1);
  const auto run = [&](const Recipe& r, BlockGeometry g, std::vector<std::int64_t> ends,
                       Source src = Source::bf16) {
    return gpu::quantize_host(in.data(), src, in.rows, in.cols, r, g, ends,
                              ScaleLayoutF32::row_major, ScaleLayoutE8m0::row_major);
  };
  EXPECT_THROW(run({RecipeKind::torchao, Format::e4m3, Runtime::torch_cpu, false, 0.0f},
                   BlockGeometry::b1x128, {}),
               std::invalid_argument);
  EXPECT_THROW(run({RecipeKind::mx_rceil, Format::e4m3, Runtime::torch_cpu, false, 0.0f},
                   BlockGeometry::b1x32, {}),
               std::invalid_argument);
  EXPECT_THROW(run(te, BlockGeometry::b1x128, {}, Source::f16), std::invalid_argument);
  EXPECT_THROW(run(te, BlockGeometry::b128x128, {40, 30, 64}), std::invalid_argument);
  EXPECT_THROW(run(te, BlockGeometry::b128x128, {10, 20}), std::invalid_argument);
  // A shape torchao refuses (1x128 blocks need K % 128 == 0), and output buffers too small:
  // refused from the arguments alone (the device pointers are never touched).
  const Recipe torchao{RecipeKind::torchao, Format::e4m3, Runtime::torch_cuda, false, 0.0f};
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t(256));
  gpu::QuantizeOutput out{fake, 64 * 100, fake, 1 << 20};
  EXPECT_THROW(gpu::quantize({fake, Source::bf16, 64, 100}, torchao, BlockGeometry::b1x128, {}, out,
                             nullptr),
               std::invalid_argument);
  out.codes_bytes = 64 * 128 - 1;
  EXPECT_THROW(
      gpu::quantize({fake, Source::bf16, 64, 128}, te, BlockGeometry::b1x128, {}, out, nullptr),
      std::invalid_argument);
  out.codes_bytes = 64 * 128;
  out.scales_bytes = 64 * 4 - 1;
  EXPECT_THROW(
      gpu::quantize({fake, Source::bf16, 64, 128}, te, BlockGeometry::b1x128, {}, out, nullptr),
      std::invalid_argument);
}

}  // namespace
}  // namespace fp8ref
