// Test strength of the grouped-GEMM suites (strength.h; docs/fuzz.md "Test strength").
#include "campaign/strength.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

namespace {

using AM = AccumulationModel;
using ref::Scaling;

bool scalar_scales(Scaling s) { return s == Scaling::tensorwise || s == Scaling::rowwise; }

// The order a model applies scalar scales in when the choice says Epilogue::model
// (numerics/models/model_types.h: rowwise b_then_a, the other epilogue models scale_product).
Epilogue resolved_epilogue(const ref::ModelChoice& m) {
  if (m.epilogue != Epilogue::model || !accepts_epilogue(m.model)) return m.epilogue;
  return m.model == AM::hopper_promoted_rowwise ? Epilogue::b_then_a : Epilogue::scale_product;
}

// The rows of the cut: up to kStrengthRowsPerGroup of each group (spread over its rows), at most
// kStrengthMaxRows in all, in row order.
std::vector<std::int64_t> cut_rows(const cases::GemmCase& c) {
  std::vector<std::vector<std::int64_t>> by_group(std::size_t(c.G));
  for (std::int64_t r = 0; r < c.M; ++r)
    if (const std::int32_t g = c.group_of[std::size_t(r)]; g >= 0)
      by_group[std::size_t(g)].push_back(r);
  std::vector<std::int64_t> rows;
  for (const auto& g : by_group) {
    const std::int64_t n = std::int64_t(g.size()), take = std::min(n, kStrengthRowsPerGroup);
    for (std::int64_t i = 0; i < take; ++i)
      rows.push_back(g[std::size_t(take == 1 ? 0 : i * (n - 1) / (take - 1))]);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (std::int64_t(rows.size()) > kStrengthMaxRows) rows.resize(std::size_t(kStrengthMaxRows));
  return rows;
}

// The case restricted to `rows` (their codes, scales and groups; B unchanged).
struct Cut {
  cases::GemmCase c;
  std::vector<std::int32_t> row_map;
};
Cut make_cut(const cases::GemmCase& c, const std::vector<std::int64_t>& rows) {
  Cut x{c, {}};
  x.c.M = std::int64_t(rows.size());
  x.c.a.clear();
  const std::int64_t sa_row = c.M ? cases::sa_count(c) / c.M : 0;
  const bool per_row = c.scaling != Scaling::none && c.scaling != Scaling::tensorwise;
  if (per_row) x.c.sa.clear();
  for (std::int64_t r : rows) {
    x.c.a.insert(x.c.a.end(), c.a.begin() + r * c.K, c.a.begin() + (r + 1) * c.K);
    if (per_row)
      x.c.sa.insert(x.c.sa.end(), c.sa.begin() + r * sa_row, c.sa.begin() + (r + 1) * sa_row);
    x.row_map.push_back(c.group_of[std::size_t(r)]);
  }
  return x;
}

// The output bits of one configuration on the cut (bf16 / f16 in the low 16 bits); empty when
// the reference refuses the configuration for this case.
std::vector<std::uint32_t> run_cut(const Cut& x, const ref::ModelChoice& m) {
  const cases::GemmCase& c = x.c;
  const std::size_t n = std::size_t(c.M * c.N);
  std::vector<float> f32(c.out == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> u16(c.out == OutDtype::f32 ? 0 : n);
  try {
    ref::grouped_gemm_forward(c.operands(), x.row_map, m, ref::RowPolicy::zero,
                              {c.out, f32, u16, {}});
  } catch (const std::invalid_argument&) {
    return {};
  }
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f32[i]) : u16[i];
  return bits;
}

bool is_nan(std::uint32_t b, OutDtype d) {
  switch (d) {
    case OutDtype::f32: return (b & 0x7fffffffu) > 0x7f800000u;
    case OutDtype::bf16: return (b & 0x7fffu) > 0x7f80u;
    case OutDtype::f16: return (b & 0x7fffu) > 0x7c00u;
  }
  return false;
}

bool same_output(const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y,
                 OutDtype d) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i] && !(is_nan(x[i], d) && is_nan(y[i], d))) return false;
  return true;
}

bool zero_codes(const std::uint8_t* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::uint8_t v) { return (v & 0x7F) == 0; });
}

// A's rows of the cut all zero, or B all zero on every group that has a row in the cut.
bool zero_operand(const Cut& x) {
  const cases::GemmCase& c = x.c;
  if (zero_codes(c.a.data(), c.a.size())) return true;
  const std::size_t plane = std::size_t(c.N * c.K);
  for (std::int32_t g : x.row_map)
    if (!zero_codes(c.b.data() + std::size_t(g) * plane, plane)) return false;
  return true;
}

std::uint64_t fnv1a(std::uint64_t h, const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::vector<ref::ModelChoice> strength_candidates(Scaling s, std::int64_t K) {
  std::vector<ref::ModelChoice> out{{AM::exact, 1}, {AM::fp32_sequential, 1}};
  std::vector<AM> models{AM::hopper_promoted_blockwise, AM::hopper_mma_sync};
  if (!(s == Scaling::blockwise || s == Scaling::mx))
    models = {AM::hopper_unpromoted, AM::hopper_promoted_tensorwise, AM::hopper_promoted_blockwise,
              AM::hopper_mma_sync};
  std::vector<std::string> seen;
  for (AM m : models) {
    std::vector<Epilogue> eps{Epilogue::model};
    if (scalar_scales(s) && accepts_epilogue(m))
      eps = {Epilogue::scale_product, Epilogue::b_then_a, Epilogue::a_then_b};
    for (Epilogue e : eps)
      for (int v = 0; v < 6; ++v) {
        const ref::ModelChoice x =
            v < 3 ? ref::ModelChoice{m, v + 1, 0, e} : ref::ModelChoice{m, 1, v - 2, e};
        std::string key = configuration_key(x, s, K);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(std::move(key));
        out.push_back(x);
      }
  }
  return out;
}

// Identities of the models' arithmetic (numerics/models/hopper_models.h) that make two choices
// one computation, for nb 128-blocks of K:
//  - promoted_tensorwise and _rowwise share their accumulator (the f32 sum of the per-block T);
//  - with one block, unpromoted's single chain is that block's T, and promoted_blockwise's
//    fmaf(RN(sa·sb), T, +0) is RN(T·RN(sa·sb)): both are promoted_tensorwise (scale_product);
//  - without scales promoted_blockwise adds fmaf(1, T, acc) = RN(acc + T): promoted_tensorwise;
//  - promoted_tensorwise's slices are f32 sums added in order from +0, so a later slice of one
//    block adds its T exactly as the previous slice would have: it merges into that slice.
std::string configuration_key(const ref::ModelChoice& m, Scaling s, std::int64_t K) {
  const std::int64_t nb = std::max<std::int64_t>(1, (K + kScaleBlockK - 1) / kScaleBlockK);
  AM model = m.model;
  Epilogue ep = resolved_epilogue(m);
  if (!scalar_scales(s)) ep = Epilogue::model;  // no scalar scales: every order is one
  if (model == AM::hopper_promoted_rowwise) model = AM::hopper_promoted_tensorwise;
  const bool one_block_scalar = nb == 1 && (scalar_scales(s) || s == Scaling::none);
  if ((model == AM::hopper_promoted_blockwise && (s == Scaling::none || one_block_scalar)) ||
      (model == AM::hopper_unpromoted && one_block_scalar)) {
    if (model == AM::hopper_promoted_blockwise && scalar_scales(s)) ep = Epilogue::scale_product;
    model = AM::hopper_promoted_tensorwise;
  }
  std::string key = std::string(to_string(model)) + "/" + to_string(ep);
  if (!accepts_split_k(model)) return key;
  std::vector<std::int64_t> ends;  // the slice partition (ref::slice_ends, which the planted
                                   // reference library of fp8-check-planted does not link)
  const SplitK split = m.split();
  for (std::int64_t i = 0; i < split.count(nb); ++i)
    if (const SliceRange r = split.slice(nb, i); r.last > r.first) ends.push_back(r.last);
  if (model == AM::hopper_promoted_tensorwise) {  // front to back: a merged slice may take more
    for (std::size_t i = 1; i < ends.size();) {
      if (ends[i] - ends[i - 1] == 1)
        ends.erase(ends.begin() + std::ptrdiff_t(i - 1));
      else
        ++i;
    }
  }
  for (std::int64_t e : ends) {
    key += '/';  // appended, not "/" + string (GCC 12 -Wrestrict)
    key += std::to_string(e);
  }
  return key;
}

Strength measure_strength(const cases::GemmCase& c) {
  Strength st;
  const std::vector<std::int64_t> rows = cut_rows(c);
  if (rows.empty()) return st;
  const Cut x = make_cut(c, rows);
  const std::vector<std::uint32_t> declared = run_cut(x, c.model);
  if (declared.empty()) return st;  // the suite's own check reports a refused model
  st.measured = true;
  st.rows = std::int64_t(rows.size());
  st.zero_operand = zero_operand(x);
  st.zero_output = std::all_of(declared.begin(), declared.end(), [&](std::uint32_t b) {
    return (b & (c.out == OutDtype::f32 ? 0x7fffffffu : 0x7fffu)) == 0;
  });
  const std::string own = configuration_key(c.model, c.scaling, c.K);
  bool own_listed = false;
  for (const ref::ModelChoice& m : strength_candidates(c.scaling, c.K)) {
    const std::vector<std::uint32_t> y = run_cut(x, m);
    if (y.empty()) continue;
    ++st.candidates;
    own_listed = own_listed || configuration_key(m, c.scaling, c.K) == own;
    if (same_output(y, declared, c.out)) ++st.matching;
  }
  if (!own_listed) ++st.candidates, ++st.matching;  // a configuration outside the space
  return st;
}

bool strength_sampled(const cases::GemmCase& c) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, c.a.data(), c.a.size());
  h = fnv1a(h, c.b.data(), c.b.size());
  const std::int64_t dims[] = {c.M, c.N, c.K, c.G};
  h = fnv1a(h, dims, sizeof dims);
  if ((h >> 17) % kStrengthOneIn != 0) return false;
  return std::min(c.M, kStrengthMaxRows) * c.N * c.K <= kStrengthMaxWork;
}

std::vector<std::string> strength_tags(const Strength& s) {
  if (!s.measured) return {"vacuous:no_rows"};
  std::string n = "strength:";  // appended, not operator+ (GCC 12 -Wrestrict)
  n += std::to_string(s.matching);
  std::vector<std::string> t{n};
  if (s.zero_operand) t.push_back("vacuous:zero_operand");
  if (s.zero_output) t.push_back("vacuous:zero_output");
  if (s.matching == s.candidates) t.push_back("vacuous:all_agree");
  return t;
}

std::vector<std::string> sampled_strength_tags(const cases::GemmCase& c) {
  if (!strength_sampled(c)) return {};
  return strength_tags(measure_strength(c));
}

namespace {

// dW of every group under `m` as output bits (bf16 / f16 in the low 16 bits); empty when the
// reference refuses the configuration.
std::vector<std::uint32_t> run_wgrad_bits(const cases::WgradCase& w, const ref::ModelChoice& m) {
  const std::vector<std::int64_t> offs = w.gs.ends();
  const ref::WgradOperands op = w.operands();
  const std::size_t n = w.c.size();
  std::vector<float> f32(w.out == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> u16(w.out == OutDtype::f32 ? 0 : n);
  try {
    ref::grouped_gemm_wgrad(op, offs, m, {w.out, f32, u16, {}});
  } catch (const std::invalid_argument&) {
    return {};
  }
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = w.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f32[i]) : u16[i];
  return bits;
}

// The distinct token counts of the non-empty groups (the reduction lengths).
std::vector<std::int64_t> reduction_lengths(const cases::WgradCase& w) {
  std::vector<std::int64_t> ks;
  for (std::int64_t s : w.gs.sizes)
    if (s > 0 && std::find(ks.begin(), ks.end(), s) == ks.end()) ks.push_back(s);
  std::sort(ks.begin(), ks.end());
  return ks;
}

// dY or X all zero on the tokens of the groups (rows past the last group are never read).
bool wgrad_zero_operand(const cases::WgradCase& w, std::int64_t tokens) {
  return zero_codes(w.dy.data(), std::size_t(tokens * w.N)) ||
         zero_codes(w.x.data(), std::size_t(tokens * w.K));
}

}  // namespace

std::string wgrad_configuration_key(const ref::ModelChoice& m, const cases::WgradCase& w) {
  std::string key;
  for (std::int64_t k : reduction_lengths(w)) {
    key += configuration_key(m, w.scaling, k);
    key += ';';
  }
  return key;
}

Strength measure_wgrad_strength(const cases::WgradCase& w) {
  Strength st;
  const std::vector<std::int64_t> ks = reduction_lengths(w);
  if (ks.empty() || w.N == 0 || w.K == 0) return st;  // every dW is C: nothing is reduced
  const std::vector<std::uint32_t> declared = run_wgrad_bits(w, w.model);
  if (declared.empty()) return st;  // the suite's own check reports a refused model
  st.measured = true;
  std::int64_t tokens = 0;
  for (std::int64_t s : w.gs.sizes) tokens += s;
  st.rows = tokens;
  st.zero_operand = wgrad_zero_operand(w, tokens);
  st.zero_output = std::all_of(declared.begin(), declared.end(), [&](std::uint32_t b) {
    return (b & (w.out == OutDtype::f32 ? 0x7fffffffu : 0x7fffu)) == 0;
  });
  const std::string own = wgrad_configuration_key(w.model, w);
  std::vector<std::string> seen;
  for (const ref::ModelChoice& m : strength_candidates(w.scaling, ks.back())) {
    std::string key = wgrad_configuration_key(m, w);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    const std::vector<std::uint32_t> y = run_wgrad_bits(w, m);
    if (y.empty()) continue;
    seen.push_back(std::move(key));
    ++st.candidates;
    if (same_output(y, declared, w.out)) ++st.matching;
  }
  if (std::find(seen.begin(), seen.end(), own) == seen.end()) ++st.candidates, ++st.matching;
  return st;
}

std::vector<std::string> sampled_wgrad_strength_tags(const cases::WgradCase& w) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, w.dy.data(), w.dy.size());
  h = fnv1a(h, w.x.data(), w.x.size());
  const std::int64_t dims[] = {w.M, w.N, w.K, w.G};
  h = fnv1a(h, dims, sizeof dims);
  if ((h >> 17) % kStrengthOneIn != 0) return {};
  return strength_tags(measure_wgrad_strength(w));
}

}  // namespace fp8ref::fuzz
