// The FP8 mma.sync instruction on the device vs the `hopper_mma_sync` step model
// (numerics/models/mma_sync_step.h, docs/design.md §10), bit for bit: first small-integer tiles
// whose sums are exact under any accumulation (they pin the fragment layout of gpu/mma_sync.cu
// against plain arithmetic), then class-weighted random tiles of every format pair with random
// accumulators.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu/device.h"
#include "gpu/mma_sync.h"
#include "numerics/codec.h"
#include "numerics/models.h"

namespace fp8ref {
namespace {

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

constexpr int M = gpu::kMmaSyncM, N = gpu::kMmaSyncN, K = gpu::kMmaSyncKDepth;

struct Tiles {
  std::size_t count;
  std::vector<std::uint8_t> a, b;  // (count, 16, 32), (count, 8, 32)
  std::vector<float> c, d;         // (count, 16, 8)
};

template <class T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), v.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

void run_on_device(Format fa, Format fb, Tiles& t) {
  std::uint8_t* da = to_device(t.a);
  std::uint8_t* db = to_device(t.b);
  float* dc = to_device(t.c);
  float* dd = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dd), t.c.size() * sizeof(float)), cudaSuccess);
  gpu::mma_sync_fp8_tiles(fa, fb, da, db, dc, dd, t.count, nullptr);
  t.d.assign(t.c.size(), 0.0f);
  ASSERT_EQ(cudaMemcpy(t.d.data(), dd, t.d.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
}

// Code of a small integer value v in [-8, 8] (exact in both formats), written from the fields.
std::uint8_t small_int_code(Format f, int v) {
  if (v == 0) return 0;
  const int p = f == Format::e4m3 ? 3 : 2, bias = f == Format::e4m3 ? 7 : 15;
  const int m = std::abs(v), e = std::bit_width(unsigned(m)) - 1;
  const int man = ((m << p) >> e) & ((1 << p) - 1);
  return std::uint8_t((v < 0 ? 0x80 : 0) | ((e + bias) << p) | man);
}

// Finite codes: zero, subnormal, around one, anywhere, near max; each with a random sign.
std::uint8_t random_code(Format f, std::mt19937_64& rng) {
  const int max = f == Format::e4m3 ? 0x7E : 0x7B, sub = f == Format::e4m3 ? 7 : 3;
  const int one = f == Format::e4m3 ? 0x38 : 0x3C;
  int c = 0;
  switch (rng() % 10) {
    case 0: c = 0; break;
    case 1:
    case 2: c = 1 + int(rng() % std::uint64_t(sub)); break;
    case 3:
    case 4:
    case 5: c = one - 12 + int(rng() % 24); break;
    case 6: c = max - int(rng() % 3); break;
    default: c = int(rng() % std::uint64_t(max + 1)); break;
  }
  return std::uint8_t(c | ((rng() & 1) ? 0x80 : 0));
}

float random_acc(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return 0.0f;
    case 1: return std::ldexp(float(std::int64_t(rng() % 2001) - 1000), -int(rng() % 40));
    case 2: return std::bit_cast<float>(std::uint32_t(rng()) & 0x807FFFFFu);  // subnormal / zero
    default: {
      const float x = std::ldexp(1.0f + float(rng() % 8388608) * 0x1p-23f, int(rng() % 41) - 20);
      return (rng() & 1) ? -x : x;
    }
  }
}

TEST(GpuMmaSync, SmallIntegerTilesAreExactSums) {
  FP8REF_REQUIRE_DEVICE();
  for (Format fa : {Format::e4m3, Format::e5m2})
    for (Format fb : {Format::e4m3, Format::e5m2}) {
      std::mt19937_64 rng(20261124);
      Tiles t{64, {}, {}, {}, {}};
      std::vector<int> av(t.count * M * K), bv(t.count * N * K), cv(t.count * M * N);
      for (auto& v : av) v = int(rng() % 17) - 8;
      for (auto& v : bv) v = int(rng() % 17) - 8;
      for (auto& v : cv) v = int(rng() % 201) - 100;
      for (int v : av) t.a.push_back(small_int_code(fa, v));
      for (int v : bv) t.b.push_back(small_int_code(fb, v));
      for (int v : cv) t.c.push_back(float(v));
      run_on_device(fa, fb, t);
      int bad = 0;
      for (std::size_t s = 0; s < t.count; ++s)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            long want = cv[(s * M + m) * N + n];
            for (int k = 0; k < K; ++k)
              want += long(av[(s * M + m) * K + k]) * bv[(s * N + n) * K + k];
            const float got = t.d[(s * M + m) * N + n];
            if (double(got) != double(want) && bad++ < 4)
              ADD_FAILURE() << to_string(fa) << "x" << to_string(fb) << " tile " << s << " (" << m
                            << ", " << n << "): got " << got << ", exact " << want
                            << " (fragment layout?)";
          }
      EXPECT_EQ(bad, 0);
    }
}

TEST(GpuMmaSync, HardwareEqualsHopperMmaSyncStepModel) {
  FP8REF_REQUIRE_DEVICE();
  std::uint64_t total = 0, total_bad = 0;
  for (Format fa : {Format::e4m3, Format::e5m2})
    for (Format fb : {Format::e4m3, Format::e5m2}) {
      std::mt19937_64 rng(0x5eed0000u + 2u * unsigned(fa) + unsigned(fb));
      Tiles t{4096, {}, {}, {}, {}};
      t.a.resize(t.count * M * K), t.b.resize(t.count * N * K), t.c.resize(t.count * M * N);
      for (auto& x : t.a) x = random_code(fa, rng);
      for (auto& x : t.b) x = random_code(fb, rng);
      for (auto& x : t.c) x = random_acc(rng);
      run_on_device(fa, fb, t);
      std::uint64_t bad = 0;
      for (std::size_t s = 0; s < t.count; ++s)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            const std::size_t i = (s * M + m) * N + n;
            const float want = hopper_mma_sync_step(&t.a[(s * M + m) * K], &t.b[(s * N + n) * K], K,
                                                    fa, fb, t.c[i]);
            const float got = t.d[i];
            const bool same = std::isnan(want) ? std::isnan(got)
                                               : std::bit_cast<std::uint32_t>(want) ==
                                                     std::bit_cast<std::uint32_t>(got);
            if (same) continue;
            if (bad++ < 4) {
              char buf[200];
              std::snprintf(
                  buf, sizeof buf,
                  "%s x %s tile %zu (%d, %d): hardware %08x (%.9g), model %08x (%.9g), C %08x",
                  std::string(to_string(fa)).c_str(), std::string(to_string(fb)).c_str(), s, m, n,
                  std::bit_cast<std::uint32_t>(got), double(got),
                  std::bit_cast<std::uint32_t>(want), double(want),
                  std::bit_cast<std::uint32_t>(t.c[i]));
              ADD_FAILURE() << buf;
            }
          }
      std::printf("mma.sync %s x %s: %zu outputs, %llu differ from hopper_mma_sync_step\n",
                  std::string(to_string(fa)).c_str(), std::string(to_string(fb)).c_str(),
                  t.c.size(), static_cast<unsigned long long>(bad));
      total += t.c.size(), total_bad += bad;
    }
  std::printf("mma.sync total: %llu outputs, %llu mismatches\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(total_bad));
  EXPECT_EQ(total_bad, 0u);
}

}  // namespace
}  // namespace fp8ref
