// fp8-check explain grouped-gemm (explain.h). The story of one element is told on a 1x1 case cut
// from the operands (kernel_screen.h: the element's row of A, its group's column of B and their
// scales), so every configuration and every K prefix is evaluated by the same reference forward
// that verify uses.
#include "cli/explain.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include "cli/errors.h"
#include "cli/kernel_screen.h"
#include "cli/oracle_gemm.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;
using ref::Scaling;

// The first kp elements of K of a 1x1 case.
GemmCase prefix(const GemmCase& e, std::int64_t kp) {
  GemmCase p = e;
  p.K = kp;
  p.a.resize(std::size_t(kp)), p.b.resize(std::size_t(kp));
  if (const std::int64_t bk = scale_block_k(e.scaling); bk > 0) {
    p.sa.resize(std::size_t((kp + bk - 1) / bk)), p.sb.resize(std::size_t((kp + bk - 1) / bk));
  }
  return p;
}

std::uint32_t eval1(const GemmCase& e, const ref::ModelChoice& m, OutDtype d) {
  float f = 0;
  std::uint16_t h = 0;
  ref::grouped_gemm_forward_offs(
      e.operands(), e.offs, m, ref::RowPolicy::zero,
      {d, {&f, d == OutDtype::f32 ? 1u : 0u}, {&h, d == OutDtype::f32 ? 0u : 1u}, {}});
  return d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f) : h;
}

std::int64_t ordered(std::uint32_t bits, OutDtype d) {
  const std::uint32_t sign = d == OutDtype::f32 ? 0x80000000u : 0x8000u;
  const std::int64_t mag = std::int64_t(bits & (sign - 1));
  return bits & sign ? -mag : mag;
}

// What differs between two configurations: "epilogue", "split_k" or "model".
// hopper_promoted_tensorwise and _rowwise accumulate alike and differ only in their own epilogue
// order, which an explicit epilogue replaces.
std::string difference(const ref::ModelChoice& a, const ref::ModelChoice& b) {
  const auto acc = [](AccumulationModel m) {
    return m == AccumulationModel::hopper_promoted_rowwise
               ? AccumulationModel::hopper_promoted_tensorwise
               : m;
  };
  if (acc(a.model) != acc(b.model)) return "model";
  if (a.epilogue != b.epilogue && a.split().str() == b.split().str()) return "epilogue";
  return a.epilogue == b.epilogue ? "split_k" : "model";
}

// A fault local to one 128-K chunk under the best configuration that gives got's bits: the
// chunk's products lost (its codes zero), or one scale block (1x128 / 1x32) read from its
// neighbour's index, for A and B, A only or B only. `hypothesis` is the element's case so broken.
struct ChunkFault {
  std::string kind, because;
  GemmCase hypothesis;
};
std::optional<ChunkFault> chunk_fault(const GemmCase& e, const ref::ModelChoice& best,
                                      std::uint32_t got, OutDtype d) {
  const std::int64_t nb = (e.K + kScaleBlockK - 1) / kScaleBlockK;
  for (std::int64_t j = 0; j < nb; ++j) {
    GemmCase h = e;
    std::fill(h.a.begin() + j * kScaleBlockK, h.a.begin() + std::min(e.K, (j + 1) * kScaleBlockK),
              std::uint8_t(0));
    if (eval1(h, best, d) == got)
      return ChunkFault{"lost_chunk",
                        "got equals the model with the products of 128-K chunk " +
                            std::to_string(j) + " (K " + std::to_string(j * kScaleBlockK) + ".." +
                            std::to_string(std::min(e.K, (j + 1) * kScaleBlockK) - 1) +
                            ") left out: that chunk was skipped or zero-filled",
                        std::move(h)};
  }
  const std::int64_t bk = scale_block_k(e.scaling), ns = bk > 0 ? std::int64_t(e.sa.size()) : 0;
  static constexpr const char* kWhich[] = {"A's and B's scales", "A's scale", "B's scale"};
  for (std::int64_t kb = 0; kb < ns; ++kb)
    for (const std::int64_t from : {kb - 1, kb + 1}) {
      if (from < 0 || from >= ns) continue;
      for (int w = 0; w < 3; ++w) {
        GemmCase h = e;
        if (w != 2) h.sa[std::size_t(kb)] = e.sa[std::size_t(from)];
        if (w != 1) h.sb[std::size_t(kb)] = e.sb[std::size_t(from)];
        if (eval1(h, best, d) != got) continue;
        return ChunkFault{"chunk_scale",
                          "got equals the model with " + std::string(kWhich[w]) +
                              " of scale block " + std::to_string(kb) + " (128-K chunk " +
                              std::to_string(kb * bk / kScaleBlockK) + ") taken from block " +
                              std::to_string(from) + ": a scale index off by one",
                          std::move(h)};
      }
    }
  return std::nullopt;
}

// The exact partial sum of a prefix case in f32 (FP8, FP6 and FP4 operands alike).
double exact_prefix(const GemmCase& p) {
  return double(std::bit_cast<float>(eval1(p, {AccumulationModel::exact, 1}, OutDtype::f32)));
}

// The partial sums per 128-K chunk: exact, the best configuration, and the explanation (another
// configuration, or the best one on the broken case); the first chunk where the last two part.
void add_chain(ElementStory& s, const GemmCase& e, const ref::ModelChoice& best,
               const ref::ModelChoice* explaining, const GemmCase* broken) {
  const std::int64_t nb = (e.K + kScaleBlockK - 1) / kScaleBlockK;
  for (std::int64_t j = 0; j < nb; ++j) {
    const std::int64_t kp = std::min(e.K, (j + 1) * kScaleBlockK);
    const GemmCase p = prefix(e, kp);
    ChunkSum c{p.K, exact_prefix(p), std::bit_cast<float>(eval1(p, best, OutDtype::f32)), NAN};
    if (explaining != nullptr || broken != nullptr) {
      const std::uint32_t x = broken ? eval1(prefix(*broken, kp), best, OutDtype::f32)
                                     : eval1(p, *explaining, OutDtype::f32);
      c.explaining = std::bit_cast<float>(x);
      if (!s.diverged_chunk && x != std::bit_cast<std::uint32_t>(c.best)) s.diverged_chunk = j;
    }
    s.chain.push_back(c);
  }
}

void classify(ElementStory& s, const Located& at, const LoadedCase& lc,
              const std::vector<MemberScore>& ranked, const ref::ModelChoice& best, OutDtype d) {
  for (std::int64_t g = 0; !lc.k && g < lc.c.G && !s.wrong_group; ++g)
    if (g != at.group && eval1(element_case(lc.c, at.row, at.col, g), best, d) == s.got)
      s.wrong_group = g;
  const bool zero = (s.got << 1) == 0 && (s.ref_z << 1) != 0;
  const ref::ModelChoice* explaining = nullptr;
  for (const MemberScore& m : ranked)
    if (eval1(at.e, m.m, d) == s.got) {
      s.reproduced_by.push_back(ref::describe_member(m.m));
      if (explaining == nullptr && ref::describe_member(m.m) != ref::describe_member(best))
        explaining = &m.m;
    }
  std::optional<ChunkFault> fault;
  if (!s.wrong_group && !zero && explaining == nullptr) fault = chunk_fault(at.e, best, s.got, d);
  const std::string dist = std::to_string(s.ulps) + " ulp";
  if (s.wrong_group) {
    s.kind = "wrong_group";
    s.because = "got equals this element under group " + std::to_string(*s.wrong_group) +
                "'s weights: the row was assigned to another group (offsets off by some rows?)";
  } else if (zero) {
    s.kind = "lost_group";
    s.because =
        "got is zero where the model gives a non-zero value: the row's group was not "
        "computed or was zero-filled";
  } else if (explaining != nullptr) {
    s.kind = difference(best, *explaining);
    s.because = (s.kind == "epilogue"  ? "a scale applied in another order: "
                 : s.kind == "split_k" ? "K cut into other split-K slices: "
                                       : "another accumulation model: ") +
                ref::describe_member(*explaining) + " gives got (" + dist + ")";
  } else if (fault) {
    s.kind = fault->kind;
    s.because = fault->because + " (" + dist + ")";
  } else {
    s.kind = std::abs(s.ulps) == 1 ? "one_ulp" : "unexplained";
    s.because = std::abs(s.ulps) == 1
                    ? "got is one ulp of the output from the model, and no candidate gives it"
                    : "no candidate configuration gives got (" + dist + ")";
  }
  add_chain(s, at.e, best, explaining, fault ? &fault->hypothesis : nullptr);
}

std::string hex(std::uint32_t bits, OutDtype d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, d == OutDtype::f32 ? "0x%08x" : "0x%04x", bits);
  return buf;
}

nlohmann::json story_json(const ElementStory& s, OutDtype d) {
  nlohmann::json chain = nlohmann::json::array();
  for (const ChunkSum& c : s.chain)
    chain.push_back({{"k_end", c.k_end},
                     {"exact", c.exact},
                     {"best", c.best},
                     {"explaining", std::isnan(c.explaining) ? nlohmann::json(nullptr)
                                                             : nlohmann::json(c.explaining)}});
  return {{"row", s.row},
          {"col", s.col},
          {"group", s.group},
          {"got", hex(s.got, d)},
          {"best", hex(s.ref_z, d)},
          {"ulps", s.ulps},
          {"kind", s.kind},
          {"because", s.because},
          {"reproduced_by", s.reproduced_by},
          {"wrong_group", s.wrong_group ? nlohmann::json(*s.wrong_group) : nlohmann::json(nullptr)},
          {"diverged_chunk",
           s.diverged_chunk ? nlohmann::json(*s.diverged_chunk) : nlohmann::json(nullptr)},
          {"chain", chain}};
}

// The ranking: the configurations compared in full by their mismatches, then the others by
// their mismatches on the screen (one set of elements, the union of its stages, for all).
bool ranked_before(const MemberScore& a, const MemberScore& b) {
  return std::pair(a.screened_out, a.mismatches) < std::pair(b.screened_out, b.mismatches);
}

// Every candidate scored on the screen (the union of its stages, kernel_match.h MemberScreen),
// then compared in full in screened order (fewest screened mismatches first, then candidate
// order): the first `need`, and every later one that could still be the best, that is whose
// (screened mismatches, index) is below the (full mismatches, index) of the best so far, among all
// candidates or among the members. A configuration's full count is at least its screened one, so
// the best found is the first of the fewest full mismatches, as without a screen; those that
// reproduce every screened element are all compared. `best` is that configuration among the
// members (all candidates when members is 0; none when every member was refused), `run` its run.
struct Scored {
  std::vector<MemberScore> scores;  // in candidate order
  std::optional<std::size_t> best;
  OracleRun run;
};
Scored score_candidates(const MemberScreen& sc, const std::vector<ref::ModelChoice>& candidates,
                        std::size_t members, std::size_t need) {
  Scored out;
  for (const ref::ModelChoice& m : candidates) out.scores.push_back(sc.screen(m, true));
  std::vector<std::size_t> order(out.scores.size());  // screened order
  std::iota(order.begin(), order.end(), std::size_t{0});
  const auto key = [&](std::size_t j) { return std::pair(out.scores[j].mismatches, j); };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return key(x) < key(y); });
  std::size_t full = 0;
  std::optional<std::size_t> best_all;  // the best of all candidates so far
  const auto below = [&](std::size_t i, const std::optional<std::size_t>& b) {
    return !b || key(i) < key(*b);
  };
  for (const std::size_t i : order) {
    MemberScore& s = out.scores[i];
    const bool is_member = members == 0 || i < members;
    if (s.screened_out && full >= need && !below(i, best_all) && !(is_member && below(i, out.best)))
      continue;
    OracleRun run = sc.compare_full(s);
    if (s.error) continue;
    ++full;
    if (below(i, best_all)) best_all = i;
    if (is_member && below(i, out.best)) out.best = i, out.run = std::move(run);
  }
  return out;
}

}  // namespace

nlohmann::json explain_json(const ExplainReport& r, OutDtype d, std::size_t top) {
  nlohmann::json j{{"schema", "fp8ref.explain_grouped_gemm/1"},
                   {"summary", r.summary},
                   {"exact_match", r.exact_match},
                   {"compared", r.compared}};
  for (std::size_t i = 0; i < r.ranked.size() && i < top; ++i) {
    const MemberScore& m = r.ranked[i];
    nlohmann::json e{{"configuration", ref::describe_member(m.m)}, {"mismatches", m.mismatches}};
    // A count of the screen's elements only says so (a full count's entry is as it always was).
    if (m.screened_out) e["screened_out"] = true, e["compared"] = m.compared;
    j["ranking"].push_back(e);
  }
  j["screen"] = {{"elements", r.screened}, {"rows", r.screened_rows}};
  j["first"] = r.first ? story_json(*r.first, d) : nlohmann::json(nullptr);
  return j;
}

ExplainReport explain(const LoadedCase& lc, const Tensor& got,
                      const std::vector<ref::ModelChoice>& candidates, std::size_t members,
                      OutDtype d, std::size_t top, std::size_t screen) {
  ExplainReport r;
  const MemberScreen sc(lc, got, d, false, screen);
  r.screened = sc.elements(), r.screened_rows = sc.rows();
  Scored scored = score_candidates(sc, candidates, members, std::max<std::size_t>(top, 2));
  for (const MemberScore& s : scored.scores)
    if (!s.error) r.ranked.push_back(s);
  const auto fp8 = [](Format f) { return f == Format::e4m3 || f == Format::e5m2; };
  if (r.ranked.empty())
    usage("explain: the reference accepts none of the configurations for this case" +
          std::string(fp8(lc.c.fa) && fp8(lc.c.fb)
                          ? ""
                          : " (FP6 / FP4 operands: name a Blackwell model, --model blackwell_* or "
                            "rtx_blackwell_*)"));
  std::stable_sort(r.ranked.begin(), r.ranked.end(), ranked_before);
  const std::vector<bool> rows = compared_rows(lc);
  const auto n = std::size_t(lc.c.N);
  for (std::size_t i = 0; i < got.numel(); ++i) r.compared += rows[i / n] ? 1 : 0;
  // The configuration the story is told against: the best preset member, or the best of all.
  const MemberScore& best = scored.best ? scored.scores[*scored.best] : r.ranked.front();
  r.best = best.m, r.exact_match = best.mismatches == 0;
  const std::string cfg = ref::describe_member(best.m), all = std::to_string(r.compared);
  if (r.exact_match) {
    r.summary = "MATCH: " + cfg + " reproduces all " + all + " compared elements";
    return r;
  }
  if (!scored.best) scored.run = run_loaded(lc, best.m, d, false);
  std::size_t i = 0;
  while (!(rows[i / n] && scored.run.bits[i] != std::uint32_t(raw_bits(got, i)))) ++i;
  const Located at = locate(lc, i);
  ElementStory s;
  s.row = at.row, s.col = at.col, s.group = at.group;
  s.got = std::uint32_t(raw_bits(got, i)), s.ref_z = scored.run.bits[i];
  s.ulps = ordered(s.got, d) - ordered(s.ref_z, d);
  classify(s, at, lc, r.ranked, best.m, d);
  r.summary = "DIFFERS: best " + std::string(members > 0 ? "preset member " : "") + cfg + " (" +
              std::to_string(best.mismatches) + " of " + all + " elements differ";
  if (members > 0 && !r.ranked.front().screened_out && r.ranked.front().mismatches == 0)
    r.summary += "; " + ref::describe_member(r.ranked.front().m) + ", not a member, reproduces all";
  r.summary += "); first at [" + std::to_string(s.row) + ", " + std::to_string(s.col) + "] group " +
               std::to_string(s.group) + ": " + s.kind + ": " + s.because;
  r.first = std::move(s);
  return r;
}

}  // namespace fp8ref::cli
