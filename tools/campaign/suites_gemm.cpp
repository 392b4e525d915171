// Grouped-GEMM fuzz suites (docs/fuzz.md "The suites"): the reference forward against the
// independent fixed-point oracle (tools/campaign/gen/fixed_oracle.h), every accumulation model
// within its bound of the exact value, padding poison, thread-count / repetition / empty-group
// invariance; the K-grouped wgrad suite is suites_wgrad.cpp. Cases (gemm_case.h) come from the
// shared generators of tools/campaign/gen/: tokens-per-group distributions, three group
// descriptors, value classes, small and MoE-like shapes, scalings, B layouts, output dtypes and
// models.
#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <sstream>

#include "campaign/gemm_case.h"
#include "campaign/strength.h"
#include "campaign/wgrad_case.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

namespace {

using gen::ExactValue;
using ref::Scaling;

// --- the implementation under test: the reference, through the case's descriptor ------------
struct Result {
  std::vector<float> f32;
  std::vector<std::uint16_t> u16;
  std::vector<double> bound;
  std::uint32_t bits(std::size_t i, OutDtype d) const {
    return d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f32[i]) : u16[i];
  }
};

Result run_forward(Fingerprint& fp, const GemmCase& c, ref::RowPolicy pol, bool with_bound,
                   std::uint32_t fill = 0) {
  Result r;
  const std::size_t n = std::size_t(c.M * c.N);
  if (c.out == OutDtype::f32)
    r.f32.assign(n, std::bit_cast<float>(fill));
  else
    r.u16.assign(n, std::uint16_t(fill));
  if (with_bound) r.bound.assign(n, 0.0);
  const ref::GroupedGemmOperands op{c.M, c.N, c.K,        c.G,       c.fa, c.fb,
                                    c.a, c.b, c.b_layout, c.scaling, c.sa, c.sb};
  const ref::GemmOutput y{c.out, r.f32, r.u16, r.bound};
  switch (c.desc) {
    case Desc::offs: ref::grouped_gemm_forward_offs(op, c.gs.ends(), c.model, pol, y); break;
    case Desc::aligned: {
      const ref::AlignedLayout lay = ref::aligned_layout_from_sizes(c.gs.sizes, c.gs.align);
      ref::grouped_gemm_forward(op, ref::row_map_from_aligned(lay, c.M), c.model, pol, y);
      break;
    }
    case Desc::masked:
      ref::grouped_gemm_forward(op, ref::row_map_from_masked(c.gs.sizes, c.m_max), c.model, pol, y);
      break;
  }
  if (c.out == OutDtype::f32)
    fp.fold(r.f32.data(), r.f32.size() * 4);
  else
    fp.fold(r.u16.data(), r.u16.size() * 2);
  return r;
}

void check_forward_exact(const GemmCase& c, Fingerprint& fp) {
  const Result y = run_forward(fp, c, ref::RowPolicy::zero, false);
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] < 0) {
      for (std::int64_t n = 0; n < c.N; ++n)
        if (const auto got = y.bits(std::size_t(r * c.N + n), c.out); got != 0)
          throw Violation("padding row not +0 under RowPolicy::zero: " + hex32(got) + " at " +
                          where(c, r, n));
      continue;
    }
    for (std::int64_t n : oracle_columns(c.N, r)) {
      const ExactValue x = oracle(c, r, n);
      const double want = oracle_rounded(x, c.out);
      const std::uint32_t got = y.bits(std::size_t(r * c.N + n), c.out);
      const double gv = value_of(got, c.out);
      // `exact` rounds once (docs/models.md): the value, and the sign of a zero: +0 for an exact
      // zero sum, the sign of the exact value when it rounds to zero (f16 underflow). Any NaN.
      const bool ok =
          std::isnan(want) ? std::isnan(gv) : gv == want && std::signbit(gv) == std::signbit(want);
      if (!ok) {
        std::ostringstream os;
        os.precision(17);
        os << "exact model: got " << hex32(got) << " = " << gv << ", oracle " << want << " at "
           << where(c, r, n);
        throw Violation(os.str());
      }
    }
  }
}

void check_models_bound(const GemmCase& c, Fingerprint& fp) {
  const Result y = run_forward(fp, c, ref::RowPolicy::zero, true);
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] < 0) continue;
    for (std::int64_t n : oracle_columns(c.N, r)) {
      const std::size_t i = std::size_t(r * c.N + n);
      const ExactValue x = oracle(c, r, n);
      const double gv = value_of(y.bits(i, c.out), c.out);
      const double bound = y.bound[i];
      bool ok = std::isfinite(gv) && std::isfinite(bound) && bound >= 0 && within(gv, x, bound);
      if (!ok) {
        std::ostringstream os;
        os.precision(17);
        os << to_string(c.model.model) << ": |y - exact| > bound: y " << gv << ", exact "
           << gen::round_to_format(x, 53, -1022, 1023) << ", bound " << bound << " at "
           << where(c, r, n);
        throw Violation(os.str());
      }
    }
  }
}

// Padding rows of A and their scales, and the B planes / scales of empty groups, hold poison;
// valid rows must keep their bits, and rows of no group stay unwritten under RowPolicy::untouched.
void check_padding_poison(const GemmCase& c, Fingerprint& fp) {
  const std::uint32_t fill1 = c.out == OutDtype::f32 ? 0x7fc01234u : 0x7fc1u;
  const std::uint32_t fill2 = c.out == OutDtype::f32 ? 0xff800000u : 0xff80u;
  const Result y1 = run_forward(fp, c, ref::RowPolicy::untouched, false, fill1);
  GemmCase p = c;
  std::mt19937_64 rng(std::uint64_t(c.M * 1000003 + c.N * 131 + c.K));
  const std::uint8_t poison_codes[] = {0x7F, 0xFF, 0x7E, 0xFE, 0x7C, 0xFC, 0x00, 0x80};
  const float poison_scales[] = {NAN, INFINITY, -INFINITY, 3.0e38f, -1.0f, 0.0f};
  const std::int64_t sa_row = c.M ? sa_count(c) / c.M : 0;
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] >= 0) continue;
    for (std::int64_t k = 0; k < c.K; ++k) p.a[std::size_t(r * c.K + k)] = poison_codes[rng() % 8];
    if (c.scaling == Scaling::rowwise || c.scaling == Scaling::blockwise ||
        c.scaling == Scaling::mx)
      for (std::int64_t j = 0; j < sa_row; ++j)
        p.sa[std::size_t(r * sa_row + j)] = poison_scales[rng() % 6];
  }
  const std::int64_t sb_group = c.G ? sb_count(c) / c.G : 0;
  for (std::int64_t g = 0; g < c.G; ++g) {
    if (c.gs.sizes[std::size_t(g)] != 0) continue;
    for (std::int64_t i = 0; i < c.N * c.K; ++i)
      p.b[std::size_t(g * c.N * c.K + i)] = poison_codes[rng() % 8];
    for (std::int64_t j = 0; j < sb_group; ++j)
      p.sb[std::size_t(g * sb_group + j)] = poison_scales[rng() % 6];
  }
  const Result y2 = run_forward(fp, p, ref::RowPolicy::untouched, false, fill2);
  for (std::int64_t r = 0; r < c.M; ++r)
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t i = std::size_t(r * c.N + n);
      const bool pad = c.group_of[std::size_t(r)] < 0;
      if (pad && (y1.bits(i, c.out) != fill1 || y2.bits(i, c.out) != fill2))
        throw Violation("a row of no group was written under RowPolicy::untouched at " +
                        where(c, r, n));
      if (!pad && y1.bits(i, c.out) != y2.bits(i, c.out))
        throw Violation("valid row changed when padding held poison: " + hex32(y1.bits(i, c.out)) +
                        " -> " + hex32(y2.bits(i, c.out)) + " at " + where(c, r, n));
    }
}

// The case with an empty group inserted at `at` (its B plane and scales NaN; A's rows and their
// scales follow the rows' new places, padding rows poison); map_to_base[r] is the row of `c`
// that row r of the result holds (-1: no group).
GemmCase with_empty_group(const GemmCase& c, std::int64_t at,
                          std::vector<std::int64_t>& map_to_base) {
  GemmCase e = c;
  e.G = c.G + 1;
  e.gs.sizes.insert(e.gs.sizes.begin() + at, 0);
  const std::int64_t bplane = c.N * c.K, sbg = c.G ? sb_count(c) / c.G : 0;
  e.b.insert(e.b.begin() + at * bplane, std::size_t(bplane), std::uint8_t(0x7F));
  e.sb.insert(e.sb.begin() + at * sbg, std::size_t(sbg), NAN);
  e.group_of = rows_of(e.gs, e.desc, e.m_max, e.M);
  // Rows map 1:1 between the layouts (the new group takes no rows, except masked: m_max rows).
  map_to_base.assign(std::size_t(e.M), -1);
  std::vector<std::vector<std::int64_t>> rows_c(std::size_t(c.G));
  for (std::int64_t r = 0; r < c.M; ++r)
    if (c.group_of[std::size_t(r)] >= 0)
      rows_c[std::size_t(c.group_of[std::size_t(r)])].push_back(r);
  std::vector<std::size_t> seen(std::size_t(e.G), 0);
  for (std::int64_t r = 0; r < e.M; ++r) {
    const std::int32_t g = e.group_of[std::size_t(r)];
    if (g < 0 || g == at) continue;
    const std::int64_t gc = g > at ? g - 1 : g;
    map_to_base[std::size_t(r)] = rows_c[std::size_t(gc)][seen[std::size_t(g)]++];
  }
  const std::int64_t sa_row = c.M ? sa_count(c) / c.M : 0;
  e.a.assign(std::size_t(e.M * c.K), std::uint8_t(0x7F));
  if (c.scaling == Scaling::tensorwise)
    e.sa = c.sa;
  else
    e.sa.assign(std::size_t(e.M * sa_row), NAN);
  for (std::int64_t r = 0; r < e.M; ++r) {
    const std::int64_t br = map_to_base[std::size_t(r)];
    if (br < 0) continue;
    std::copy_n(c.a.begin() + br * c.K, c.K, e.a.begin() + r * c.K);
    if (c.scaling != Scaling::tensorwise)
      std::copy_n(c.sa.begin() + br * sa_row, sa_row, e.sa.begin() + r * sa_row);
  }
  if (c.scaling == Scaling::none) e.sa.clear();
  return e;
}

// Same bits with 1 and 2 threads, on a repeated run, and with an empty group inserted (its B
// plane and scales garbage).
void check_invariance(const GemmCase& c, Fingerprint& fp) {
  Result base;
  {
    ThreadCount t(1);
    base = run_forward(fp, c, ref::RowPolicy::zero, false);
  }
  auto compare = [&](const Result& other, const GemmCase& oc,
                     const std::vector<std::int64_t>& row_to_base, const char* what) {
    for (std::int64_t r = 0; r < oc.M; ++r) {
      const std::int64_t br = row_to_base[std::size_t(r)];
      if (br < 0) continue;
      for (std::int64_t n = 0; n < c.N; ++n)
        if (other.bits(std::size_t(r * c.N + n), c.out) !=
            base.bits(std::size_t(br * c.N + n), c.out))
          throw Violation(std::string(what) + ": " +
                          hex32(base.bits(std::size_t(br * c.N + n), c.out)) + " vs " +
                          hex32(other.bits(std::size_t(r * c.N + n), c.out)) + " at " +
                          where(c, br, n));
    }
  };
  std::vector<std::int64_t> identity(std::size_t(c.M));
  for (std::int64_t r = 0; r < c.M; ++r)
    identity[std::size_t(r)] = c.group_of[std::size_t(r)] >= 0 ? r : -1;
  {
    ThreadCount t(2);
    compare(run_forward(fp, c, ref::RowPolicy::zero, false), c, identity, "1 thread vs 2 threads");
    compare(run_forward(fp, c, ref::RowPolicy::zero, false), c, identity, "repeated run");
  }
  // Insert an empty group at a position drawn from the case (offs / aligned / masked alike).
  const std::int64_t at =
      std::int64_t(std::uint64_t(c.M * 31 + c.N + c.K) % std::uint64_t(c.G + 1));
  std::vector<std::int64_t> map_to_base;
  const GemmCase e = with_empty_group(c, at, map_to_base);
  compare(run_forward(fp, e, ref::RowPolicy::zero, false), e, map_to_base,
          "an empty group inserted");
}

}  // namespace

// rare: classes expected fewer than 15 times in the level-1 case count (measured rates:
// sizes:edge_128 and sizes:edge_256 about 1.2% of the cases each), so not required at level 1.
void add_gemm_suites(std::vector<Suite>& out) {
  struct Spec {
    const char* name;
    const char* summary;
    int ctest_cases;
    DrawOptions draw;
    void (*check)(const GemmCase&, Fingerprint&);
    std::vector<std::string> rare;
  };
  const Spec specs[] = {
      {"gemm.forward",
       "M-grouped forward, exact model, == the fixed-point oracle (f32/bf16/f16); padding rows +0",
       2000,
       {true, true, false, true, true, true},
       check_forward_exact,
       {}},
      {"gemm.models_bound",
       "every accumulation model (split-K too) within its bound of the exact value",
       1500,
       {false, false, false, false, true, true},
       check_models_bound,
       {}},
      {"gemm.padding_poison",
       "valid rows bitwise unchanged when padding rows, scales and empty groups' B hold "
       "NaN/Inf/garbage",
       1000,
       {true, false, true, false, true, true},
       check_padding_poison,
       {"sizes:edge_256"}},
      {"gemm.invariance",
       "same bits for 1 and 2 threads, a repeated run, and an inserted empty group",
       600,
       {true, false, false, false, true, true},
       check_invariance,
       {"sizes:edge_128", "sizes:edge_256"}},
  };
  for (const Spec& sp : specs) {
    const DrawOptions o = sp.draw;
    // A sampled case's test strength joins its coverage classes (strength.h); the runner counts
    // the classes of passing cases only.
    auto tags = [](const GemmCase& c) {
      std::vector<std::string> t = gemm_tags(c);
      for (std::string& x : sampled_strength_tags(c)) t.push_back(std::move(x));
      return t;
    };
    const CaseSuite<GemmCase> cs{
        [o] { return draw_gemm(o); }, sp.check, tags, save_gemm, load_gemm, gemm_case_diff};
    out.push_back(make_suite<GemmCase>(
        {sp.name, sp.summary, "cpu", sp.ctest_cases, gemm_classes(o), sp.rare}, cs));
  }
  add_wgrad_suite(out);
}

}  // namespace fp8ref::fuzz
