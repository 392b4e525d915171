// GPU-oracle fuzz suites (docs/fuzz.md "GPU oracle suites"), label gpu, skipped without a device.
//
// gpu.oracle_wgrad: the GPU oracle's K-grouped wgrad == the CPU oracle's, bit for bit, on the
// `gemm.wgrad` draws (its group-size distributions, scalings, models, split-K, epilogues), any
// output dtype, NaN / Inf codes and NaN / Inf / -0 in C. Proves the GPU wgrad on small shapes.
// gpu.oracle_large: M-grouped forwards at M >= 4096 tokens (the group-size distributions scaled
// up, groups of exactly 128 / 256 tokens among them). The GPU oracle runs the whole output twice:
// the two runs must give the same bits (launch determinism), and sampled rows — the first, last,
// 128th and 129th row of every group and random ones — must equal the CPU oracle's bits. What it
// proves: the GPU oracle's indexing, grouping and transfers at real row counts (many grid blocks
// and waves) on the rows sampled; it does not re-check every element on the CPU (that is what
// makes it fast: the CPU suites pay for all M·N·K products of a case).
#include <algorithm>
#include <bit>
#include <random>

#include "campaign/gemm_case.h"
#include "campaign/gen/choices.h"
#include "campaign/suite.h"
#include "campaign/wgrad_case.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#endif

namespace fp8ref::fuzz {
namespace {

// ---- gpu.oracle_wgrad -----------------------------------------------------------------------

// Codes replaced by NaN / Inf, and C entries by NaN (any sign and payload), ±Inf or -0, in one
// case of three each.
void poison_wgrad(WgradCase& w, std::mt19937_64& rng) {
  auto codes = [&rng](std::vector<std::uint8_t>& v, Format f) {
    if (v.empty() || rng() % 3) return;
    for (int i = 0; i < 1 + int(rng() % 3); ++i)
      v[rng() % v.size()] = f == Format::e4m3 ? (rng() % 2 ? 0x7F : 0xFF)
                                              : std::uint8_t(0x7C + (rng() % 2) * 0x80 + rng() % 4);
  };
  codes(w.dy, w.fdy);
  codes(w.x, w.fx);
  if (w.c.empty() || rng() % 3) return;
  for (int i = 0; i < 1 + int(rng() % 3); ++i) {
    const std::uint32_t sign = rng() % 2 ? 0x80000000u : 0u, payload = 1 + rng() % 0x7FFFFF;
    const std::uint32_t kinds[3] = {sign | 0x7F800000u | payload, sign | 0x7F800000u, sign};
    w.c[rng() % w.c.size()] = std::bit_cast<float>(kinds[rng() % 3]);
  }
}

WgradCase draw_gpu_wgrad() {
  WgradCase w = draw_wgrad();
  w.out = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  poison_wgrad(w, rng);
  return w;
}

std::vector<std::string> gpu_wgrad_tags(const WgradCase& w) {
  std::vector<std::string> t = wgrad_tags(w);
  bool nan_c = false;
  for (float c : w.c) nan_c = nan_c || c != c;
  if (nan_c) t.push_back("c:nan");
  return t;
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
std::vector<std::uint32_t> wgrad_bits(const WgradCase& w, bool on_gpu) {
  const std::vector<std::int64_t> offs = w.gs.ends();
  const ref::WgradOperands op = w.operands();
  const bool f32 = w.out == OutDtype::f32;
  std::vector<float> f(f32 ? w.c.size() : 0);
  std::vector<std::uint16_t> h(f32 ? 0 : w.c.size());
  if (on_gpu)
    gpu::oracle_grouped_gemm_wgrad(op, offs, w.model, {w.out, f, h, {}});
  else
    ref::grouped_gemm_wgrad(op, offs, w.model, {w.out, f, h, {}});
  std::vector<std::uint32_t> bits(w.c.size());
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}
#endif

void check_gpu_wgrad(const WgradCase& w, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::vector<std::uint32_t> want = wgrad_bits(w, false), got = wgrad_bits(w, true);
  fp.fold(got.data(), got.size() * 4);
  const std::size_t nk = std::size_t(w.N * w.K);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "gpu.oracle_wgrad %s -> %s: dW[%zu][%zu][%zu]: GPU 0x%08x, CPU 0x%08x",
                    to_string(w.model.model), to_string(w.out), i / nk, i % nk / std::size_t(w.K),
                    i % std::size_t(w.K), got[i], want[i]);
      throw Violation(buf);
    }
#else
  (void)w, (void)fp;
  throw std::runtime_error("gpu.oracle_wgrad: built without CUDA");
#endif
}

}  // namespace

void add_gpu_oracle_large_suite(std::vector<Suite>& out);  // suites_gpu_oracle_large.cpp

void add_gpu_oracle_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes = wgrad_classes();
  classes.push_back("c:nan");
  out.push_back(make_suite<WgradCase>(
      {"gpu.oracle_wgrad",
       "GPU oracle K-grouped wgrad == CPU oracle bitwise: every model, scaling, dtype, NaN C",
       "gpu",
       300,
       classes,
       {"sizes:edge_256"}},
      {draw_gpu_wgrad, check_gpu_wgrad, gpu_wgrad_tags, save_wgrad, load_wgrad, wgrad_case_diff},
      gpu_unavailable));
  add_gpu_oracle_large_suite(out);
}

}  // namespace fp8ref::fuzz
