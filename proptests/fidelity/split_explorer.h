// Diagnostics for library outputs that no reference model with equal split-K slices predicts
// (part 7b of run_fidelity.sh): other ways of cutting K that a kernel may use, evaluated per
// element from the step model of numerics/models/wgmma_step.h. A hypothesis generator, not an
// oracle: a family that explains every explored element is a lead to turn into a named model,
// nothing more.
// Families (u = K granularity of the cut, S = number of accumulators):
//   contiguous u S        S equal slices (ceil) of u-wide units, each from +0, added in order
//   slice_len L           slices of L 128-blocks each (the last one shorter), added in order: a
//                         slice length that no S gives as ceil(nb / S) (cuBLASLt's blockwise
//                         split-K kernels were seen cutting K = 8192 and 16384 into 24-block
//                         slices)
//   contiguous_scaled     the same, each slice scaled before the slices are added (scalar scales)
//   interleaved u S       unit j goes to accumulator j mod S; accumulators added in order
//   two_piece             two contiguous pieces cut at any unit boundary (stream-K-like)
//   promote p             promoted models with a promotion interval of p (not 128)
//   blockwise_unfused     acc = acc + RN(s*T) instead of fmaf(s, T, acc)
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "numerics/models.h"
#include "proptests/fidelity/case_files.h"

namespace fp8ref::device {

struct ExploreElement {
  const std::uint8_t* a;
  const std::uint8_t* b;
  std::int64_t K;
  Format fa, fb;
  ElementScales sc;
  OutDtype dtype;
  std::uint32_t got;
  int scale_order = 0;  // scalar scales: 0 acc*RN(sa*sb), 1 RN(acc*sa)*sb, 2 RN(acc*sb)*sa
};

struct ExploreResult {
  std::map<std::string, int> explained;        // family name -> elements it reproduces
  std::map<std::int64_t, int> two_piece_cuts;  // cut (in units) -> elements it reproduces
  int elements = 0;
};

namespace detail {

inline float chain(const ExploreElement& e, std::int64_t k0, std::int64_t k1, float c) {
  return hopper_wgmma_chain(e.a + k0, e.b + k0, k1 - k0, e.fa, e.fb, {c, 0.0}).z;
}

inline bool hit(const ExploreElement& e, float z) { return out_bits(z, e.dtype) == e.got; }

inline float scaled(const ExploreElement& e, float acc) {
  const float sa = e.sc.a(0), sb = e.sc.b(0);
  return e.scale_order == 1   ? (acc * sa) * sb
         : e.scale_order == 2 ? (acc * sb) * sa
                              : acc * (sa * sb);
}

// Partials of u-wide units of K: chains from +0 (promoted: T per unit) or the unit ranges.
inline std::vector<float> unit_partials(const ExploreElement& e, std::int64_t u) {
  std::vector<float> t;
  for (std::int64_t k = 0; k < e.K; k += u) t.push_back(chain(e, k, std::min(e.K, k + u), 0.0f));
  return t;
}

// Slice s of n units cut into S ceil-sized slices: [first, last).
inline std::pair<std::int64_t, std::int64_t> slice(std::int64_t n, int S, int s) {
  const std::int64_t per = (n + S - 1) / S;
  return {std::min(n, s * per), std::min(n, (s + 1) * per)};
}

// Adds slice results in order, skipping empty slices after the first (as the reference does).
struct SliceSum {
  float total = 0.0f;
  bool first = true;
  void add(float v, bool empty) {
    if (empty && !first) return;
    total = first ? v : total + v;
    first = false;
  }
};

// Contiguous split-K over units of u columns: S = 1..16 ceil-sized slices, each accumulated from
// 0 (promoted: the f32 sum of its units' partials), added in order; scaled once at the end, and,
// for S > 1, also slice by slice.
template <class Note>
void explore_contiguous(const ExploreElement& e, bool promoted, std::int64_t u, Note note) {
  const std::int64_t n = (e.K + u - 1) / u;
  std::vector<float> part;  // promoted: T per unit
  if (promoted) part = unit_partials(e, u);
  for (int S = 1; S <= 16 && S <= n; ++S) {
    SliceSum plain, per_slice;
    for (int j = 0; j < S; ++j) {
      const auto [lo, hi] = slice(n, S, j);
      float acc = 0.0f;
      if (promoted) {
        for (std::int64_t i = lo; i < hi; ++i) acc = acc + part[std::size_t(i)];
      } else if (hi > lo) {
        acc = chain(e, lo * u, std::min(e.K, hi * u), 0.0f);
      }
      plain.add(acc, hi <= lo);
      per_slice.add(scaled(e, acc), hi <= lo);
    }
    const std::string tag =
        (promoted ? "promote" + std::to_string(u) + "_contiguous" : "contiguous") +
        " u=" + std::to_string(u) + " S=" + std::to_string(S);
    note(tag, scaled(e, plain.total));
    if (S > 1) note(tag + " scaled_per_slice", per_slice.total);
  }
}

// S = 2..4 accumulators taking the units of u columns in turn (unpromoted chains), added at the
// end.
template <class Note>
void explore_interleaved(const ExploreElement& e, std::int64_t u, Note note) {
  const std::int64_t n = (e.K + u - 1) / u;
  for (int S = 2; S <= 4; ++S) {
    std::vector<float> acc(std::size_t(S), 0.0f);
    for (std::int64_t j = 0; j < n; ++j)
      acc[std::size_t(j % S)] =
          chain(e, j * u, std::min(e.K, (j + 1) * u), acc[std::size_t(j % S)]);
    float t = acc[0];
    for (int i = 1; i < S; ++i) t = t + acc[std::size_t(i)];
    note("interleaved u=" + std::to_string(u) + " S=" + std::to_string(S), scaled(e, t));
  }
}

// Slices of L 128-blocks each (the last one shorter), for every L below the block count.
template <class Note>
void explore_slice_lengths(const ExploreElement& e, bool promoted, Note note) {
  const std::int64_t nb = (e.K + kScaleBlockK - 1) / kScaleBlockK;
  std::vector<float> part;
  if (promoted) part = unit_partials(e, kScaleBlockK);
  for (std::int64_t L = 1; L < nb; ++L) {
    SliceSum sum;
    for (std::int64_t lo = 0; lo < nb; lo += L) {
      float acc = 0.0f;
      if (promoted) {
        for (std::int64_t i = lo; i < std::min(nb, lo + L); ++i) acc = acc + part[std::size_t(i)];
      } else {
        acc = chain(e, lo * kScaleBlockK, std::min(e.K, (lo + L) * kScaleBlockK), 0.0f);
      }
      sum.add(acc, false);
    }
    note("slice_len L=" + std::to_string(L), scaled(e, sum.total));
  }
}

// Two pieces cut after unit c (u = 32 unpromoted, 128 promoted), every c; counts the cuts that
// explain the element and whether any did.
inline void explore_two_piece(const ExploreElement& e, bool promoted, ExploreResult& res) {
  const std::int64_t u = promoted ? 128 : 32, n = (e.K + u - 1) / u;
  std::vector<float> prefix(std::size_t(n + 1), 0.0f), part;
  if (promoted) part = unit_partials(e, u);
  for (std::int64_t j = 0; j < n; ++j)
    prefix[std::size_t(j + 1)] =
        promoted ? prefix[std::size_t(j)] + part[std::size_t(j)]
                 : chain(e, j * u, std::min(e.K, (j + 1) * u), prefix[std::size_t(j)]);
  bool any = false;
  for (std::int64_t c = 1; c < n; ++c) {
    float second = 0.0f;
    if (promoted) {
      for (std::int64_t j = c; j < n; ++j) second = second + part[std::size_t(j)];
    } else {
      second = chain(e, c * u, e.K, 0.0f);
    }
    if (hit(e, scaled(e, prefix[std::size_t(c)] + second))) ++res.two_piece_cuts[c], any = true;
  }
  if (any) ++res.explained["two_piece u=" + std::to_string(u) + " (some cut)"];
}

}  // namespace detail

// Scalar-scaled elements (tensorwise / rowwise), `promoted` selects the promoted family.
inline void explore_scalar(const ExploreElement& e, bool promoted, ExploreResult& res) {
  auto note = [&](const std::string& name, float acc_scaled) {
    if (detail::hit(e, acc_scaled)) ++res.explained[name];
  };
  const std::vector<std::int64_t> units = promoted ? std::vector<std::int64_t>{64, 128, 256, 512}
                                                   : std::vector<std::int64_t>{32, 64, 128, 256};
  for (std::int64_t u : units) {
    detail::explore_contiguous(e, promoted, u, note);
    if (!promoted && u <= 128) detail::explore_interleaved(e, u, note);
  }
  detail::explore_slice_lengths(e, promoted, note);
  detail::explore_two_piece(e, promoted, res);
  ++res.elements;
}

// Per-128-block scaled elements (hopper_promoted_blockwise and variants).
inline void explore_blockwise(const ExploreElement& e, ExploreResult& res) {
  const std::vector<float> T = detail::unit_partials(e, kScaleBlockK);
  const std::int64_t n = std::int64_t(T.size());
  auto step = [&](float acc, std::int64_t kb, bool fused) {
    const float s = e.sc.a(kb) * e.sc.b(kb);
    return fused ? std::fmaf(s, T[std::size_t(kb)], acc) : acc + s * T[std::size_t(kb)];
  };
  for (int fused = 1; fused >= 0; --fused)
    for (int S = 1; S <= 16 && S <= n; ++S) {
      detail::SliceSum sum;
      for (int j = 0; j < S; ++j) {
        const auto [lo, hi] = detail::slice(n, S, j);
        float acc = 0.0f;
        for (std::int64_t kb = lo; kb < hi; ++kb) acc = step(acc, kb, fused);
        sum.add(acc, hi <= lo);
      }
      if (detail::hit(e, sum.total))
        ++res.explained[std::string(fused ? "blockwise_fmaf" : "blockwise_unfused") +
                        " S=" + std::to_string(S)];
    }
  for (std::int64_t L = 1; L < n; ++L) {  // slices of L blocks
    detail::SliceSum sum;
    for (std::int64_t lo = 0; lo < n; lo += L) {
      float acc = 0.0f;
      for (std::int64_t kb = lo; kb < std::min(n, lo + L); ++kb) acc = step(acc, kb, true);
      sum.add(acc, false);
    }
    if (detail::hit(e, sum.total)) ++res.explained["slice_len L=" + std::to_string(L)];
  }
  std::vector<float> prefix(std::size_t(n + 1), 0.0f);
  for (std::int64_t kb = 0; kb < n; ++kb)
    prefix[std::size_t(kb + 1)] = step(prefix[std::size_t(kb)], kb, true);
  bool any = false;
  for (std::int64_t c = 1; c < n; ++c) {
    float second = 0.0f;
    for (std::int64_t kb = c; kb < n; ++kb) second = step(second, kb, true);
    if (detail::hit(e, prefix[std::size_t(c)] + second)) ++res.two_piece_cuts[c], any = true;
  }
  if (any) ++res.explained["two_piece u=128 (some cut)"];
  ++res.elements;
}

}  // namespace fp8ref::device
