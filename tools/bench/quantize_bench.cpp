// CPU quantize throughput per recipe as a ratio to memcpy (docs/benchmarks.md): a
// program that prints ratios, not a timed test. Target: ratio >= 0.3 on 2 cores.
// Usage: fp8ref_quantize_bench [M K [REPS]]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reference/quantize.h"

// Each recipe quantizes one f32 tensor (default 8192 x 7168, normal x 2^U(-8,8) per row) at
// 1x128 and 128x128 (MX recipes also at 1x32). "ratio" = memcpy time / quantize time for the same
// input bytes, both in this run with the same OpenMP threads (best of REPS), quantize_into reusing
// its output as the memcpy reuses its destination; "new out" is quantize(), which allocates (and
// page-faults) a fresh output each call. Each row times its own memcpy, alternating with the
// quantize calls, so that a machine whose load changes during the run skews both alike.
namespace {

using namespace fp8ref;
using namespace fp8ref::ref;
using Clock = std::chrono::steady_clock;

template <class F>
double best_seconds(int reps, const F& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// memcpy of `bytes` split into one contiguous chunk per OpenMP thread.
void parallel_memcpy(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
#pragma omp parallel
  {
    const std::size_t t = std::size_t(omp_get_thread_num()), n = std::size_t(omp_get_num_threads());
    const std::size_t b = bytes * t / n, e = bytes * (t + 1) / n;
    std::memcpy(dst + b, src + b, e - b);
  }
}

struct Case {
  const char* name;
  Recipe recipe;
};

// The recipes timed: each library's common configurations.
std::vector<Case> bench_cases() {
  return {
      {"deepgemm torch_cuda",
       {RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, false, 0.0f}},
      {"deepgemm ue8m0", {RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, true, 0.0f}},
      {"torchao e4m3 torch_cuda",
       {RecipeKind::torchao, Format::e4m3, Runtime::torch_cuda, false, 0.0f}},
      {"te e4m3 cuda_kernel", {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f}},
      {"te e5m2 pow2 cuda_kernel",
       {RecipeKind::te, Format::e5m2, Runtime::cuda_kernel, true, 0.0f}},
      {"mx_floor e4m3 torch_cuda",
       {RecipeKind::mx_floor, Format::e4m3, Runtime::torch_cuda, false, 0.0f}},
      {"mx_rceil e4m3 cuda_kernel",
       {RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0.0f}},
      {"mx_rceil e4m3 torch_cpu",
       {RecipeKind::mx_rceil, Format::e4m3, Runtime::torch_cpu, false, 0.0f}},
      {"mx_rceil e4m3 torch_cuda",
       {RecipeKind::mx_rceil, Format::e4m3, Runtime::torch_cuda, false, 0.0f}},
      {"mx_rceil e5m2 torch_cpu",
       {RecipeKind::mx_rceil, Format::e5m2, Runtime::torch_cpu, false, 0.0f}},
  };
}

// An (m, k) f32 tensor: rows of normal values, each row scaled by 2^U(-8, 8), seeded.
std::vector<float> make_input(std::int64_t m, std::int64_t k) {
  std::vector<float> x(std::size_t(m * k));
  std::mt19937_64 rng(20261122);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exp(-8, 8);
  for (std::int64_t i = 0; i < m; ++i) {
    const float s = std::ldexp(1.0f, exp(rng));
    for (std::int64_t j = 0; j < k; ++j) x[std::size_t(i * k + j)] = normal(rng) * s;
  }
  return x;
}

// One row of the table: best of reps for quantize_into (reused output), quantize (new output) and
// a memcpy of the input timed between them.
struct RowTimes {
  double reused = 1e30, fresh = 1e30, copy = 1e30;
};
RowTimes time_row(const SourceView2d& v, const Recipe& r, BlockGeometry g, int reps,
                  std::vector<unsigned char>& dst, const unsigned char* src, std::size_t& sink) {
  Quantized out{};
  quantize_into(v, r, g, out);  // sizes (and faults in) the reused output
  RowTimes t;
  for (int i = 0; i < reps; ++i) {
    t.copy =
        std::min(t.copy, best_seconds(1, [&] { parallel_memcpy(dst.data(), src, dst.size()); }));
    t.reused = std::min(t.reused, best_seconds(1, [&] {
                          quantize_into(v, r, g, out);
                          sink += out.codes[0];
                        }));
    t.fresh = std::min(t.fresh, best_seconds(1, [&] { sink += quantize(v, r, g).codes[0]; }));
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t m = argc > 2 ? std::atoll(argv[1]) : 8192,
                     k = argc > 2 ? std::atoll(argv[2]) : 7168;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  if (m <= 0 || k <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: fp8ref_quantize_bench [M K [REPS]]\n");
    return 2;
  }
  const std::vector<float> x = make_input(m, k);
  const std::size_t bytes = x.size() * sizeof(float);
  std::vector<unsigned char> dst(bytes, 1);
  const auto* src = reinterpret_cast<const unsigned char*>(x.data());
  const double t_copy = best_seconds(reps, [&] { parallel_memcpy(dst.data(), src, bytes); });
  std::printf("fp8ref_quantize_bench: f32 %lld x %lld (%.1f MiB), %d OpenMP threads, best of %d\n",
              static_cast<long long>(m), static_cast<long long>(k), double(bytes) / 1048576.0,
              omp_get_max_threads(), reps);
  std::printf("memcpy: %.2f ms, %.2f GB/s\n", t_copy * 1e3, double(bytes) / t_copy * 1e-9);
  std::printf("%-26s %-8s %10s %10s %9s %8s %8s\n", "recipe", "block", "ms", "GB/s in", "memcpy ms",
              "ratio", "new out");
  const SourceView2d v{x.data(), Source::f32, m, k, k, 1};
  double worst = 1e30;
  std::size_t sink = 0;
  for (const Case& c : bench_cases()) {
    std::vector<BlockGeometry> gs{BlockGeometry::b1x128, BlockGeometry::b128x128};
    if (is_mx(c.recipe.kind)) gs.push_back(BlockGeometry::b1x32);
    for (const BlockGeometry g : gs) {
      const RowTimes t = time_row(v, c.recipe, g, reps, dst, src, sink);
      const double ratio = t.copy / t.reused;
      worst = std::min(worst, ratio);
      std::printf("%-26s %-8s %10.2f %10.2f %9.2f %8.3f %8.3f\n", c.name,
                  std::string(to_string(g)).c_str(), t.reused * 1e3,
                  double(bytes) / t.reused * 1e-9, t.copy * 1e3, ratio, t.copy / t.fresh);
    }
  }
  std::printf("lowest ratio %.3f (target >= 0.3) [checksum %zu]\n", worst, sink);
  return 0;
}
