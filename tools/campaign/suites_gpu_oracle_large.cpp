// gpu.oracle_large (docs/fuzz.md "GPU oracle suites"): M-grouped forwards at 4096..16384 tokens
// on the GPU oracle. The whole output is computed twice on the GPU (the bits must not change
// between launches) and sampled rows are computed on the CPU oracle (the bits must be equal):
// the first, last, 128th and 129th row of every group, the rows around each 128-row boundary of
// the first group, and random rows. See suites_gpu_oracle.cpp for what this proves and does not.
#include <algorithm>
#include <bit>
#include <random>
#include <set>

#include "campaign/gemm_case.h"
#include "campaign/gen/choices.h"
#include "campaign/suite.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/oracle/grouped_gemm_oracle.h"
#endif

namespace fp8ref::fuzz {
namespace {

// Group sizes of every distribution over 4096..16384 tokens (align_edges: edges of 128 and 256
// tokens, repeated to reach the total), up to 16 groups, a tail of padding rows.
gen::GroupSizes large_sizes() {
  gen::GroupSizes gs;
  gs.dist = *rc::gen::elementOf(gen::kSizeDists);
  gs.align = *rc::gen::element<std::int64_t>(1, 16, 128);
  const std::int64_t G = *rc::gen::inRange<std::int64_t>(1, 17);
  const std::int64_t total = *rc::gen::inRange<std::int64_t>(4096, 16385);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  if (gs.dist == gen::SizeDist::align_edges) gs.align = 128;
  gs.sizes = gen::make_sizes(gs.dist, G, total, gs.align, seed);
  if (gs.dist == gen::SizeDist::align_edges)  // 127..257-token groups: scale their count up
    while (gs.total() < 4096) gs.sizes.insert(gs.sizes.end(), gs.sizes.begin(), gs.sizes.end());
  gs.tail = *rc::gen::inRange<std::int64_t>(0, 9);
  return gs;
}

// n codes of one value class: a block of 65521 (a prime) drawn by gen::fill_codes, repeated, so
// that rows of any K start at different places of it. A case of 10^7 codes is filled in
// milliseconds (fill_codes draws per code), while every code still comes from the class.
std::vector<std::uint8_t> large_codes(Format f, gen::ValueClass v, std::int64_t n,
                                      std::uint64_t seed) {
  constexpr std::int64_t kBlock = 65521;
  const std::vector<std::uint8_t> base = gen::fill_codes(f, v, std::min(n, kBlock), seed);
  std::vector<std::uint8_t> out(std::size_t(n), 0);
  for (std::int64_t i = 0; i < n; i += kBlock)
    std::copy_n(base.begin(), std::min(kBlock, n - i), out.begin() + i);
  return out;
}

GemmCase draw_large() {
  GemmCase c;
  c.gs = large_sizes();
  c.desc = Desc::offs;
  c.G = c.gs.groups();
  c.group_of = rows_of(c.gs, c.desc, 0, c.M);
  // N and K large enough that a case is mostly products (about N per code of A): the CPU
  // oracle's cost, which this suite avoids, grows with them. G·N·K <= 2^24 codes of B.
  c.K = *rc::gen::element<std::int64_t>(127, 128, 256, 300, 512, 1024);
  c.N = *rc::gen::inRange<std::int64_t>(128, std::min<std::int64_t>(1025, (1 << 24) / (c.G * c.K)));
  c.fa = *gen::element_format();
  c.fb = *gen::element_format();
  c.va = *gen::value_class(true);
  c.vb = *gen::value_class(true);
  c.scaling = *gen::scaling();
  c.b_layout = *rc::gen::element(ref::BLayout::nk, ref::BLayout::kn);
  c.out = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  c.model = *gen::model_for(c.scaling);
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  c.a = large_codes(c.fa, c.va, c.M * c.K, rng());
  c.b = large_codes(c.fb, c.vb, c.G * c.N * c.K, rng());
  const bool pow2 = c.scaling == ref::Scaling::mx;
  c.sa.resize(std::size_t(sa_count(c)));
  c.sb.resize(std::size_t(sb_count(c)));
  for (auto& s : c.sa) s = gen::draw_scale(rng(), pow2);
  for (auto& s : c.sb) s = gen::draw_scale(rng(), pow2);
  return c;
}

// The rows the CPU recomputes (see the file comment).
[[maybe_unused]] std::vector<std::int64_t> sampled_rows(const GemmCase& c) {
  std::set<std::int64_t> rows;
  std::int64_t r0 = 0;
  for (std::int64_t m : c.gs.sizes) {
    for (std::int64_t i : {std::int64_t(0), std::int64_t(127), std::int64_t(128), m - 1})
      if (i >= 0 && i < m) rows.insert(r0 + i);
    r0 += m;
  }
  const std::int64_t first = c.gs.sizes.front();
  for (std::int64_t b = 256; b < std::min<std::int64_t>(first, 1024); b += 256)
    rows.insert(b - 1), rows.insert(b);
  std::mt19937_64 rng(std::uint64_t(c.M * 31 + c.N * 7 + c.K));
  for (int i = 0; i < 16 && c.M > 0; ++i) rows.insert(std::int64_t(rng() % std::uint64_t(c.M)));
  return {rows.begin(), rows.end()};
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
// The output bits under row map `map` (rows of no group +0), on the GPU or the CPU oracle.
std::vector<std::uint32_t> bits_of(const GemmCase& c, const std::vector<std::int32_t>& map,
                                   bool on_gpu) {
  const std::size_t n = std::size_t(c.M * c.N);
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n);
  const ref::GroupedGemmOperands op = c.operands();
  const ref::GemmOutput y{c.out, f, h, {}};
  if (on_gpu)
    gpu::oracle_grouped_gemm_forward(op, map, c.model, ref::RowPolicy::zero, y);
  else
    ref::grouped_gemm_forward(op, map, c.model, ref::RowPolicy::zero, y);
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}
#endif

void check_large(const GemmCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::vector<std::uint32_t> got = bits_of(c, c.group_of, true);
  fp.fold(got.data(), got.size() * 4);
  if (bits_of(c, c.group_of, true) != got)
    throw Violation("gpu.oracle_large: two launches of the GPU oracle give different bits (" +
                    where(c, 0, 0) + ")");
  std::vector<std::int32_t> sampled(c.group_of.size(), -1);  // only the sampled rows on the CPU
  const std::vector<std::int64_t> rows = sampled_rows(c);
  for (std::int64_t r : rows) sampled[std::size_t(r)] = c.group_of[std::size_t(r)];
  const std::vector<std::uint32_t> want = bits_of(c, sampled, false);
  for (std::int64_t r : rows)
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t i = std::size_t(r * c.N + n);
      if (want[i] != got[i])
        throw Violation("gpu.oracle_large: GPU " + hex32(got[i]) + ", CPU " + hex32(want[i]) +
                        " at " + where(c, r, n));
    }
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.oracle_large: built without CUDA");
#endif
}

std::vector<std::string> large_tags(const GemmCase& c) {
  std::vector<std::string> t = gemm_tags(c);
  t.push_back(c.M >= 8192 ? "rows:8192+" : c.M >= 4096 ? "rows:4096+" : "rows:few");  // few: empty
  return t;
}

}  // namespace

void add_gpu_oracle_large_suite(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (auto d : gen::kSizeDists) classes.push_back(std::string("dist:") + to_string(d));
  for (const char* s : {"none", "tensorwise", "rowwise", "blockwise", "mx"})
    classes.push_back(std::string("scaling:") + s);
  for (AccumulationModel m : kAllAccumulationModels)
    classes.push_back(std::string("model:") + to_string(m));
  classes.push_back("rows:4096+");
  classes.push_back("rows:8192+");
  out.push_back(make_suite<GemmCase>(
      {"gpu.oracle_large",
       "GPU oracle at M >= 4096: launch-deterministic, sampled rows == CPU oracle bitwise",
       "gpu",
       40,
       classes,
       {}},
      {draw_large, check_large, large_tags, save_gemm, load_gemm, gemm_case_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
