// Blackwell fuzz suites (docs/fuzz.md "The suites"): `blackwell.gemm` draws a grouped forward under
// a Blackwell model (blackwell_* / rtx_blackwell_*, every scaling it takes, FP8 / FP6 / FP4
// operands, row maps with rows of no group) and checks every element against the step chain of
// numerics/models/blackwell_chain.h called on that element's codes and scale codes, then the
// documented scalar epilogue RN(acc·RN(s_a·s_b)); 1 and 2 threads agree; every finite element lies
// within its bound of `exact` (verify --within-bound). The steps themselves are
// held to MMA-Sim by the golden vectors; this suite covers the GEMM around them (scale indexing,
// groups, re-encoding of the scales, short last steps).
#include <bit>
#include <cmath>
#include <random>

#include "campaign/suite.h"
#include "cases/enum_tokens.h"
#include "cases/gemm_case.h"
#include "numerics/models.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {
namespace {

using ref::Scaling;

// The one GEMM case (tools/cases/gemm_case.h) with B stored nk, split-K 1 and a row map drawn
// per row (group_of, any order, -1 for rows of no group); no group sizes.
using BwCase = cases::GemmCase;

std::int64_t blk(Scaling s) { return s == Scaling::nvfp4 || s == Scaling::mx16 ? 16 : 32; }
bool blocks(Scaling s) { return s == Scaling::mx || s == Scaling::nvfp4 || s == Scaling::mx16; }

std::uint8_t any_finite_code(Format f, std::mt19937_64& r) {
  for (;;) {
    const auto c = std::uint8_t(r() & ((1u << format_bits(f)) - 1));
    if (std::isfinite(decode_f64(f, c))) return c;
  }
}

float draw_scale(Scaling s, std::mt19937_64& r) {
  if (s == Scaling::mx || s == Scaling::mx16)
    return float(std::ldexp(1.0, int(r() % 61) - 30 + (r() % 8 == 0 ? 90 : 0)));
  if (s == Scaling::nvfp4) return float(decode_f64(Format::ue4m3, std::uint8_t(r() % 0x7F)));
  return float(std::ldexp(double(1 + r() % 255), int(r() % 24) - 16));
}

BwCase draw_bw() {
  const std::vector<Format> kElems = {Format::e4m3, Format::e5m2, Format::e3m2, Format::e2m3,
                                      Format::e2m1};
  BwCase c;
  c.model = {*rc::gen::elementOf(kBlackwellAccumulationModels), 1};
  const BlackwellKind k = blackwell_kind(c.model.model);
  const bool k64 = k == BlackwellKind::mxf4 || k == BlackwellKind::mxf4nvf4;
  c.scaling = k == BlackwellKind::f8f6f4
                  ? *rc::gen::element(Scaling::none, Scaling::tensorwise, Scaling::rowwise)
              : k == BlackwellKind::mxf4nvf4
                  ? *rc::gen::element(Scaling::mx, Scaling::nvfp4, Scaling::mx16)
                  : Scaling::mx;
  c.fa = k64 ? Format::e2m1 : *rc::gen::elementOf(kElems);
  c.fb = k64 ? Format::e2m1 : *rc::gen::elementOf(kElems);
  c.M = *rc::gen::inRange<std::int64_t>(1, 6);
  c.N = *rc::gen::inRange<std::int64_t>(1, 5);
  c.K = *rc::gen::inRange<std::int64_t>(1, 260);
  c.G = *rc::gen::inRange<std::int64_t>(1, 4);
  std::mt19937_64 r(*rc::gen::arbitrary<std::uint64_t>());
  c.a.resize(std::size_t(c.M * c.K)), c.b.resize(std::size_t(c.G * c.N * c.K));
  for (auto& x : c.a) x = r() % 5 == 0 ? 0 : any_finite_code(c.fa, r);
  for (auto& x : c.b) x = r() % 5 == 0 ? 0 : any_finite_code(c.fb, r);
  const std::int64_t na = cases::sa_count(c), nbb = cases::sb_count(c);
  if (c.scaling != Scaling::none) {
    for (std::int64_t i = 0; i < na; ++i) c.sa.push_back(draw_scale(c.scaling, r));
    for (std::int64_t i = 0; i < nbb; ++i) c.sb.push_back(draw_scale(c.scaling, r));
  }
  if (c.scaling == Scaling::nvfp4 && r() % 2) {
    c.ta.push_back(draw_scale(Scaling::tensorwise, r));
    for (std::int64_t g = 0; g < c.G; ++g) c.tb.push_back(draw_scale(Scaling::tensorwise, r));
  }
  c.group_of.resize(std::size_t(c.M));
  for (auto& g : c.group_of) g = std::int32_t(r() % std::uint64_t(c.G + 1)) - 1;
  return c;
}

std::vector<float> run_bw(const BwCase& c) {
  std::vector<float> y(std::size_t(c.M * c.N), 0.0f);
  ref::grouped_gemm_forward(c.operands(), c.group_of, c.model, ref::RowPolicy::zero,
                            {OutDtype::f32, y, {}, {}});
  return y;
}

std::uint8_t scale_code(Scaling s, float v) {
  return s == Scaling::nvfp4 ? detail::ue4m3_code_of(v) : detail::e8m0_code_of(v);
}

// One element by the chain functions on codes, then the scalar epilogue.
float element(const BwCase& c, std::int64_t m, std::int64_t n, std::int64_t g) {
  const std::uint8_t* a = c.a.data() + m * c.K;
  const std::uint8_t* b = c.b.data() + (g * c.N + n) * c.K;
  const BlackwellKind k = blackwell_kind(c.model.model);
  const std::int64_t nb = (c.K + blk(c.scaling) - 1) / blk(c.scaling);
  std::vector<std::uint8_t> xa, xb;
  if (blocks(c.scaling))
    for (std::int64_t j = 0; j < nb; ++j) {
      xa.push_back(scale_code(c.scaling, c.sa[std::size_t(m * nb + j)]));
      xb.push_back(scale_code(c.scaling, c.sb[std::size_t((g * c.N + n) * nb + j)]));
    }
  float acc = 0.0f, s1 = 1.0f, s2 = 1.0f;
  if (k == BlackwellKind::f8f6f4) {
    acc = blackwell_f8f6f4_chain(a, b, c.K, c.fa, c.fb, {0.0f, 0.0}).z;
    if (c.scaling == Scaling::tensorwise) s1 = c.sa[0], s2 = c.sb[std::size_t(g)];
    if (c.scaling == Scaling::rowwise)
      s1 = c.sa[std::size_t(m)], s2 = c.sb[std::size_t(g * c.N + n)];
  } else if (k == BlackwellKind::mxf8f6f4) {
    acc = blackwell_mxf8f6f4_chain(a, b, c.K, c.fa, c.fb, xa.data(), xb.data(), {0.0f, 0.0}).z;
  } else {
    const Format sf = c.scaling == Scaling::nvfp4 ? Format::ue4m3 : Format::e8m0;
    acc =
        blackwell_mxf4_chain(a, b, c.K, xa.data(), xb.data(), sf, int(blk(c.scaling)), {0.0f, 0.0})
            .z;
    if (!c.ta.empty()) s1 = c.ta[0], s2 = c.tb[std::size_t(g)];
  }
  return s1 == 1.0f && s2 == 1.0f ? acc : acc * (s1 * s2);
}

// Every finite element within the model's bound of `exact` on the same operands (the rule of
// verify --within-bound, docs/cli.md): |y - exact| <= bound + 2^-24·|exact| + 2^-150, exact in
// f32. Neither result is folded into the fingerprint.
void check_bw_bound(const BwCase& c) {
  const std::size_t n = std::size_t(c.M * c.N);
  std::vector<float> y(n), z(n);
  std::vector<double> bound(n);
  ref::grouped_gemm_forward(c.operands(), c.group_of, c.model, ref::RowPolicy::zero,
                            {OutDtype::f32, y, {}, bound});
  ref::grouped_gemm_forward(c.operands(), c.group_of, {AccumulationModel::exact, 1},
                            ref::RowPolicy::zero, {OutDtype::f32, z, {}, {}});
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(y[i]) || !std::isfinite(z[i])) continue;
    const double ex = z[i];
    if (std::fabs(double(y[i]) - ex) > bound[i] + std::ldexp(std::fabs(ex), -24) + 0x1p-150)
      throw Violation(std::string(to_string(c.model.model)) + " " + ref::to_string(c.scaling) +
                      " element " + std::to_string(i) + ": " + std::to_string(y[i]) +
                      " is further than its bound " + std::to_string(bound[i]) + " from exact " +
                      std::to_string(ex));
  }
}

void check_bw(const BwCase& c, Fingerprint& fp) {
  std::vector<float> y;
  {
    ThreadCount one(1);
    y = run_bw(c);
  }
  fp.fold(y.data(), y.size() * 4);
  for (std::int64_t m = 0; m < c.M; ++m) {
    const std::int32_t g = c.group_of[std::size_t(m)];
    for (std::int64_t n = 0; n < c.N; ++n) {
      const float got = y[std::size_t(m * c.N + n)];
      const float want = g < 0 ? 0.0f : element(c, m, n, g);
      if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
        throw Violation(std::string(to_string(c.model.model)) + " " + ref::to_string(c.scaling) +
                        " element (" + std::to_string(m) + ", " + std::to_string(n) + "): " +
                        std::to_string(got) + ", the step chain gives " + std::to_string(want));
    }
  }
  ThreadCount two(2);
  if (!same_bits(run_bw(c), y)) throw Violation("1 and 2 threads differ");
  check_bw_bound(c);
}

TensorFile save_bw(const BwCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"a", u8_tensor(c.a, {c.M, c.K})});
  tf.tensors.push_back({"b", u8_tensor(c.b, {c.G, c.N, c.K})});
  tf.tensors.push_back({"sa", f32_tensor(c.sa, {std::int64_t(c.sa.size())})});
  tf.tensors.push_back({"sb", f32_tensor(c.sb, {std::int64_t(c.sb.size())})});
  tf.tensors.push_back({"ta", f32_tensor(c.ta, {std::int64_t(c.ta.size())})});
  tf.tensors.push_back({"tb", f32_tensor(c.tb, {std::int64_t(c.tb.size())})});
  tf.tensors.push_back({"row_map", i32_tensor(c.group_of)});
  cases::put_meta(tf, "model", to_string(c.model.model));
  cases::put_meta(tf, "scaling", ref::to_string(c.scaling));
  cases::put_meta(tf, "fa", std::string(to_string(c.fa)));
  cases::put_meta(tf, "fb", std::string(to_string(c.fb)));
  for (const auto& [k, v] : {std::pair{"M", c.M}, {"N", c.N}, {"K", c.K}, {"G", c.G}})
    cases::put_meta(tf, k, std::to_string(v));
  return tf;
}

BwCase load_bw(const TensorFile& tf) {
  BwCase c;
  const auto m = accumulation_model_from_string(get_meta(tf, "model"));
  const auto s = ref::parse_scaling(get_meta(tf, "scaling"));
  if (!m || !is_blackwell_model(*m) || !s)
    throw std::invalid_argument("case file: not a Blackwell model and scaling");
  c.model = {*m, 1}, c.scaling = *s;
  c.fa = cases::parse_token("format", get_meta(tf, "fa"), kAllFormats);
  c.fb = cases::parse_token("format", get_meta(tf, "fb"), kAllFormats);
  c.M = get_meta_int(tf, "M"), c.N = get_meta_int(tf, "N"), c.K = get_meta_int(tf, "K");
  c.G = get_meta_int(tf, "G");
  c.a = get_u8(tf, "a"), c.b = get_u8(tf, "b");
  c.sa = get_f32(tf, "sa"), c.sb = get_f32(tf, "sb"), c.ta = get_f32(tf, "ta");
  c.tb = get_f32(tf, "tb"), c.group_of = get_i32(tf, "row_map");
  return c;
}

std::string bw_diff(const BwCase& x, const BwCase& y) {
  return first_difference({{"model", x.model.model == y.model.model},
                           {"scaling", x.scaling == y.scaling},
                           {"formats", x.fa == y.fa && x.fb == y.fb},
                           {"shape", x.M == y.M && x.N == y.N && x.K == y.K && x.G == y.G},
                           {"operands", x.a == y.a && x.b == y.b},
                           {"scales", same_bits(x.sa, y.sa) && same_bits(x.sb, y.sb)},
                           {"tensor scales", same_bits(x.ta, y.ta) && same_bits(x.tb, y.tb)},
                           {"row map", x.group_of == y.group_of}});
}

}  // namespace

void add_blackwell_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (AccumulationModel m : kBlackwellAccumulationModels)
    classes.push_back(std::string("model:") + to_string(m));
  for (const char* s : {"none", "tensorwise", "rowwise", "mx", "nvfp4"})
    classes.push_back(std::string("scaling:") + s);
  out.push_back(make_suite<BwCase>(
      {"blackwell.gemm",
       "Blackwell models in the grouped forward == the step chain per element; 1 and 2 threads",
       "cpu",
       400,
       classes,
       {}},
      {draw_bw, check_bw,
       [](const BwCase& c) {
         return std::vector<std::string>{std::string("model:") + to_string(c.model.model),
                                         std::string("scaling:") + ref::to_string(c.scaling)};
       },
       save_bw, load_bw, bw_diff}));
}

}  // namespace fp8ref::fuzz
