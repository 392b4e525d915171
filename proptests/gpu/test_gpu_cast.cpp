// GPU cast kernels vs the numerics oracle: the hardware cvt.rn.satfinite instructions must give
// the cuda_satfinite profile's byte for every f32 and f16 input, and the hardware decode the
// exact value of every code (docs/design.md §5, §14).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "gpu/cast_kernels.h"
#include "gpu/device.h"
#include "numerics/profile.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

struct Mismatches {
  std::uint64_t count = 0;
  std::vector<std::uint64_t> first;  // inputs, ascending
};

// Compare got[i] with the profile's encode of input (first + i), on all host threads.
Mismatches compare_range(const ProfileCodec& codec, std::uint64_t first, const std::uint8_t* got,
                         std::size_t n) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Mismatches> parts(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (std::size_t i = lo; i < hi; ++i) {
        if (codec.encode(first + i) == got[i]) continue;
        if (parts[t].first.size() < 8) parts[t].first.push_back(first + i);
        ++parts[t].count;
      }
    });
  }
  for (auto& th : pool) th.join();
  Mismatches all;
  for (auto& p : parts) {
    all.count += p.count;
    for (auto x : p.first)
      if (all.first.size() < 8) all.first.push_back(x);
  }
  return all;
}

void sweep_all_f32(Format format) {
  const ProfileCodec codec =
      make_codec(Profile::cuda_satfinite, format, Source::f32, Rounding::rne);
  constexpr std::size_t kChunk = std::size_t{1} << 28;
  std::uint8_t* d_out = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&d_out, kChunk));
  std::vector<std::uint8_t> got(kChunk);
  Mismatches total;
  for (std::uint64_t first = 0; first < (std::uint64_t{1} << 32); first += kChunk) {
    gpu::cast_f32_index_range_to_fp8_satfinite(format, first, d_out, kChunk, nullptr);
    FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), d_out, kChunk, cudaMemcpyDeviceToHost));
    const Mismatches m = compare_range(codec, first, got.data(), kChunk);
    total.count += m.count;
    for (auto x : m.first)
      if (total.first.size() < 8) total.first.push_back(x);
  }
  FP8REF_CUDA_CHECK(cudaFree(d_out));
  std::printf("%s f32 -> %s: 4294967296 inputs, %llu mismatches\n",
              gpu::device_description().c_str(), std::string(to_string(format)).c_str(),
              (unsigned long long)total.count);
  for (auto x : total.first)
    ADD_FAILURE() << "input 0x" << std::hex << x << " expected 0x" << int(codec.encode(x));
  EXPECT_EQ(total.count, 0u);
}

TEST(GpuCast, HardwareSatfiniteE4m3EqualsCudaSatfiniteProfileOnEveryF32) {
  FP8REF_REQUIRE_DEVICE();
  sweep_all_f32(Format::e4m3);
}

TEST(GpuCast, HardwareSatfiniteE5m2EqualsCudaSatfiniteProfileOnEveryF32) {
  FP8REF_REQUIRE_DEVICE();
  sweep_all_f32(Format::e5m2);
}

TEST(GpuCast, HardwareSatfiniteEqualsCudaSatfiniteProfileOnEveryF16) {
  FP8REF_REQUIRE_DEVICE();
  std::vector<std::uint16_t> in(65536);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::uint16_t(i);
  std::uint16_t* d_in = nullptr;
  std::uint8_t* d_out = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&d_in, in.size() * 2));
  FP8REF_CUDA_CHECK(cudaMalloc(&d_out, in.size()));
  FP8REF_CUDA_CHECK(cudaMemcpy(d_in, in.data(), in.size() * 2, cudaMemcpyHostToDevice));
  for (Format f : {Format::e4m3, Format::e5m2}) {
    const ProfileCodec codec = make_codec(Profile::cuda_satfinite, f, Source::f16, Rounding::rne);
    gpu::cast_f16_to_fp8_satfinite(f, d_in, d_out, in.size(), nullptr);
    std::vector<std::uint8_t> got(in.size());
    FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size(), cudaMemcpyDeviceToHost));
    const Mismatches m = compare_range(codec, 0, got.data(), got.size());
    std::printf("f16 -> %s: 65536 inputs, %llu mismatches\n", std::string(to_string(f)).c_str(),
                (unsigned long long)m.count);
    EXPECT_EQ(m.count, 0u) << "first input 0x" << std::hex << (m.first.empty() ? 0 : m.first[0]);
  }
  FP8REF_CUDA_CHECK(cudaFree(d_in));
  FP8REF_CUDA_CHECK(cudaFree(d_out));
}

// The array launcher (two values per thread, odd tails) on random and special values.
TEST(GpuCast, ArrayLauncherEqualsProfileOnOddLengths) {
  FP8REF_REQUIRE_DEVICE();
  std::mt19937_64 rng(20261122);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exp2(-20, 20);
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1001}, std::size_t{65537}}) {
    std::vector<float> in(n);
    for (auto& x : in) x = std::ldexp(normal(rng), exp2(rng));
    in[0] = n > 1 ? 464.0f : -0.0f;
    float* d_in = nullptr;
    std::uint8_t* d_out = nullptr;
    FP8REF_CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    FP8REF_CUDA_CHECK(cudaMalloc(&d_out, n));
    FP8REF_CUDA_CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (Format f : {Format::e4m3, Format::e5m2}) {
      const ProfileCodec codec = make_codec(Profile::cuda_satfinite, f, Source::f32, Rounding::rne);
      gpu::cast_f32_to_fp8_satfinite(f, d_in, d_out, n, nullptr);
      std::vector<std::uint8_t> got(n);
      FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), d_out, n, cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(int(got[i]), int(codec.encode(std::bit_cast<std::uint32_t>(in[i]))))
            << "n=" << n << " i=" << i << " x=" << in[i];
    }
    FP8REF_CUDA_CHECK(cudaFree(d_in));
    FP8REF_CUDA_CHECK(cudaFree(d_out));
  }
}

TEST(GpuCast, HardwareDecodeEqualsExactValueOfEveryCode) {
  FP8REF_REQUIRE_DEVICE();
  std::uint16_t* d_out = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&d_out, 256 * 2));
  for (Format f : {Format::e4m3, Format::e5m2}) {
    gpu::decode_fp8_all_codes_to_f16(f, d_out, nullptr);
    std::vector<std::uint16_t> got(256);
    FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), d_out, 512, cudaMemcpyDeviceToHost));
    for (int c = 0; c < 256; ++c) {
      const double ref = decode_f64(f, std::uint8_t(c));
      const double hw = std::bit_cast<double>(f16_to_f64_bits(got[c]));
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(hw)) << to_string(f) << " code " << c;
      } else {
        EXPECT_EQ(std::bit_cast<std::uint64_t>(hw), std::bit_cast<std::uint64_t>(ref))
            << to_string(f) << " code " << c;
      }
    }
  }
  FP8REF_CUDA_CHECK(cudaFree(d_out));
}

}  // namespace
}  // namespace fp8ref
