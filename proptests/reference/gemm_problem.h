// Random grouped-GEMM problems for the reference suites: operands, scales of every scaling
// (tensorwise, rowwise, 1×128/128×128, MX 1×32), row maps with padding rows, a model compatible
// with the scaling, and the scales one element uses (for the rational oracle).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cases/compare.h"
#include "cases/gemm_case.h"
#include "proptests/common/oracle.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::test {

using ref::BLayout;
using ref::GemmOutput;
using ref::GroupedGemmOperands;
using ref::ModelChoice;
using ref::RowPolicy;
using ref::Scaling;

// A problem is the one GEMM case (tools/cases/gemm_case.h) with B stored nk and the row -> group
// map in group_of; sa_per_row / sb_per_group / operands() come with it.
using Problem = cases::GemmCase;
using cases::sa_per_row;
using cases::sb_per_group;

// A problem from its parts (B stored nk; `map` the row -> group map).
inline Problem make_problem(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t G,
                            Format fa, Format fb, std::vector<std::uint8_t> a,
                            std::vector<std::uint8_t> b, Scaling scaling, std::vector<float> sa,
                            std::vector<float> sb, std::vector<std::int32_t> map) {
  Problem p;
  p.M = M, p.N = N, p.K = K, p.G = G, p.fa = fa, p.fb = fb, p.scaling = scaling;
  p.a = std::move(a), p.b = std::move(b), p.sa = std::move(sa), p.sb = std::move(sb);
  p.group_of = std::move(map);
  return p;
}

// v in a random order (drawn from one seed; this RapidCheck has no gen::shuffle).
template <class T>
std::vector<T> shuffled(std::vector<T> v) {
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

inline rc::Gen<std::vector<std::int64_t>> gen_sizes() {
  return rc::gen::resize(
      12, rc::gen::container<std::vector<std::int64_t>>(rc::gen::weightedOneOf<std::int64_t>(
              {{2, rc::gen::just<std::int64_t>(0)}, {5, rc::gen::inRange<std::int64_t>(1, 20)}})));
}

inline std::vector<std::int32_t> gen_map(std::int64_t G, int max_rows = 24) {
  return *rc::gen::container<std::vector<std::int32_t>>(
      std::size_t(*rc::gen::inRange(0, max_rows)),
      rc::gen::weightedOneOf<std::int32_t>(
          {{1, rc::gen::just(std::int32_t(-1))},
           {4, rc::gen::inRange(std::int32_t(0), std::int32_t(G))}}));
}

// A model valid for `s` (models needing constant scales skip blockwise / mx).
inline ModelChoice gen_model(Scaling s) {
  const auto m = *rc::gen::elementOf(kAllAccumulationModels);
  RC_PRE(!(needs_constant_scales(m) && (s == Scaling::blockwise || s == Scaling::mx)));
  return {m, accepts_split_k(m) ? *rc::gen::inRange(1, 4) : 1};
}

inline void gen_scales(Problem& p) {
  const bool mx = p.scaling == Scaling::mx;
  const std::int64_t na = p.scaling == Scaling::tensorwise ? 1 : p.M * sa_per_row(p);
  p.sa =
      *rc::gen::container<std::vector<float>>(std::size_t(na), mx ? gen_pow2_scale() : gen_scale());
  p.sb = *rc::gen::container<std::vector<float>>(std::size_t(p.G * sb_per_group(p)),
                                                 mx ? gen_pow2_scale() : gen_scale());
}

inline Problem gen_problem(const std::vector<std::int32_t>& map, std::int64_t G,
                           std::int64_t max_n = 140, std::int64_t max_k = 300) {
  Problem p;
  p.M = std::int64_t(map.size()), p.G = G, p.group_of = map;
  p.N = *rc::gen::inRange<std::int64_t>(1, max_n);
  p.K = *rc::gen::inRange<std::int64_t>(0, max_k);
  p.fa = *gen_format(), p.fb = *gen_format();
  p.a = *gen_codes(p.fa, p.M * p.K);
  p.b = *gen_codes(p.fb, G * p.N * p.K);
  p.scaling = *rc::gen::element(Scaling::none, Scaling::tensorwise, Scaling::rowwise,
                                Scaling::blockwise, Scaling::mx);
  gen_scales(p);
  return p;
}

// Output bits of a forward run (f32 bits, or bf16 / f16 in the low 16 bits).
inline std::vector<std::uint32_t> run_bits(const Problem& p, ModelChoice m, RowPolicy pol,
                                           OutDtype d, std::vector<double>* bound = nullptr) {
  std::vector<float> f(d == OutDtype::f32 ? std::size_t(p.M * p.N) : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : std::size_t(p.M * p.N));
  if (bound) bound->assign(std::size_t(p.M * p.N), 0.0);
  ref::grouped_gemm_forward(p.operands(), p.group_of, m, pol,
                            {d, f, h, bound ? std::span<double>(*bound) : std::span<double>()});
  std::vector<std::uint32_t> bits(std::size_t(p.M * p.N));
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

inline std::vector<float> run_f32(const Problem& p, ModelChoice m, RowPolicy pol, float fill) {
  std::vector<float> y(std::size_t(p.M * p.N), fill);
  ref::grouped_gemm_forward(p.operands(), p.group_of, m, pol, {OutDtype::f32, y, {}, {}});
  return y;
}

using cases::same_bits;

// The scales element (r, n) of group g uses, and their block width, for exact_dot_rational.
struct OracleScales {
  std::vector<float> sa, sb;
  std::int64_t block;
};
inline OracleScales oracle_scales(const Problem& p, std::int64_t r, std::int64_t g,
                                  std::int64_t n) {
  const std::int64_t nbk = ceil_div(p.K, 128), nbn = ceil_div(p.N, 128), nmx = ceil_div(p.K, 32);
  auto slice = [](const std::vector<float>& v, std::int64_t at, std::int64_t len) {
    return std::vector<float>(v.begin() + at, v.begin() + at + len);
  };
  OracleScales o{{1.0f}, {1.0f}, 128};
  switch (p.scaling) {
    case Scaling::none: break;
    case Scaling::tensorwise: o.sa = {p.sa[0]}, o.sb = {p.sb[std::size_t(g)]}; break;
    case Scaling::rowwise:
      o.sa = {p.sa[std::size_t(r)]}, o.sb = {p.sb[std::size_t(g * p.N + n)]};
      break;
    case Scaling::blockwise:
      o.sa = slice(p.sa, r * nbk, nbk), o.sb = slice(p.sb, (g * nbn + n / 128) * nbk, nbk);
      break;
    case Scaling::mx:
      o.sa = slice(p.sa, r * nmx, nmx), o.sb = slice(p.sb, (g * p.N + n) * nmx, nmx), o.block = 32;
      break;
    case Scaling::nvfp4:
    case Scaling::mx16: break;  // not generated here (Blackwell models: blackwell_gemm_test)
  }
  if (o.sa.size() <= 1)
    o.sa = {o.sa.empty() ? 1.0f : o.sa[0]}, o.sb = {o.sb.empty() ? 1.0f : o.sb[0]};
  return o;
}

}  // namespace fp8ref::test
