// Exact grouped forward on integer block products (see exact_gemm.h). Threads: an OpenMP loop over
// row chunks, each chunk's Eigen GEMMs single-threaded and its products combined while in cache;
// every value is exact, so the bits depend neither on the thread count nor on Eigen's order.
#include "reference/exact_gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "numerics/models.h"

namespace fp8ref::ref::detail {
namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kExactLimit = 0x1p53;           // integers below this add exactly in f64
constexpr std::int64_t kChunkDoubles = 1 << 18;  // block products per chunk (2 MiB: in cache)

// Code -> integer value in units of 2^(emin - mantissa bits) (NaN for non-finite codes).
struct IntegerTable {
  std::array<double, 256> v;
  explicit IntegerTable(Format f) {
    for (int c = 0; c < 256; ++c) {
      const Fp8Parts x = fp8_parts(f, std::uint8_t(c));
      v[std::size_t(c)] = x.finite ? std::ldexp(double(x.sig), x.exp - fp8_emin(f)) : NAN;
    }
  }
};
const IntegerTable& integer_table(Format f) {
  static const IntegerTable e4m3(Format::e4m3), e5m2(Format::e5m2), e2m1(Format::e2m1),
      e2m3(Format::e2m3), e3m2(Format::e3m2);
  switch (f) {
    case Format::e4m3: return e4m3;
    case Format::e2m1: return e2m1;
    case Format::e2m3: return e2m3;
    case Format::e3m2: return e3m2;
    default: return e5m2;
  }
}

// Fills m (rows × K) with the integer values of the given rows; returns max |value|, or NaN
// when a code is not finite.
double gather(const std::uint8_t* src, std::span<const std::int64_t> rows, std::int64_t K, Format f,
              RowMatrix& m) {
  const IntegerTable& t = integer_table(f);
  m.resize(std::int64_t(rows.size()), K);
  double amax = 0.0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::uint8_t* r = src + rows[i] * K;
    double* out = m.data() + std::int64_t(i) * K;
    for (std::int64_t k = 0; k < K; ++k) {
      const double v = t.v[r[k]];
      out[k] = v;
      amax = std::max(amax, std::fabs(v));  // NaN is absorbed by max: checked below
      if (std::isnan(v)) return NAN;
    }
  }
  return amax;
}

// Odd significand and exponent of every scale an operand's rows use: (rows × nbs), each times
// the grid's tensor scale (exact: below 2^28 when the block scale's is below 2^4, which
// exact_group_forward checks before it folds a tensor scale in; below 2^24 without one).
struct ScaleParts {
  std::vector<std::int64_t> sig;
  std::vector<int> exp;
  std::int64_t nbs = 1;
};
ScaleParts scale_parts(const ScaleGrid& s, std::int64_t first, std::int64_t count,
                       std::span<const std::int64_t> index, std::int64_t nbs) {
  ScaleParts p;
  p.nbs = nbs;
  p.sig.resize(std::size_t(count * nbs));
  p.exp.resize(p.sig.size());
  const F32Parts t = s.tensor == 1.0f ? F32Parts{1, 0} : f32_parts_odd(s.tensor);
  for (std::int64_t i = 0; i < count; ++i) {
    const float* base = s.at(index.empty() ? first + i : index[std::size_t(first + i)]);
    for (std::int64_t kb = 0; kb < nbs; ++kb) {
      const F32Parts x = f32_parts_odd(base[s.per_block ? kb : 0]);
      p.sig[std::size_t(i * nbs + kb)] = x.sig * t.sig;
      p.exp[std::size_t(i * nbs + kb)] = x.exp + t.exp;
    }
  }
  return p;
}

// Whether every scale of the given rows has an odd significand below 2^4 (every ue4m3 value
// does), so that one folded with an f32 tensor scale stays below 2^28.
bool narrow_scales(const ScaleGrid& s, std::span<const std::int64_t> rows, std::int64_t nbs) {
  for (const std::int64_t r : rows)
    for (std::int64_t kb = 0; kb < nbs; ++kb) {
      const std::int64_t sig = f32_parts_odd(s.at(r)[s.per_block ? kb : 0]).sig;
      if (sig >= 16 || sig <= -16) return false;
    }
  return true;
}

// Width of the exact integer blocks: the scale block when scales vary over K, else all of K or
// the largest multiple of 128 whose products stay below 2^53; 0 when none does.
std::int64_t block_width(const ExactGroup& grp, double amax, double bmax) {
  const double per_k = amax * bmax;
  if (grp.sa.per_block) return double(grp.sa.block_k) * per_k <= kExactLimit ? grp.sa.block_k : 0;
  if (per_k == 0.0 || double(grp.K) * per_k <= kExactLimit) return std::max<std::int64_t>(grp.K, 1);
  const std::int64_t w = std::int64_t(kExactLimit / per_k) / kScaleBlockK * kScaleBlockK;
  return w;
}

// How a group's K splits into exact integer blocks.
struct BlockPlan {
  std::int64_t w, nb, nbs;  // block width, blocks, scale pairs per element (nb or 1)
  int unit;                 // product unit exponent
  int spread;  // exponent spread summable in one i128: 126 - 53 - scale bits - bit_width(nb)
};

// Max |integer value| over the group's rows of A, or NaN when a code is not finite.
double rows_max(const ExactGroup& grp) {
  const IntegerTable& ta = integer_table(grp.fa);
  double amax = 0.0;
  for (std::int64_t r : grp.rows)
    for (std::int64_t k = 0; k < grp.K; ++k) {
      const double v = ta.v[grp.a[r * grp.K + k]];
      if (std::isnan(v)) return NAN;
      amax = std::max(amax, std::fabs(v));
    }
  return amax;
}

// Rows [r0, r0 + c) of z from their block products: one scale pair per element sums the blocks
// as integers first; per-block scales go through round_terms. t, e: nb scratch entries.
void combine_chunk(const std::vector<Eigen::MatrixXd>& prod, const ScaleParts& sa,
                   const ScaleParts& sb, std::int64_t r0, std::int64_t c, std::int64_t N,
                   const BlockPlan& bp, OutDtype d, std::span<double> z, std::vector<i128>& t,
                   std::vector<int>& e) {
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t n = 0; n < N; ++n) {
      double& out = z[std::size_t((r0 + i) * N + n)];
      if (bp.nbs == 1) {
        i128 p = 0;
        for (std::int64_t kb = 0; kb < bp.nb; ++kb)
          p += i128(std::int64_t(prod[std::size_t(kb)](i, n)));
        const std::int64_t s = sa.sig[std::size_t(i)] * sb.sig[std::size_t(n)];
        out = round_to(p * s, bp.unit + sa.exp[std::size_t(i)] + sb.exp[std::size_t(n)], d);
        continue;
      }
      int e_lo = std::numeric_limits<int>::max(), e_hi = std::numeric_limits<int>::min();
      for (std::int64_t kb = 0; kb < bp.nb; ++kb) {
        const std::size_t ia = std::size_t(i * bp.nbs + kb), ib = std::size_t(n * bp.nbs + kb);
        t[std::size_t(kb)] =
            i128(std::int64_t(prod[std::size_t(kb)](i, n))) * (sa.sig[ia] * sb.sig[ib]);
        e[std::size_t(kb)] = bp.unit + sa.exp[ia] + sb.exp[ib];
        e_lo = std::min(e_lo, e[std::size_t(kb)]), e_hi = std::max(e_hi, e[std::size_t(kb)]);
      }
      // |t| < 2^53 · 2^48 (2^53 · 2^56 with tensor scales): when the exponents span at most
      // bp.spread the shifted sum fits in 126 bits without looking at each term's width;
      // otherwise round_terms decides.
      if (e_hi - e_lo <= bp.spread) {
        i128 sum = 0;
        for (std::int64_t kb = 0; kb < bp.nb; ++kb)
          sum += t[std::size_t(kb)] << (e[std::size_t(kb)] - e_lo);
        out = round_to(sum, e_lo, d);
      } else {
        out = round_terms(t.data(), e.data(), bp.nb, d);
      }
    }
}

}  // namespace

bool exact_group_forward(const ExactGroup& grp, OutDtype d, std::span<double> z) {
  const std::int64_t m = std::int64_t(grp.rows.size()), N = grp.N, K = grp.K;
  if (m == 0 || N == 0) return true;
  if (K == 0) {  // empty sums: +0, as exact_dot gives
    std::fill(z.begin(), z.begin() + m * N, 0.0);
    return true;
  }
  RowMatrix bmat;
  std::vector<std::int64_t> all_n(static_cast<std::size_t>(N));
  for (std::int64_t n = 0; n < N; ++n) all_n[std::size_t(n)] = n;
  const double bmax = gather(grp.b, all_n, K, grp.fb, bmat);
  const double amax = rows_max(grp);  // checked before anything is written
  if (std::isnan(bmax) || std::isnan(amax)) return false;
  const std::int64_t w = block_width(grp, amax, bmax);
  if (w == 0) return false;
  const std::int64_t nb = ceil_div(K, w);
  const bool tensor = grp.sa.tensor != 1.0f || grp.sb.tensor != 1.0f;
  const std::int64_t nbs = grp.sa.per_block ? nb : 1;
  if (tensor && !(narrow_scales(grp.sa, grp.rows, nbs) && narrow_scales(grp.sb, all_n, nbs)))
    return false;
  const int scale_bits = tensor ? 56 : 48;  // |sa·sb| of a block, tensor scales folded in
  const BlockPlan bp{w, nb, nbs, product_unit_exp(grp.fa, grp.fb),
                     126 - 53 - scale_bits - int(std::bit_width(std::uint64_t(nb)))};
  const ScaleParts sb = scale_parts(grp.sb, 0, N, {}, bp.nbs);
  // Row chunks small enough for their block products to stay in cache while they are combined;
  // one chunk per thread at a time (Eigen runs single-threaded inside the parallel region).
  const std::int64_t chunk = std::clamp<std::int64_t>(kChunkDoubles / (N * nb), 8, 128);
#pragma omp parallel
  {
    RowMatrix amat;
    std::vector<Eigen::MatrixXd> prod(static_cast<std::size_t>(nb));
    std::vector<i128> t(static_cast<std::size_t>(nb));
    std::vector<int> e(static_cast<std::size_t>(nb));
#pragma omp for schedule(dynamic)
    for (std::int64_t r0 = 0; r0 < m; r0 += chunk) {
      const std::int64_t c = std::min(chunk, m - r0);
      gather(grp.a, grp.rows.subspan(std::size_t(r0), std::size_t(c)), K, grp.fa, amat);
      for (std::int64_t kb = 0; kb < nb; ++kb) {
        const std::int64_t k0 = kb * w, len = std::min(w, K - k0);
        prod[std::size_t(kb)].noalias() =
            amat.middleCols(k0, len) * bmat.middleCols(k0, len).transpose();
      }
      combine_chunk(prod, scale_parts(grp.sa, r0, c, grp.rows, bp.nbs), sb, r0, c, N, bp, d, z, t,
                    e);
    }
  }
  return true;
}

}  // namespace fp8ref::ref::detail
