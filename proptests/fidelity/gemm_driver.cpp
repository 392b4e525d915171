// Predicts dumped library GEMM outputs (torch _scaled_mm / cuBLASLt, _scaled_grouped_mm) bitwise
// with the reference accumulation models and split-K S (docs/design.md §10-12). Written for
// proptests/fidelity/scaled_mm_predict.py, which dumps the cases (files: case_files.h).
//
//   gemm_driver --case FILE --models M[,M..] --splits S|LN[,..] [--epilogues ref|all]   (LN: slices
//   of N 128-blocks)
//               --got LABEL:bf16|f32:FILE [--got ...] [--sample-rows N] [--max-full N]
//               [--explore N] [--json FILE]
//   gemm_driver --case FILE --emit MODEL:EPILOGUE:S:bf16|f32:FILE     (model outputs, for dry runs)
// For each output: every candidate (model, epilogue, S) on a sample of rows; candidates with no
// sample mismatch (or else the closest one) on every row of every group. Exit 0 when every output
// has a candidate that predicts it bitwise, 1 otherwise, 2 on bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "proptests/fidelity/gemm_eval.h"
#include "proptests/fidelity/split_explorer.h"

namespace fp8ref::device {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, sep);) out.push_back(t);
  return out;
}

// Model names as the numerics header spells them (to_string); unknown names are reported and
// skipped, so the driver keeps working while the set of models grows.
bool parse_model(const std::string& s, AccumulationModel* m) {
  for (int i = 0; i < 32; ++i)
    if (s == to_string(AccumulationModel(i))) return *m = AccumulationModel(i), true;
  return false;
}
Epilogue parse_epilogue(const std::string& s) {
  for (Epilogue e : {Epilogue::ref, Epilogue::a_then_b, Epilogue::b_then_a})
    if (s == to_string(e)) return e;
  throw std::invalid_argument("unknown epilogue " + s);
}
OutDtype parse_dtype(const std::string& s) {
  if (s == "f32") return OutDtype::f32;
  if (s == "bf16") return OutDtype::bf16;
  throw std::invalid_argument("unknown output dtype " + s);
}

// "S3" (equal slices) or "L24" (slices of 24 128-blocks); equal slices rank first, by S.
std::string split_label(int s) {
  std::string label(1, s < 0 ? 'L' : 'S');  // appended: GCC 12's -Wrestrict misfires on "L" + ...
  return label += std::to_string(s < 0 ? -s : s);
}
int split_rank(int s) { return s < 0 ? 100000 - s : s; }

struct Options {
  std::string case_path, json_path, emit;
  std::vector<AccumulationModel> models;
  std::vector<int> splits{1};
  bool all_epilogues = false;
  std::vector<std::string> gots;
  int sample_rows = 16, max_full = 4, explore = 64;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--case")
      o.case_path = v;
    else if (k == "--json")
      o.json_path = v;
    else if (k == "--emit")
      o.emit = v;
    else if (k == "--models")
      for (const auto& name : split(v, ',')) {
        AccumulationModel m;
        if (parse_model(name, &m))
          o.models.push_back(m);
        else
          std::fprintf(stderr, "gemm_driver: warning: no model named %s, skipped\n", name.c_str());
      }
    else if (k == "--splits") {  // S (equal slices) or LN (slices of N 128-blocks)
      o.splits.clear();
      for (const auto& s : split(v, ','))
        o.splits.push_back(!s.empty() && s[0] == 'L' ? -std::stoi(s.substr(1)) : std::stoi(s));
    } else if (k == "--epilogues")
      o.all_epilogues = v == "all";
    else if (k == "--got")
      o.gots.push_back(v);
    else if (k == "--sample-rows")
      o.sample_rows = std::stoi(v);
    else if (k == "--max-full")
      o.max_full = std::stoi(v);
    else if (k == "--explore")
      o.explore = std::stoi(v);
    else
      throw std::invalid_argument("unknown option " + k);
  }
  if (o.case_path.empty()) throw std::invalid_argument("--case is required");
  return o;
}

bool scalar_scaled(const GemmCase& c) {
  return c.scaling == ref::Scaling::tensorwise || c.scaling == ref::Scaling::rowwise;
}

std::vector<Candidate> candidates(const Options& o, const GemmCase& c) {
  std::vector<Candidate> out;
  const std::int64_t nb = ceil_div(c.K, kScaleBlockK);
  std::vector<Epilogue> epis{Epilogue::ref};
  if (o.all_epilogues && scalar_scaled(c))
    epis.insert(epis.end(), {Epilogue::a_then_b, Epilogue::b_then_a});
  for (AccumulationModel m : o.models)  // ordered model, epilogue, S: the preference of the search
    for (Epilogue e : epis)
      for (int s : o.splits)
        if ((s < 0 && -s < nb) || (s > 0 && s <= std::max<std::int64_t>(1, nb)))
          out.push_back({m, e, s});
  return out;
}

struct Mismatch {
  std::int64_t row, col;
  std::uint32_t got, model;
};

// Mismatches of a candidate's values on `rows` against one output (rows of no group skipped).
std::int64_t count_mismatches(const GemmCase& c, const std::vector<std::int64_t>& rows,
                              const std::vector<float>& z, const GotOutput& g,
                              std::vector<Mismatch>* first, std::int64_t* compared,
                              std::size_t cap = 8) {
  std::int64_t bad = 0, n_cmp = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (c.group_of[std::size_t(rows[i])] < 0) continue;
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::uint32_t m = out_bits(z[i * std::size_t(c.N) + std::size_t(n)], g.dtype);
      const std::uint32_t got = g.bits[std::size_t(rows[i] * c.N + n)];
      ++n_cmp;
      if (m == got) continue;
      if (first && first->size() < cap) first->push_back({rows[i], n, got, m});
      ++bad;
    }
  }
  if (compared) *compared = n_cmp;
  return bad;
}

std::string hex(std::uint32_t v, OutDtype d) {
  char b[16];
  std::snprintf(b, sizeof b, d == OutDtype::f32 ? "%08x" : "%04x", v);
  return b;
}

// A JSON number, or null for NaN / Inf.
std::string json_num(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

struct GotReport {
  std::ostringstream json;
  bool predicted = false;
};

ExploreElement explore_element(const GemmCase& c, std::int64_t r, std::int64_t n,
                               const GotOutput& g) {
  const std::int64_t grp = c.group_of[std::size_t(r)], nbk = ceil_div(c.K, kScaleBlockK);
  static constexpr float kOne = 1.0f;
  ElementScales sc{&kOne, &kOne, false};
  if (c.scaling == ref::Scaling::tensorwise) sc = {&c.sa[0], &c.sb[std::size_t(grp)], false};
  if (c.scaling == ref::Scaling::rowwise)
    sc = {&c.sa[std::size_t(r)], &c.sb[std::size_t(grp * c.N + n)], false};
  if (c.scaling == ref::Scaling::blockwise)
    sc = {&c.sa[std::size_t(r * nbk)],
          &c.sb[std::size_t((grp * ceil_div(c.N, kScaleBlockK) + n / kScaleBlockK) * nbk)], true};
  return {c.a.data() + r * c.K,
          c.b.data() + (grp * c.N + n) * c.K,
          c.K,
          c.fa,
          c.fb,
          sc,
          g.dtype,
          g.bits[std::size_t(r * c.N + n)]};
}

// Runs the explorer on up to `limit` mismatching sample elements of the closest candidate.
std::string explore(const GemmCase& c, const GotOutput& g, const std::vector<Mismatch>& elems,
                    const Candidate& closest) {
  const bool promoted = closest.model != AccumulationModel::hopper_unpromoted &&
                        closest.model != AccumulationModel::hopper_mma_sync;
  // The closest candidate's scale order (hopper_promoted_rowwise's own is RN(RN(acc*sb)*sa)).
  const int order = closest.epilogue == Epilogue::a_then_b ? 1
                    : closest.epilogue == Epilogue::b_then_a ||
                            closest.model == AccumulationModel::hopper_promoted_rowwise
                        ? 2
                        : 0;
  std::vector<ExploreResult> per(elems.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t i = 0; i < elems.size(); ++i) {
    ExploreElement e = explore_element(c, elems[i].row, elems[i].col, g);
    e.scale_order = order;
    if (c.scaling == ref::Scaling::blockwise)
      explore_blockwise(e, per[i]);
    else
      explore_scalar(e, promoted, per[i]);
  }
  ExploreResult all;
  for (const ExploreResult& r : per) {
    all.elements += r.elements;
    for (const auto& [k, v] : r.explained) all.explained[k] += v;
    for (const auto& [k, v] : r.two_piece_cuts) all.two_piece_cuts[k] += v;
  }
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [k, v] : all.explained) top.push_back({v, k});
  std::sort(top.rbegin(), top.rend());
  std::ostringstream js;
  js << "{\"elements\": " << all.elements << ", \"families\": [";
  std::printf("    explore (%s, %d mismatching elements): ", promoted ? "promoted" : "unpromoted",
              all.elements);
  for (std::size_t i = 0; i < top.size() && i < 8; ++i) {
    js << (i ? ", " : "") << "[\"" << top[i].second << "\", " << top[i].first << "]";
    std::printf("%s%s: %d", i ? "; " : "", top[i].second.c_str(), top[i].first);
  }
  js << "], \"two_piece_cuts\": {";
  std::printf("%s\n", top.empty() ? "no family reproduces any of them" : "");
  int i = 0;
  std::vector<std::pair<int, std::int64_t>> cuts;
  for (const auto& [k, v] : all.two_piece_cuts) {
    js << (i++ ? ", " : "") << "\"" << k << "\": " << v;
    cuts.push_back({v, k});
  }
  std::sort(cuts.rbegin(), cuts.rend());
  if (!cuts.empty()) std::printf("    two-piece cuts (unit index: elements):");
  for (std::size_t j = 0; j < cuts.size() && j < 8; ++j)
    std::printf(" %lld:%d", (long long)cuts[j].second, cuts[j].first);
  if (!cuts.empty()) std::printf("\n");
  js << "}}";
  return js.str();
}

// Worst normwise error max|y - exact| / max|exact| over the sample's compared elements.
double normwise_error(const GemmCase& c, const std::vector<std::int64_t>& rows,
                      const std::vector<float>& exact, const std::vector<float>* model,
                      const GotOutput* got) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (c.group_of[std::size_t(rows[i])] < 0) continue;
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t j = i * std::size_t(c.N) + std::size_t(n);
      const double y =
          model ? double((*model)[j])
                : double(got_value(got->bits[std::size_t(rows[i] * c.N + n)], got->dtype));
      num = std::max(num, std::fabs(y - double(exact[j])));
      den = std::max(den, std::fabs(double(exact[j])));
    }
  }
  return den > 0 ? num / den : num;
}

// Sample elements where the library output is farther from `exact` than the model's bound allows
// (plus one rounding of the output and of the f32-rounded exact value).
std::int64_t outside_bound(const GemmCase& c, const std::vector<std::int64_t>& rows,
                           const std::vector<float>& exact, const std::vector<double>& bound,
                           const GotOutput& g) {
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (c.group_of[std::size_t(rows[i])] < 0) continue;
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t j = i * std::size_t(c.N) + std::size_t(n);
      const double y = got_value(g.bits[std::size_t(rows[i] * c.N + n)], g.dtype), x = exact[j];
      const double slack = std::ldexp(std::fabs(x), -24) +
                           (g.dtype == OutDtype::bf16 ? std::ldexp(std::fabs(y), -8) : 0.0);
      if (!(std::fabs(y - x) <= bound[j] + slack)) ++bad;
    }
  }
  return bad;
}

// The search for one library output: every candidate on the row sample, then the sample-clean
// ones (or the closest) on every row, then diagnostics. Prints as it goes and builds the JSON.
class Search {
 public:
  Search(const Options& o, const GemmCase& c, const GotOutput& g,
         const std::vector<Candidate>& cands, CandidateEvaluator& sample, CandidateEvaluator& full,
         const std::vector<float>& exact)
      : o_(o), c_(c), g_(g), cands_(cands), sample_(sample), full_(full), exact_(exact) {}

  GotReport run() {
    sample_stage();
    consistent_set();
    full_stage();
    if (rep_.predicted && o_.all_epilogues && scalar_scaled(c_)) other_epilogues();
    if (!order_.empty()) exact_stats();
    if (!rep_.predicted && o_.explore > 0 && !order_.empty()) explore_stage();
    rep_.json << "}";
    return std::move(rep_);
  }

 private:
  void sample_stage() {
    std::int64_t n_sample = 0;
    sample_.prefetch(cands_);
    for (const Candidate& k : cands_) {
      try {
        smis_.push_back(count_mismatches(c_, srows(), sample_.values(k), g_, nullptr, &n_sample));
      } catch (const std::invalid_argument& e) {  // a model / scaling pair the reference rejects
        smis_.push_back(-1);
        std::printf("    %s not applicable: %s\n", k.name().c_str(), e.what());
      }
    }
    std::printf("  [%s] %s, sample of %lld outputs; mismatches per candidate:\n", g_.label.c_str(),
                g_.dtype == OutDtype::f32 ? "f32" : "bf16", (long long)n_sample);
    rep_.json << "{\"label\": \"" << g_.label << "\", \"sample_outputs\": " << n_sample
              << ", \"sample\": [";
    std::string line;
    for (std::size_t i = 0; i < cands_.size(); ++i) {
      const Candidate& k = cands_[i];
      const bool new_group =
          i == 0 || k.model != cands_[i - 1].model || k.epilogue != cands_[i - 1].epilogue;
      if (new_group && !line.empty()) std::printf("    %s\n", line.c_str()), line.clear();
      if (new_group) line = std::string(to_string(k.model)) + "/" + to_string(k.epilogue) + ":";
      // Appended piecewise: GCC 12's -Wrestrict misfires on `" " + std::string` here.
      line += ' ';
      line += split_label(k.split_k) + ":" + std::to_string(smis_[i]);
      rep_.json << (i ? ", " : "") << "[\"" << k.name() << "\", " << smis_[i] << "]";
    }
    std::printf("    %s\n", line.c_str());
  }

  // The candidates no sample element tells apart from the output (S is often not identifiable:
  // bf16 rounding hides f32 differences, and promoted f32 sums of 14-bit partials are often exact).
  void consistent_set() {
    rep_.json << "], \"sample_consistent\": [";
    std::string consistent, last_group;
    for (std::size_t i = 0, n = 0; i < cands_.size(); ++i) {
      if (smis_[i] != 0) continue;
      rep_.json << (n++ ? ", " : "") << "\"" << cands_[i].name() << "\"";
      const std::string group =
          std::string(to_string(cands_[i].model)) + "/" + to_string(cands_[i].epilogue);
      const std::string s = split_label(cands_[i].split_k);
      consistent +=
          group == last_group ? "," + s : (consistent.empty() ? "" : " ") + group + ":" + s;
      last_group = group;
    }
    std::printf("    consistent on the sample: %s\n",
                consistent.empty() ? "none" : consistent.c_str());
    rep_.json << "], \"consistent\": \"" << consistent << "\"";
  }

  // Sample-clean candidates by ascending S first (then model, epilogue order), so that other
  // models and epilogues at the smallest S are tried before larger S of the first; else the
  // closest.
  void full_stage() {
    std::size_t closest = cands_.size();
    for (std::size_t i = 0; i < cands_.size(); ++i) {
      if (smis_[i] == 0) order_.push_back(i);
      if (smis_[i] >= 0 && (closest == cands_.size() || smis_[i] < smis_[closest])) closest = i;
    }
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t x, std::size_t y) {
      return split_rank(cands_[x].split_k) < split_rank(cands_[y].split_k);
    });
    if (order_.size() > std::size_t(o_.max_full)) order_.resize(std::size_t(o_.max_full));
    if (order_.empty() && closest < cands_.size()) order_.push_back(closest);
    best_ = order_.empty() ? 0 : order_[0];
    rep_.json << ", \"full\": [";
    for (std::size_t j = 0; j < order_.size() && !rep_.predicted; ++j) {
      std::vector<Mismatch> first;
      std::int64_t n_full = 0;
      const Candidate& k = cands_[order_[j]];
      const std::int64_t bad =
          count_mismatches(c_, full_.rows().rows, full_.values(k), g_, &first, &n_full,
                           j == 0 ? std::size_t(std::max(8, o_.explore)) : 8);
      if (j == 0) best_full_ = first, first.resize(std::min<std::size_t>(first.size(), 8));
      std::printf("    full %s: %lld mismatches of %lld\n", k.name().c_str(), (long long)bad,
                  (long long)n_full);
      rep_.json << (j ? ", " : "") << "{\"candidate\": \"" << k.name()
                << "\", \"mismatches\": " << bad << ", \"outputs\": " << n_full << ", \"first\": [";
      for (std::size_t m = 0; m < first.size(); ++m) {
        const Mismatch& x = first[m];
        if (m < 4)
          std::printf("      (%lld,%lld) got %s model %s\n", (long long)x.row, (long long)x.col,
                      hex(x.got, g_.dtype).c_str(), hex(x.model, g_.dtype).c_str());
        rep_.json << (m ? ", " : "") << "[" << x.row << ", " << x.col << ", \""
                  << hex(x.got, g_.dtype) << "\", \"" << hex(x.model, g_.dtype) << "\"]";
      }
      rep_.json << "]}";
      if (bad == 0) rep_.predicted = true, best_ = order_[j];
    }
    rep_.json << "], \"predicted_by\": "
              << (rep_.predicted ? "\"" + cands_[best_].name() + "\"" : "null");
  }

  // Do the other epilogue orders also fit every output? (Whether this data tells them apart.)
  void other_epilogues() {
    rep_.json << ", \"other_epilogues\": {";
    std::printf("    other epilogue orders, same model and S, on all outputs:");
    int j = 0;
    for (Epilogue e : {Epilogue::ref, Epilogue::a_then_b, Epilogue::b_then_a}) {
      if (e == cands_[best_].epilogue) continue;
      const Candidate k{cands_[best_].model, e, cands_[best_].split_k};
      const std::int64_t bad =
          count_mismatches(c_, full_.rows().rows, full_.values(k), g_, nullptr, nullptr);
      std::printf(" %s %lld", to_string(e), (long long)bad);
      rep_.json << (j++ ? ", " : "") << "\"" << to_string(e) << "\": " << bad;
    }
    std::printf(" mismatches\n");
    rep_.json << "}";
  }

  void exact_stats() {
    const Candidate& k = cands_[best_];
    const Evaluated b = evaluate(c_, sample_.rows(), k.model, k.split_k, false, true);
    const double e_got = normwise_error(c_, srows(), exact_, nullptr, &g_);
    const double e_mod = normwise_error(c_, srows(), exact_, &b.z, nullptr);
    const std::int64_t ob = outside_bound(c_, srows(), exact_, b.bound, g_);
    std::printf(
        "    vs exact (sample): normwise error got %.3g, model %.3g; got outside the model's "
        "bound: %lld\n",
        e_got, e_mod, (long long)ob);
    rep_.json << ", \"normwise_error_got\": " << json_num(e_got)
              << ", \"normwise_error_model\": " << json_num(e_mod) << ", \"outside_bound\": " << ob;
  }

  // Mismatching sample elements taken round-robin over the sample rows (so over M tiles); when the
  // sample has none (bf16 often hides the cause), those of the first full evaluation.
  void explore_stage() {
    const std::vector<float>& z = sample_.values(cands_[best_]);
    std::vector<std::vector<Mismatch>> per_row(srows().size());
    for (std::size_t i = 0; i < srows().size(); ++i) {
      const std::int64_t r = srows()[i];
      for (std::int64_t n = 0; n < c_.N && c_.group_of[std::size_t(r)] >= 0; ++n)
        if (out_bits(z[i * std::size_t(c_.N) + std::size_t(n)], g_.dtype) !=
            g_.bits[std::size_t(r * c_.N + n)])
          per_row[i].push_back({r, n, 0, 0});
    }
    std::vector<Mismatch> elems;
    for (std::size_t j = 0; elems.size() < std::size_t(o_.explore); ++j) {
      bool any = false;
      for (const auto& row : per_row)
        if (j < row.size() && elems.size() < std::size_t(o_.explore))
          elems.push_back(row[j]), any = true;
      if (!any) break;
    }
    if (elems.empty()) elems = best_full_;
    rep_.json << ", \"explore\": " << explore(c_, g_, elems, cands_[best_]);
  }

  const std::vector<std::int64_t>& srows() const { return sample_.rows().rows; }

  const Options& o_;
  const GemmCase& c_;
  const GotOutput& g_;
  const std::vector<Candidate>& cands_;
  CandidateEvaluator& sample_;
  CandidateEvaluator& full_;
  const std::vector<float>& exact_;
  GotReport rep_;
  std::vector<std::int64_t> smis_;   // sample mismatches per candidate, -1 when not applicable
  std::vector<std::size_t> order_;   // candidates evaluated on every row, in order
  std::size_t best_ = 0;             // the predicting candidate, else order_[0]
  std::vector<Mismatch> best_full_;  // mismatches of order_[0] on every row
};

int emit(const Options& o, const GemmCase& c) {
  const std::vector<std::string> f = split(o.emit, ':');
  if (f.size() != 5) throw std::invalid_argument("--emit wants MODEL:EPILOGUE:S:DTYPE:FILE");
  AccumulationModel m;
  if (!parse_model(f[0], &m)) throw std::invalid_argument("no model named " + f[0]);
  const Candidate k{m, parse_epilogue(f[1]), std::stoi(f[2])};
  const OutDtype d = parse_dtype(f[3]);
  CandidateEvaluator full(c, all_rows(c));
  const std::vector<float>& z = full.values(k);
  std::ofstream out(f[4], std::ios::binary);
  for (float v : z) {
    const std::uint32_t b = out_bits(v, d);
    if (d == OutDtype::f32)
      out.write(reinterpret_cast<const char*>(&b), 4);
    else {
      const std::uint16_t h = std::uint16_t(b);
      out.write(reinterpret_cast<const char*>(&h), 2);
    }
  }
  return out ? 0 : 2;
}

int run(const Options& o) {
  const GemmCase c = read_case(o.case_path);
  if (!o.emit.empty()) return emit(o, c);
  std::vector<GotOutput> gots;
  for (const std::string& spec : o.gots) {
    const std::vector<std::string> f = split(spec, ':');
    if (f.size() != 3) throw std::invalid_argument("--got wants LABEL:DTYPE:FILE, got " + spec);
    gots.push_back(read_got(f[0], parse_dtype(f[1]), f[2], c.M * c.N));
  }
  const std::vector<Candidate> cands = candidates(o, c);
  std::printf("case %s: M=%lld N=%lld K=%lld G=%lld scaling=%d, %zu candidates\n",
              o.case_path.c_str(), (long long)c.M, (long long)c.N, (long long)c.K, (long long)c.G,
              int(c.scaling), cands.size());
  CandidateEvaluator sample(c, sample_rows(c, o.sample_rows)), full(c, all_rows(c));
  const std::vector<float> exact =
      evaluate(c, sample.rows(), AccumulationModel::exact, 1, false, false).z;
  std::ostringstream js;
  js << "{\"case\": \"" << o.case_path << "\", \"M\": " << c.M << ", \"N\": " << c.N
     << ", \"K\": " << c.K << ", \"G\": " << c.G << ", \"outputs\": [";
  bool all = true;
  for (std::size_t i = 0; i < gots.size(); ++i) {
    GotReport r = Search(o, c, gots[i], cands, sample, full, exact).run();
    all = all && r.predicted;
    js << (i ? ", " : "") << r.json.str();
  }
  js << "]}\n";
  if (!o.json_path.empty()) std::ofstream(o.json_path) << js.str();
  return all ? 0 : 1;
}

}  // namespace
}  // namespace fp8ref::device

int main(int argc, char** argv) {
  try {
    return fp8ref::device::run(fp8ref::device::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_driver: %s\n", e.what());
    return 2;
  }
}
