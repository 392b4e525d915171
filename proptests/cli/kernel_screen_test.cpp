// verify's screen (tools/cli/kernel_screen.h, docs/cli.md "Kernel presets"): every
// configuration's bits at the screened elements equal its full run's bits there (the full
// reference run is the oracle), and verify's selection with the screen equals the selection
// without it: the same chosen configuration, the same matched / also-matches, the same mismatch
// count for every configuration compared in full, and a screened-out configuration differs in
// full too (the bits: every model, the Blackwell ones included; the selection: the wide set of
// --strength). Cases: every scaling the Hopper models take, f32 and bf16 outputs, B nk and kn,
// M-grouped with rows past the last group, K-grouped with an empty group; and a configuration
// that passes the screen but differs on one element outside it.
#include "cli/kernel_screen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/explain.h"
#include "cli/kernel_match.h"
#include "cli/oracle_run.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {
namespace {

using tensor_io::DType;
using tensor_io::Tensor;
using tensor_io::TensorFile;
using I64s = std::vector<std::int64_t>;

constexpr std::size_t kScreen = 16;  // a 4 x 4 grid: small against the cases below

template <class T>
Tensor tensor(DType t, I64s shape, const std::vector<T>& v) {
  Tensor x{t, std::move(shape), std::vector<std::uint8_t>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(x.data.data(), v.data(), x.data.size());
  return x;
}

// e4m3 codes whose exponent is a per-128-K-block base +-1 (partial sums of different blocks differ
// in magnitude, so split-K slices and promotion orders change the f32 result); no NaN code.
std::vector<std::uint8_t> block_codes(std::mt19937& rng, std::int64_t rows, std::int64_t k,
                                      bool k_fastest) {
  std::vector<int> base(std::size_t((k + 127) / 128));
  for (int& b : base) b = int(rng() % 14) + 1;
  std::vector<std::uint8_t> c(std::size_t(rows * k));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < k; ++j) {
      const int e = std::clamp(base[std::size_t(j / 128)] + int(rng() % 3) - 1, 1, 15);
      auto code = std::uint8_t(((rng() & 1) << 7) | (e << 3) | (rng() & 7));
      if ((code & 0x7F) == 0x7F) --code;
      c[std::size_t(k_fastest ? r * k + j : j * rows + r)] = code;
    }
  return c;
}

std::vector<float> scales(std::mt19937& rng, std::size_t n, bool pow2) {
  std::vector<float> s(n);
  for (float& x : s)
    x = pow2 ? std::ldexp(1.0f, int(rng() % 7) - 3)
             : 1e-3f + 2e-3f * float(rng() % 100000) / 100000.0f;
  return s;
}

struct Spec {
  std::string scaling, layout, grouping;
  OutDtype out;
};

// The operands of one case as a tensor file, with the options verify would parse.
TensorFile make_file(const Spec& s, GemmOptions& o, std::uint32_t seed) {
  std::mt19937 rng(seed);
  // N: two 128-column tiles, K: 4 blocks; M: 64 rows in groups, so the second stage of the
  // screen (64 / 16 = 4 whole rows, kernel_screen.h) runs beside the 4 x 4 grid.
  const std::int64_t M = 70, N = 140, K = 424, G = 3;
  const bool kg = s.grouping == "k", nk = s.layout == "nk";
  o = GemmOptions{};
  o.in = "case", o.a = "a", o.b = "b", o.offs = "offs", o.scaling = s.scaling;
  o.b_layout = s.layout, o.grouping = s.grouping;
  o.out_dtype = s.out == OutDtype::f32 ? "f32" : "bf16";
  const std::int64_t gb = kg ? 1 : G;  // B's groups
  TensorFile tf;
  tf.tensors.push_back({"a", tensor(DType::F8_E4M3, {M, K}, block_codes(rng, M, K, true))});
  std::vector<std::uint8_t> b;
  for (std::int64_t g = 0; g < gb; ++g) {
    const auto one = block_codes(rng, N, K, nk);
    b.insert(b.end(), one.begin(), one.end());
  }
  I64s bshape = nk ? I64s{N, K} : I64s{K, N};
  if (!kg) bshape.insert(bshape.begin(), G);
  tf.tensors.push_back({"b", tensor(DType::F8_E4M3, bshape, b)});
  // M-grouped: group 1 is empty, rows 64..69 belong to no group; K-grouped: group 1 has no K
  // column, columns 300..423 belong to no group.
  const std::vector<std::int64_t> offs = kg ? I64s{128, 128, 300} : I64s{25, 25, 64};
  tf.tensors.push_back({"offs", tensor(DType::I64, {G}, offs)});
  const std::int64_t nbk = (K + 127) / 128, nmx = (K + 31) / 32;
  if (s.scaling == "none") return tf;
  o.scale_a = "sa", o.scale_b = "sb";
  I64s sa{1}, sb{G};
  if (s.scaling == "tensorwise") sa = {}, sb = kg ? I64s{} : I64s{G};
  if (s.scaling == "rowwise") sa = {kg ? G * M : M}, sb = kg ? I64s{G * N} : I64s{G, N};
  if (s.scaling == "blockwise") sa = {M, nbk}, sb = {G, (N + 127) / 128, nbk};
  if (s.scaling == "mx") sa = {M, nmx}, sb = {G, N, nmx};
  const auto count = [](const I64s& v) {
    std::int64_t n = 1;
    for (auto x : v) n *= x;
    return std::size_t(n);
  };
  const bool pow2 = s.scaling == "mx";
  tf.tensors.push_back({"sa", tensor(DType::F32, sa, scales(rng, count(sa), pow2))});
  tf.tensors.push_back({"sb", tensor(DType::F32, sb, scales(rng, count(sb), pow2))});
  return tf;
}

// The planted output: the reference's run of `m`, as the tensor verify reads.
Tensor planted(const LoadedCase& lc, const ref::ModelChoice& m, OutDtype d) {
  const OracleRun r = run_loaded(lc, m, d, false);
  if (d == OutDtype::f32) return tensor(DType::F32, lc.shape, r.bits);
  std::vector<std::uint16_t> h(r.bits.begin(), r.bits.end());
  return tensor(DType::BF16, lc.shape, h);
}

std::vector<std::size_t> flat_order(const ScreenCase& sc) {
  std::vector<std::size_t> order;
  for (const auto& part : sc.index) order.insert(order.end(), part.begin(), part.end());
  return order;
}

void expect_same_selection(const Selection& s, const Selection& f, const std::string& what) {
  EXPECT_EQ(ref::describe_member(s.chosen), ref::describe_member(f.chosen)) << what;
  EXPECT_EQ(s.matched, f.matched) << what;
  EXPECT_EQ(s.also, f.also) << what;
  EXPECT_EQ(s.warnings, f.warnings) << what;
  ASSERT_EQ(s.scores.size(), f.scores.size()) << what;
  for (std::size_t i = 0; i < s.scores.size(); ++i) {
    const MemberScore &x = s.scores[i], &y = f.scores[i];
    const std::string at = what + " " + ref::describe_member(x.m);
    EXPECT_EQ(x.error, y.error) << at;
    EXPECT_FALSE(y.screened_out) << at;
    if (x.error) continue;
    if (x.screened_out) {
      EXPECT_GT(x.mismatches, 0) << at;
      EXPECT_GE(y.mismatches, x.mismatches) << at;  // the screen's elements are compared in full
    } else {
      EXPECT_EQ(x.mismatches, y.mismatches) << at;
      EXPECT_EQ(x.compared, y.compared) << at;
    }
  }
}

std::vector<Spec> specs() {
  std::vector<Spec> out;
  for (const char* sc : {"none", "tensorwise", "rowwise", "blockwise", "mx"}) {
    out.push_back({sc, "nk", "m", OutDtype::f32});
    out.push_back({sc, "kn", "m", OutDtype::bf16});
  }
  out.push_back({"tensorwise", "nk", "k", OutDtype::f32});
  out.push_back({"rowwise", "kn", "k", OutDtype::f32});
  out.push_back({"rowwise", "nk", "k", OutDtype::bf16});
  return out;
}

// The ASan+UBSan job looks for memory and UB errors, not for rare inputs: every fourth case
// there (each case runs every model in full, about ten times slower under the sanitizers).
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kSpecStride = 4;
#else
constexpr std::size_t kSpecStride = 1;
#endif

TEST(KernelScreen, ScreenBitsAreTheFullRunsAndSelectionIsUnchanged) {
  const std::vector<Spec> all = specs();
  for (std::size_t i = 0; i < all.size(); i += kSpecStride) {
    const Spec& sp = all[i];
    GemmOptions o;
    const TensorFile tf = make_file(sp, o, std::uint32_t(12 + i));
    const LoadedCase lc = load_for_run(tf, o);
    const std::string what = sp.scaling + " " + sp.layout + " " + sp.grouping +
                             (sp.out == OutDtype::f32 ? " f32" : " bf16");
    const std::vector<std::size_t> el = screen_elements(lc, kScreen);
    ASSERT_EQ(el.size(), kScreen) << what;  // the screen is active on these cases
    const ScreenCase sc = screen_case(lc, el);
    const std::vector<std::size_t> order = flat_order(sc);
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, el) << what;
    const ScreenCase rows = row_screen_case(lc, kScreen);  // the second stage: whole rows
    ASSERT_EQ(rows.parts.empty(), sp.grouping == "k") << what;
    const std::vector<std::size_t> row_order = flat_order(rows);
    EXPECT_EQ(row_order.size(), row_screen_rows(lc, kScreen).size() * std::size_t(lc.c.N));
    const std::vector<ref::ModelChoice> wide = wide_candidates(lc, sp.out);
    std::vector<ref::ModelChoice> every = wide;  // and every model unsplit (the Blackwell ones)
    for (AccumulationModel a : kAllAccumulationModels) every.push_back({a, 1});
    for (AccumulationModel a : kBlackwellAccumulationModels) every.push_back({a, 1});
    for (const ref::ModelChoice& m : every) {
      std::vector<std::uint32_t> full;
      try {
        full = run_loaded(lc, m, sp.out, false).bits;
      } catch (const std::invalid_argument&) {
        continue;  // refused for this scaling: scored as an error both ways (below)
      }
      for (const auto& [stage, at] : {std::pair{&sc, &order}, std::pair{&rows, &row_order}}) {
        const std::vector<std::uint32_t> cut = run_screen(*stage, m, sp.out, false);
        ASSERT_EQ(cut.size(), at->size());
        for (std::size_t j = 0; j < at->size(); ++j)
          ASSERT_EQ(cut[j], full[(*at)[j]])
              << what << " " << ref::describe_member(m) << " at " << (*at)[j];
      }
    }
    // got: a wide candidate past the first four (one the reference takes for the scaling), so
    // the members before it differ somewhere.
    std::optional<Tensor> got;
    for (std::size_t p = std::min<std::size_t>(4, wide.size() - 1); !got && p < wide.size(); ++p)
      try {
        got = planted(lc, wide[p], sp.out);
      } catch (const std::invalid_argument&) {
      }
    ASSERT_TRUE(got.has_value()) << what;
    const Selection s = select_configuration(lc, *got, wide, sp.out, false, true, true, kScreen);
    const Selection f = select_configuration(lc, *got, wide, sp.out, false, true, true, 0);
    EXPECT_TRUE(f.matched) << what;
    EXPECT_EQ(s.screened, kScreen) << what;
    EXPECT_EQ(f.screened, 0u) << what;
    EXPECT_EQ(s.screened_rows, sp.grouping == "k" ? 0u : 4u) << what;
    expect_same_selection(s, f, what);
    ASSERT_TRUE(s.run.has_value()) << what;
    EXPECT_EQ(s.run->bits, run_loaded(lc, s.chosen, sp.out, false).bits) << what;
    if (sp.out == OutDtype::f32) {  // f32 outputs of other splits differ on the screen already
      EXPECT_TRUE(std::any_of(s.scores.begin(), s.scores.end(), [](const MemberScore& m) {
        return m.screened_out;
      })) << what;
    }
  }
}

// The cut itself on every element: each compared element of each case, cut as a 1x1 case and
// stacked (screen_case of all of them), gives the full run's bits (a Hopper model, split-K 2).
TEST(KernelScreen, EveryElementCutIsTheFullRun) {
  std::uint32_t seed = 40;
  for (const Spec& sp : specs()) {
    GemmOptions o;
    const TensorFile tf = make_file(sp, o, ++seed);
    const LoadedCase lc = load_for_run(tf, o);
    const std::vector<bool> rows = compared_rows(lc);
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < std::size_t(lc.c.M * lc.c.N); ++i)
      if (rows[i / std::size_t(lc.c.N)] &&
          !(lc.k && lc.k->groups[i / std::size_t(lc.c.N) / std::size_t(lc.k->M)].K == 0))
        all.push_back(i);
    const ScreenCase sc = screen_case(lc, all);
    const std::vector<std::size_t> order = flat_order(sc);
    ASSERT_EQ(order.size(), all.size());
    const bool scalar =
        sp.scaling == "none" || sp.scaling == "tensorwise" || sp.scaling == "rowwise";
    const AccumulationModel hopper = scalar ? AccumulationModel::hopper_promoted_tensorwise
                                            : AccumulationModel::hopper_promoted_blockwise;
    const ref::ModelChoice m{hopper, 2};
    const std::vector<std::uint32_t> full = run_loaded(lc, m, sp.out, false).bits;
    const std::vector<std::uint32_t> cut = run_screen(sc, m, sp.out, false);
    for (std::size_t j = 0; j < order.size(); ++j)
      ASSERT_EQ(cut[j], full[order[j]])
          << sp.scaling << " " << sp.layout << " " << sp.grouping << " at " << order[j];
  }
}

TEST(KernelScreen, KnLoadedAsNkGivesTheReferenceOnTheFileLayout) {
  GemmOptions o;
  const TensorFile tf = make_file({"blockwise", "kn", "m", OutDtype::f32}, o, 5);
  const LoadedCase lc = load_for_run(tf, o);
  EXPECT_EQ(lc.c.b_layout, ref::BLayout::nk);
  GemmCase raw = lc.c;  // the operands as the file holds them: B (G, K, N)
  const Tensor& b = *tf.find("b");
  raw.b.assign(b.data.begin(), b.data.end()), raw.b_layout = ref::BLayout::kn;
  const ref::ModelChoice m{AccumulationModel::hopper_promoted_blockwise, 1, 2};
  std::vector<float> want(std::size_t(raw.M * raw.N));
  ref::grouped_gemm_forward_offs(raw.operands(), raw.offs, m, ref::RowPolicy::zero,
                                 {OutDtype::f32, want, {}, {}});
  const OracleRun got = run_loaded(lc, m, OutDtype::f32, false);
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got.bits[i], std::bit_cast<std::uint32_t>(want[i])) << i;
}

TEST(KernelScreen, PassesTheScreenButDiffersOutsideIt) {
  GemmOptions o;
  const Spec sp{"tensorwise", "kn", "m", OutDtype::f32};
  const TensorFile tf = make_file(sp, o, 99);
  const LoadedCase lc = load_for_run(tf, o);
  ref::PresetRow row{ref::Scaling::tensorwise,
                     false,
                     AccumulationModel::hopper_promoted_tensorwise,
                     Epilogue::scale_product,
                     ref::SplitFamily::equal_slices,
                     {},
                     ""};
  const std::vector<ref::ModelChoice> members = ref::preset_members(row, lc.c.K);
  ASSERT_GE(members.size(), 3u);
  Tensor got = planted(lc, members[2], sp.out);
  // One element outside the screen, in a compared row, one ulp off.
  const std::vector<std::size_t> el = screen_elements(lc, kScreen);
  const std::vector<std::int64_t> whole = row_screen_rows(lc, kScreen);
  ASSERT_FALSE(el.empty());
  ASSERT_FALSE(whole.empty());
  const std::vector<bool> rows = compared_rows(lc);
  const auto screened = [&](std::size_t i) {
    const auto r = std::int64_t(i / std::size_t(lc.c.N));
    return std::binary_search(el.begin(), el.end(), i) ||
           std::binary_search(whole.begin(), whole.end(), r);
  };
  std::size_t i = 0;
  while (!rows[i / std::size_t(lc.c.N)] || screened(i)) ++i;
  std::uint32_t bits;
  std::memcpy(&bits, got.data.data() + 4 * i, 4);
  bits ^= 1u;
  std::memcpy(got.data.data() + 4 * i, &bits, 4);
  const Selection s = select_configuration(lc, got, members, sp.out, false, true, true, kScreen);
  const Selection f = select_configuration(lc, got, members, sp.out, false, true, true, 0);
  expect_same_selection(s, f, "one element flipped outside the screen");
  const MemberScore& x = s.scores[2];
  EXPECT_FALSE(x.screened_out);  // it passed both stages of the screen ...
  EXPECT_EQ(x.mismatches, 1);    // ... and the full comparison found the flipped element
  EXPECT_FALSE(s.matched);
}

// got with its last compared element's lowest bit flipped: every configuration differs there.
Tensor flip_last(const LoadedCase& lc, Tensor got) {
  const std::vector<bool> rows = compared_rows(lc);
  std::size_t i = got.numel() - 1;
  while (!rows[i / std::size_t(lc.c.N)]) --i;
  got.data[i * std::size_t(got.byte_size() / got.numel())] ^= 1u;  // little-endian: lowest bit
  return got;
}

// explain with the screen (docs/cli.md "explain") against explain comparing every configuration
// in full (screen 0), the oracle: the same verdict, best configuration and first failing element;
// every configuration the screened report counts in full has screen 0's count, every screened
// count is a lower bound of it; the planted configuration ranks first. With and without preset
// members (the first three candidates: the story is then told against the best of them). Every
// third case (bf16 and f32, M- and K-grouped, scalar and block scales; each explain at --screen 0
// runs every candidate in full), every sixth under the sanitizers.
TEST(KernelScreen, ExplainWithTheScreenKeepsTheFullVerdictAndCounts) {
  const std::vector<Spec> all = specs();
  constexpr std::size_t kExplainStride = kSpecStride == 1 ? 3 : 6;
  for (std::size_t i = 1; i < all.size(); i += kExplainStride) {
    const Spec& sp = all[i];
    GemmOptions o;
    const TensorFile tf = make_file(sp, o, std::uint32_t(70 + i));
    const LoadedCase lc = load_for_run(tf, o);
    const std::vector<ref::ModelChoice> wide = wide_candidates(lc, sp.out);
    std::optional<Tensor> planted_got;
    std::size_t p = std::min<std::size_t>(4, wide.size() - 1);
    for (; !planted_got && p < wide.size(); ++p) try {
        planted_got = planted(lc, wide[p], sp.out);
      } catch (const std::invalid_argument&) {
      }
    ASSERT_TRUE(planted_got.has_value());
    for (const auto& [flipped, members] :
         {std::pair{false, std::size_t{0}}, std::pair{true, std::size_t{0}},
          std::pair{true, std::size_t{3}}}) {
      const std::string what = sp.scaling + " " + sp.layout + " " + sp.grouping +
                               (flipped ? " flipped" : "") + " members " + std::to_string(members);
      const Tensor got = flipped ? flip_last(lc, *planted_got) : *planted_got;
      const ExplainReport s = explain(lc, got, wide, members, sp.out, 2, kScreen);
      const ExplainReport f = explain(lc, got, wide, members, sp.out, 2, 0);
      EXPECT_EQ(s.screened, kScreen) << what;
      EXPECT_EQ(f.screened, 0u) << what;
      EXPECT_EQ(ref::describe_member(s.best), ref::describe_member(f.best)) << what;
      EXPECT_EQ(s.exact_match, f.exact_match) << what;
      if (!flipped && members == 0) EXPECT_TRUE(s.exact_match) << what;
      EXPECT_EQ(s.compared, f.compared) << what;
      ASSERT_EQ(s.first.has_value(), f.first.has_value()) << what;
      if (s.first) {
        EXPECT_EQ(std::pair(s.first->row, s.first->col), std::pair(f.first->row, f.first->col))
            << what;
        EXPECT_EQ(s.first->ref_z, f.first->ref_z) << what;
      }
      ASSERT_EQ(s.ranked.size(), f.ranked.size()) << what;
      EXPECT_EQ(ref::describe_member(s.ranked.front().m), ref::describe_member(f.ranked.front().m))
          << what;
      EXPECT_EQ(s.ranked.front().mismatches, flipped ? 1 : 0) << what;
      EXPECT_FALSE(s.ranked.front().screened_out) << what;
      std::size_t full = 0;
      for (const MemberScore& x : s.ranked) {
        const auto y = std::find_if(f.ranked.begin(), f.ranked.end(), [&](const MemberScore& z) {
          return ref::describe_member(z.m) == ref::describe_member(x.m);
        });
        ASSERT_NE(y, f.ranked.end()) << what;
        const std::string at = what + " " + ref::describe_member(x.m);
        EXPECT_FALSE(y->screened_out) << at;
        if (x.screened_out) {
          EXPECT_GT(x.mismatches, 0) << at;
          EXPECT_LE(x.mismatches, y->mismatches) << at;
          EXPECT_LT(x.compared, y->compared) << at;
        } else {
          ++full;
          EXPECT_EQ(x.mismatches, y->mismatches) << at;
          EXPECT_EQ(x.compared, y->compared) << at;
        }
      }
      if (sp.out == OutDtype::f32)  // f32 outputs of other configurations differ on the screen
        EXPECT_LT(full, s.ranked.size()) << what;
    }
  }
}

}  // namespace
}  // namespace fp8ref::cli
