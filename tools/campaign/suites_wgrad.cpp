// K-grouped wgrad fuzz suite (`gemm.wgrad`, docs/fuzz.md): unscaled, tensorwise, and 1×128 /
// MX 1×32 scales along tokens that restart at each group; f32, bf16 or f16 output. An empty
// group's dW is C converted to the output (exactly C in f32), `exact` equals C + the exact sum of
// the fixed-point oracle rounded once, every other model is within its bound of it, and 1 and 2
// OpenMP threads give the same bits. The case: wgrad_case.h.
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "campaign/gemm_case.h"
#include "campaign/gen/choices.h"
#include "campaign/gen/fixed_oracle.h"
#include "campaign/strength.h"
#include "campaign/wgrad_case.h"

namespace fp8ref::fuzz {

using ref::Scaling;

namespace {

std::int64_t scale_block(Scaling s) { return s == Scaling::mx ? 32 : 128; }

}  // namespace

WgradCase draw_wgrad() {
  WgradCase w;
  gen::SizeLimits lim;
  lim.max_total = 200;
  lim.max_groups = 24;
  w.gs = *gen::group_sizes(lim);
  w.G = w.gs.groups();
  w.M = w.gs.total() + w.gs.tail;
  w.N = *rc::gen::inRange<std::int64_t>(1, 9);
  w.K = *rc::gen::inRange<std::int64_t>(1, 17);
  w.fdy = *gen::element_format();
  w.fx = *gen::element_format();
  w.v = *gen::value_class(false);
  w.scaling =
      *rc::gen::element(Scaling::none, Scaling::tensorwise, Scaling::blockwise, Scaling::mx);
  w.model = *gen::model_for(w.scaling);
  // f32 in four fifths of the cases: a bf16 / f16 dW rounds away most of what tells accumulation
  // orders apart (docs/fuzz.md "Test strength": 76% of the bf16 cases had every configuration
  // agree against 26% of the f32 ones; two thirds, as the M-grouped suites' prefer_f32_out, before
  // the fifteenth session).
  // f16 under `exact` only: its overflow to ±Inf is then the oracle's rounding too, while a
  // hardware model's bound says nothing past the f16 range.
  const bool f16 = w.model.model == AccumulationModel::exact;
  w.out = *rc::gen::weightedOneOf<OutDtype>({{f16 ? 8 : 4, rc::gen::just(OutDtype::f32)},
                                             {1, rc::gen::just(OutDtype::bf16)},
                                             {f16 ? 1 : 0, rc::gen::just(OutDtype::f16)}});
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  w.dy = gen::fill_codes(w.fdy, w.v, w.M * w.N, rng());
  w.x = gen::fill_codes(w.fx, w.v, w.M * w.K, rng());
  if (w.scaling == Scaling::tensorwise)
    w.s_dy = {gen::draw_scale(rng(), false)}, w.s_x = {gen::draw_scale(rng(), false)};
  const bool mx = w.scaling == Scaling::mx;
  const std::int64_t R = w.block_rows();
  for (std::int64_t i = 0; i < R * w.N; ++i) w.s_dy.push_back(gen::draw_scale(rng(), mx));
  for (std::int64_t i = 0; i < R * w.K; ++i) w.s_x.push_back(gen::draw_scale(rng(), mx));
  w.c.resize(std::size_t(w.G * w.N * w.K));
  for (auto& v : w.c)
    v = (rng() % 4 == 0)
            ? 0.0f
            : float(std::ldexp(double(std::int64_t(rng() % 2001) - 1000), int(rng() % 9) - 4));
  return w;
}

std::vector<std::string> wgrad_tags(const WgradCase& w) {
  auto t = gen::size_tags(w.gs);
  t.push_back(std::string("scaling:") + ref::to_string(w.scaling));
  t.push_back(std::string("values:") + gen::to_string(w.v));
  t.push_back(std::string("out:") + to_string(w.out));
  t.push_back(std::string("model:") + to_string(w.model.model));
  if (w.model.split_k > 1) t.push_back("split_k:>1");
  if (w.model.split_blocks > 0) t.push_back("split_blocks:>0");
  if (w.model.epilogue != Epilogue::model)
    t.push_back(std::string("epilogue:") + to_string(w.model.epilogue));
  return t;
}

std::vector<std::string> wgrad_classes() {
  std::vector<std::string> c;
  for (auto d : gen::kSizeDists) c.push_back(std::string("dist:") + to_string(d));
  for (const char* s : {"some_empty", "edge_128", "edge_256"})
    c.push_back(std::string("sizes:") + s);
  for (const char* s : {"none", "tensorwise", "blockwise", "mx"})
    c.push_back(std::string("scaling:") + s);
  for (OutDtype d : {OutDtype::f32, OutDtype::bf16, OutDtype::f16})
    c.push_back(std::string("out:") + to_string(d));
  for (auto v : gen::kValueClasses)
    if (v != gen::ValueClass::nan_inf) c.push_back(std::string("values:") + gen::to_string(v));
  for (AccumulationModel m : kAllAccumulationModels)
    c.push_back(std::string("model:") + to_string(m));
  c.push_back("split_k:>1");
  c.push_back("split_blocks:>0");
  for (const char* e : {"scale_product", "b_then_a", "a_then_b"})
    c.push_back(std::string("epilogue:") + e);
  return c;
}

namespace {

// The exact value of dW[g](n, k) = C + Σ_{rows of g} dY[r, n]·X[r, k]·s, exactly; the scales of
// blockwise / mx come from block rows rb0.. of (R, N) and (R, K), gathered for the oracle.
gen::ExactValue exact_dw(const WgradCase& w, std::int64_t r0, std::int64_t rows, std::int64_t rb0,
                         std::int64_t n, std::int64_t k, float c) {
  std::vector<float> sdy, sx;
  std::int64_t nscales = w.scaling == Scaling::tensorwise ? 1 : 0, block = 1;
  const float *pdy = w.s_dy.data(), *px = w.s_x.data();
  if (w.block_rows() > 0) {
    block = scale_block(w.scaling);
    nscales = (rows + block - 1) / block;
    for (std::int64_t b = 0; b < nscales; ++b) {
      sdy.push_back(w.s_dy[std::size_t((rb0 + b) * w.N + n)]);
      sx.push_back(w.s_x[std::size_t((rb0 + b) * w.K + k)]);
    }
    pdy = sdy.data(), px = sx.data();
  }
  gen::ExactValue x =
      gen::exact_scaled_dot(w.fdy, w.dy.data() + r0 * w.N + n, w.N, w.fx, w.x.data() + r0 * w.K + k,
                            w.K, rows, pdy, px, nscales, block);
  int ce = 0;
  const double cf = std::frexp(double(c), &ce);
  const gen::BigInt cm(std::int64_t(std::ldexp(cf, 53)));
  const int ec = ce - 53, e = std::min(ec, x.exp);
  x.mant = (x.mant << (x.exp - e)) + (cm << (ec - e));
  x.exp = e;
  return x;
}

// dW element i as the bits of its output dtype.
std::uint32_t out_bits(const WgradCase& w, const std::vector<float>& f,
                       const std::vector<std::uint16_t>& h, std::size_t i) {
  return w.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
}

// dW under the case's model with 1 and 2 OpenMP threads, required bitwise equal; the 1-thread
// result (f32 or bf16 / f16 bits) with its per-element bound, folded into the fingerprint.
struct WgradResult {
  std::vector<float> f32;
  std::vector<std::uint16_t> u16;
  std::vector<double> bound;
};
WgradResult run_wgrad(const WgradCase& w, Fingerprint& fp) {
  const std::vector<std::int64_t> offs = w.gs.ends();
  const ref::WgradOperands op = w.operands();
  const bool f32 = w.out == OutDtype::f32;
  WgradResult r{std::vector<float>(f32 ? w.c.size() : 0),
                std::vector<std::uint16_t>(f32 ? 0 : w.c.size()), std::vector<double>(w.c.size())};
  std::vector<float> f2(r.f32.size());
  std::vector<std::uint16_t> h2(r.u16.size());
  {
    ThreadCount t(1);
    ref::grouped_gemm_wgrad(op, offs, w.model, {w.out, r.f32, r.u16, r.bound});
  }
  {
    ThreadCount t(2);
    ref::grouped_gemm_wgrad(op, offs, w.model, {w.out, f2, h2, {}});
  }
  fp.fold(r.f32.data(), r.f32.size() * 4);
  fp.fold(r.u16.data(), r.u16.size() * 2);
  auto same_bytes = [](const auto& u, const auto& v) {
    return u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof u[0]) == 0;
  };
  if (!same_bytes(r.f32, f2) || !same_bytes(r.u16, h2))
    throw Violation("wgrad: 1 thread and 2 threads give different bits");
  return r;
}

// Element (n, k) of group g (rows r0 .. r0 + rows, block rows from rb0) against the oracle: an
// empty group gives C converted once (f32: C itself, bit for bit); `exact` rounds the exact value
// once (the sign of a zero included: +0 for an exact zero sum); every other model is within its
// bound.
void check_dw_element(const WgradCase& w, const WgradResult& res, std::int64_t g, std::int64_t rows,
                      std::int64_t r0, std::int64_t rb0, std::int64_t n, std::int64_t k) {
  const std::size_t i = std::size_t((g * w.N + n) * w.K + k);
  const std::uint32_t bits = out_bits(w, res.f32, res.u16, i);
  const double got = value_of(bits, w.out);
  const auto at = [&] {
    return "group " + std::to_string(g) + " (" + std::to_string(rows) + " rows) n " +
           std::to_string(n) + " k " + std::to_string(k) + " [" + to_string(w.model.model) + ", " +
           to_string(w.out) + "]";
  };
  if (rows == 0) {
    const bool same = w.out == OutDtype::f32
                          ? bits == std::bit_cast<std::uint32_t>(w.c[i])
                          : got == oracle_rounded(exact_dw(w, r0, 0, rb0, n, k, w.c[i]), w.out);
    if (!same) throw Violation("wgrad: an empty group's dW is not C converted at " + at());
    return;
  }
  const gen::ExactValue x = exact_dw(w, r0, rows, rb0, n, k, w.c[i]);
  const double want = oracle_rounded(x, w.out);
  const bool ok = w.model.model == AccumulationModel::exact
                      ? got == want && std::signbit(got) == std::signbit(want)
                      : within(got, x, res.bound[i]);
  if (ok) return;
  std::ostringstream os;
  os.precision(17);
  os << "wgrad: dW " << got << " vs exact " << gen::round_to_format(x, 53, -1022, 1023)
     << " (bound " << res.bound[i] << ") at " << at();
  throw Violation(os.str());
}

void check_wgrad(const WgradCase& w, Fingerprint& fp) {
  const WgradResult res = run_wgrad(w, fp);
  const std::int64_t blk = w.scaling == Scaling::mx ? 32 : 128;
  std::int64_t r0 = 0, rb0 = 0;
  for (std::int64_t g = 0; g < w.G; ++g) {
    const std::int64_t rows = w.gs.sizes[std::size_t(g)];
    for (std::int64_t n = 0; n < w.N; ++n)
      for (std::int64_t k = 0; k < w.K; ++k) check_dw_element(w, res, g, rows, r0, rb0, n, k);
    r0 += rows;
    rb0 += (rows + blk - 1) / blk;
  }
}

}  // namespace

void add_wgrad_suite(std::vector<Suite>& out) {
  // A sampled case's test strength joins its coverage classes (strength.h), as in the M-grouped
  // suites (suites_gemm.cpp).
  auto tags = [](const WgradCase& w) {
    std::vector<std::string> t = wgrad_tags(w);
    for (std::string& x : sampled_wgrad_strength_tags(w)) t.push_back(std::move(x));
    return t;
  };
  const CaseSuite<WgradCase> cs{draw_wgrad, check_wgrad, tags,
                                save_wgrad, load_wgrad,  wgrad_case_diff};
  out.push_back(make_suite<WgradCase>(
      {"gemm.wgrad",
       "K-grouped wgrad: empty group == C bitwise, others within the model's bound; threads",
       "cpu",
       2000,
       wgrad_classes(),
       {}},
      cs));
}

}  // namespace fp8ref::fuzz
