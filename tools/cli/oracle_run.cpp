// The oracle runs of fp8-check's grouped-gemm subcommands (oracle_run.h): the reference forward
// (reference/grouped_gemm.h) or the GPU oracle (gpu/oracle/) on a loaded case, whole or on its
// first rows.
#include "cli/oracle_run.h"

#include <algorithm>
#include <bit>

#include "cli/errors.h"

#ifdef FP8REF_CLI_HAVE_GPU
#include "gpu/device.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#endif

namespace fp8ref::cli {
namespace {

OracleRun run_oracle(const GemmCase& c, ref::ModelChoice m, OutDtype d, bool on_gpu) {
  std::vector<float> f(d == OutDtype::f32 ? std::size_t(c.M * c.N) : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : std::size_t(c.M * c.N));
  OracleRun r{std::vector<std::uint32_t>(std::size_t(c.M * c.N)),
              std::vector<double>(std::size_t(c.M * c.N))};
#ifdef FP8REF_CLI_HAVE_GPU
  if (on_gpu)
    gpu::oracle_grouped_gemm_forward_offs(c.operands(), c.offs, m, ref::RowPolicy::zero,
                                          {d, f, h, {}});
  else
#else
  (void)on_gpu;
#endif
    ref::grouped_gemm_forward_offs(c.operands(), c.offs, m, ref::RowPolicy::zero,
                                   {d, f, h, r.bound});
  for (std::size_t i = 0; i < r.bits.size(); ++i)
    r.bits[i] = d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return r;
}

// The first `rows` rows of an M-grouped case: A, per-row scales and offsets cut there.
GemmCase head_rows(const GemmCase& c, std::int64_t rows) {
  if (rows >= c.M) return c;
  GemmCase h = c;
  h.M = rows;
  h.a.resize(std::size_t(rows * c.K));
  if (c.scaling != ref::Scaling::none && c.scaling != ref::Scaling::tensorwise)
    h.sa.resize(std::size_t(rows) * (c.sa.size() / std::size_t(c.M)));
  for (std::int64_t& e : h.offs) e = std::min(e, rows);
  return h;
}

// K-grouped with blockwise / mx scales along K: the wgrad of reference/grouped_gemm.h with K as
// its tokens (gemm_case.h); out (G, M, N) = dW. C = -0 gives RN(C + acc) = acc for every acc;
// an empty group is then RN(-0) and is written +0, as the other K-grouped paths write it. On the
// GPU: the GPU oracle's wgrad (the same bits, no bound).
OracleRun run_wgrad_form(const KGroupedCase& k, ref::ModelChoice m, OutDtype d, bool on_gpu) {
  const auto n = std::size_t(k.G * k.M * k.N);
  std::vector<float> c(n, -0.0f), f(d == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : n);
  OracleRun r{std::vector<std::uint32_t>(n), std::vector<double>(n)};
  const ref::WgradOperands op{k.K,   k.M,  k.N, k.G, k.fa, k.fb, k.dy, k.x, k.block_scaling,
                              k.sdy, k.sx, c};
#ifdef FP8REF_CLI_HAVE_GPU
  if (on_gpu)
    gpu::oracle_grouped_gemm_wgrad(op, k.offs, m, {d, f, h, {}});
  else
#else
  (void)on_gpu;
#endif
    ref::grouped_gemm_wgrad(op, k.offs, m, {d, f, h, r.bound});
  std::int64_t s = 0;
  for (std::int64_t g = 0; g < k.G; ++g) {
    const bool empty = k.offs[std::size_t(g)] == s;
    s = k.offs[std::size_t(g)];
    for (std::size_t i = std::size_t(g * k.M * k.N); i < std::size_t((g + 1) * k.M * k.N); ++i)
      r.bits[i] = empty ? 0u : d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  }
  return r;
}

// B as (G, N, K): a `kn` B is transposed once when the case is loaded, in 64x64 tiles, rather
// than by the oracle in every run (the reference and the GPU oracle take `nk` without a copy);
// the layout is addressing only, so every configuration gives the same bits either way.
void b_to_nk(GemmCase& c) {
  if (c.b_layout == ref::BLayout::nk) return;
  constexpr std::int64_t kTile = 64;
  std::vector<std::uint8_t> t(c.b.size());
  for (std::int64_t g = 0; g < c.G; ++g)
    for (std::int64_t k0 = 0; k0 < c.K; k0 += kTile)
      for (std::int64_t n0 = 0; n0 < c.N; n0 += kTile)
        for (std::int64_t k = k0; k < std::min(c.K, k0 + kTile); ++k)
          for (std::int64_t n = n0; n < std::min(c.N, n0 + kTile); ++n)
            t[std::size_t((g * c.N + n) * c.K + k)] = c.b[std::size_t((g * c.K + k) * c.N + n)];
  c.b = std::move(t);
  c.b_layout = ref::BLayout::nk;
}

}  // namespace

bool use_gpu(const GemmOptions& o) {
  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto")
    usage("--device: '" + o.device + "' is not cpu, cuda or auto");
  if (o.device == "cpu") return false;
  const bool needs_bound = o.bound || o.within_bound;
#ifdef FP8REF_CLI_HAVE_GPU
  const bool present = gpu::device_available();
  const std::string why = present ? "" : gpu::device_description();
#else
  const bool present = false;
  const std::string why = "fp8-check was built without CUDA";
#endif
  if (o.device == "auto") return present && !needs_bound;
  if (!present) usage("--device cuda: " + why);
  if (needs_bound)
    usage("--device cuda: --bound / --within-bound need the CPU oracle (--device cpu)");
  return true;
}

LoadedCase load_for_run(const GemmOptions& o) { return load_for_run(load_input(o), o); }

LoadedCase load_for_run(const tensor_io::TensorFile& tf, const GemmOptions& o) {
  if (o.grouping == "m") {
    GemmCase c = load_case(tf, o);
    b_to_nk(c);
    std::vector<std::int64_t> shape{c.M, c.N};
    return {std::move(c), std::nullopt, std::move(shape), ""};
  }
  if (o.grouping != "k") usage("--grouping: expected m or k, got '" + o.grouping + "'");
  KGroupedCase k = load_kgrouped_case(tf, o);
  GemmCase c = k.stacked();
  if (k.block_scaling != ref::Scaling::none) c.scaling = k.block_scaling;  // for the candidates
  std::vector<std::int64_t> shape{k.G, k.M, k.N};
  std::string what = "K-grouped M=" + std::to_string(k.M) + " N=" + std::to_string(k.N) +
                     " K=" + std::to_string(k.K) + " G=" + std::to_string(k.G);
  return {std::move(c), std::move(k), std::move(shape), std::move(what)};
}

// K-grouped: each group's forward into its (M, N) slice of (G, M, N); an empty group (no K
// columns) is +0 with bound 0, as torch writes it.
OracleRun run_loaded(const LoadedCase& lc, ref::ModelChoice m, OutDtype d, bool on_gpu) {
  if (!lc.k) return run_oracle(lc.c, m, d, on_gpu);
  const KGroupedCase& k = *lc.k;
  if (k.block_scaling != ref::Scaling::none) return run_wgrad_form(k, m, d, on_gpu);
  const auto mn = std::size_t(k.M * k.N);
  OracleRun r{std::vector<std::uint32_t>(std::size_t(k.G) * mn),
              std::vector<double>(std::size_t(k.G) * mn)};
  for (std::size_t g = 0; g < k.groups.size(); ++g) {
    if (k.groups[g].K == 0) continue;
    const OracleRun one = run_oracle(k.groups[g], m, d, on_gpu);
    std::copy(one.bits.begin(), one.bits.end(), r.bits.begin() + std::ptrdiff_t(g * mn));
    std::copy(one.bound.begin(), one.bound.end(), r.bound.begin() + std::ptrdiff_t(g * mn));
  }
  return r;
}

OracleRun run_loaded_head(const LoadedCase& lc, ref::ModelChoice m, OutDtype d, bool on_gpu,
                          std::int64_t rows, std::vector<std::size_t>& index) {
  index.clear();
  if (!lc.k) {
    const GemmCase h = head_rows(lc.c, rows);
    for (std::size_t i = 0; i < std::size_t(h.M * h.N); ++i) index.push_back(i);
    return run_oracle(h, m, d, on_gpu);
  }
  const KGroupedCase& k = *lc.k;
  if (k.block_scaling != ref::Scaling::none) {  // evaluated whole
    const OracleRun r = run_loaded(lc, m, d, on_gpu);
    for (std::size_t i = 0; i < r.bits.size(); ++i) index.push_back(i);
    return r;
  }
  OracleRun r;
  for (std::size_t g = 0; g < k.groups.size(); ++g) {
    if (k.groups[g].K == 0) continue;
    const GemmCase h = head_rows(k.groups[g], rows);
    const OracleRun one = run_oracle(h, m, d, on_gpu);
    r.bits.insert(r.bits.end(), one.bits.begin(), one.bits.end());
    r.bound.insert(r.bound.end(), one.bound.begin(), one.bound.end());
    for (std::size_t i = 0; i < std::size_t(h.M * h.N); ++i)
      index.push_back(g * std::size_t(k.M * k.N) + i);
  }
  return r;
}

}  // namespace fp8ref::cli
