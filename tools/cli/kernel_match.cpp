// --kernel presets and configuration scoring (kernel_match.h; docs/presets.md). What the dump
// already determines is read from it, never guessed: the scaling from the scale tensors' sizes,
// B's layout from which axis of B has A's K, the output dtype from --got. When the dump cannot
// tell (a square B), the preset's own layout is used and printed.
#include "cli/kernel_match.h"

#include <algorithm>
#include <stdexcept>

#include "cli/errors.h"
#include "cli/kernel_screen.h"
#include "reference/group_desc.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;
using ref::Scaling;

std::int64_t numel_of(const TensorFile& tf, const GemmOptions& o, const std::string& name,
                      const char* flag) {
  return std::int64_t(find_tensor(tf, o.in, name, flag).numel());
}

// B's layout from its shape: nk puts K last, kn puts K before N.
void infer_b_layout(const TensorFile& tf, GemmOptions& o, const ref::KernelPreset& p) {
  const Tensor& a = find_tensor(tf, o.in, o.a, "--a");
  const Tensor& b = find_tensor(tf, o.in, o.b, "--b");
  if (a.shape.size() != 2 || b.shape.size() < 2) return;  // load_case explains the shape
  const std::int64_t k = a.shape[1], last = b.shape.back(), before = b.shape[b.shape.size() - 2];
  if (last == k && before != k) o.b_layout = "nk";
  if (before == k && last != k) o.b_layout = "kn";
  if (last == k && before == k) o.b_layout = std::string(p.b_layout);
}

struct Extents {
  std::int64_t M, N, K, G;
};
Extents extents(const TensorFile& tf, const GemmOptions& o) {
  const Tensor& a = find_tensor(tf, o.in, o.a, "--a");
  const Tensor& b = find_tensor(tf, o.in, o.b, "--b");
  if (a.shape.size() != 2 || b.shape.size() < 2) return {0, 0, 0, 0};
  Extents e{a.shape[0], o.b_layout == "nk" ? b.shape[b.shape.size() - 2] : b.shape.back(),
            a.shape[1], b.shape.size() == 3 ? b.shape[0] : 1};
  if (o.grouping == "k") e.G = o.offs.empty() ? 1 : numel_of(tf, o, o.offs, "--offs");
  return e;
}

// The scalings of the preset whose scale sizes the dump has.
void infer_scaling(const TensorFile& tf, GemmOptions& o, const ref::KernelPreset& p) {
  if (o.scale_a.empty() && o.scale_b.empty()) {
    o.scaling = "none";
    return;
  }
  if (o.scale_a.empty() || o.scale_b.empty()) usage("--kernel: give both --scale-a and --scale-b");
  const std::int64_t na = numel_of(tf, o, o.scale_a, "--scale-a"),
                     nb = numel_of(tf, o, o.scale_b, "--scale-b");
  const Extents e = extents(tf, o);
  const auto cd = [](std::int64_t x, std::int64_t d) { return (x + d - 1) / d; };
  std::vector<std::string> fits;
  for (const ref::PresetRow& r : p.rows) {
    const std::string name = to_string(r.scaling);
    if (std::find(fits.begin(), fits.end(), name) != fits.end()) continue;
    bool ok = false;
    const bool k = o.grouping == "k";
    switch (r.scaling) {
      case Scaling::tensorwise: ok = na == 1 && nb == (k ? 1 : e.G); break;
      case Scaling::rowwise:
        ok = k ? na == e.G * e.M && nb == e.G * e.N : na == e.M && nb == e.G * e.N;
        break;
      case Scaling::blockwise:
        ok = !k && na == e.M * cd(e.K, 128) && nb == e.G * cd(e.N, 128) * cd(e.K, 128);
        break;
      case Scaling::mx: ok = !k && na == e.M * cd(e.K, 32) && nb == e.G * e.N * cd(e.K, 32); break;
      default: break;
    }
    if (ok) fits.push_back(name);
  }
  if (fits.size() == 1) {
    o.scaling = fits[0];
    return;
  }
  std::string names;
  for (const ref::PresetRow& r : p.rows)
    if (names.find(to_string(r.scaling)) == std::string::npos)
      names += std::string(names.empty() ? "" : ", ") + to_string(r.scaling);
  usage("--kernel " + std::string(p.alias) + ": scale sizes (" + std::to_string(na) + ", " +
        std::to_string(nb) + ") " +
        (fits.empty() ? "fit none of its scalings (" + names + ")"
                      : "fit several scalings; pass --scaling"));
}

void infer_out_dtype(const TensorFile& tf, GemmOptions& o) {
  const std::string path = o.got_file.empty() ? o.in : o.got_file;
  const TensorFile gf = o.got_file.empty() ? TensorFile{} : load_file(path);
  const Tensor& got = find_tensor(o.got_file.empty() ? tf : gf, path, o.got, "--got");
  if (got.dtype == DType::F32) o.out_dtype = "f32";
  if (got.dtype == DType::BF16) o.out_dtype = "bf16";
  if (got.dtype == DType::F16) o.out_dtype = "f16";
}

std::string preset_names() {
  std::string s;
  for (const ref::KernelPreset& p : ref::kernel_presets())
    s += std::string(s.empty() ? "" : ", ") + std::string(p.alias);
  return s;
}

}  // namespace

ResolvedKernel resolve_kernel(GemmOptions& o, const GivenOptions& given) {
  return resolve_kernel(o, given, load_input(o));
}

ResolvedKernel resolve_kernel(GemmOptions& o, const GivenOptions& given, const TensorFile& tf) {
  const ref::KernelPreset* p = ref::find_kernel_preset(o.kernel);
  if (p == nullptr)
    usage("--kernel: unknown kernel '" + o.kernel + "'; presets: " + preset_names());
  if (o.grouping == "k" && p->grouping == ref::PresetGrouping::m)
    usage("--kernel " + std::string(p->alias) + " is M-grouped only; --grouping k is refused");
  if (!given.b_layout) infer_b_layout(tf, o, *p);
  if (!given.scaling) infer_scaling(tf, o, *p);
  if (!given.out_dtype && !o.got.empty()) infer_out_dtype(tf, o);
  const auto sc = ref::parse_scaling(o.scaling);
  const ref::PresetRow* row = sc ? ref::preset_row(*p, *sc, o.fast_accum) : nullptr;
  if (row == nullptr)
    usage("--kernel " + std::string(p->alias) + " has no " + o.scaling + " kernel" +
          (o.fast_accum ? " with fast accumulation" : "") + " in its preset (docs/presets.md)");
  const std::int64_t k = find_tensor(tf, o.in, o.a, "--a").shape.back();
  std::vector<ref::ModelChoice> members;
  for (ref::ModelChoice m : ref::preset_members(*row, k)) {
    if (given.model || given.split || given.epilogue) {
      GemmOptions t = o;
      if (!given.model) t.model = to_string(m.model);
      const ref::ModelChoice x = parse_model(t);
      if (given.model) m.model = x.model;
      if (given.split) m.split_k = x.split_k, m.split_blocks = x.split_blocks;
      if (given.epilogue) m.epilogue = x.epilogue;
    }
    const auto same = [&](const ref::ModelChoice& y) {
      return ref::describe_member(y) == ref::describe_member(m);
    };
    if (std::none_of(members.begin(), members.end(), same)) members.push_back(m);
  }
  return {p, row, std::move(members)};
}

std::vector<ref::ModelChoice> wide_candidates(const LoadedCase& lc, OutDtype) {
  using AM = AccumulationModel;
  const Scaling sc = lc.c.scaling;
  const bool scalar = sc == Scaling::none || sc == Scaling::tensorwise || sc == Scaling::rowwise;
  std::vector<ref::ModelChoice> out{{AM::exact, 1}, {AM::fp32_sequential, 1}};
  std::vector<AM> models{AM::hopper_promoted_blockwise, AM::hopper_mma_sync};
  if (scalar)
    models = {AM::hopper_promoted_tensorwise, AM::hopper_unpromoted, AM::hopper_promoted_blockwise,
              AM::hopper_mma_sync};
  std::vector<Epilogue> eps{Epilogue::model};
  if (scalar) eps = {Epilogue::scale_product, Epilogue::b_then_a, Epilogue::a_then_b};
  const std::int64_t k = lc.k ? lc.k->K : lc.c.K;
  for (AM m : models)
    for (Epilogue e : eps) {
      ref::PresetRow row{sc, false, m, e, ref::SplitFamily::equal_slices, {}, ""};
      for (const ref::ModelChoice& x : ref::preset_members(row, k))
        if (x.split_k <= 5 || x.split_k == 8) out.push_back(x);
      static constexpr std::int64_t kLengths[] = {24};
      row.split = ref::SplitFamily::slice_lengths, row.lengths = kLengths;
      const auto l = ref::preset_members(row, k);
      if (l.size() > 1) out.push_back(l.back());
    }
  return out;
}

std::vector<bool> compared_rows(const LoadedCase& lc) {
  const auto map = ref::row_map_from_offsets(lc.c.offs, lc.c.M);
  std::vector<bool> rows(map.size());
  for (std::size_t r = 0; r < map.size(); ++r) rows[r] = map[r] >= 0;
  return rows;
}

namespace {

// Mismatches of `bits` (the elements `index`, or every element when index is null) against got
// over the compared rows, leaving out the entries `skip` marks.
std::int64_t count_mismatches(const std::vector<std::uint32_t>& bits, const Tensor& got,
                              const std::vector<bool>& rows, std::size_t n,
                              const std::vector<std::size_t>* index, std::int64_t& compared,
                              const std::vector<bool>* skip = nullptr) {
  std::int64_t miss = 0;
  compared = 0;
  for (std::size_t j = 0; j < bits.size(); ++j) {
    const std::size_t i = index ? (*index)[j] : j;
    if (!rows[i / n] || (skip && (*skip)[j])) continue;
    ++compared;
    if (bits[j] != std::uint32_t(raw_bits(got, i))) ++miss;
  }
  return miss;
}

// The screen's elements in run_screen's order.
std::vector<std::size_t> screen_order(const ScreenCase& sc) {
  std::vector<std::size_t> order;
  for (const auto& part : sc.index) order.insert(order.end(), part.begin(), part.end());
  return order;
}

}  // namespace

MemberScreen::MemberScreen(const LoadedCase& lc, const Tensor& got, OutDtype d, bool on_gpu,
                           std::size_t screen)
    : lc_(lc),
      got_(got),
      d_(d),
      on_gpu_(on_gpu),
      rows_(compared_rows(lc)),
      stages_{screen_case(lc, screen_elements(lc, screen)), row_screen_case(lc, screen)},
      orders_{screen_order(stages_[0]), screen_order(stages_[1])} {
  std::vector<std::size_t> grid = orders_[0];
  std::sort(grid.begin(), grid.end());
  for (const std::size_t i : orders_[1])
    again_.push_back(std::binary_search(grid.begin(), grid.end(), i));
}

std::size_t MemberScreen::rows() const {
  return orders_[1].size() / std::size_t(std::max<std::int64_t>(lc_.c.N, 1));
}

MemberScore MemberScreen::screen(const ref::ModelChoice& m, bool every_stage) const {
  MemberScore s;
  s.m = m;
  for (int st = 0; st < 2 && (every_stage || !s.screened_out); ++st) {
    if (orders_[st].empty()) continue;
    std::vector<std::uint32_t> bits;
    try {
      bits = run_screen(stages_[st], m, d_, on_gpu_);
    } catch (const std::invalid_argument&) {
      // A refusal is the full run's to report, with the full case's message.
      if (every_stage) s.mismatches = 0, s.compared = 0, s.screened_out = false;
      return s;
    }
    // The union counts each element once; verify's second stage counts its own elements.
    const std::vector<bool>* skip = st == 1 && every_stage ? &again_ : nullptr;
    std::int64_t compared = 0;
    const std::int64_t miss =
        count_mismatches(bits, got_, rows_, std::size_t(lc_.c.N), &orders_[st], compared, skip);
    s.mismatches = every_stage ? s.mismatches + miss : miss;
    s.compared = every_stage ? s.compared + compared : compared;
    s.screened_out = s.mismatches > 0;
  }
  return s;
}

OracleRun MemberScreen::compare_full(MemberScore& s) const {
  s.screened_out = false;
  try {
    OracleRun r = run_loaded(lc_, s.m, d_, on_gpu_);
    s.mismatches = count_mismatches(r.bits, got_, rows_, std::size_t(lc_.c.N), nullptr, s.compared);
    return r;
  } catch (const std::invalid_argument& e) {
    s.error = true, s.why = e.what();
    return {};
  }
}

std::vector<MemberScore> score_members(const LoadedCase& lc, const Tensor& got,
                                       const std::vector<ref::ModelChoice>& members, OutDtype d,
                                       bool on_gpu, std::size_t screen,
                                       std::optional<OracleRun>* keep) {
  const MemberScreen sc(lc, got, d, on_gpu, screen);
  std::optional<std::int64_t> kept;  // mismatches of the run in *keep
  std::vector<MemberScore> out;
  for (const ref::ModelChoice& m : members) {
    MemberScore s = sc.screen(m);
    if (!s.screened_out) {
      OracleRun r = sc.compare_full(s);
      if (keep && !s.error && (!kept || s.mismatches < *kept))
        *keep = std::move(r), kept = s.mismatches;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace fp8ref::cli

namespace fp8ref::cli {
namespace {

bool all_zero_codes(const std::vector<std::uint8_t>& codes) {
  return std::all_of(codes.begin(), codes.end(), [](std::uint8_t c) { return (c & 0x7F) == 0; });
}

// Vacuous data: a pass that says nothing about the accumulation order.
std::vector<std::string> vacuity_warnings(const LoadedCase& lc, const Tensor& got,
                                          const std::vector<MemberScore>& scores) {
  std::vector<std::string> w;
  const bool za = lc.k ? std::all_of(lc.k->groups.begin(), lc.k->groups.end(),
                                     [](const GemmCase& g) { return all_zero_codes(g.a); })
                       : all_zero_codes(lc.c.a);
  if (za) w.push_back("A is all zeros");
  if (!lc.k && all_zero_codes(lc.c.b)) w.push_back("B is all zeros");
  const std::vector<bool> rows = compared_rows(lc);
  bool any = false;
  for (std::size_t i = 0; i < got.numel() && !any; ++i)
    any = rows[i / std::size_t(lc.c.N)] && (raw_bits(got, i) << 1) != 0;
  if (!any)
    w.push_back(
        "every compared output is zero (zero operands, or scales that underflow every "
        "product)");
  for (const MemberScore& s : scores)
    if (s.m.model == AccumulationModel::exact && !s.error && s.mismatches == 0)
      w.push_back(
          "the exact model reproduces every output too: this data cannot tell accumulation "
          "orders apart");
  return w;
}

}  // namespace

Selection select_configuration(const LoadedCase& lc, const Tensor& got,
                               const std::vector<ref::ModelChoice>& members, OutDtype d,
                               bool on_gpu, bool strength, bool preset, std::size_t screen) {
  Selection s;
  s.chosen = members.front();
  s.strength = strength;
  s.screened = screen_elements(lc, screen).size();
  s.screened_rows = row_screen_rows(lc, screen).size();
  std::optional<OracleRun> run;
  if (members.size() > 1 || strength || preset)
    s.scores = score_members(lc, got, members, d, on_gpu, screen, &run);
  const MemberScore* best = nullptr;
  for (const MemberScore& m : s.scores) {
    if (m.error) continue;
    if (!m.screened_out && m.mismatches == 0) {
      best = &m;
      break;
    }
    const bool better = best == nullptr || (best->screened_out && !m.screened_out) ||
                        (best->screened_out == m.screened_out && m.mismatches < best->mismatches);
    if (better) best = &m;
  }
  if (best != nullptr) {
    s.chosen = best->m, s.matched = !best->screened_out && best->mismatches == 0;
    if (!best->screened_out) s.run = std::move(run);  // the first full run with best's count
  }
  if (!strength) return s;
  std::vector<ref::ModelChoice> wide = wide_candidates(lc, d);
  const auto wide_scores = score_members(lc, got, wide, d, on_gpu, screen);
  const std::string chosen = ref::describe_member(s.chosen);
  const std::vector<MemberScore>* lists[] = {&s.scores, &wide_scores};
  for (const std::vector<MemberScore>* list : lists)
    for (const MemberScore& m : *list) {
      const std::string name = ref::describe_member(m.m);
      if (m.error || m.screened_out || m.mismatches != 0 || name == chosen) continue;
      if (std::find(s.also.begin(), s.also.end(), name) == s.also.end()) s.also.push_back(name);
    }
  s.warnings = vacuity_warnings(lc, got, wide_scores);
  return s;
}

}  // namespace fp8ref::cli
