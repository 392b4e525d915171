// Evaluation of a dumped GEMM case (case_files.h) under the reference's accumulation models for the
// cuBLASLt prediction driver (gemm_driver.cpp): on a row sample or on every row, with the
// reference's own scaling or unscaled (for alternative epilogue orders applied here), plus the
// exact result. All values go through reference/grouped_gemm.h: this is the oracle under test.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "proptests/fidelity/case_files.h"

namespace fp8ref::device {

// How the scale pair of a scalar-scaled model (tensorwise / rowwise) meets the accumulator.
enum class Epilogue : std::uint8_t {
  ref,       // the reference model's own: RN(acc * RN(sa*sb))
  a_then_b,  // RN(RN(acc * sa) * sb)
  b_then_a,  // RN(RN(acc * sb) * sa)
};
constexpr const char* to_string(Epilogue e) {
  return e == Epilogue::ref ? "ref" : e == Epilogue::a_then_b ? "a_then_b" : "b_then_a";
}

struct Candidate {
  AccumulationModel model;
  Epilogue epilogue;
  int split_k;  // S >= 1 equal slices; -L: slices of L 128-blocks
  std::string name() const {
    return std::string(to_string(model)) + "/" + to_string(epilogue) + "/" +
           (split_k < 0 ? "L=" + std::to_string(-split_k) : "S=" + std::to_string(split_k));
  }
};

// A set of rows (ascending) of the case and model results for rows x N.
struct RowSet {
  std::vector<std::int64_t> rows;
  bool all = false;  // every row: evaluated through the offs entry point
};

inline RowSet all_rows(const GemmCase& c) {
  RowSet s{{}, true};
  for (std::int64_t r = 0; r < c.M; ++r) s.rows.push_back(r);
  return s;
}

// Up to n rows of groups, spread evenly over the valid rows (so over M tiles and groups).
inline RowSet sample_rows(const GemmCase& c, int n) {
  std::vector<std::int64_t> valid;
  for (std::int64_t r = 0; r < c.M; ++r)
    if (c.group_of[std::size_t(r)] >= 0) valid.push_back(r);
  RowSet s;
  if (valid.size() <= std::size_t(n)) {
    s.rows = valid;
  } else {
    for (int i = 0; i < n; ++i)
      s.rows.push_back(
          valid[std::size_t((valid.size() - 1) * std::size_t(i) / std::size_t(n - 1))]);
    s.rows.erase(std::unique(s.rows.begin(), s.rows.end()), s.rows.end());
  }
  return s;
}

struct Evaluated {
  std::vector<float> z;       // rows x N
  std::vector<double> bound;  // rows x N (empty unless asked)
};

// The model's f32 results on `rows`; `unscaled` drops the scales (Scaling::none): the accumulator
// alone. `exact` gives the exact value rounded to f32.
inline Evaluated evaluate(const GemmCase& c, const RowSet& rows, AccumulationModel model,
                          int split_k, bool unscaled, bool want_bound) {
  const std::int64_t R = std::int64_t(rows.rows.size());
  Evaluated e;
  e.z.assign(std::size_t(R * c.N), 0.0f);
  if (want_bound) e.bound.assign(e.z.size(), 0.0);
  ref::GroupedGemmOperands op = c.operands();
  // split_k < 0: slices of -split_k 128-blocks (SplitK::of_length).
  const ref::ModelChoice mc =
      split_k < 0 ? ref::ModelChoice{model, 1, -split_k} : ref::ModelChoice{model, split_k};
  const ref::GemmOutput out{OutDtype::f32, e.z, {}, e.bound};
  if (unscaled) op.scaling = ref::Scaling::none, op.scale_a = {}, op.scale_b = {};
  if (rows.all) {
    ref::grouped_gemm_forward_offs(op, c.offs, mc, ref::RowPolicy::zero, out);
    return e;
  }
  // A sub-problem of the sampled rows: their A rows, row map entries and per-row scales.
  const std::int64_t per_row = op.scaling == ref::Scaling::rowwise     ? 1
                               : op.scaling == ref::Scaling::blockwise ? ceil_div(c.K, kScaleBlockK)
                                                                       : 0;
  std::vector<std::uint8_t> a;
  std::vector<std::int32_t> map;
  std::vector<float> sa;
  for (std::int64_t r : rows.rows) {
    a.insert(a.end(), c.a.begin() + r * c.K, c.a.begin() + (r + 1) * c.K);
    map.push_back(c.group_of[std::size_t(r)]);
    for (std::int64_t j = 0; j < per_row; ++j) sa.push_back(c.sa[std::size_t(r * per_row + j)]);
  }
  op.M = R;
  op.a = a;
  if (per_row) op.scale_a = sa;
  ref::grouped_gemm_forward(op, map, mc, ref::RowPolicy::zero, out);
  return e;
}

// Scales of element (r, n) for the alternative epilogues (scalar-scaled cases only).
inline std::pair<float, float> scalar_scales(const GemmCase& c, std::int64_t r, std::int64_t n) {
  const std::int64_t g = c.group_of[std::size_t(r)];
  switch (c.scaling) {
    case ref::Scaling::tensorwise: return {c.sa[0], c.sb[std::size_t(g)]};
    case ref::Scaling::rowwise: return {c.sa[std::size_t(r)], c.sb[std::size_t(g * c.N + n)]};
    default: return {1.0f, 1.0f};
  }
}

inline float apply_epilogue(Epilogue e, float acc, float sa, float sb) {
  switch (e) {
    case Epilogue::a_then_b: return (acc * sa) * sb;
    case Epilogue::b_then_a: return (acc * sb) * sa;
    case Epilogue::ref: return acc * (sa * sb);
  }
  return acc;
}

// Candidate results with caching of the underlying reference runs (one per model, split, scaled or
// unscaled), for one row set.
class CandidateEvaluator {
 public:
  CandidateEvaluator(const GemmCase& c, RowSet rows) : c_(c), rows_(std::move(rows)) {}
  const RowSet& rows() const { return rows_; }

  // Computes the reference runs behind `cands` concurrently, one run per thread (the reference's
  // own row loop then runs serially inside: nested parallelism is off), which keeps every core
  // busy on a sample of few rows. A run the reference rejects is left for values() to report.
  void prefetch(const std::vector<Candidate>& cands) {
    std::vector<std::tuple<int, int, bool>> keys;
    for (const Candidate& k : cands) {
      const auto key = std::make_tuple(int(k.model), k.split_k, k.epilogue != Epilogue::ref);
      if (!runs_.count(key) && std::find(keys.begin(), keys.end(), key) == keys.end())
        keys.push_back(key);
    }
    std::vector<std::vector<float>> z(keys.size());
    std::vector<char> ok(keys.size(), 0);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t i = 0; i < keys.size(); ++i) {
      try {
        z[i] = evaluate(c_, rows_, AccumulationModel(std::get<0>(keys[i])), std::get<1>(keys[i]),
                        std::get<2>(keys[i]), false)
                   .z;
        ok[i] = 1;
      } catch (const std::exception&) {
      }
    }
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (ok[i]) runs_.emplace(keys[i], std::move(z[i]));
  }

  const std::vector<float>& values(const Candidate& cand) {
    const auto key = std::make_tuple(int(cand.model), int(cand.epilogue), cand.split_k);
    auto it = values_.find(key);
    if (it != values_.end()) return it->second;
    std::vector<float> z;
    if (cand.epilogue == Epilogue::ref) {
      z = run(cand.model, cand.split_k, false);
    } else {
      z = run(cand.model, cand.split_k, true);
      for (std::size_t i = 0; i < rows_.rows.size(); ++i)
        for (std::int64_t n = 0; n < c_.N; ++n) {
          const auto [sa, sb] = scalar_scales(c_, rows_.rows[i], n);
          float& v = z[i * std::size_t(c_.N) + std::size_t(n)];
          v = apply_epilogue(cand.epilogue, v, sa, sb);
        }
    }
    return values_.emplace(key, std::move(z)).first->second;
  }

 private:
  std::vector<float> run(AccumulationModel m, int s, bool unscaled) {
    const auto key = std::make_tuple(int(m), s, unscaled);
    auto it = runs_.find(key);
    if (it == runs_.end())
      it = runs_.emplace(key, evaluate(c_, rows_, m, s, unscaled, false).z).first;
    return it->second;
  }
  const GemmCase& c_;
  RowSet rows_;
  std::map<std::tuple<int, int, bool>, std::vector<float>> runs_;
  std::map<std::tuple<int, int, int>, std::vector<float>> values_;
};

}  // namespace fp8ref::device
