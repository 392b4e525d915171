// Grouped-GEMM fuzz suites (issue 6 item 2): the reference forward against the independent
// fixed-point oracle (proptests/gen/fixed_oracle.h), every accumulation model within its bound
// of the exact value, padding poison, thread-count / repetition / empty-group invariance, and
// K-grouped wgrad. Cases come from the shared generators (proptests/gen/): tokens-per-group
// distributions, three group descriptors, value classes, scalings, B layouts and models.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "proptests/campaign/suite.h"
#include "proptests/gen/choices.h"
#include "proptests/gen/fixed_oracle.h"
#include "proptests/gen/group_sizes.h"
#include "proptests/gen/values.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

namespace {

using gen::ExactValue;
using ref::Scaling;

// How the implementation is told which rows belong to which group.
enum class Desc : std::uint8_t { offs, aligned, masked };
constexpr const char* to_string(Desc d) {
  return d == Desc::offs ? "offs" : d == Desc::aligned ? "aligned" : "masked";
}
Desc desc_from(const std::string& s) {
  for (Desc d : {Desc::offs, Desc::aligned, Desc::masked})
    if (s == to_string(d)) return d;
  throw std::invalid_argument("case file: unknown descriptor '" + s + "'");
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct GemmCase {
  gen::GroupSizes gs;
  Desc desc = Desc::offs;
  std::int64_t M = 0, N = 0, K = 0, G = 0, m_max = 0;
  Format fa = Format::e4m3, fb = Format::e4m3;
  Scaling scaling = Scaling::none;
  ref::BLayout b_layout = ref::BLayout::nk;
  gen::ValueClass va = gen::ValueClass::normal, vb = gen::ValueClass::normal;
  OutDtype out = OutDtype::f32;
  ref::ModelChoice model{AccumulationModel::exact, 1};
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb;
  std::vector<std::int32_t> group_of;  // oracle's row -> group (-1 padding), built here
};

// Row -> group of each descriptor, computed from the sizes without reference/group_desc.
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
  }
  return 0;
}

struct DrawOptions {
  bool allow_nan_inf = true;
  bool exact_only = false;
  bool need_padding = false;
};

GemmCase draw_gemm(DrawOptions o) {
  GemmCase c;
  gen::SizeLimits lim;
  lim.max_total = 160;
  c.gs = *gen::group_sizes(lim);
  c.desc = *rc::gen::element(Desc::offs, Desc::aligned, Desc::masked);
  c.G = c.gs.groups();
  if (c.desc == Desc::masked) {
    const std::int64_t biggest = *std::max_element(c.gs.sizes.begin(), c.gs.sizes.end());
    c.m_max = biggest + *rc::gen::inRange<std::int64_t>(0, 3);
    if (c.m_max * c.G > 512) c.m_max = biggest;  // cost control; sizes always fit
  }
  if (o.need_padding && c.desc != Desc::masked && c.gs.tail == 0) c.gs.tail = 1;
  c.group_of = rows_of(c.gs, c.desc, c.m_max, c.M);
  c.K = *gen::extent_k();
  c.N = *gen::extent_n();
  c.fa = *gen::element_format();
  c.fb = *gen::element_format();
  c.va = *gen::value_class(o.allow_nan_inf);
  c.vb = *gen::value_class(o.allow_nan_inf);
  c.scaling = *gen::scaling();
  c.b_layout = *rc::gen::element(ref::BLayout::nk, ref::BLayout::kn);
  c.out = *rc::gen::element(OutDtype::f32, OutDtype::bf16);
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
  t.push_back(std::string("model:") + to_string(c.model.model));
  if (c.model.split_k > 1) t.push_back("split_k:>1");
  if (c.model.split_blocks > 0) t.push_back("split_blocks:>0");
  if (c.model.epilogue != Epilogue::model)
    t.push_back(std::string("epilogue:") + to_string(c.model.epilogue));
  return t;
}

TensorFile save_gemm(const GemmCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"a", u8_tensor(c.a, {c.M, c.K})});
  tf.tensors.push_back({"b", u8_tensor(c.b, c.b_layout == ref::BLayout::nk
                                                ? std::vector<std::int64_t>{c.G, c.N, c.K}
                                                : std::vector<std::int64_t>{c.G, c.K, c.N})});
  tf.tensors.push_back({"scale_a", f32_tensor(c.sa, {std::int64_t(c.sa.size())})});
  tf.tensors.push_back({"scale_b", f32_tensor(c.sb, {std::int64_t(c.sb.size())})});
  tf.tensors.push_back({"group_sizes", i64_tensor(c.gs.sizes)});
  tf.tensors.push_back({"row_group", i32_tensor(c.group_of)});
  auto& m = tf.metadata;
  m["dist"] = to_string(c.gs.dist);
  m["align"] = std::to_string(c.gs.align);
  m["tail"] = std::to_string(c.gs.tail);
  m["desc"] = to_string(c.desc);
  m["m_max"] = std::to_string(c.m_max);
  m["N"] = std::to_string(c.N);
  m["K"] = std::to_string(c.K);
  m["format_a"] = to_string(c.fa);
  m["format_b"] = to_string(c.fb);
  m["values_a"] = gen::to_string(c.va);
  m["values_b"] = gen::to_string(c.vb);
  m["scaling"] = ref::to_string(c.scaling);
  m["b_layout"] = c.b_layout == ref::BLayout::nk ? "nk" : "kn";
  m["out"] = c.out == OutDtype::f32 ? "f32" : "bf16";
  m["model"] = to_string(c.model.model);
  m["split_k"] = std::to_string(c.model.split_k);
  m["split_blocks"] = std::to_string(c.model.split_blocks);
  m["epilogue"] = to_string(c.model.epilogue);
  return tf;
}

Format format_from(const std::string& s) {
  if (s == "e4m3") return Format::e4m3;
  if (s == "e5m2") return Format::e5m2;
  throw std::invalid_argument("case file: unknown element format '" + s + "'");
}

GemmCase load_gemm(const TensorFile& tf) {
  GemmCase c;
  if (!gen::size_dist_from_string(get_meta(tf, "dist"), c.gs.dist))
    throw std::invalid_argument("case file: unknown dist '" + get_meta(tf, "dist") + "'");
  c.gs.align = get_meta_int(tf, "align");
  c.gs.tail = get_meta_int(tf, "tail");
  c.gs.sizes = get_i64(tf, "group_sizes");
  c.desc = desc_from(get_meta(tf, "desc"));
  c.m_max = get_meta_int(tf, "m_max");
  c.N = get_meta_int(tf, "N"), c.K = get_meta_int(tf, "K");
  if (c.gs.sizes.empty() || c.gs.align < 1 || c.gs.tail < 0 || c.N < 0 || c.K < 0 || c.m_max < 0)
    throw std::invalid_argument("case file: bad sizes / extents");
  for (auto s : c.gs.sizes)
    if (s < 0 || (c.desc == Desc::masked && s > c.m_max))
      throw std::invalid_argument("case file: bad group size");
  c.G = c.gs.groups();
  c.group_of = rows_of(c.gs, c.desc, c.m_max, c.M);
  c.fa = format_from(get_meta(tf, "format_a"));
  c.fb = format_from(get_meta(tf, "format_b"));
  gen::value_class_from_string(get_meta(tf, "values_a"), c.va);
  gen::value_class_from_string(get_meta(tf, "values_b"), c.vb);
  const std::string sc = get_meta(tf, "scaling");
  bool found = false;
  for (Scaling s :
       {Scaling::none, Scaling::tensorwise, Scaling::rowwise, Scaling::blockwise, Scaling::mx})
    if (sc == ref::to_string(s)) c.scaling = s, found = true;
  if (!found) throw std::invalid_argument("case file: unknown scaling '" + sc + "'");
  c.b_layout = get_meta(tf, "b_layout") == "kn" ? ref::BLayout::kn : ref::BLayout::nk;
  c.out = get_meta(tf, "out") == "bf16" ? OutDtype::bf16 : OutDtype::f32;
  const auto model = accumulation_model_from_string(get_meta(tf, "model"));
  if (!model)
    throw std::invalid_argument("case file: unknown model '" + get_meta(tf, "model") + "'");
  c.model = {*model, int(get_meta_int(tf, "split_k")),
             tf.metadata.count("split_blocks") ? get_meta_int(tf, "split_blocks") : 0};
  if (tf.metadata.count("epilogue")) {
    const auto ep = epilogue_from_string(get_meta(tf, "epilogue"));
    if (!ep)
      throw std::invalid_argument("case file: unknown epilogue '" + get_meta(tf, "epilogue") + "'");
    c.model.epilogue = *ep;
  }
  c.a = get_u8(tf, "a");
  c.b = get_u8(tf, "b");
  c.sa = get_f32(tf, "scale_a");
  c.sb = get_f32(tf, "scale_b");
  if (std::int64_t(c.a.size()) != c.M * c.K || std::int64_t(c.b.size()) != c.G * c.N * c.K ||
      std::int64_t(c.sa.size()) != sa_count(c) || std::int64_t(c.sb.size()) != sb_count(c))
    throw std::invalid_argument("case file: tensor sizes do not match the case's shape");
  return c;
}

// --- the implementation under test: the reference, through the case's descriptor ------------
struct Result {
  std::vector<float> f32;
  std::vector<std::uint16_t> u16;
  std::vector<double> bound;
  std::uint32_t bits(std::size_t i, OutDtype d) const {
    return d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f32[i]) : u16[i];
  }
};

Result run_forward(const GemmCase& c, ref::RowPolicy pol, bool with_bound, std::uint32_t fill = 0) {
  Result r;
  const std::size_t n = std::size_t(c.M * c.N);
  if (c.out == OutDtype::f32)
    r.f32.assign(n, std::bit_cast<float>(fill));
  else
    r.u16.assign(n, std::uint16_t(fill));
  if (with_bound) r.bound.assign(n, 0.0);
  const ref::GroupedGemmOperands op{c.M, c.N, c.K,        c.G,       c.fa, c.fb,
                                    c.a, c.b, c.b_layout, c.scaling, c.sa, c.sb};
  const ref::GemmOutput y{c.out, r.f32, r.u16, r.bound};
  switch (c.desc) {
    case Desc::offs: {
      std::vector<std::int64_t> offs;
      std::int64_t end = 0;
      for (auto s : c.gs.sizes) offs.push_back(end += s);
      if (planted() == "offs_off_by_one")  // the runner's self-test: a classic offset bug
        for (std::size_t g = 0; g < offs.size(); ++g)
          if (c.gs.sizes[g] > 0) {
            offs[g] -= 1;
            break;
          }
      ref::grouped_gemm_forward_offs(op, offs, c.model, pol, y);
      break;
    }
    case Desc::aligned: {
      const ref::AlignedLayout lay = ref::aligned_layout_from_sizes(c.gs.sizes, c.gs.align);
      ref::grouped_gemm_forward(op, ref::row_map_from_aligned(lay, c.M), c.model, pol, y);
      break;
    }
    case Desc::masked:
      ref::grouped_gemm_forward(op, ref::row_map_from_masked(c.gs.sizes, c.m_max), c.model, pol, y);
      break;
  }
  if (c.out == OutDtype::f32)
    fold_result(r.f32.data(), r.f32.size() * 4);
  else
    fold_result(r.u16.data(), r.u16.size() * 2);
  return r;
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
  }
  return {};
}

double value_of(std::uint32_t bits, OutDtype d) {
  return d == OutDtype::f32 ? double(std::bit_cast<float>(bits))
                            : double(std::bit_cast<float>(bits << 16));
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
     << to_string(c.model.model) << " split " << c.model.split_k << ", "
     << (c.out == OutDtype::f32 ? "f32" : "bf16") << "]";
  return os.str();
}

// Columns checked against the oracle in a row: all of them for N <= 16, else 8 spread ones
// (every row is checked, so a row in the wrong group is always seen).
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

// |y - x| <= bound, exactly (y, bound finite doubles).
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

void check_forward_exact(const GemmCase& c) {
  const Result y = run_forward(c, ref::RowPolicy::zero, false);
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] < 0) {
      for (std::int64_t n = 0; n < c.N; ++n)
        if (const auto got = y.bits(std::size_t(r * c.N + n), c.out); got != 0)
          throw Violation("padding row not +0 under RowPolicy::zero: " + hex32(got) + " at " +
                          where(c, r, n));
      continue;
    }
    for (std::int64_t n : oracle_columns(c.N, r)) {
      const ExactValue x = oracle(c, r, n);
      const double want = c.out == OutDtype::f32 ? gen::round_f32(x) : gen::round_bf16(x);
      const std::uint32_t got = y.bits(std::size_t(r * c.N + n), c.out);
      const double gv = value_of(got, c.out);
      const bool ok = std::isnan(want) ? std::isnan(gv) : (gv == want && (want != 0 || true));
      if (!ok) {
        std::ostringstream os;
        os.precision(17);
        os << "exact model: got " << hex32(got) << " = " << gv << ", oracle " << want << " at "
           << where(c, r, n);
        throw Violation(os.str());
      }
    }
  }
}

void check_models_bound(const GemmCase& c) {
  const Result y = run_forward(c, ref::RowPolicy::zero, true);
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] < 0) continue;
    for (std::int64_t n : oracle_columns(c.N, r)) {
      const std::size_t i = std::size_t(r * c.N + n);
      const ExactValue x = oracle(c, r, n);
      const double gv = value_of(y.bits(i, c.out), c.out);
      const double bound = y.bound[i];
      bool ok = std::isfinite(gv) && std::isfinite(bound) && bound >= 0 && within(gv, x, bound);
      if (!ok) {
        std::ostringstream os;
        os.precision(17);
        os << to_string(c.model.model) << ": |y - exact| > bound: y " << gv << ", exact "
           << gen::round_to_format(x, 53, -1022, 1023) << ", bound " << bound << " at "
           << where(c, r, n);
        throw Violation(os.str());
      }
    }
  }
}

// Padding rows of A and their scales, and the B planes / scales of empty groups, hold poison;
// valid rows must keep their bits, and rows of no group stay unwritten under RowPolicy::untouched.
void check_padding_poison(const GemmCase& c) {
  const std::uint32_t fill1 = c.out == OutDtype::f32 ? 0x7fc01234u : 0x7fc1u;
  const std::uint32_t fill2 = c.out == OutDtype::f32 ? 0xff800000u : 0xff80u;
  const Result y1 = run_forward(c, ref::RowPolicy::untouched, false, fill1);
  GemmCase p = c;
  std::mt19937_64 rng(std::uint64_t(c.M * 1000003 + c.N * 131 + c.K));
  const std::uint8_t poison_codes[] = {0x7F, 0xFF, 0x7E, 0xFE, 0x7C, 0xFC, 0x00, 0x80};
  const float poison_scales[] = {NAN, INFINITY, -INFINITY, 3.0e38f, -1.0f, 0.0f};
  const std::int64_t sa_row = c.M ? sa_count(c) / c.M : 0;
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] >= 0) continue;
    for (std::int64_t k = 0; k < c.K; ++k) p.a[std::size_t(r * c.K + k)] = poison_codes[rng() % 8];
    if (c.scaling == Scaling::rowwise || c.scaling == Scaling::blockwise ||
        c.scaling == Scaling::mx)
      for (std::int64_t j = 0; j < sa_row; ++j)
        p.sa[std::size_t(r * sa_row + j)] = poison_scales[rng() % 6];
  }
  const std::int64_t sb_group = c.G ? sb_count(c) / c.G : 0;
  for (std::int64_t g = 0; g < c.G; ++g) {
    if (c.gs.sizes[std::size_t(g)] != 0) continue;
    for (std::int64_t i = 0; i < c.N * c.K; ++i)
      p.b[std::size_t(g * c.N * c.K + i)] = poison_codes[rng() % 8];
    for (std::int64_t j = 0; j < sb_group; ++j)
      p.sb[std::size_t(g * sb_group + j)] = poison_scales[rng() % 6];
  }
  const Result y2 = run_forward(p, ref::RowPolicy::untouched, false, fill2);
  for (std::int64_t r = 0; r < c.M; ++r)
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t i = std::size_t(r * c.N + n);
      const bool pad = c.group_of[std::size_t(r)] < 0;
      if (pad && (y1.bits(i, c.out) != fill1 || y2.bits(i, c.out) != fill2))
        throw Violation("a row of no group was written under RowPolicy::untouched at " +
                        where(c, r, n));
      if (!pad && y1.bits(i, c.out) != y2.bits(i, c.out))
        throw Violation("valid row changed when padding held poison: " + hex32(y1.bits(i, c.out)) +
                        " -> " + hex32(y2.bits(i, c.out)) + " at " + where(c, r, n));
    }
}

struct ThreadCount {
  int saved;
  explicit ThreadCount(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

// Same bits with 1 and 2 threads, on a repeated run, and with empty groups inserted (their B
// planes and scales garbage).
void check_invariance(const GemmCase& c) {
  Result base;
  {
    ThreadCount t(1);
    base = run_forward(c, ref::RowPolicy::zero, false);
  }
  auto compare = [&](const Result& other, const GemmCase& oc,
                     const std::vector<std::int64_t>& row_to_base, const char* what) {
    for (std::int64_t r = 0; r < oc.M; ++r) {
      const std::int64_t br = row_to_base[std::size_t(r)];
      if (br < 0) continue;
      for (std::int64_t n = 0; n < c.N; ++n)
        if (other.bits(std::size_t(r * c.N + n), c.out) !=
            base.bits(std::size_t(br * c.N + n), c.out))
          throw Violation(std::string(what) + ": " +
                          hex32(base.bits(std::size_t(br * c.N + n), c.out)) + " vs " +
                          hex32(other.bits(std::size_t(r * c.N + n), c.out)) + " at " +
                          where(c, br, n));
    }
  };
  std::vector<std::int64_t> identity(std::size_t(c.M));
  for (std::int64_t r = 0; r < c.M; ++r)
    identity[std::size_t(r)] = c.group_of[std::size_t(r)] >= 0 ? r : -1;
  {
    ThreadCount t(2);
    compare(run_forward(c, ref::RowPolicy::zero, false), c, identity, "1 thread vs 2 threads");
    compare(run_forward(c, ref::RowPolicy::zero, false), c, identity, "repeated run");
  }
  // Insert an empty group at a position drawn from the case (offs / aligned / masked alike).
  GemmCase e = c;
  const std::int64_t at =
      std::int64_t(std::uint64_t(c.M * 31 + c.N + c.K) % std::uint64_t(c.G + 1));
  e.G = c.G + 1;
  e.gs.sizes.insert(e.gs.sizes.begin() + at, 0);
  const std::int64_t bplane = c.N * c.K, sbg = c.G ? sb_count(c) / c.G : 0;
  e.b.insert(e.b.begin() + at * bplane, std::size_t(bplane), std::uint8_t(0x7F));
  e.sb.insert(e.sb.begin() + at * sbg, std::size_t(sbg), NAN);
  e.group_of = rows_of(e.gs, e.desc, e.m_max, e.M);
  e.sa.clear();
  // Rows map 1:1 between the layouts (the new group takes no rows, except masked: m_max rows).
  std::vector<std::int64_t> map_to_base(std::size_t(e.M), -1);
  std::vector<std::vector<std::int64_t>> rows_c(std::size_t(c.G));
  for (std::int64_t r = 0; r < c.M; ++r)
    if (c.group_of[std::size_t(r)] >= 0)
      rows_c[std::size_t(c.group_of[std::size_t(r)])].push_back(r);
  std::vector<std::size_t> seen(std::size_t(e.G), 0);
  std::vector<std::int64_t> base_row_of_e(std::size_t(e.M), -1);
  for (std::int64_t r = 0; r < e.M; ++r) {
    const std::int32_t g = e.group_of[std::size_t(r)];
    if (g < 0 || g == at) continue;
    const std::int64_t gc = g > at ? g - 1 : g;
    map_to_base[std::size_t(r)] = rows_c[std::size_t(gc)][seen[std::size_t(g)]++];
  }
  // A's rows (and their scales) follow the row mapping; padding rows get poison.
  const std::int64_t sa_row = c.M ? sa_count(c) / c.M : 0;
  e.a.assign(std::size_t(e.M * c.K), std::uint8_t(0x7F));
  if (c.scaling == Scaling::tensorwise)
    e.sa = c.sa;
  else
    e.sa.assign(std::size_t(e.M * sa_row), NAN);
  for (std::int64_t r = 0; r < e.M; ++r) {
    const std::int64_t br = map_to_base[std::size_t(r)];
    if (br < 0) continue;
    std::copy_n(c.a.begin() + br * c.K, c.K, e.a.begin() + r * c.K);
    if (c.scaling != Scaling::tensorwise)
      std::copy_n(c.sa.begin() + br * sa_row, sa_row, e.sa.begin() + r * sa_row);
  }
  if (c.scaling == Scaling::none) e.sa.clear();
  compare(run_forward(e, ref::RowPolicy::zero, false), e, map_to_base, "an empty group inserted");
}

// --- K-grouped wgrad ---------------------------------------------------------------------------
struct WgradCase {
  gen::GroupSizes gs;
  std::int64_t M = 0, N = 0, K = 0, G = 0;
  Format fdy = Format::e4m3, fx = Format::e4m3;
  gen::ValueClass v = gen::ValueClass::normal;
  Scaling scaling = Scaling::none;
  ref::ModelChoice model{AccumulationModel::exact, 1};
  std::vector<std::uint8_t> dy, x;
  std::vector<float> s_dy, s_x, c;
};

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
  w.scaling = *rc::gen::element(Scaling::none, Scaling::tensorwise);
  w.model = *gen::model_for(w.scaling);
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  w.dy = gen::fill_codes(w.fdy, w.v, w.M * w.N, rng());
  w.x = gen::fill_codes(w.fx, w.v, w.M * w.K, rng());
  if (w.scaling == Scaling::tensorwise)
    w.s_dy = {gen::draw_scale(rng(), false)}, w.s_x = {gen::draw_scale(rng(), false)};
  w.c.resize(std::size_t(w.G * w.N * w.K));
  for (auto& v : w.c)
    v = (rng() % 4 == 0)
            ? 0.0f
            : float(std::ldexp(double(std::int64_t(rng() % 2001) - 1000), int(rng() % 9) - 4));
  return w;
}

TensorFile save_wgrad(const WgradCase& w) {
  TensorFile tf;
  tf.tensors.push_back({"dy", u8_tensor(w.dy, {w.M, w.N})});
  tf.tensors.push_back({"x", u8_tensor(w.x, {w.M, w.K})});
  tf.tensors.push_back({"scale_dy", f32_tensor(w.s_dy, {std::int64_t(w.s_dy.size())})});
  tf.tensors.push_back({"scale_x", f32_tensor(w.s_x, {std::int64_t(w.s_x.size())})});
  tf.tensors.push_back({"c", f32_tensor(w.c, {w.G, w.N, w.K})});
  tf.tensors.push_back({"group_sizes", i64_tensor(w.gs.sizes)});
  auto& m = tf.metadata;
  m["dist"] = to_string(w.gs.dist);
  m["tail"] = std::to_string(w.gs.tail);
  m["N"] = std::to_string(w.N), m["K"] = std::to_string(w.K);
  m["format_dy"] = to_string(w.fdy), m["format_x"] = to_string(w.fx);
  m["values"] = gen::to_string(w.v);
  m["scaling"] = ref::to_string(w.scaling);
  m["model"] = to_string(w.model.model);
  m["split_k"] = std::to_string(w.model.split_k);
  m["split_blocks"] = std::to_string(w.model.split_blocks);
  return tf;
}

WgradCase load_wgrad(const TensorFile& tf) {
  WgradCase w;
  gen::size_dist_from_string(get_meta(tf, "dist"), w.gs.dist);
  w.gs.tail = get_meta_int(tf, "tail");
  w.gs.sizes = get_i64(tf, "group_sizes");
  for (auto s : w.gs.sizes)
    if (s < 0) throw std::invalid_argument("case file: negative group size");
  if (w.gs.sizes.empty() || w.gs.tail < 0)
    throw std::invalid_argument("case file: bad group sizes");
  w.G = w.gs.groups();
  w.M = w.gs.total() + w.gs.tail;
  w.N = get_meta_int(tf, "N"), w.K = get_meta_int(tf, "K");
  w.fdy = format_from(get_meta(tf, "format_dy"));
  w.fx = format_from(get_meta(tf, "format_x"));
  gen::value_class_from_string(get_meta(tf, "values"), w.v);
  w.scaling = get_meta(tf, "scaling") == "tensorwise" ? Scaling::tensorwise : Scaling::none;
  const auto model = accumulation_model_from_string(get_meta(tf, "model"));
  if (!model) throw std::invalid_argument("case file: unknown model");
  w.model = {*model, int(get_meta_int(tf, "split_k")),
             tf.metadata.count("split_blocks") ? get_meta_int(tf, "split_blocks") : 0};
  w.dy = get_u8(tf, "dy"), w.x = get_u8(tf, "x");
  w.s_dy = get_f32(tf, "scale_dy"), w.s_x = get_f32(tf, "scale_x");
  w.c = get_f32(tf, "c");
  if (std::int64_t(w.dy.size()) != w.M * w.N || std::int64_t(w.x.size()) != w.M * w.K ||
      std::int64_t(w.c.size()) != w.G * w.N * w.K)
    throw std::invalid_argument("case file: tensor sizes do not match the case's shape");
  return w;
}

void check_wgrad(const WgradCase& w) {
  std::vector<std::int64_t> offs;
  std::int64_t end = 0;
  for (auto s : w.gs.sizes) offs.push_back(end += s);
  const ref::WgradOperands op{w.M,  w.N, w.K,       w.G,    w.fdy, w.fx,
                              w.dy, w.x, w.scaling, w.s_dy, w.s_x, w.c};
  std::vector<float> dw1(w.c.size()), dw2(w.c.size());
  std::vector<double> bound(w.c.size());
  {
    ThreadCount t(1);
    ref::grouped_gemm_wgrad(op, offs, w.model, dw1, bound);
  }
  {
    ThreadCount t(2);
    ref::grouped_gemm_wgrad(op, offs, w.model, dw2, {});
  }
  fold_result(dw1.data(), dw1.size() * 4);
  if (!dw1.empty() && std::memcmp(dw1.data(), dw2.data(), dw1.size() * 4) != 0)
    throw Violation("wgrad: 1 thread and 2 threads give different bits");
  std::int64_t r0 = 0;
  for (std::int64_t g = 0; g < w.G; ++g) {
    const std::int64_t rows = w.gs.sizes[std::size_t(g)];
    for (std::int64_t n = 0; n < w.N; ++n)
      for (std::int64_t k = 0; k < w.K; ++k) {
        const std::size_t i = std::size_t((g * w.N + n) * w.K + k);
        const std::string at = "group " + std::to_string(g) + " (" + std::to_string(rows) +
                               " rows) n " + std::to_string(n) + " k " + std::to_string(k) + " [" +
                               to_string(w.model.model) + "]";
        if (rows == 0) {
          if (std::bit_cast<std::uint32_t>(dw1[i]) != std::bit_cast<std::uint32_t>(w.c[i]))
            throw Violation("wgrad: an empty group's dW is not exactly C at " + at);
          continue;
        }
        ExactValue x = gen::exact_scaled_dot(
            w.fdy, w.dy.data() + r0 * w.N + n, w.N, w.fx, w.x.data() + r0 * w.K + k, w.K, rows,
            w.s_dy.data(), w.s_x.data(), w.scaling == Scaling::tensorwise ? 1 : 0, 1);
        // + C[g] exactly.
        int ce = 0;
        const double cf = std::frexp(double(w.c[i]), &ce);
        const gen::BigInt cm(std::int64_t(std::ldexp(cf, 53)));
        const int ec = ce - 53, e = std::min(ec, x.exp);
        x.mant = (x.mant << (x.exp - e)) + (cm << (ec - e));
        x.exp = e;
        const bool ok = w.model.model == AccumulationModel::exact
                            ? double(dw1[i]) == gen::round_f32(x)
                            : within(double(dw1[i]), x, bound[i]);
        if (!ok) {
          std::ostringstream os;
          os.precision(17);
          os << "wgrad: dW " << dw1[i] << " vs exact " << gen::round_to_format(x, 53, -1022, 1023)
             << " (bound " << bound[i] << ") at " << at;
          throw Violation(os.str());
        }
      }
    r0 += rows;
  }
}

std::vector<std::string> gemm_classes(bool models) {
  std::vector<std::string> c;
  for (auto d : gen::kSizeDists) c.push_back(std::string("dist:") + to_string(d));
  for (const char* d : {"offs", "aligned", "masked"}) c.push_back(std::string("desc:") + d);
  for (const char* s : {"none", "tensorwise", "rowwise", "blockwise", "mx"})
    c.push_back(std::string("scaling:") + s);
  c.push_back("sizes:some_empty");
  c.push_back("sizes:align_edge");
  c.push_back("groups:65+");
  if (models) {
    for (AccumulationModel m : kAllAccumulationModels)
      c.push_back(std::string("model:") + to_string(m));
    c.push_back("split_k:>1");
    c.push_back("split_blocks:>0");
    for (const char* e : {"scale_product", "b_then_a", "a_then_b"})
      c.push_back(std::string("epilogue:") + e);
  }
  return c;
}

}  // namespace

void add_gemm_suites(std::vector<Suite>& out) {
  auto tags = [](const GemmCase& c) { return gemm_tags(c); };
  {
    auto classes = gemm_classes(false);
    for (auto v : gen::kValueClasses) classes.push_back(std::string("values:") + gen::to_string(v));
    out.push_back(make_suite<GemmCase>(
        {"gemm.forward",
         "M-grouped forward, exact model, == the fixed-point oracle; padding rows +0", "cpu", 2000,
         classes},
        {[] {
           return draw_gemm({true, true, false});
         },
         check_forward_exact, tags, save_gemm, load_gemm}));
  }
  out.push_back(make_suite<GemmCase>(
      {"gemm.models_bound",
       "every accumulation model (split-K too) within its bound of the exact value", "cpu", 1500,
       gemm_classes(true)},
      {[] {
         return draw_gemm({false, false, false});
       },
       check_models_bound, tags, save_gemm, load_gemm}));
  out.push_back(make_suite<GemmCase>({"gemm.padding_poison",
                                      "valid rows bitwise unchanged when padding rows, scales and "
                                      "empty groups' B hold NaN/Inf/garbage",
                                      "cpu", 1000, gemm_classes(false)},
                                     {[] {
                                        return draw_gemm({true, false, true});
                                      },
                                      check_padding_poison, tags, save_gemm, load_gemm}));
  out.push_back(make_suite<GemmCase>(
      {"gemm.invariance",
       "same bits for 1 and 2 threads, a repeated run, and an inserted empty group", "cpu", 600,
       gemm_classes(false)},
      {[] {
         return draw_gemm({true, false, false});
       },
       check_invariance, tags, save_gemm, load_gemm}));
  {
    std::vector<std::string> classes;
    for (auto d : gen::kSizeDists) classes.push_back(std::string("dist:") + to_string(d));
    classes.push_back("sizes:some_empty");
    out.push_back(make_suite<WgradCase>(
        {"gemm.wgrad",
         "K-grouped wgrad: empty group == C bitwise, others within the model's bound; threads",
         "cpu", 2000, classes},
        {draw_wgrad, check_wgrad,
         [](const WgradCase& w) {
           auto t = gen::size_tags(w.gs);
           t.push_back(std::string("model:") + to_string(w.model.model));
           return t;
         },
         save_wgrad, load_wgrad}));
  }
}

}  // namespace fp8ref::fuzz
