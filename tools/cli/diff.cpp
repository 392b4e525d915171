// fp8-check diff (diff.h). Element comparison: raw bits for "bitwise"; for ULP, bit patterns are
// mapped to the format's ordered integer line (tensor_io::ulp_ordinal), NaN and ±Inf compared as
// classes; decoded values (double) give abs/rel error, relative L2 and SQNR over finite pairs.
#include "cli/diff.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "cli/diff_fields.h"
#include "cli/errors.h"
#include "cli/inspect.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "tensor_io/element_values.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;
using Json = nlohmann::ordered_json;
constexpr std::size_t kHeatBins = 32;
constexpr std::uint64_t kProgressChunk = std::uint64_t{1}
                                         << 16;  // elements between progress updates

struct DiffOptions {
  std::string a, b, metric = "bitwise", groups, html;
  std::vector<std::string> as;
  std::size_t max_report = 10;
  bool json = false;
  bool no_progress = false;
};

// "path[:name]": the whole argument if it names an existing file, else split at the last ':'.
std::pair<std::string, std::string> split_spec(const std::string& s) {
  const std::size_t colon = s.rfind(':');
  if (std::filesystem::exists(s) || colon == std::string::npos || colon == 0) return {s, ""};
  return {s.substr(0, colon), s.substr(colon + 1)};
}

TensorFile load(const std::string& path, const ReadOptions& ro) {
  try {
    return read_tensor_file(path, ro);
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
}

std::vector<std::int64_t> load_offsets(const std::string& spec) {
  const auto [path, name] = split_spec(spec);
  if (name.empty()) throw UsageError("--groups: expected FILE:NAME, got '" + spec + "'");
  const TensorFile tf = load(path, {});
  const Tensor* t = tf.find(name);
  if (t == nullptr) throw UsageError("--groups: " + path + " has no tensor '" + name + "'");
  if (dtype_is_float(t->dtype) || t->dtype == DType::BOOL || t->shape.size() != 1) {
    throw UsageError("--groups: offsets '" + name + "' must be a 1-D integer tensor");
  }
  std::vector<std::int64_t> offs;
  for (std::uint64_t i = 0; i < t->numel(); ++i) {
    const auto v = static_cast<std::int64_t>(decode_bits(t->dtype, raw_bits(*t, i)));
    if (v < 0 || (!offs.empty() && v < offs.back()))
      throw UsageError("--groups: offsets must be non-negative and non-decreasing");
    offs.push_back(v);
  }
  return offs;
}

std::uint64_t ulp_distance(DType t, std::uint64_t a, std::uint64_t b) {
  const std::int64_t x = ulp_ordinal(t, a), y = ulp_ordinal(t, b);
  if (t == DType::U64) return a > b ? a - b : b - a;
  return x > y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
               : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
}

std::uint64_t hist_bucket(std::uint64_t d) { return d <= 2 ? d : std::bit_ceil(d); }

std::vector<std::int64_t> unravel(std::uint64_t i, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    idx[k] = static_cast<std::int64_t>(i % static_cast<std::uint64_t>(shape[k]));
    i /= static_cast<std::uint64_t>(shape[k]);
  }
  return idx;
}

struct Accum {
  double sq_err = 0, sq_ref = 0;
};

double bound_at(const Metric& m, std::uint64_t i) {
  const Tensor& t = *m.bound;
  return decode_bits(t.dtype, raw_bits(t, t.numel() == 1 ? 0 : i));
}

// Kind::Bound on a finite pair: |a - b| <= bound (a NaN bound fails; +Inf bounds everything).
bool within_bound(const Mismatch& e, TensorDiff& d) {
  const double err = std::fabs(e.a - e.b);
  if (err > 0)
    d.max_bound_ratio = std::max(d.max_bound_ratio, e.bound > 0 ? err / e.bound : INFINITY);
  return err <= e.bound;
}

// Compares element i; returns whether it passes the metric and fills the per-element record.
bool compare_element(const Tensor& a, const Tensor& b, std::uint64_t i, const Metric& m,
                     Mismatch& e, TensorDiff& d, Accum& acc) {
  e.a_bits = raw_bits(a, i), e.b_bits = raw_bits(b, i);
  e.a = decode_bits(a.dtype, e.a_bits), e.b = decode_bits(b.dtype, e.b_bits);
  const FpClass ca = classify_bits(a.dtype, e.a_bits), cb = classify_bits(b.dtype, e.b_bits);
  if (m.kind == Metric::Kind::Bound) e.bound = bound_at(m, i);
  if (ca != cb) {
    e.ulp = -1;
    ++d.class_mismatches;
    return false;
  }
  e.ulp = ca == FpClass::Finite
              ? static_cast<std::int64_t>(ulp_distance(a.dtype, e.a_bits, e.b_bits))
              : 0;
  if (ca == FpClass::Finite) {
    const double err = std::fabs(e.a - e.b);
    d.max_abs = std::max(d.max_abs, err);
    if (e.b != 0) d.max_rel = std::max(d.max_rel, err / std::fabs(e.b));
    acc.sq_err += err * err, acc.sq_ref += e.b * e.b;
  }
  ++d.ulp_hist[hist_bucket(static_cast<std::uint64_t>(e.ulp))];
  d.max_ulp = std::max(d.max_ulp, static_cast<std::uint64_t>(e.ulp));
  switch (m.kind) {
    case Metric::Kind::Bitwise: return e.a_bits == e.b_bits;
    case Metric::Kind::Ulp: return static_cast<std::uint64_t>(e.ulp) <= m.ulp;
    case Metric::Kind::Tol:
      return ca != FpClass::Finite || std::fabs(e.a - e.b) <= m.atol + m.rtol * std::fabs(e.b);
    case Metric::Kind::Bound: return ca != FpClass::Finite || within_bound(e, d);
  }
  return false;
}

std::int64_t group_of(std::int64_t row, const std::vector<std::int64_t>& offs) {
  const auto it = std::upper_bound(offs.begin(), offs.end(), row);
  return it == offs.end() ? -1 : static_cast<std::int64_t>(it - offs.begin());
}

void setup_groups(TensorDiff& d, const std::vector<std::int64_t>* offs, std::int64_t rows) {
  if (offs == nullptr) return;
  std::int64_t prev = 0;
  for (std::size_t g = 0; g <= offs->size(); ++g) {
    const std::int64_t end = g < offs->size() ? std::min((*offs)[g], rows) : rows;
    GroupStats s;
    s.group = g < offs->size() ? static_cast<std::int64_t>(g) : -1;
    s.rows = static_cast<std::uint64_t>(std::max<std::int64_t>(0, end - prev));
    d.groups.push_back(s);
    prev = std::max(prev, end);
  }
}

TensorDiff header_only(const std::string& name, DiffStatus status, const Tensor& t) {
  TensorDiff d;
  d.name = name, d.status = status, d.dtype = t.dtype, d.shape = t.shape;
  return d;
}

// A bound tensor has the pair's shape or a single element.
void check_bound_shape(const Metric& metric, const std::string& name, const Tensor& a) {
  if (!metric.bound)
    throw std::logic_error("diff_tensors: bound metric without a loaded bound tensor");
  if (metric.bound->shape == a.shape || metric.bound->numel() == 1) return;
  throw UsageError("--metric bound: bound shape " + shape_string(metric.bound->shape) +
                   " does not match tensor '" + name + "' shape " + shape_string(a.shape) +
                   " (give the same shape, or a single element)");
}

bool finite_number(const std::string& s, double& out) {
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  std::size_t used = 0;
  out = std::stod(s, &used);
  return used == s.size() && std::isfinite(out);
}

}  // namespace

Metric parse_metric(const std::string& s) {
  Metric m;
  m.text = s;
  try {
    if (s == "bitwise") return m;
    if (s.rfind("ulp:", 0) == 0) {
      m.kind = Metric::Kind::Ulp;
      std::size_t used = 0;
      const std::string n = s.substr(4);
      m.ulp = std::stoull(n, &used);
      if (used == n.size() && n.find_first_not_of("0123456789") == std::string::npos) return m;
    } else if (s.rfind("bound:", 0) == 0 && s.size() > 6) {
      m.kind = Metric::Kind::Bound;
      m.bound_spec = s.substr(6);
      return m;
    } else if (s.rfind("tol:", 0) == 0 && s.find(',') != std::string::npos) {
      m.kind = Metric::Kind::Tol;
      const std::size_t comma = s.find(',');
      // Each number whole (no "1abc" read as 1), finite and non-negative.
      const bool atol_ok = finite_number(s.substr(4, comma - 4), m.atol);
      const bool rtol_ok = finite_number(s.substr(comma + 1), m.rtol);
      if (atol_ok && rtol_ok && m.atol >= 0 && m.rtol >= 0) return m;
    }
  } catch (const std::exception&) {
  }
  throw UsageError("--metric: expected bitwise, ulp:N, tol:ATOL,RTOL or bound:FILE[:NAME], got '" +
                   s + "'");
}

void load_bound_tensor(Metric& m) {
  const auto [path, name] = split_spec(m.bound_spec);
  const TensorFile tf = load(path, {});
  const Tensor* t =
      name.empty() ? (tf.tensors.size() == 1 ? &tf.tensors[0].tensor : nullptr) : tf.find(name);
  if (t == nullptr)
    throw UsageError("--metric bound: " + path +
                     (name.empty() ? " holds several tensors: name one (FILE:NAME)"
                                   : " has no tensor '" + name + "'"));
  if (t->dtype == DType::BOOL)
    throw UsageError("--metric bound: the bound tensor must be float or integer, not BOOL");
  for (std::uint64_t i = 0; i < t->numel(); ++i) {
    const double v = decode_bits(t->dtype, raw_bits(*t, i));
    if (v < 0)
      throw UsageError("--metric bound: bound element " + std::to_string(i) + " is negative (" +
                       std::to_string(v) + ")");
  }
  m.bound = std::make_shared<const Tensor>(*t);
}

TensorDiff diff_tensors(const std::string& name, const Tensor& a, const Tensor& b,
                        const Metric& metric, const std::vector<std::int64_t>* offs,
                        std::size_t max_report, Progress* progress) {
  TensorDiff d = header_only(name, DiffStatus::equal, a);
  if (a.dtype != b.dtype) return d.status = DiffStatus::dtype_mismatch, d;
  if (a.shape != b.shape) return d.status = DiffStatus::shape_mismatch, d;
  if (metric.kind == Metric::Kind::Bound) check_bound_shape(metric, name, a);
  d.numel = a.numel();
  const std::int64_t rows = a.shape.empty() ? 1 : a.shape[0];
  const std::uint64_t cols = rows > 0 ? d.numel / static_cast<std::uint64_t>(rows) : 0;
  setup_groups(d, offs, rows);
  const std::size_t heat_rows =
      offs ? d.groups.size()
           : std::min<std::size_t>(kHeatBins,
                                   static_cast<std::size_t>(std::max<std::int64_t>(rows, 1)));
  const std::size_t heat_cols =
      std::min<std::size_t>(kHeatBins, static_cast<std::size_t>(std::max<std::uint64_t>(cols, 1)));
  d.heatmap.assign(heat_rows, std::vector<double>(heat_cols, 0));
  Accum acc;
  for (std::uint64_t i = 0; i < d.numel; ++i) {
    if (progress != nullptr && i % kProgressChunk == kProgressChunk - 1)
      progress->add(kProgressChunk);
    Mismatch e;
    const bool ok = compare_element(a, b, i, metric, e, d, acc);
    const bool bit_diff = e.a_bits != e.b_bits;
    const auto row = static_cast<std::int64_t>(i / std::max<std::uint64_t>(cols, 1));
    e.group = offs ? group_of(row, *offs) : -1;
    GroupStats* g =
        offs ? &d.groups[e.group < 0 ? d.groups.size() - 1 : static_cast<std::size_t>(e.group)]
             : nullptr;
    if (g) ++g->elements;
    d.bitwise_mismatches += bit_diff;
    d.metric_failures += !ok;
    const double cell = e.ulp < 0 ? 1e30 : static_cast<double>(e.ulp);
    const std::size_t hr = offs ? static_cast<std::size_t>(g - d.groups.data())
                                : static_cast<std::size_t>(row) * heat_rows /
                                      static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
    const std::size_t hc = static_cast<std::size_t>((i % std::max<std::uint64_t>(cols, 1)) *
                                                    heat_cols / std::max<std::uint64_t>(cols, 1));
    d.heatmap[hr][hc] = std::max(d.heatmap[hr][hc], cell);
    if (!bit_diff) continue;
    if (g) {
      ++g->mismatches, g->metric_failures += !ok;
      g->max_ulp =
          std::max(g->max_ulp, e.ulp < 0 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(e.ulp));
      if (e.ulp >= 0) g->max_abs = std::max(g->max_abs, std::fabs(e.a - e.b));
    }
    if (d.first.size() < max_report)
      e.index = i, e.multi_index = unravel(i, a.shape), d.first.push_back(e);
  }
  if (progress != nullptr) progress->add(d.numel % kProgressChunk);
  d.rel_l2 = acc.sq_ref > 0 ? std::sqrt(acc.sq_err / acc.sq_ref) : (acc.sq_err > 0 ? INFINITY : 0);
  d.sqnr_db = acc.sq_err > 0 ? 10 * std::log10(acc.sq_ref / acc.sq_err) : INFINITY;
  d.status = d.bitwise_mismatches == 0 ? DiffStatus::equal
             : d.metric_failures == 0  ? DiffStatus::within
                                       : DiffStatus::differs;
  return d;
}

namespace {

Json num(double v) {
  return std::isfinite(v) ? Json(v) : Json(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

std::string hex(std::uint64_t bits, DType t) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", std::max(1, dtype_bits(t) / 4),
                static_cast<unsigned long long>(bits));
  return buf;
}

// A report struct as fp8ref.diff/1 writes it: its fields (diff_fields.h) under their JSON keys.
struct JsonFields {
  DType dtype;  // the tensors' dtype: the width of hex bit patterns
  bool bound;   // --metric bound: its fields are written

  template <class T>
  Json object(const T& x) const {
    Json j = Json::object();
    visit_fields(x, [&](const char* name, const auto& v, Shown s) {
      if (s.kind == Shown::python_only || (s.kind == Shown::bound_metric && !bound)) return;
      j[s.json != nullptr ? s.json : name] = value(v, s);
    });
    return j;
  }
  Json value(double v, Shown) const { return num(v); }
  Json value(const std::string& v, Shown s) const {
    return s.kind == Shown::text ? json_text(v) : v;
  }
  Json value(const std::vector<std::int64_t>& v, Shown) const { return v; }
  template <std::integral I>
  Json value(I v, Shown s) const {
    if constexpr (std::is_signed_v<I>)
      if (s.kind == Shown::ulp_or_class && v < 0) return "class";
    if (s.kind == Shown::hex_bits) return hex(std::uint64_t(v), dtype);
    return v;
  }
  Json value(const std::map<std::uint64_t, std::uint64_t>& hist, Shown) const {
    Json j = Json::object();
    for (const auto& [k, n] : hist) j[std::to_string(k)] = n;
    return j;
  }
  template <class T>
  Json value(const std::vector<T>& rows, Shown) const {
    Json j = Json::array();
    for (const T& r : rows) j.push_back(object(r));
    return j;
  }
};

Json diff_json(const TensorDiff& d, const Metric& metric) {
  return JsonFields{d.dtype, metric.kind == Metric::Kind::Bound}.object(d);
}

void print_text(const TensorDiff& d, const Metric& metric) {
  const bool bound = metric.kind == Metric::Kind::Bound;
  std::printf("%s: %s  %s %s\n", escape_text(d.name).c_str(), to_string(d.status),
              std::string(dtype_name(d.dtype)).c_str(), shape_string(d.shape).c_str());
  if (d.numel == 0 && d.status != DiffStatus::equal) return;
  std::printf("  bitwise mismatches %llu / %llu, class mismatches %llu, metric failures %llu\n",
              static_cast<unsigned long long>(d.bitwise_mismatches),
              static_cast<unsigned long long>(d.numel),
              static_cast<unsigned long long>(d.class_mismatches),
              static_cast<unsigned long long>(d.metric_failures));
  if (d.bitwise_mismatches == 0) return;
  std::printf(
      "  max ulp %llu, max abs %.6g, max rel %.6g, rel L2 %.6g, SQNR %.2f dB\n  ulp histogram:",
      static_cast<unsigned long long>(d.max_ulp), d.max_abs, d.max_rel, d.rel_l2, d.sqnr_db);
  for (const auto& [k, v] : d.ulp_hist)
    std::printf(" <=%llu:%llu", static_cast<unsigned long long>(k),
                static_cast<unsigned long long>(v));
  if (bound) std::printf("\n  max |a-b|/bound %.6g", d.max_bound_ratio);
  std::printf("\n  first mismatches (index, group, a, b, ulp%s):\n", bound ? ", bound" : "");
  for (const Mismatch& m : d.first) {
    std::printf("    %s  g=%lld  a=%s (%.9g)  b=%s (%.9g)  ulp=%s",
                shape_string(m.multi_index).c_str(), static_cast<long long>(m.group),
                hex(m.a_bits, d.dtype).c_str(), m.a, hex(m.b_bits, d.dtype).c_str(), m.b,
                m.ulp < 0 ? "class" : std::to_string(m.ulp).c_str());
    if (bound) std::printf("  bound=%.9g", m.bound);
    std::printf("\n");
  }
  for (const GroupStats& g : d.groups) {
    if (g.mismatches == 0) continue;
    std::printf(
        "  group %lld (%s): rows %llu, mismatches %llu, metric failures %llu, max abs %.6g\n",
        static_cast<long long>(g.group), g.group < 0 ? "padding" : "expert",
        static_cast<unsigned long long>(g.rows), static_cast<unsigned long long>(g.mismatches),
        static_cast<unsigned long long>(g.metric_failures), g.max_abs);
  }
}

// A progress reporter for comparisons of at least kProgressMinElements elements (else none).
constexpr std::uint64_t kProgressMinElements = std::uint64_t{1} << 22;
std::unique_ptr<Progress> make_progress(const std::string& label, std::uint64_t total,
                                        bool disabled) {
  if (disabled || total < kProgressMinElements) return nullptr;
  return std::make_unique<Progress>(label, total, default_progress_style(false));
}

using NameIndex = std::unordered_map<std::string, std::size_t>;
NameIndex index_names(const TensorFile& tf) {
  NameIndex ix;
  for (std::size_t i = 0; i < tf.tensors.size(); ++i) ix.emplace(tf.tensors[i].name, i);
  return ix;
}

std::vector<TensorDiff> pair_and_diff(const DiffOptions& o, const Metric& metric,
                                      const std::vector<std::int64_t>* offs) {
  ReadOptions ro;
  ro.map = true;  // safetensors / npy tensors view the mapped files
  apply_as_options(o.as, ro);
  const auto [pa, na] = split_spec(o.a);
  const auto [pb, nb] = split_spec(o.b);
  const TensorFile fa = load(pa, ro), fb = load(pb, ro);
  std::vector<TensorDiff> out;
  if (!na.empty() || !nb.empty() || (fa.tensors.size() == 1 && fb.tensors.size() == 1)) {
    const Tensor* ta =
        na.empty() ? (fa.tensors.size() == 1 ? &fa.tensors[0].tensor : nullptr) : fa.find(na);
    const Tensor* tb =
        nb.empty() ? (fb.tensors.size() == 1 ? &fb.tensors[0].tensor : nullptr) : fb.find(nb);
    if (ta == nullptr) throw UsageError(pa + ": no tensor '" + na + "' (or name one of several)");
    if (tb == nullptr) throw UsageError(pb + ": no tensor '" + nb + "' (or name one of several)");
    const auto progress =
        make_progress("diff", ta->shape == tb->shape ? ta->numel() : 0, o.no_progress);
    out.push_back(diff_tensors(na.empty() ? (nb.empty() ? fa.tensors[0].name : nb) : na, *ta, *tb,
                               metric, offs, o.max_report, progress.get()));
    return out;
  }
  // Paired by name through an index: linear in the tensor count (MoE checkpoints hold 10^5).
  const NameIndex ia = index_names(fa), ib = index_names(fb);
  auto in = [](const NameIndex& ix, const TensorFile& tf, const std::string& name) {
    const auto it = ix.find(name);
    return it == ix.end() ? nullptr : &tf.tensors[it->second].tensor;
  };
  std::uint64_t total = 0;
  for (const NamedTensor& t : fa.tensors) {
    const Tensor* tb = in(ib, fb, t.name);
    if (tb != nullptr && tb->shape == t.tensor.shape && tb->dtype == t.tensor.dtype)
      total += t.tensor.numel();
  }
  const auto progress = make_progress("diff", total, o.no_progress);
  for (const NamedTensor& t : fa.tensors) {
    const Tensor* tb = in(ib, fb, t.name);
    out.push_back(
        tb ? diff_tensors(t.name, t.tensor, *tb, metric, offs, o.max_report, progress.get())
           : header_only(t.name, DiffStatus::only_in_a, t.tensor));
  }
  for (const NamedTensor& t : fb.tensors) {
    if (!in(ia, fa, t.name)) out.push_back(header_only(t.name, DiffStatus::only_in_b, t.tensor));
  }
  return out;
}

// An output that is one of the inputs would destroy it: refused before anything is read.
void refuse_output_onto_inputs(const DiffOptions& o) {
  if (o.html.empty()) return;
  for (const std::string& spec :
       {o.a, o.b, o.groups,
        o.metric.rfind("bound:", 0) == 0 ? o.metric.substr(6) : std::string()}) {
    if (spec.empty()) continue;
    const std::string path = split_spec(spec).first;
    if (same_file(o.html, path) || same_file(o.html, spec))
      throw UsageError("--html " + o.html + " is the input file " + path + ": refused");
  }
}

void run_diff(const DiffOptions& o) {
  refuse_output_onto_inputs(o);
  Metric metric = parse_metric(o.metric);
  if (metric.kind == Metric::Kind::Bound) load_bound_tensor(metric);
  std::vector<std::int64_t> offs;
  if (!o.groups.empty()) offs = load_offsets(o.groups);
  const std::vector<TensorDiff> diffs =
      pair_and_diff(o, metric, o.groups.empty() ? nullptr : &offs);
  const bool all_pass =
      std::all_of(diffs.begin(), diffs.end(), [](const TensorDiff& d) { return d.passes(); });
  if (o.json) {
    Json j = {{"schema", "fp8ref.diff/1"},
              {"a", json_text(o.a)},
              {"b", json_text(o.b)},
              {"metric", metric.text},
              {"result", all_pass ? "pass" : "differs"},
              {"tensors", Json::array()}};
    for (const TensorDiff& d : diffs) j["tensors"].push_back(diff_json(d, metric));
    std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::printf("diff %s %s  metric %s\n", escape_text(o.a).c_str(), escape_text(o.b).c_str(),
                escape_text(metric.text).c_str());
    for (const TensorDiff& d : diffs) print_text(d, metric);
    std::printf("result: %s\n", all_pass ? "pass" : "differs");
  }
  if (!o.html.empty()) {
    try {
      write_file_atomic(o.html,
                        std::string_view(render_html_report(o.a + " vs " + o.b, metric, diffs)));
    } catch (const tensor_io::Error& e) {
      throw UsageError(std::string("--html: ") + e.what());
    }
  }
  std::cout.flush();
  if (!all_pass) throw ExitCode{1};
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Compare tensors bitwise / in format ULPs (exit 0 same, 1 differs, 2 bad input)");
  sub->add_option("a", o->a, "A[:name] (whole-file mode pairs tensors by name)")->required();
  sub->add_option("b", o->b, "B[:name]")->required();
  sub->add_option("--as", o->as,
                  "Reinterpret both files' tensors as DTYPE; NAME=DTYPE: tensor NAME only "
                  "(repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--metric", o->metric,
                  "bitwise | ulp:N | tol:ATOL,RTOL | bound:FILE[:NAME] (per-element |a-b| bound)")
      ->capture_default_str();
  sub->add_option("--groups", o->groups,
                  "FILE:NAME of an offsets tensor (cumulative end rows over dim 0)");
  sub->add_option("--max-report", o->max_report, "Mismatches listed per tensor")
      ->check(count_in(0, kMaxReport))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Machine-readable output (schema fp8ref.diff/1)");
  sub->add_option("--html", o->html,
                  "Write a self-contained HTML report (inline SVG) to this file");
  sub->add_flag(
      "--no-progress", o->no_progress,
      "No progress on stderr (shown for >= 4M elements: a bar on a terminal, else a line per 10%)");
  sub->callback([o] { run_diff(*o); });
}

}  // namespace fp8ref::cli
