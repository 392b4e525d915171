// GPU oracle benchmark (docs/benchmarks.md, docs/gpu_oracle.md §6): one MoE layer forward
// (M = 32768 tokens, E = 8 experts, N = 2048, K = 7168, 1×128 / 128×128 scales, e4m3, bf16 out),
// balanced and Zipf-skewed groups, under hopper_promoted_blockwise and exact: seconds per layer on
// the GPU (kernel, and with transfers), emulated products per second, and the CPU oracle on all
// of this machine's cores in the same run. The CPU runs a row sample (--cpu-rows rows spread over
// the groups, default 4096: one eighth of the layer) once per model, scaled to the layer by
// M / rows (its time per row does not depend on the group; a small sample would overstate it, the
// CPU decodes all of B once per call); sampled rows are also compared bitwise with the GPU's.
// Then the layer's K-grouped wgrad on the GPU, and one large-M campaign case checked with the GPU
// oracle (gpu.oracle_large's check) and with the CPU oracle on every row, in cases per minute.
// Usage: fp8ref_gpu_oracle_bench [--m 32768] [--experts 8] [--n 2048] [--k 7168] [--cpu-rows 4096]
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#include "reference/grouped_gemm.h"

namespace {

using namespace fp8ref;
using Clock = std::chrono::steady_clock;

struct Options {
  std::int64_t m = 32768, experts = 8, n = 2048, k = 7168, cpu_rows = 4096;
};

struct Layer {
  std::int64_t M, N, K, G;
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb;
  std::vector<std::int32_t> map;
  GroupedGemmOperands op() const {
    return {M, N, K, G, Format::e4m3, Format::e4m3, a, b, BLayout::nk, Scaling::blockwise, sa, sb};
  }
};

// Finite e4m3 codes (no NaN) and scales near 2^-8.
Layer make_layer(const Options& o, std::uint64_t seed) {
  Layer l{o.m, o.n, o.k, o.experts, {}, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  auto code = [&] {
    std::uint8_t c = std::uint8_t(rng());
    return (c & 0x7F) == 0x7F ? std::uint8_t(c ^ 1) : c;
  };
  l.a.resize(std::size_t(l.M * l.K));
  for (auto& c : l.a) c = code();
  l.b.resize(std::size_t(l.G * l.N * l.K));
  for (auto& c : l.b) c = code();
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  l.sa.resize(std::size_t(l.M * ceil_div(l.K, 128)));
  for (auto& s : l.sa) s = u(rng) * 0x1p-8f;
  l.sb.resize(std::size_t(l.G * ceil_div(l.N, 128) * ceil_div(l.K, 128)));
  for (auto& s : l.sb) s = u(rng) * 0x1p-8f;
  return l;
}

// Group sizes: balanced, or Zipf (s = 1.2) over the experts; the row map in group order.
void set_groups(Layer& l, bool zipf) {
  std::vector<double> w(std::size_t(l.G));
  double sum = 0;
  for (std::int64_t g = 0; g < l.G; ++g)
    sum += w[std::size_t(g)] = zipf ? std::pow(g + 1.0, -1.2) : 1.0;
  l.map.assign(std::size_t(l.M), std::int32_t(l.G - 1));
  std::int64_t r = 0;
  for (std::int64_t g = 0; g < l.G; ++g) {
    const std::int64_t rows = std::int64_t(double(l.M) * w[std::size_t(g)] / sum);
    for (std::int64_t i = 0; i < rows && r < l.M; ++i) l.map[std::size_t(r++)] = std::int32_t(g);
  }
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The CPU oracle on `rows` rows spread over the layer: seconds scaled to all M rows, and the
// number of sampled output bits that differ from the GPU's.
std::pair<double, std::int64_t> cpu_sample(const Layer& l, const Options& o, ModelChoice m,
                                           const std::vector<std::uint16_t>& gpu_y) {
  const std::int64_t rows = std::min(o.cpu_rows, l.M), step = l.M / rows;
  Layer s{rows, l.N, l.K, l.G, {}, l.b, {}, l.sb, {}};
  const std::int64_t nbk = ceil_div(l.K, 128);
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t r = i * step;
    s.a.insert(s.a.end(), l.a.begin() + r * l.K, l.a.begin() + (r + 1) * l.K);
    s.sa.insert(s.sa.end(), l.sa.begin() + r * nbk, l.sa.begin() + (r + 1) * nbk);
    s.map.push_back(l.map[std::size_t(r)]);
  }
  std::vector<std::uint16_t> y(std::size_t(rows * l.N));
  const auto t0 = Clock::now();
  ref::grouped_gemm_forward(s.op(), s.map, m, RowPolicy::zero, {OutDtype::bf16, {}, y, {}});
  const double t = seconds_since(t0) * double(l.M) / double(rows);
  std::int64_t diff = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t n = 0; n < l.N; ++n)
      diff += y[std::size_t(i * l.N + n)] != gpu_y[std::size_t(i * step * l.N + n)];
  return {t, diff};
}

// CPU seconds per layer of each model, measured on the first (balanced) row and reused.
std::pair<double, std::int64_t> g_cpu[2] = {{-1.0, 0}, {-1.0, 0}};

void run_row(Layer& l, const Options& o, bool zipf, AccumulationModel model) {
  set_groups(l, zipf);
  const ModelChoice m{model, 1};
  std::vector<std::uint16_t> y(std::size_t(l.M * l.N));
  const auto t0 = Clock::now();
  gpu::oracle_grouped_gemm_forward(l.op(), l.map, m, RowPolicy::zero, {OutDtype::bf16, {}, y, {}});
  const double wall = seconds_since(t0), kernel = gpu::oracle_last_kernel_seconds();
  auto& memo = g_cpu[model == AccumulationModel::exact];
  std::int64_t diff = 0;
  if (memo.first < 0) {
    memo = cpu_sample(l, o, m, y);
    diff = memo.second;
  } else {
    diff = cpu_sample(l, {o.m, o.experts, o.n, o.k, 64}, m, y).second;  // bits only
  }
  const double cpu = memo.first;
  const double products = double(l.M) * double(l.N) * double(l.K);
  std::printf("%-9s %-26s %9.3f %9.3f %10.3e %10.2f %9.1fx %8lld\n", zipf ? "zipf1.2" : "balanced",
              to_string(model), kernel, wall, products / kernel, cpu, cpu / kernel,
              (long long)diff);
}

// The layer's K-grouped wgrad dW[g] = C[g] + dY_g^T X_g (dY: the first M·N codes of A, X = A,
// 1×128 scales along tokens, C = 0) on the GPU under hopper_promoted_blockwise: kernel seconds,
// with the host transposes and transfers, and products per second. The CPU is not timed here.
void run_wgrad_row(Layer& l, bool zipf) {
  set_groups(l, zipf);
  std::vector<std::int64_t> offs(std::size_t(l.G), 0);
  for (std::int32_t g : l.map) ++offs[std::size_t(g)];
  std::int64_t end = 0, blocks = 0;
  for (auto& o : offs) blocks += ceil_div(o, 128), o = end += o;
  const std::vector<float> sdy(std::size_t(blocks * l.N), 0x1p-8f),
      sx(std::size_t(blocks * l.K), 0x1p-8f);
  const std::vector<float> c(std::size_t(l.G * l.N * l.K), 0.0f);
  std::vector<std::uint16_t> dw(c.size());
  const WgradOperands op{l.M,
                         l.N,
                         l.K,
                         l.G,
                         Format::e4m3,
                         Format::e4m3,
                         std::span<const std::uint8_t>(l.a).first(std::size_t(l.M * l.N)),
                         l.a,
                         Scaling::blockwise,
                         sdy,
                         sx,
                         c};
  const auto t0 = Clock::now();
  gpu::oracle_grouped_gemm_wgrad(op, offs, {AccumulationModel::hopper_promoted_blockwise, 1},
                                 {OutDtype::bf16, {}, dw, {}});
  const double wall = seconds_since(t0), kernel = gpu::oracle_last_kernel_seconds();
  const double products = double(l.M) * double(l.N) * double(l.K);
  std::printf("%-9s %-26s %9.3f %9.3f %10.3e %10s %10s %8s\n", zipf ? "zipf1.2" : "balanced",
              "wgrad promoted_blockwise", kernel, wall, products / kernel, "-", "-", "-");
}

// One gpu.oracle_large-sized case (M = 8192 in 8 balanced groups, N = 576, K = 512: the suite's
// mean N and about its mean M, blockwise, hopper_promoted_blockwise): the suite's check (two GPU
// runs, the CPU on 48 sampled rows) against a CPU suite's check of the same case (the CPU oracle
// on every row), in cases / minute; the case's drawing is not timed (the same for both).
void run_campaign_case() {
  Layer l = make_layer({8192, 8, 576, 512, 0}, 7);
  set_groups(l, false);
  std::vector<std::uint16_t> y(std::size_t(l.M * l.N)), z(y.size());
  const ModelChoice m{AccumulationModel::hopper_promoted_blockwise, 1};
  auto t0 = Clock::now();
  for (int run = 0; run < 2; ++run)
    gpu::oracle_grouped_gemm_forward(l.op(), l.map, m, RowPolicy::zero,
                                     {OutDtype::bf16, {}, y, {}});
  std::vector<std::int32_t> sampled(l.map.size(), -1);
  for (std::int64_t i = 0; i < 48; ++i) {
    const std::size_t r = std::size_t(i * (l.M / 48));
    sampled[r] = l.map[r];
  }
  ref::grouped_gemm_forward(l.op(), sampled, m, RowPolicy::zero, {OutDtype::bf16, {}, z, {}});
  const double gpu_case = seconds_since(t0);
  t0 = Clock::now();
  ref::grouped_gemm_forward(l.op(), l.map, m, RowPolicy::zero, {OutDtype::bf16, {}, z, {}});
  const double cpu_case = seconds_since(t0);
  std::printf(
      "\ncampaign case M=8192 N=576 K=512 (G=8, blockwise): GPU-oracle check %.3f s "
      "(%.0f cases/min), CPU-oracle check %.3f s (%.0f cases/min): %.1fx, bits %s\n",
      gpu_case, 60 / gpu_case, cpu_case, 60 / cpu_case, cpu_case / gpu_case,
      y == z ? "equal" : "DIFFER");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const std::int64_t v = std::atoll(argv[i + 1]);
    if (f == "--m")
      o.m = v;
    else if (f == "--experts")
      o.experts = v;
    else if (f == "--n")
      o.n = v;
    else if (f == "--k")
      o.k = v;
    else if (f == "--cpu-rows")
      o.cpu_rows = v;
    else {
      std::fprintf(stderr, "fp8ref_gpu_oracle_bench: unknown option %s\n", f.c_str());
      return 2;
    }
  }
  if (o.m < 1 || o.experts < 1 || o.n < 1 || o.k < 1 || o.cpu_rows < 1) {
    std::fprintf(stderr, "fp8ref_gpu_oracle_bench: every size must be >= 1\n");
    return 2;
  }
  if (!gpu::device_available()) {
    std::printf("fp8ref_gpu_oracle_bench: SKIPPED (%s)\n", gpu::device_description().c_str());
    return 0;
  }
  std::printf(
      "GPU oracle: MoE layer forward M=%lld E=%lld N=%lld K=%lld (%.3g products), "
      "blockwise e4m3 -> bf16\ndevice: %s; CPU oracle: %d threads on a %lld-row sample "
      "scaled to M\n\n",
      (long long)o.m, (long long)o.experts, (long long)o.n, (long long)o.k,
      double(o.m) * double(o.n) * double(o.k), gpu::device_description().c_str(),
      omp_get_max_threads(), (long long)o.cpu_rows);
  std::printf("%-9s %-26s %9s %9s %10s %10s %10s %8s\n", "groups", "model", "kernel s", "wall s",
              "products/s", "CPU s", "GPU/CPU", "diffs");
  Layer l = make_layer(o, 1);
  for (bool zipf : {false, true})
    for (AccumulationModel m :
         {AccumulationModel::hopper_promoted_blockwise, AccumulationModel::exact})
      run_row(l, o, zipf, m);
  for (bool zipf : {false, true}) run_wgrad_row(l, zipf);
  run_campaign_case();
  return 0;
}
