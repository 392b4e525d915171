// The M-grouped GEMM case of the fuzz suites (gemm_case.h): draw, tags and the fixed-point
// oracle of one output element.
#include "campaign/gemm_case.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "campaign/gen/adversarial.h"
#include "campaign/gen/choices.h"

namespace fp8ref::fuzz {

namespace {

using gen::ExactValue;
using ref::Scaling;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The group sizes, then (K, N): small, or MoE-like for few tokens over up to 16 groups.
void draw_extents(GemmCase& c) {
  const gen::MoeShapeLimits moe;
  c.moe_shape = *gen::moe_shape(moe);
  gen::SizeLimits lim;
  lim.max_total = 160;
  if (c.moe_shape) lim.max_total = moe.max_tokens, lim.max_groups = moe.max_groups;
  c.gs = *gen::group_sizes(lim);
  if (!c.moe_shape) {
    c.K = *gen::extent_k();
    c.N = *gen::extent_n();
    return;
  }
  const auto [K, N] = *gen::moe_extents(c.gs.groups(), c.gs.total(), moe);
  c.K = K, c.N = N;
}

using gen::Adversarial;

// A MoE-like shape's K and N (multiples of 128) cut back, N first, until the case fits the
// MoE work bound again after an adversarial class changed its tokens (gen::MoeShapeLimits).
void refit_moe(GemmCase& c) {
  const gen::MoeShapeLimits lim;
  const std::int64_t t = std::max<std::int64_t>(c.gs.total(), 1);
  while (t * c.N * c.K > lim.max_work && c.N > 128) c.N = std::max<std::int64_t>(128, c.N - 128);
  while (t * c.N * c.K > lim.max_work && c.K > 128) c.K -= 128;
}

// separating at a MoE-like shape: a long K at a few tokens (at most 8) over up to 8 experts, the
// DeepSeek-V3 hidden size 7168 = 56 blocks (tokens·N·K within the MoE work bound; B's
// G·N·K up to 8·128·7168 codes, past MoeShapeLimits::max_b_codes for this class only); other
// MoE cases keep their K, at least 4 blocks.
inline constexpr std::int64_t kSeparatingMoeK = 7168, kSeparatingMoeMaxTokens = 8;
void separating_moe_shape(GemmCase& c) {
  if (c.gs.total() <= kSeparatingMoeMaxTokens && c.G <= 8) {
    c.K = kSeparatingMoeK, c.N = 128;
    return;
  }
  c.K = std::max<std::int64_t>(c.K, 512);
  refit_moe(c);
}

// The shape part of an adversarial class (gen/adversarial.h), before the operands are filled;
// returns the class applied: none where the case cannot take it (cases without tokens keep their
// meaning; pow2_bands needs per-row scales and at most 8 groups). MoE-like shapes take every class,
// cut back to their work bound (refit_moe).
Adversarial adversarial_shape(Adversarial a, GemmCase& c, std::mt19937_64& rng) {
  const bool no_tokens = c.gs.dist == gen::SizeDist::all_empty ||
                         c.gs.dist == gen::SizeDist::zero_total || c.gs.total() == 0;
  switch (a) {
    case Adversarial::none:
    case Adversarial::zero_channel: return a;
    case Adversarial::exact_128:
      if (no_tokens || (c.desc == Desc::masked && c.G > 16)) return Adversarial::none;
      c.gs.sizes[std::size_t(rng() % std::uint64_t(c.G))] = 128;
      if (c.desc == Desc::masked) c.m_max = std::max<std::int64_t>(c.m_max, 128);
      if (c.moe_shape) refit_moe(c);
      return a;
    case Adversarial::pow2_bands: {
      const bool per_row = c.scaling == Scaling::rowwise || c.scaling == Scaling::blockwise ||
                           c.scaling == Scaling::mx;
      if (!per_row || no_tokens || c.G > 8) return Adversarial::none;
      // Two 128-row bands with rows of a group: aligned to 128, rows in the first and last group
      // (one group: 129..160 rows); two to four N tiles, the last one partial.
      c.desc = Desc::aligned, c.gs.align = 128;
      if (c.G == 1) c.gs.sizes[0] = 129 + std::int64_t(rng() % 32);
      c.gs.sizes.front() = std::max<std::int64_t>(c.gs.sizes.front(), 1);
      c.gs.sizes.back() = std::max<std::int64_t>(c.gs.sizes.back(), 1);
      c.N = 128 * (1 + std::int64_t(rng() % 3)) + 1 + std::int64_t(rng() % 32);
      if (c.moe_shape) refit_moe(c);
      return a;
    }
    case Adversarial::poison_past_end:
      if (c.desc == Desc::masked) c.desc = Desc::offs;
      c.gs.tail = std::max<std::int64_t>(c.gs.tail, 1);
      return a;
    case Adversarial::separating:  // 4 blocks of K over at most 64 tokens (cost)
      if (no_tokens || c.gs.total() > 64) return Adversarial::none;
      c.out = OutDtype::f32, c.va = c.vb = gen::ValueClass::normal;
      if (c.moe_shape)
        separating_moe_shape(c);
      else
        c.K = 512;
      return a;
  }
  return Adversarial::none;
}

// pow2_bands' scales: 2^(band exponent + K-block exponent) for A (band = row / 128), 2^(tile
// exponent + K-block exponent) for B (tile = n / 128, up to 4 tiles); the 4 tile exponents
// distinct, the bands' distinct for up to 9 bands.
void pow2_band_scales(GemmCase& c, std::mt19937_64& rng) {
  std::array<int, 13> e{};
  for (int i = 0; i < 13; ++i) e[std::size_t(i)] = i - 6;
  std::shuffle(e.begin(), e.end(), rng);
  const std::int64_t per_k = c.scaling == Scaling::rowwise     ? 1
                             : c.scaling == Scaling::blockwise ? ceil_div(c.K, 128)
                                                               : ceil_div(c.K, 32);
  std::vector<int> ka(static_cast<std::size_t>(per_k)), kb(static_cast<std::size_t>(per_k));
  for (auto& x : ka) x = int(rng() % 5) - 2;
  for (auto& x : kb) x = int(rng() % 5) - 2;
  const auto band = [&](std::int64_t r) { return e[std::size_t(4 + r / 128 % 9)]; };
  for (std::int64_t r = 0; r < c.M; ++r)
    for (std::int64_t j = 0; j < per_k; ++j)
      c.sa[std::size_t(r * per_k + j)] = std::ldexp(1.0f, band(r) + ka[std::size_t(j)]);
  const std::int64_t cols = c.scaling == Scaling::blockwise ? ceil_div(c.N, 128) : c.N;
  for (std::int64_t g = 0; g < c.G; ++g)
    for (std::int64_t n = 0; n < cols; ++n) {
      const int tile = e[std::size_t(c.scaling == Scaling::blockwise ? n % 4 : n / 128 % 4)];
      for (std::int64_t j = 0; j < per_k; ++j)
        c.sb[std::size_t((g * cols + n) * per_k + j)] = std::ldexp(1.0f, tile + kb[std::size_t(j)]);
    }
}

// separating's data: codes whose exponent is the 128-K block's (random per block) ± 1 with random
// sign and mantissa, so partial sums of different blocks differ in magnitude and split-K,
// promotion and chain orders round differently; scales of full significands in [2^-4, 2^4)
// (MX keeps its powers of two).
void separating_data(GemmCase& c, std::mt19937_64& rng) {
  auto fill = [&rng](std::vector<std::uint8_t>& v, Format f, std::int64_t row_len,
                     std::int64_t k_stride) {
    const int mb = f == Format::e4m3 ? 3 : 2, emax = f == Format::e4m3 ? 14 : 29;
    std::vector<int> base(8);
    for (int& e : base) e = 2 + int(rng() % std::uint64_t(emax - 3));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::int64_t k = (std::int64_t(i) / k_stride) % row_len;
      const int e = std::clamp(base[std::size_t(k / 128 % 8)] + int(rng() % 3) - 1, 1, emax);
      v[i] = std::uint8_t((rng() & 1) << 7 | e << mb | int(rng() % (1u << mb)));
    }
  };
  fill(c.a, c.fa, c.K, 1);
  fill(c.b, c.fb, c.K, c.b_layout == ref::BLayout::nk ? 1 : c.N);
  if (c.scaling == Scaling::mx) return;
  for (auto* v : {&c.sa, &c.sb})
    for (float& s : *v)
      s = std::bit_cast<float>(std::uint32_t(0x3D800000u + rng() % (0x41800000u - 0x3D800000u)));
}

// The data part of an adversarial class, on the filled operands.
void adversarial_data(Adversarial a, GemmCase& c, std::mt19937_64& rng) {
  if (a == Adversarial::pow2_bands) pow2_band_scales(c, rng);
  if (a == Adversarial::separating) separating_data(c, rng);
  if (a == Adversarial::zero_channel && c.K > 0 && c.N > 0) {
    const std::int64_t k0 = std::int64_t(rng() % std::uint64_t(c.K)),
                       n0 = std::int64_t(rng() % std::uint64_t(c.N));
    for (std::int64_t r = 0; r < c.M; ++r) c.a[std::size_t(r * c.K + k0)] = 0;
    for (std::int64_t g = 0; g < c.G; ++g)
      for (std::int64_t k = 0; k < c.K; ++k)
        c.b[std::size_t(c.b_layout == ref::BLayout::nk ? (g * c.N + n0) * c.K + k
                                                       : (g * c.K + k) * c.N + n0)] = 0;
  }
  if (a == Adversarial::poison_past_end) {
    const std::int64_t sa_row = c.M ? sa_count(c) / c.M : 0;
    const bool per_row = c.scaling != Scaling::none && c.scaling != Scaling::tensorwise;
    for (std::int64_t r = 0; r < c.M; ++r) {
      if (c.group_of[std::size_t(r)] >= 0) continue;
      std::fill_n(c.a.begin() + r * c.K, c.K, std::uint8_t(0x7F));  // NaN in e4m3 and e5m2
      if (per_row) std::fill_n(c.sa.begin() + r * sa_row, sa_row, NAN);
    }
  }
}

}  // namespace

GemmCase draw_gemm(DrawOptions o) {
  GemmCase c;
  draw_extents(c);
  c.desc = *rc::gen::element(Desc::offs, Desc::aligned, Desc::masked);
  c.G = c.gs.groups();
  if (c.desc == Desc::masked) {
    const std::int64_t biggest = *std::max_element(c.gs.sizes.begin(), c.gs.sizes.end());
    c.m_max = biggest + *rc::gen::inRange<std::int64_t>(0, 3);
    if (c.m_max * c.G > 512) c.m_max = biggest;  // cost control; sizes always fit
  }
  if (o.need_padding && c.desc != Desc::masked && c.gs.tail == 0) c.gs.tail = 1;
  c.group_of = rows_of(c.gs, c.desc, c.m_max, c.M);
  c.fa = *gen::element_format();
  c.fb = *gen::element_format();
  c.va = *gen::value_class(o.allow_nan_inf);
  c.vb = *gen::value_class(o.allow_nan_inf);
  c.scaling = *gen::scaling();
  c.b_layout = *rc::gen::element(ref::BLayout::nk, ref::BLayout::kn);
  if (!o.prefer_f32_out)
    c.out = o.allow_f16_out ? *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16)
                            : *rc::gen::element(OutDtype::f32, OutDtype::bf16);
  else  // f32 in two thirds of the cases
    c.out = *rc::gen::weightedOneOf<OutDtype>(
        {{o.allow_f16_out ? 4 : 2, rc::gen::just(OutDtype::f32)},
         {1, rc::gen::just(OutDtype::bf16)},
         {o.allow_f16_out ? 1 : 0, rc::gen::just(OutDtype::f16)}});
  c.model =
      o.exact_only ? ref::ModelChoice{AccumulationModel::exact, 1} : *gen::model_for(c.scaling);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  // Drawn last, so a case of class none is the case drawn before the classes existed.
  std::mt19937_64 arng(seed ^ 0xad5e75a1ull);
  const Adversarial adv =
      o.adversarial ? adversarial_shape(*gen::adversarial(), c, arng) : Adversarial::none;
  c.adversarial = adv;
  if (adv != Adversarial::none) c.group_of = rows_of(c.gs, c.desc, c.m_max, c.M);
  std::mt19937_64 rng(seed);
  c.a = gen::fill_codes(c.fa, c.va, c.M * c.K, rng());
  c.b = gen::fill_codes(c.fb, c.vb, c.G * c.N * c.K, rng());
  const bool pow2 = c.scaling == Scaling::mx;
  c.sa.resize(std::size_t(sa_count(c)));
  c.sb.resize(std::size_t(sb_count(c)));
  for (auto& s : c.sa) s = gen::draw_scale(rng(), pow2);
  for (auto& s : c.sb) s = gen::draw_scale(rng(), pow2);
  adversarial_data(adv, c, arng);
  return c;
}

std::vector<std::string> gemm_tags(const GemmCase& c) {
  std::vector<std::string> t = gen::size_tags(c.gs);
  t.push_back(std::string("desc:") + to_string(c.desc));
  t.push_back(std::string("scaling:") + ref::to_string(c.scaling));
  t.push_back(std::string("values:") + gen::to_string(c.va));
  t.push_back(std::string("values_b:") + gen::to_string(c.vb));
  t.push_back("formats:" + std::string(to_string(c.fa)) + "x" + std::string(to_string(c.fb)));
  t.push_back(std::string("b_layout:") + to_string(c.b_layout));
  t.push_back(std::string("out:") + to_string(c.out));
  if (c.moe_shape) t.push_back("shape:moe");
  if (c.adversarial != Adversarial::none)
    t.push_back(std::string("adversarial:") + to_string(c.adversarial));
  for (std::int64_t x : c.gs.sizes)
    if (x == 128) {
      t.push_back("sizes:exact_128");
      break;
    }
  t.push_back(std::string("model:") + to_string(c.model.model));
  if (c.model.split_k > 1) t.push_back("split_k:>1");
  if (c.model.split_blocks > 0) t.push_back("split_blocks:>0");
  if (c.model.epilogue != Epilogue::model)
    t.push_back(std::string("epilogue:") + to_string(c.model.epilogue));
  return t;
}

std::vector<std::string> gemm_classes(const DrawOptions& o) {
  std::vector<std::string> c;
  for (auto d : gen::kSizeDists) c.push_back(std::string("dist:") + to_string(d));
  for (const char* d : {"offs", "aligned", "masked"}) c.push_back(std::string("desc:") + d);
  for (const char* s : {"none", "tensorwise", "rowwise", "blockwise", "mx"})
    c.push_back(std::string("scaling:") + s);
  for (const char* s : {"some_empty", "align_edge", "edge_128", "edge_256"})
    c.push_back(std::string("sizes:") + s);
  c.push_back("groups:65+");
  for (auto v : gen::kValueClasses)
    if (o.allow_nan_inf || v != gen::ValueClass::nan_inf)
      for (const char* which : {"values:", "values_b:"})
        c.push_back(std::string(which) + gen::to_string(v));
  for (const char* f : {"e4m3xe4m3", "e4m3xe5m2", "e5m2xe4m3", "e5m2xe5m2"})
    c.push_back(std::string("formats:") + f);
  for (const char* l : {"nk", "kn"}) c.push_back(std::string("b_layout:") + l);
  for (OutDtype d : {OutDtype::f32, OutDtype::bf16, OutDtype::f16})
    if (o.allow_f16_out || d != OutDtype::f16) c.push_back(std::string("out:") + to_string(d));
  c.push_back("shape:moe");
  if (o.adversarial) {
    for (cases::Adversarial a : cases::kAdversarialClasses)
      c.push_back(std::string("adversarial:") + cases::to_string(a));
    c.push_back("sizes:exact_128");
  }
  if (o.exact_only) return c;
  for (AccumulationModel m : kAllAccumulationModels)
    c.push_back(std::string("model:") + to_string(m));
  c.push_back("split_k:>1");
  c.push_back("split_blocks:>0");
  for (const char* e : {"scale_product", "b_then_a", "a_then_b"})
    c.push_back(std::string("epilogue:") + e);
  return c;
}

ExactValue oracle(const GemmCase& c, std::int64_t r, std::int64_t n) {
  const std::int64_t g = c.group_of[std::size_t(r)];
  const std::uint8_t* a = c.a.data() + r * c.K;
  const std::uint8_t* b = c.b_layout == ref::BLayout::nk ? c.b.data() + (g * c.N + n) * c.K
                                                         : c.b.data() + g * c.K * c.N + n;
  const std::int64_t bs = c.b_layout == ref::BLayout::nk ? 1 : c.N;
  const std::int64_t nbk = ceil_div(c.K, 128), nbn = ceil_div(c.N, 128), nmx = ceil_div(c.K, 32);
  switch (c.scaling) {
    case Scaling::none:
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, nullptr, nullptr, 0, 1);
    case Scaling::tensorwise:
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, &c.sa[0], &c.sb[std::size_t(g)], 1,
                                   1);
    case Scaling::rowwise:
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, &c.sa[std::size_t(r)],
                                   &c.sb[std::size_t(g * c.N + n)], 1, 1);
    case Scaling::blockwise:
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, c.sa.data() + r * nbk,
                                   c.sb.data() + (g * nbn + n / 128) * nbk, nbk, 128);
    case Scaling::mx:
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, c.sa.data() + r * nmx,
                                   c.sb.data() + (g * c.N + n) * nmx, nmx, 32);
    case Scaling::nvfp4:
    case Scaling::mx16: {  // block scales only (the campaign writes no tensor scales)
      const std::int64_t nnv = ceil_div(c.K, 16);
      return gen::exact_scaled_dot(c.fa, a, 1, c.fb, b, bs, c.K, c.sa.data() + r * nnv,
                                   c.sb.data() + (g * c.N + n) * nnv, nnv, 16);
    }
  }
  return {};
}

double oracle_rounded(const ExactValue& x, OutDtype d) {
  switch (d) {
    case OutDtype::f32: return gen::round_f32(x);
    case OutDtype::bf16: return gen::round_bf16(x);
    case OutDtype::f16: return gen::round_f16(x);
  }
  return NAN;
}

double value_of(std::uint32_t bits, OutDtype d) {
  switch (d) {
    case OutDtype::f32: return double(std::bit_cast<float>(bits));
    case OutDtype::bf16: return double(std::bit_cast<float>(bits << 16));
    case OutDtype::f16: {  // 1.5.10: (1024 + m)·2^(e - 25), subnormal m·2^-24
      const int e = int(bits >> 10) & 31, m = int(bits & 1023);
      const double mag = e == 31 ? (m ? NAN : INFINITY)
                         : e     ? std::ldexp(double(1024 + m), e - 25)
                                 : std::ldexp(double(m), -24);
      return (bits & 0x8000) ? -mag : mag;
    }
  }
  return NAN;
}

bool within(double y, const ExactValue& x, double bound) {
  auto to_exact = [](double v, gen::BigInt& m, int& e) {
    if (v == 0) {
      m = 0, e = 0;
      return;
    }
    int ex = 0;
    const double fr = std::frexp(v, &ex);
    m = gen::BigInt(std::int64_t(std::ldexp(fr, 53)));
    e = ex - 53;
  };
  gen::BigInt ym, bm;
  int ye = 0, be = 0;
  to_exact(y, ym, ye);
  to_exact(bound, bm, be);
  const int e = std::min({ye, be, x.exp});
  gen::BigInt d = (ym << (ye - e)) - (x.mant << (x.exp - e));
  if (d < 0) d = -d;
  return d <= (bm << (be - e));
}

std::vector<std::int64_t> oracle_columns(std::int64_t N, std::int64_t r) {
  std::vector<std::int64_t> cols;
  if (N <= 16) {
    for (std::int64_t n = 0; n < N; ++n) cols.push_back(n);
    return cols;
  }
  cols = {0, N - 1};
  for (std::int64_t j = 0; j < 6; ++j) cols.push_back((r * 7 + j * (N / 6) + j) % N);
  return cols;
}

std::string hex32(std::uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", u);
  return buf;
}

std::string where(const GemmCase& c, std::int64_t r, std::int64_t n) {
  std::ostringstream os;
  os << "row " << r << " (group " << c.group_of[std::size_t(r)] << ") col " << n << " of M=" << c.M
     << " N=" << c.N << " K=" << c.K << " G=" << c.G << " [" << to_string(c.desc) << ", "
     << to_string(c.gs.dist) << ", " << ref::to_string(c.scaling) << ", "
     << to_string(c.model.model) << " split " << c.model.split_k << ", " << to_string(c.out) << "]";
  return os.str();
}

}  // namespace fp8ref::fuzz
