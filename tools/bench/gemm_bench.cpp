// Grouped GEMM reference benchmark (docs/benchmarks.md): on one MoE-like shape, the time of
// the `exact` model (tensorwise, rowwise, 1×128/128×128 scales) as a ratio to an Eigen f64 GEMM of
// the same shape, and of the bit-level Hopper models as ratios to an Eigen f32 GEMM of the shape
// they run on (a row subset: they simulate every tensor-core step). One run, ratios printed; also
// checks that sampled `exact` outputs equal exact_dot's bits. A program, not a test. The ratio to
// mmasim on the same instruction-level work needs torch: proptests/fidelity/mmasim_step_xcheck.py
// --speed-tiles N on the GPU machine (docs/benchmarks.md).
// Usage: fp8ref_gemm_bench [--groups 8] [--m 4096] [--n 512] [--k 1024] [--model-rows 256]
//                          [--repeat 3] [--seed 1]     (--model-rows 0 skips the bit-level models)
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/models.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"

namespace {

using namespace fp8ref;
using ref::Scaling;
using Clock = std::chrono::steady_clock;

struct Options {
  std::int64_t groups = 8, m = 4096, n = 512, k = 1024, model_rows = 256;
  int repeat = 3;
  std::uint64_t seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (f == "--groups")
      o.groups = v;
    else if (f == "--m")
      o.m = v;
    else if (f == "--n")
      o.n = v;
    else if (f == "--k")
      o.k = v;
    else if (f == "--model-rows")
      o.model_rows = v;
    else if (f == "--repeat")
      o.repeat = int(v);
    else if (f == "--seed")
      o.seed = std::uint64_t(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", f.c_str());
      std::exit(2);
    }
  }
  return o;
}

double best_seconds(int repeat, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// A problem: e4m3 codes of magnitude 2^-4..2^4, group sizes U(0.7, 1.3)·mean, all three scalings.
struct Problem {
  std::int64_t M, N, K, G;
  std::vector<std::uint8_t> a, b;
  std::vector<std::int64_t> offs;
  std::vector<float> sa_t, sb_t, sa_r, sb_r, sa_b, sb_b;  // tensorwise, rowwise, blockwise
  ref::GroupedGemmOperands operands(Scaling s) const {
    const std::vector<float>* sa[] = {nullptr, &sa_t, &sa_r, &sa_b};
    const std::vector<float>* sb[] = {nullptr, &sb_t, &sb_r, &sb_b};
    return {M, N,           K,          G, Format::e4m3, Format::e4m3, a, b, ref::BLayout::nk,
            s, *sa[int(s)], *sb[int(s)]};
  }
};

Problem make_problem(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t G,
                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto code = [&rng] {
    return std::uint8_t((rng() & 0x80) | ((3 + rng() % 9) << 3) | (rng() & 7));
  };
  auto scale = [&rng] {
    return std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, -8 + int(rng() % 4));
  };
  Problem p{M,
            N,
            K,
            G,
            std::vector<std::uint8_t>(std::size_t(M * K)),
            std::vector<std::uint8_t>(std::size_t(G * N * K)),
            {},
            {},
            {},
            {},
            {},
            {},
            {}};
  std::generate(p.a.begin(), p.a.end(), code);
  std::generate(p.b.begin(), p.b.end(), code);
  std::vector<double> w(static_cast<std::size_t>(G));
  double total = 0;
  for (auto& x : w) total += x = 0.7 + 0.6 * double(rng() % 1000) / 1000.0;
  std::int64_t end = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    end = g + 1 == G ? M : std::min(M, end + std::int64_t(double(M) * w[std::size_t(g)] / total));
    p.offs.push_back(end);
  }
  const std::int64_t nbk = ceil_div(K, 128), nbn = ceil_div(N, 128);
  auto fill = [&](std::vector<float>& v, std::int64_t n) {
    v.resize(std::size_t(n)), std::generate(v.begin(), v.end(), scale);
  };
  fill(p.sa_t, 1), fill(p.sb_t, G), fill(p.sa_r, M), fill(p.sb_r, G * N), fill(p.sa_b, M * nbk),
      fill(p.sb_b, G * nbn * nbk);
  return p;
}

// The first `rows` rows of p, spread over its groups proportionally (for the slow models).
Problem row_subset(const Problem& p, std::int64_t rows) {
  Problem q = make_problem(rows, p.N, p.K, p.G, 0);
  q.b = p.b, q.sb_t = p.sb_t, q.sb_r = p.sb_r, q.sb_b = p.sb_b;
  q.a.assign(p.a.begin(), p.a.begin() + rows * p.K);
  return q;
}

template <class T>
double eigen_seconds(const Problem& p, int repeat) {
  using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<RowMatrix> a, b;
  std::vector<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> y(static_cast<std::size_t>(p.G));
  std::int64_t r0 = 0;
  for (std::int64_t g = 0; g < p.G; ++g) {
    const std::int64_t m = p.offs[std::size_t(g)] - r0;
    a.push_back(RowMatrix(m, p.K)), b.push_back(RowMatrix(p.N, p.K));
    for (std::int64_t i = 0; i < m * p.K; ++i)
      a.back().data()[i] = T(decode_f64(Format::e4m3, p.a[std::size_t(r0 * p.K + i)]));
    for (std::int64_t i = 0; i < p.N * p.K; ++i)
      b.back().data()[i] = T(decode_f64(Format::e4m3, p.b[std::size_t(g * p.N * p.K + i)]));
    r0 = p.offs[std::size_t(g)];
  }
  return best_seconds(repeat, [&] {
    for (std::int64_t g = 0; g < p.G; ++g)
      y[std::size_t(g)].noalias() = a[std::size_t(g)] * b[std::size_t(g)].transpose();
  });
}

double forward_seconds(const Problem& p, Scaling s, AccumulationModel m, int repeat,
                       std::vector<float>& y) {
  y.assign(std::size_t(p.M * p.N), 0.0f);
  return best_seconds(repeat, [&] {
    ref::grouped_gemm_forward_offs(p.operands(s), p.offs, {m, 1}, ref::RowPolicy::zero,
                                   {OutDtype::f32, y, {}, {}});
  });
}

// Sampled elements of an `exact` output against exact_dot (the per-element definition).
std::int64_t sample_mismatches(const Problem& p, Scaling s, const std::vector<float>& y,
                               int samples) {
  std::mt19937_64 rng(7);
  const auto map = ref::row_map_from_offsets(p.offs, p.M);
  const std::int64_t nbk = ceil_div(p.K, 128), nbn = ceil_div(p.N, 128);
  std::int64_t bad = 0;
  for (int i = 0; i < samples; ++i) {
    const std::int64_t r = std::int64_t(rng() % std::uint64_t(p.M)),
                       n = std::int64_t(rng() % std::uint64_t(p.N));
    const std::int64_t g = map[std::size_t(r)];
    ElementScales sc{p.sa_t.data(), p.sb_t.data() + g, false};
    if (s == Scaling::rowwise) sc = {p.sa_r.data() + r, p.sb_r.data() + g * p.N + n, false};
    if (s == Scaling::blockwise)
      sc = {p.sa_b.data() + r * nbk, p.sb_b.data() + (g * nbn + n / 128) * nbk, true};
    const float z = float(exact_dot(p.a.data() + r * p.K, p.b.data() + (g * p.N + n) * p.K, p.K,
                                    Format::e4m3, Format::e4m3, sc, OutDtype::f32));
    bad += std::bit_cast<std::uint32_t>(z) !=
           std::bit_cast<std::uint32_t>(y[std::size_t(r * p.N + n)]);
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const Problem p = make_problem(o.m, o.n, o.k, o.groups, o.seed);
  std::printf(
      "fp8ref grouped GEMM benchmark: G=%lld M=%lld N=%lld K=%lld (e4m3 x e4m3 -> f32), %d OpenMP "
      "threads, best of %d\n",
      (long long)p.G, (long long)p.M, (long long)p.N, (long long)p.K, omp_get_max_threads(),
      o.repeat);
  const double t_f64 = eigen_seconds<double>(p, o.repeat);
  std::printf("  %-44s %9.3f s\n", "Eigen f64 GEMM (same shape)", t_f64);
  std::vector<float> y;
  for (Scaling s : {Scaling::tensorwise, Scaling::rowwise, Scaling::blockwise}) {
    const double t = forward_seconds(p, s, AccumulationModel::exact, o.repeat, y);
    const std::int64_t bad = sample_mismatches(p, s, y, 2000);
    std::printf(
        "  exact, %-37s %9.3f s   ratio Eigen f64 / exact = %.2fx   (sampled vs exact_dot: %lld of "
        "2000 differ)\n",
        (std::string(ref::to_string(s)) + " scales").c_str(), t, t_f64 / t, (long long)bad);
  }
  if (o.model_rows <= 0) return 0;
  const Problem q = row_subset(p, std::min(o.model_rows, p.M));
  const double t_f32 = eigen_seconds<float>(q, o.repeat);
  std::printf("Bit-level models on the first %lld rows (M=%lld N=%lld K=%lld):\n", (long long)q.M,
              (long long)q.M, (long long)q.N, (long long)q.K);
  std::printf("  %-44s %9.4f s\n", "Eigen f32 GEMM (same shape)", t_f32);
  const std::pair<AccumulationModel, Scaling> runs[] = {
      {AccumulationModel::fp32_sequential, Scaling::tensorwise},
      {AccumulationModel::hopper_unpromoted, Scaling::tensorwise},
      {AccumulationModel::hopper_promoted_tensorwise, Scaling::tensorwise},
      {AccumulationModel::hopper_promoted_rowwise, Scaling::rowwise},
      {AccumulationModel::hopper_promoted_blockwise, Scaling::blockwise},
      {AccumulationModel::hopper_mma_sync, Scaling::tensorwise},
  };
  for (const auto& [m, s] : runs) {
    const double t = forward_seconds(q, s, m, 1, y);
    std::printf("  %-44s %9.4f s   ratio Eigen f32 / model = %.4fx (%.0f ns per product)\n",
                (std::string(to_string(m)) + ", " + ref::to_string(s)).c_str(), t, t_f32 / t,
                1e9 * t / double(q.M * q.N * q.K));
  }
  return 0;
}
