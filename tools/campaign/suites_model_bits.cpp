// gemm.model_bits (docs/fuzz.md "Oracle suites"): each non-exact Hopper accumulation model
// (numerics/models/) against a second, deliberately different implementation written here from
// the definitions of docs/models.md in plain integer arithmetic: the wgmma step as integer
// significands aligned to the largest exponent and truncated to 13 fraction bits, then to 14
// significant bits; the mma.sync step as two HMMAs over f16 operands truncating to 25 fraction
// bits, then C added in RN; chains of 32-product steps; promotion exactly at 128-K boundaries;
// split-K slices (S equal ones or slices of L 128-blocks) added in slice order; the epilogues. The
// generator makes order matter: 128-blocks of very different magnitudes, blocks that cancel earlier
// ones, three or more slices, and scales with full significands.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/suite.h"
#include "numerics/models.h"

namespace fp8ref::fuzz {
namespace {

// An FP8 code as sig · 2^(exp - man): sig the integer significand (hidden bit included), exp the
// unbiased exponent of the encoding (subnormals at emin), man the mantissa width.
struct Code {
  bool neg;
  std::int64_t sig;
  int exp, man;
};
Code split_code(Format f, std::uint8_t c) {
  const bool neg = (c >> 7) != 0;
  if (f == Format::e4m3) {
    const int e = (c >> 3) & 15, m = c & 7;
    return e == 0 ? Code{neg, m, -6, 3} : Code{neg, 8 + m, e - 7, 3};
  }
  const int e = (c >> 2) & 31, m = c & 3;
  return e == 0 ? Code{neg, m, -14, 2} : Code{neg, 4 + m, e - 15, 2};
}

// |v| · 2^shift truncated toward zero (v >= 0).
std::int64_t shifted(std::int64_t v, int shift) {
  if (shift >= 0) return v << shift;
  return -shift >= 62 ? 0 : v >> -shift;
}

// One wgmma step: sum_k a_k·b_k + c over n products, by the definition (docs/models.md).
float step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb, float c) {
  struct Term {
    bool neg;
    std::int64_t sig;
    int exp, frac;  // value = sig · 2^(exp - frac); exp is the raw exponent compared for E
  };
  std::vector<Term> terms;
  for (int k = 0; k < n; ++k) {
    const Code x = split_code(fa, a[k]), y = split_code(fb, b[k]);
    if (x.sig * y.sig != 0)
      terms.push_back({x.neg != y.neg, x.sig * y.sig, x.exp + y.exp, x.man + y.man});
  }
  const std::uint32_t cu = std::bit_cast<std::uint32_t>(c);
  const int field = int((cu >> 23) & 0xFF);
  const std::int64_t csig = std::int64_t(cu & 0x7FFFFF) | (field ? 0x800000 : 0);
  if (csig != 0) terms.push_back({(cu >> 31) != 0, csig, (field ? field : 1) - 127, 23});
  if (terms.empty()) return 0.0f;
  int E = terms[0].exp;
  for (const Term& t : terms) E = std::max(E, t.exp);
  std::int64_t S = 0;  // the sum in units of 2^(E - 13)
  for (const Term& t : terms) {
    const std::int64_t m = shifted(t.sig, t.exp - t.frac - (E - 13));
    S += t.neg ? -m : m;
  }
  if (S == 0) return 0.0f;
  std::uint64_t m = std::uint64_t(S < 0 ? -S : S);
  const int width = std::bit_width(m);
  if (width > 14) m = (m >> (width - 14)) << (width - 14);
  const double v = std::ldexp(double(m), E - 13);
  const float z = v >= 0x1p128 ? INFINITY : float(v);
  return S < 0 ? -z : z;
}

// The exponent an FP8 value has once converted to f16: floor(log2 |v|), at least -14 (e5m2
// subnormals stay f16 subnormals; e4m3 subnormals become normal f16).
int f16_exponent(const Code& x) {
  return std::max(int(std::bit_width(std::uint64_t(x.sig))) - 1 + x.exp - x.man, -14);
}

// One HMMA of the mma.sync emulation (docs/models.md): the products with (k mod 4) / 2 == half
// and c, each truncated toward zero to 25 fraction bits below the largest f16 product exponent
// (or c's f32 exponent), summed exactly, the sum truncated toward zero to 24 significant bits
// (to multiples of 2^-149 below 2^-126); a zero sum is +0, a leading exponent above 127 Inf.
float hmma(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb, int half,
           float c) {
  std::vector<Code> xs, ys;
  for (int k = 0; k < n; ++k) {
    const Code x = split_code(fa, a[k]), y = split_code(fb, b[k]);
    if ((k % 4) / 2 == half && x.sig != 0 && y.sig != 0) xs.push_back(x), ys.push_back(y);
  }
  const std::uint32_t cu = std::bit_cast<std::uint32_t>(c);
  const int field = int((cu >> 23) & 0xFF);
  const std::int64_t csig = std::int64_t(cu & 0x7FFFFF) | (field ? 0x800000 : 0);
  const int cexp = (field ? field : 1) - 127;
  if (xs.empty() && csig == 0) return 0.0f;
  int E = csig != 0 ? cexp : f16_exponent(xs[0]) + f16_exponent(ys[0]);
  for (std::size_t i = 0; i < xs.size(); ++i)
    E = std::max(E, f16_exponent(xs[i]) + f16_exponent(ys[i]));
  std::int64_t S = (cu >> 31 ? -1 : 1) * shifted(csig, cexp - 23 - (E - 25));  // units 2^(E-25)
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const std::int64_t m =
        shifted(xs[i].sig * ys[i].sig, xs[i].exp - xs[i].man + ys[i].exp - ys[i].man - (E - 25));
    S += xs[i].neg != ys[i].neg ? -m : m;
  }
  if (S == 0) return 0.0f;
  std::uint64_t m = std::uint64_t(S < 0 ? -S : S);
  const int lead = std::bit_width(m) - 1 + E - 25;
  if (lead > 127) return S < 0 ? -INFINITY : INFINITY;
  const int keep_from = lead >= -126 ? lead - 23 : -149;  // the lowest kept power of two
  if (keep_from > E - 25) m = (m >> (keep_from - (E - 25))) << (keep_from - (E - 25));
  const float z = float(std::ldexp(double(m), E - 25));
  return S < 0 ? -z : z;
}

// mma.sync: T1 = HMMA(k mod 4 in {0, 1}, +0), T2 = HMMA({2, 3}, T1), D = RN_f32(c + T2).
float mma_step(const std::uint8_t* a, const std::uint8_t* b, int n, Format fa, Format fb, float c) {
  return c + hmma(a, b, n, fa, fb, 1, hmma(a, b, n, fa, fb, 0, 0.0f));
}

float chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len, Format fa, Format fb,
            bool mma_sync = false) {
  float acc = 0.0f;
  if (mma_sync) {
    for (std::int64_t k = 0; k < len; k += 32)
      acc = mma_step(a + k, b + k, int(std::min<std::int64_t>(32, len - k)), fa, fb, acc);
    return acc;
  }
  for (std::int64_t k = 0; k < len; k += 32)
    acc = step(a + k, b + k, int(std::min<std::int64_t>(32, len - k)), fa, fb, acc);
  return acc;
}

struct DotCase {
  std::vector<std::uint8_t> a, b;
  Format fa = Format::e4m3, fb = Format::e4m3;
  std::int64_t K = 0;
  int slices = 1;
  std::int64_t slice_len = 0;  // > 0: slices of this many 128-blocks (SplitK::of_length)
  std::vector<float> sa, sb;   // per 128-block (blockwise) or one each
};

// Slices of ceil(nb / S) 128-blocks (or of slice_len blocks, as many as cover K) in slice order,
// the first slice's result first, empty later slices skipped; `slice(k0, k1)` evaluates one.
template <class F>
float over_slices(const DotCase& d, F slice) {
  const std::int64_t nb = (d.K + 127) / 128;
  const std::int64_t per = d.slice_len > 0 ? d.slice_len : (nb + d.slices - 1) / d.slices;
  const std::int64_t count = d.slice_len > 0 ? (nb + per - 1) / per : d.slices;
  float r = 0.0f;
  for (std::int64_t s = 0; s < count; ++s) {
    const std::int64_t b0 = std::min(nb, s * per), b1 = std::min(nb, (s + 1) * per);
    if (s > 0 && b0 >= b1) continue;
    const float v = slice(b0 * 128, std::min(d.K, b1 * 128));
    r = s == 0 ? v : r + v;
  }
  return r;
}

float unpromoted_acc(const DotCase& d, bool mma_sync = false) {
  return over_slices(d, [&](std::int64_t k0, std::int64_t k1) {
    return chain(&d.a[std::size_t(k0)], &d.b[std::size_t(k0)], k1 - k0, d.fa, d.fb, mma_sync);
  });
}

// Promotion at every 128 of K: T per block, combined by `promote(acc, T, block)`.
template <class P>
float promoted_acc(const DotCase& d, P promote) {
  return over_slices(d, [&](std::int64_t k0, std::int64_t k1) {
    float acc = 0.0f;
    for (std::int64_t k = k0; k < k1; k += 128) {
      const float t = chain(&d.a[std::size_t(k)], &d.b[std::size_t(k)],
                            std::min<std::int64_t>(128, k1 - k), d.fa, d.fb);
      acc = promote(acc, t, k / 128);
    }
    return acc;
  });
}

// An FP8 code of magnitude about 2^m (never NaN / Inf).
std::uint8_t code_near(Format f, int m, std::mt19937_64& rng) {
  const int jitter = int(rng() % 3) - 1;
  const std::uint8_t s = std::uint8_t((rng() & 1) << 7);
  if (f == Format::e4m3) {
    const int e = std::clamp(7 + m + jitter, 0, 15);
    int man = int(rng() % 8);
    if (e == 15 && man == 7) man = 6;
    return std::uint8_t(s | (e << 3) | man);
  }
  return std::uint8_t(s | (std::clamp(15 + m + jitter, 0, 30) << 2) | int(rng() % 4));
}

float full_scale(std::mt19937_64& rng) {
  const std::uint32_t e = 127 + std::uint32_t(rng() % 9) - 4;
  return std::bit_cast<float>((e << 23) | std::uint32_t(rng() & 0x7FFFFF));
}

// 2..8 128-blocks (sometimes a ragged tail), each of its own magnitude; some blocks the negation
// of an earlier one (cancellation); 1..5 slices, mostly >= 3.
DotCase draw_dot(std::mt19937_64& rng, bool per_block) {
  DotCase d;
  d.fb = rng() % 3 == 0 ? Format::e5m2 : Format::e4m3;
  const std::int64_t nb = 2 + std::int64_t(rng() % 7);
  d.K = nb * 128 - (rng() % 4 == 0 ? std::int64_t(rng() % 127) : 0);
  d.slices = rng() % 4 == 0 ? 1 + int(rng() % 2) : 3 + int(rng() % 3);
  if (rng() % 3 == 0) d.slices = 1, d.slice_len = 1 + std::int64_t(rng() % 3);
  d.a.resize(std::size_t(d.K));
  d.b.resize(std::size_t(d.K));
  for (std::int64_t blk = 0; blk < nb; ++blk) {
    const std::int64_t k0 = blk * 128, k1 = std::min(d.K, k0 + 128);
    if (blk > 0 && rng() % 3 == 0) {  // cancel an earlier block: a negated, b the same
      const std::int64_t src = std::int64_t(rng() % std::uint64_t(blk)) * 128;
      for (std::int64_t k = k0; k < k1; ++k) {
        d.a[std::size_t(k)] = std::uint8_t(d.a[std::size_t(src + k - k0)] ^ 0x80);
        d.b[std::size_t(k)] = d.b[std::size_t(src + k - k0)];
      }
      continue;
    }
    const int mag = int(rng() % 3) * 6 - 6;  // 2^-6, 2^0 or 2^6 per operand
    for (std::int64_t k = k0; k < k1; ++k) {
      d.a[std::size_t(k)] = code_near(d.fa, mag / 2 + int(rng() % 3) - 1, rng);
      d.b[std::size_t(k)] = code_near(d.fb, mag / 2 + int(rng() % 3) - 1, rng);
    }
  }
  const std::size_t ns = per_block ? std::size_t(nb) : 1;
  for (std::size_t i = 0; i < ns; ++i)
    d.sa.push_back(full_scale(rng)), d.sb.push_back(full_scale(rng));
  return d;
}

constexpr const char* kVariants[] = {"step",
                                     "hopper_unpromoted",
                                     "promoted_tensorwise",
                                     "promoted_rowwise",
                                     "promoted_blockwise",
                                     "tensorwise_a_then_b",
                                     "unpromoted_b_then_a",
                                     "mma_sync"};
constexpr std::int64_t kNumVariants = 8;

void mismatch(std::int64_t v, const DotCase& d, float got, float want) {
  throw Violation(
      std::string("model ") + kVariants[v] + " (K=" + std::to_string(d.K) + ", " +
      (d.slice_len > 0 ? "L=" + std::to_string(d.slice_len) : "S=" + std::to_string(d.slices)) +
      "): " + hex(std::bit_cast<std::uint32_t>(got)) + ", the second implementation gives " +
      hex(std::bit_cast<std::uint32_t>(want)));
}

void check_step(std::mt19937_64& rng, Fingerprint& fp) {
  std::uint8_t a[32], b[32];
  const int n = 1 + int(rng() % 32);
  const int mag = int(rng() % 5) - 2;
  for (int k = 0; k < n; ++k)
    a[k] = code_near(Format::e4m3, mag, rng),
    b[k] = code_near(Format::e5m2, int(rng() % 5) - 2, rng);
  const float c = rng() % 4 == 0
                      ? 0.0f
                      : std::ldexp(full_scale(rng), int(rng() % 20) - 8) * (rng() & 1 ? 1 : -1);
  const float got = hopper_wgmma_step(a, b, n, Format::e4m3, Format::e5m2, c);
  const float want = step(a, b, n, Format::e4m3, Format::e5m2, c);
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want)) {
    DotCase d;
    d.K = n;
    mismatch(0, d, got, want);
  }
}

void check_dot(std::int64_t v, std::mt19937_64& rng, Fingerprint& fp);

// A step variant checks 16 steps, a model variant three dot products (blockwise and mma.sync
// eight: fmaf and a rounded product then an add, or C added first or last, differ only where a
// rounding sees the low bits).
void check_model(std::int64_t v, std::uint64_t seed, Fingerprint& fp) {
  std::mt19937_64 rng(seed);
  if (v == 0) {
    for (int i = 0; i < 16; ++i) check_step(rng, fp);
    return;
  }
  for (int i = 0; i < (v == 4 || v == 7 ? 8 : 3); ++i) check_dot(v, rng, fp);
}

void check_dot(std::int64_t v, std::mt19937_64& rng, Fingerprint& fp) {
  const bool per_block = v == 4;
  const DotCase d = draw_dot(rng, per_block);
  const DotRun x{d.a.data(), d.b.data(), d.fa, d.fb};
  const ElementScales sc{d.sa.data(), d.sb.data(), per_block, kScaleBlockK};
  const SplitK split = d.slice_len > 0 ? SplitK::of_length(d.slice_len) : SplitK(d.slices);
  const float sa = d.sa[0], sb = d.sb[0];
  const auto f32_sum = [](float acc, float t, std::int64_t) { return acc + t; };
  float got = 0, want = 0;
  switch (v) {
    case 1:
      got = model_dot(AccumulationModel::hopper_unpromoted, x, d.K, sc, split).z;
      want = unpromoted_acc(d) * (sa * sb);
      break;
    case 2:
      got = model_dot(AccumulationModel::hopper_promoted_tensorwise, x, d.K, sc, split).z;
      want = promoted_acc(d, f32_sum) * (sa * sb);
      break;
    case 3:
      got = model_dot(AccumulationModel::hopper_promoted_rowwise, x, d.K, sc, split).z;
      want = sa * (sb * promoted_acc(d, f32_sum));
      break;
    case 4:
      got = model_dot(AccumulationModel::hopper_promoted_blockwise, x, d.K, sc, split).z;
      want = promoted_acc(d, [&](float acc, float t, std::int64_t kb) {
        return std::fmaf(d.sa[std::size_t(kb)] * d.sb[std::size_t(kb)], t, acc);
      });
      break;
    case 5:
      got = model_dot(AccumulationModel::hopper_promoted_tensorwise, x, d.K, sc, split,
                      Epilogue::a_then_b)
                .z;
      want = (promoted_acc(d, f32_sum) * sa) * sb;
      break;
    case 6:
      got =
          model_dot(AccumulationModel::hopper_unpromoted, x, d.K, sc, split, Epilogue::b_then_a).z;
      want = (unpromoted_acc(d) * sb) * sa;
      break;
    default:
      got = model_dot(AccumulationModel::hopper_mma_sync, x, d.K, sc, split).z;
      want = unpromoted_acc(d, true) * (sa * sb);
      break;
  }
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    mismatch(v, d, got, want);
}

}  // namespace

void add_model_bits_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"gemm.model_bits",
       "each Hopper model == a second implementation (13-bit steps, 128-K promotion, slices)",
       "cpu",
       400,
       {std::begin(kVariants), std::end(kVariants)},
       {}},
      kNumVariants, [](std::int64_t v) { return std::string(kVariants[v]); }, check_model));
}

}  // namespace fp8ref::fuzz
