// The M-grouped GEMM case of the fuzz suites (gemm_case.h): draw, tags, case file and the
// fixed-point oracle of one output element.
#include "campaign/gemm_case.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "campaign/gen/choices.h"

namespace fp8ref::fuzz {

namespace {

using gen::ExactValue;
using ref::Scaling;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

Desc desc_from(const std::string& s) {
  for (Desc d : {Desc::offs, Desc::aligned, Desc::masked})
    if (s == to_string(d)) return d;
  throw std::invalid_argument("case file: unknown descriptor '" + s + "'");
}

ref::BLayout b_layout_from(const std::string& s) {
  if (s == "nk") return ref::BLayout::nk;
  if (s == "kn") return ref::BLayout::kn;
  throw std::invalid_argument("case file: unknown B layout '" + s + "'");
}

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

}  // namespace

OutDtype out_from(const std::string& s) {
  if (const auto d = parse_out_dtype(s)) return *d;
  throw std::invalid_argument("case file: unknown output dtype '" + s + "'");
}

ref::Scaling scaling_from(const std::string& s) {
  if (const auto x = ref::parse_scaling(s)) return *x;
  throw std::invalid_argument("case file: unknown scaling '" + s + "'");
}

Format format_from_name(const std::string& s) {
  if (const auto f = parse_format(s); f && *f != Format::e8m0) return *f;
  throw std::invalid_argument("case file: unknown element format '" + s + "'");
}

std::vector<std::int32_t> rows_of(const gen::GroupSizes& gs, Desc d, std::int64_t m_max,
                                  std::int64_t& M) {
  std::vector<std::int32_t> map;
  const auto G = gs.groups();
  if (d == Desc::masked) {
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t i = 0; i < m_max; ++i)
        map.push_back(i < gs.sizes[std::size_t(g)] ? std::int32_t(g) : -1);
  } else {
    for (std::int64_t g = 0; g < G; ++g) {
      if (d == Desc::aligned)
        while (std::int64_t(map.size()) % gs.align) map.push_back(-1);
      for (std::int64_t i = 0; i < gs.sizes[std::size_t(g)]; ++i) map.push_back(std::int32_t(g));
    }
    for (std::int64_t t = 0; t < gs.tail; ++t) map.push_back(-1);
  }
  M = std::int64_t(map.size());
  return map;
}

std::int64_t sa_count(const GemmCase& c) {
  switch (c.scaling) {
    case Scaling::none: return 0;
    case Scaling::tensorwise: return 1;
    case Scaling::rowwise: return c.M;
    case Scaling::blockwise: return c.M * ceil_div(c.K, 128);
    case Scaling::mx: return c.M * ceil_div(c.K, 32);
    case Scaling::nvfp4: return c.M * ceil_div(c.K, 16);
  }
  return 0;
}
std::int64_t sb_count(const GemmCase& c) {
  switch (c.scaling) {
    case Scaling::none: return 0;
    case Scaling::tensorwise: return c.G;
    case Scaling::rowwise: return c.G * c.N;
    case Scaling::blockwise: return c.G * ceil_div(c.N, 128) * ceil_div(c.K, 128);
    case Scaling::mx: return c.G * c.N * ceil_div(c.K, 32);
    case Scaling::nvfp4: return c.G * c.N * ceil_div(c.K, 16);
  }
  return 0;
}

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
  c.out = o.allow_f16_out ? *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16)
                          : *rc::gen::element(OutDtype::f32, OutDtype::bf16);
  c.model =
      o.exact_only ? ref::ModelChoice{AccumulationModel::exact, 1} : *gen::model_for(c.scaling);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  std::mt19937_64 rng(seed);
  c.a = gen::fill_codes(c.fa, c.va, c.M * c.K, rng());
  c.b = gen::fill_codes(c.fb, c.vb, c.G * c.N * c.K, rng());
  const bool pow2 = c.scaling == Scaling::mx;
  c.sa.resize(std::size_t(sa_count(c)));
  c.sb.resize(std::size_t(sb_count(c)));
  for (auto& s : c.sa) s = gen::draw_scale(rng(), pow2);
  for (auto& s : c.sb) s = gen::draw_scale(rng(), pow2);
  return c;
}

std::vector<std::string> gemm_tags(const GemmCase& c) {
  std::vector<std::string> t = gen::size_tags(c.gs);
  t.push_back(std::string("desc:") + to_string(c.desc));
  t.push_back(std::string("scaling:") + ref::to_string(c.scaling));
  t.push_back(std::string("values:") + gen::to_string(c.va));
  t.push_back(std::string("values_b:") + gen::to_string(c.vb));
  t.push_back("formats:" + std::string(to_string(c.fa)) + "x" + std::string(to_string(c.fb)));
  t.push_back(std::string("b_layout:") + (c.b_layout == ref::BLayout::nk ? "nk" : "kn"));
  t.push_back(std::string("out:") + to_string(c.out));
  if (c.moe_shape) t.push_back("shape:moe");
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
  if (o.exact_only) return c;
  for (AccumulationModel m : kAllAccumulationModels)
    c.push_back(std::string("model:") + to_string(m));
  c.push_back("split_k:>1");
  c.push_back("split_blocks:>0");
  for (const char* e : {"scale_product", "b_then_a", "a_then_b"})
    c.push_back(std::string("epilogue:") + e);
  return c;
}

TensorFile save_gemm(const GemmCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"a", u8_tensor(c.a, {c.M, c.K})});
  tf.tensors.push_back({"b", u8_tensor(c.b, c.b_layout == ref::BLayout::nk
                                                ? std::vector<std::int64_t>{c.G, c.N, c.K}
                                                : std::vector<std::int64_t>{c.G, c.K, c.N})});
  tf.tensors.push_back({"scale_a", f32_tensor(c.sa, {std::int64_t(c.sa.size())})});
  tf.tensors.push_back({"scale_b", f32_tensor(c.sb, {std::int64_t(c.sb.size())})});
  tf.tensors.push_back({"row_group", i32_tensor(c.group_of)});
  save_group_sizes(c.gs, tf);
  auto& m = tf.metadata;
  m["desc"] = to_string(c.desc);
  m["m_max"] = std::to_string(c.m_max);
  m["N"] = std::to_string(c.N);
  m["K"] = std::to_string(c.K);
  m["shape"] = c.moe_shape ? "moe" : "small";
  m["format_a"] = to_string(c.fa);
  m["format_b"] = to_string(c.fb);
  m["values_a"] = gen::to_string(c.va);
  m["values_b"] = gen::to_string(c.vb);
  m["scaling"] = ref::to_string(c.scaling);
  m["b_layout"] = c.b_layout == ref::BLayout::nk ? "nk" : "kn";
  m["out"] = to_string(c.out);
  save_model(c.model, m);
  return tf;
}

void save_model(const ref::ModelChoice& mc, std::map<std::string, std::string>& m) {
  m["model"] = to_string(mc.model);
  m["split_k"] = std::to_string(mc.split_k);
  m["split_blocks"] = std::to_string(mc.split_blocks);
  m["epilogue"] = to_string(mc.epilogue);
}

ref::ModelChoice load_model(const TensorFile& tf) {
  const auto model = accumulation_model_from_string(get_meta(tf, "model"));
  if (!model)
    throw std::invalid_argument("case file: unknown model '" + get_meta(tf, "model") + "'");
  ref::ModelChoice m{*model, int(get_meta_int(tf, "split_k")),
                     tf.metadata.count("split_blocks") ? get_meta_int(tf, "split_blocks") : 0};
  if (tf.metadata.count("epilogue")) {
    const auto ep = epilogue_from_string(get_meta(tf, "epilogue"));
    if (!ep)
      throw std::invalid_argument("case file: unknown epilogue '" + get_meta(tf, "epilogue") + "'");
    m.epilogue = *ep;
  }
  return m;
}

GemmCase load_gemm(const TensorFile& tf) {
  GemmCase c;
  c.gs = load_group_sizes(tf);
  c.desc = desc_from(get_meta(tf, "desc"));
  c.m_max = get_meta_int(tf, "m_max");
  c.N = get_meta_int(tf, "N"), c.K = get_meta_int(tf, "K");
  if (c.gs.sizes.empty() || c.N < 0 || c.K < 0 || c.m_max < 0)
    throw std::invalid_argument("case file: bad sizes / extents");
  for (auto s : c.gs.sizes)
    if (c.desc == Desc::masked && s > c.m_max)
      throw std::invalid_argument("case file: bad group size");
  c.G = c.gs.groups();
  c.group_of = rows_of(c.gs, c.desc, c.m_max, c.M);
  c.moe_shape = tf.metadata.count("shape") && get_meta(tf, "shape") == "moe";
  c.fa = format_from_name(get_meta(tf, "format_a"));
  c.fb = format_from_name(get_meta(tf, "format_b"));
  if (!gen::value_class_from_string(get_meta(tf, "values_a"), c.va) ||
      !gen::value_class_from_string(get_meta(tf, "values_b"), c.vb))
    throw std::invalid_argument("case file: unknown value class");
  c.scaling = scaling_from(get_meta(tf, "scaling"));
  c.b_layout = b_layout_from(get_meta(tf, "b_layout"));
  c.out = out_from(get_meta(tf, "out"));
  c.model = load_model(tf);
  c.a = get_u8(tf, "a");
  c.b = get_u8(tf, "b");
  c.sa = get_f32(tf, "scale_a");
  c.sb = get_f32(tf, "scale_b");
  if (std::int64_t(c.a.size()) != c.M * c.K || std::int64_t(c.b.size()) != c.G * c.N * c.K ||
      std::int64_t(c.sa.size()) != sa_count(c) || std::int64_t(c.sb.size()) != sb_count(c))
    throw std::invalid_argument("case file: tensor sizes do not match the case's shape");
  return c;
}

std::string gemm_case_diff(const GemmCase& x, const GemmCase& y) {
  return first_difference({
      {"group sizes", x.gs == y.gs},
      {"descriptor", x.desc == y.desc && x.m_max == y.m_max},
      {"extents", x.M == y.M && x.N == y.N && x.K == y.K && x.G == y.G},
      {"shape class", x.moe_shape == y.moe_shape},
      {"formats", x.fa == y.fa && x.fb == y.fb},
      {"scaling", x.scaling == y.scaling},
      {"B layout", x.b_layout == y.b_layout},
      {"value classes", x.va == y.va && x.vb == y.vb},
      {"output dtype", x.out == y.out},
      {"model", x.model.model == y.model.model && x.model.split_k == y.model.split_k &&
                    x.model.split_blocks == y.model.split_blocks},
      {"epilogue", x.model.epilogue == y.model.epilogue},
      {"operands", x.a == y.a && x.b == y.b},
      {"scales", same_bits(x.sa, y.sa) && same_bits(x.sb, y.sb)},
      {"row map", x.group_of == y.group_of},
  });
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
    case Scaling::nvfp4: {  // block scales only (the campaign writes no tensor scales)
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
