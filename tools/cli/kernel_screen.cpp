// Element cuts and the screen of verify (kernel_screen.h).
#include "cli/kernel_screen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "reference/group_desc.h"

namespace fp8ref::cli {
namespace {

using ref::Scaling;

// Output (row, col) of K-grouped group g in the wgrad form (gemm_case.h KGroupedCase: A^T as dy
// (K, M), B as x (K, N), 1x128 / 1x32 scales along K restarting at each group start, transposed
// to (R, M) / (R, N)) as a 1x1 forward case over the group's K columns with its scale blocks.
GemmCase kgroup_block_element(const KGroupedCase& k, std::int64_t g, std::int64_t row,
                              std::int64_t col) {
  const std::int64_t blk = k.block_scaling == Scaling::blockwise ? kScaleBlockK : kMxBlockK;
  const std::int64_t s = g == 0 ? 0 : k.offs[std::size_t(g - 1)];
  const std::int64_t rb = kgroup_first_scale_row(k.offs, g, blk);
  GemmCase e;
  e.M = 1, e.N = 1, e.K = k.offs[std::size_t(g)] - s, e.G = 1, e.fa = k.fa, e.fb = k.fb;
  e.scaling = k.block_scaling, e.b_layout = ref::BLayout::nk, e.offs = {1};
  for (std::int64_t kk = s; kk < s + e.K; ++kk) {
    e.a.push_back(k.dy[std::size_t(kk * k.M + row)]);
    e.b.push_back(k.x[std::size_t(kk * k.N + col)]);
  }
  for (std::int64_t j = 0; j < (e.K + blk - 1) / blk; ++j) {
    e.sa.push_back(k.sdy[std::size_t((rb + j) * k.M + row)]);
    e.sb.push_back(k.sx[std::size_t((rb + j) * k.N + col)]);
  }
  return e;
}

// `n` of the `total` positions 0..total-1, evenly spread, first and last included.
std::vector<std::int64_t> spread(std::int64_t total, std::int64_t n) {
  n = std::min(n, total);
  std::vector<std::int64_t> out;
  for (std::int64_t j = 0; j < n; ++j) out.push_back(n == 1 ? 0 : j * (total - 1) / (n - 1));
  return out;
}

// The 1x1 cases of `elements` (one K) stacked: elements of one (column, group) pair form one
// group of rows, so the reference evaluates each group in parallel over its rows. `order`
// receives the elements in the stacked case's row order.
LoadedCase stack(const LoadedCase& lc, const std::vector<std::size_t>& elements,
                 std::vector<std::size_t>& order) {
  std::vector<Located> cut;
  for (std::size_t i : elements) cut.push_back(locate(lc, i));
  std::vector<std::size_t> by(cut.size());
  std::iota(by.begin(), by.end(), std::size_t{0});
  const auto key = [&](std::size_t t) { return std::tie(cut[t].col, cut[t].group, cut[t].row); };
  std::stable_sort(by.begin(), by.end(), [&](auto x, auto y) { return key(x) < key(y); });
  GemmCase s;
  const GemmCase& e0 = cut.front().e;
  s.K = e0.K, s.N = 1, s.fa = e0.fa, s.fb = e0.fb, s.scaling = e0.scaling;
  s.b_layout = ref::BLayout::nk, s.ta = e0.ta;
  if (s.scaling == Scaling::tensorwise) s.sa = e0.sa;  // one scale for every row
  for (std::size_t j = 0; j < by.size(); ++j) {
    const Located& x = cut[by[j]];
    if (j == 0 || cut[by[j - 1]].col != x.col || cut[by[j - 1]].group != x.group) {
      s.b.insert(s.b.end(), x.e.b.begin(), x.e.b.end());
      s.sb.insert(s.sb.end(), x.e.sb.begin(), x.e.sb.end());
      s.tb.insert(s.tb.end(), x.e.tb.begin(), x.e.tb.end());
      s.offs.push_back(s.M);
      ++s.G;
    }
    s.a.insert(s.a.end(), x.e.a.begin(), x.e.a.end());
    if (s.scaling != Scaling::tensorwise) s.sa.insert(s.sa.end(), x.e.sa.begin(), x.e.sa.end());
    s.offs.back() = ++s.M;
    order.push_back(elements[by[j]]);
  }
  std::vector<std::int64_t> shape{s.M, 1};
  return {std::move(s), std::nullopt, std::move(shape), ""};
}

}  // namespace

GemmCase element_case(const GemmCase& c, std::int64_t row, std::int64_t col, std::int64_t g) {
  GemmCase e;
  e.M = 1, e.N = 1, e.K = c.K, e.G = 1, e.fa = c.fa, e.fb = c.fb, e.scaling = c.scaling;
  e.b_layout = ref::BLayout::nk, e.offs = {1};
  e.a.assign(c.a.begin() + row * c.K, c.a.begin() + (row + 1) * c.K);
  if (c.b_layout == ref::BLayout::nk) {
    const auto at = c.b.begin() + (g * c.N + col) * c.K;
    e.b.assign(at, at + c.K);
  } else {
    for (std::int64_t k = 0; k < c.K; ++k)
      e.b.push_back(c.b[std::size_t((g * c.K + k) * c.N + col)]);
  }
  const std::int64_t bk = scale_block_k(c.scaling);
  if (c.scaling == Scaling::tensorwise) e.sa = c.sa, e.sb = {c.sb[std::size_t(g)]};
  if (c.scaling == Scaling::rowwise)
    e.sa = {c.sa[std::size_t(row)]}, e.sb = {c.sb[std::size_t(g * c.N + col)]};
  if (bk > 0) {
    const std::int64_t nk = (c.K + bk - 1) / bk;
    e.sa.assign(c.sa.begin() + row * nk, c.sa.begin() + (row + 1) * nk);
    const std::int64_t b_row =
        c.scaling == Scaling::blockwise
            ? g * ((c.N + kScaleBlockK - 1) / kScaleBlockK) + col / kScaleBlockK
            : g * c.N + col;
    e.sb.assign(c.sb.begin() + b_row * nk, c.sb.begin() + (b_row + 1) * nk);
  }
  if (!c.ta.empty()) e.ta = c.ta, e.tb = {c.tb[std::size_t(g)]};
  return e;
}

Located locate(const LoadedCase& lc, std::size_t i) {
  const std::int64_t row = std::int64_t(i) / lc.c.N, col = std::int64_t(i) % lc.c.N;
  if (lc.k) {
    const std::int64_t g = row / lc.k->M;
    const GemmCase& gc = lc.k->groups[std::size_t(g)];
    if (lc.k->block_scaling != Scaling::none)
      return {kgroup_block_element(*lc.k, g, row % lc.k->M, col), row % lc.k->M, col, g, &gc};
    return {element_case(gc, row % lc.k->M, col, 0), row % lc.k->M, col, g, &gc};
  }
  const auto map = ref::row_map_from_offsets(lc.c.offs, lc.c.M);
  const std::int64_t g = map[std::size_t(row)];
  return {element_case(lc.c, row, col, g), row, col, g, &lc.c};
}

std::vector<std::size_t> screen_elements(const LoadedCase& lc, std::size_t count) {
  // The wgrad form (K-grouped with scales along K) is evaluated whole: its 1x1 forward cut
  // differs from the wgrad in the sign of an all-zero sum (C = -0), which a screen must not risk.
  if (count == 0 || (lc.k && lc.k->block_scaling != Scaling::none)) return {};
  std::vector<std::int64_t> rows;
  const auto map = ref::row_map_from_offsets(lc.c.offs, lc.c.M);
  for (std::int64_t r = 0; r < lc.c.M; ++r) {
    const bool empty_k = lc.k && lc.k->groups[std::size_t(r / lc.k->M)].K == 0;
    if (map[std::size_t(r)] >= 0 && !empty_k) rows.push_back(r);
  }
  const auto n = lc.c.N, nr = std::int64_t(rows.size());
  if (double(nr) * double(n) <= 4.0 * double(count)) return {};
  const auto side = std::int64_t(std::ceil(std::sqrt(double(count))));
  std::vector<std::size_t> out;
  for (std::int64_t r : spread(nr, side))
    for (std::int64_t c : spread(n, side)) out.push_back(std::size_t(rows[std::size_t(r)] * n + c));
  return out;
}

std::size_t ScreenCase::size() const {
  std::size_t n = 0;
  for (const auto& x : index) n += x.size();
  return n;
}

ScreenCase screen_case(const LoadedCase& lc, const std::vector<std::size_t>& elements) {
  std::map<std::int64_t, std::vector<std::size_t>> by_part;  // K group (0 for M-grouped)
  for (std::size_t i : elements)
    by_part[lc.k ? std::int64_t(i) / lc.c.N / lc.k->M : 0].push_back(i);
  ScreenCase s;
  for (const auto& [part, list] : by_part) {
    s.index.emplace_back();
    s.parts.push_back(stack(lc, list, s.index.back()));
  }
  return s;
}

std::vector<std::int64_t> row_screen_rows(const LoadedCase& lc, std::size_t count) {
  if (count == 0 || lc.k) return {};
  const auto map = ref::row_map_from_offsets(lc.c.offs, lc.c.M);
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < lc.c.M; ++r)
    if (map[std::size_t(r)] >= 0) rows.push_back(r);
  const auto side = std::int64_t(std::ceil(std::sqrt(double(count))));
  const std::int64_t take = std::int64_t(rows.size()) / 16;
  if (take < side) return {};
  std::vector<std::int64_t> out;
  for (std::int64_t j : spread(std::int64_t(rows.size()), take))
    out.push_back(rows[std::size_t(j)]);
  return out;
}

ScreenCase row_screen_case(const LoadedCase& lc, std::size_t count) {
  ScreenCase s;
  const std::vector<std::int64_t> rows = row_screen_rows(lc, count);
  if (rows.empty()) return s;
  const GemmCase& c = lc.c;
  const auto map = ref::row_map_from_offsets(c.offs, c.M);
  GemmCase h = c;  // B, its scales and the tensor scales stay whole
  h.a.clear(), h.offs.assign(std::size_t(c.G), 0);
  const std::int64_t per_row = c.scaling == Scaling::tensorwise ? 0 : cases::sa_per_row(c);
  if (per_row > 0) h.sa.clear();
  std::vector<std::size_t> index;
  h.M = 0;
  for (std::int64_t r : rows) {
    ++h.M;
    h.a.insert(h.a.end(), c.a.begin() + r * c.K, c.a.begin() + (r + 1) * c.K);
    if (per_row > 0)
      h.sa.insert(h.sa.end(), c.sa.begin() + r * per_row, c.sa.begin() + (r + 1) * per_row);
    for (std::int64_t g = map[std::size_t(r)]; g < c.G; ++g) ++h.offs[std::size_t(g)];
    for (std::int64_t n = 0; n < c.N; ++n) index.push_back(std::size_t(r * c.N + n));
  }
  std::vector<std::int64_t> shape{h.M, c.N};
  s.parts.push_back({std::move(h), std::nullopt, std::move(shape), ""});
  s.index.push_back(std::move(index));
  return s;
}

std::vector<std::uint32_t> run_screen(const ScreenCase& s, ref::ModelChoice m, OutDtype d,
                                      bool on_gpu) {
  std::vector<std::uint32_t> bits;
  for (const LoadedCase& part : s.parts) {
    const OracleRun r = run_loaded(part, m, d, on_gpu);
    bits.insert(bits.end(), r.bits.begin(), r.bits.end());
  }
  return bits;
}

}  // namespace fp8ref::cli
