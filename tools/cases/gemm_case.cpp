// The M-grouped GEMM case (gemm_case.h): row maps, scale counts and the case file.
#include "cases/gemm_case.h"

#include <stdexcept>

#include "cases/enum_tokens.h"

namespace fp8ref::cases {

namespace {

Desc desc_from(const std::string& s) {
  if (const auto d = from_token(kAllDescs, s)) return *d;
  throw std::invalid_argument("case file: unknown descriptor '" + s + "'");
}

ref::BLayout b_layout_from(const std::string& s) {
  if (const auto l = from_token(kAllBLayouts, s)) return *l;
  throw std::invalid_argument("case file: unknown B layout '" + s + "'");
}

ValueClass value_class_from(const std::string& s) {
  if (const auto v = from_token(kValueClasses, s)) return *v;
  throw std::invalid_argument("case file: unknown value class");
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

std::vector<std::int32_t> rows_of(const GroupSizes& gs, Desc d, std::int64_t m_max,
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
  MetaWriter m{tf};
  m["op"] = to_string(c.op);
  m["desc"] = to_string(c.desc);
  m["m_max"] = std::to_string(c.m_max);
  m["N"] = std::to_string(c.N);
  m["K"] = std::to_string(c.K);
  m["shape"] = c.moe_shape ? "moe" : "small";
  if (c.adversarial != Adversarial::none) m["adversarial"] = to_string(c.adversarial);
  m["format_a"] = to_string(c.fa);
  m["format_b"] = to_string(c.fb);
  m["values_a"] = to_string(c.va);
  m["values_b"] = to_string(c.vb);
  m["scaling"] = ref::to_string(c.scaling);
  m["b_layout"] = to_string(c.b_layout);
  m["out"] = to_string(c.out);
  save_model(c.model, tf);
  return tf;
}

void save_model(const ref::ModelChoice& mc, TensorFile& tf) {
  MetaWriter m{tf};
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
                     has_meta(tf, "split_blocks") ? get_meta_int(tf, "split_blocks") : 0};
  if (has_meta(tf, "epilogue")) {
    const auto ep = epilogue_from_string(get_meta(tf, "epilogue"));
    if (!ep)
      throw std::invalid_argument("case file: unknown epilogue '" + get_meta(tf, "epilogue") + "'");
    m.epilogue = *ep;
  }
  return m;
}

GemmCase load_gemm(const TensorFile& tf) {
  GemmCase c;
  // fp8ref.op: absent in files written before it; only the forward has this file form.
  if (has_meta(tf, "op") && get_meta(tf, "op") != to_string(GemmOp::forward))
    throw std::invalid_argument("case file: op '" + get_meta(tf, "op") + "' is not a forward case");
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
  c.moe_shape = has_meta(tf, "shape") && get_meta(tf, "shape") == "moe";
  if (has_meta(tf, "adversarial")) c.adversarial = parse_adversarial(get_meta(tf, "adversarial"));
  c.fa = format_from_name(get_meta(tf, "format_a"));
  c.fb = format_from_name(get_meta(tf, "format_b"));
  c.va = value_class_from(get_meta(tf, "values_a"));
  c.vb = value_class_from(get_meta(tf, "values_b"));
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
      {"op", x.op == y.op},
      {"group sizes", x.gs == y.gs},
      {"descriptor", x.desc == y.desc && x.m_max == y.m_max},
      {"extents", x.M == y.M && x.N == y.N && x.K == y.K && x.G == y.G},
      {"shape class", x.moe_shape == y.moe_shape},
      {"adversarial class", x.adversarial == y.adversarial},
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

}  // namespace fp8ref::cases
