// The K-grouped wgrad case (wgrad_case.h): block rows and the case file.
#include "cases/wgrad_case.h"

#include <stdexcept>

#include "cases/enum_tokens.h"
#include "cases/gemm_case.h"

namespace fp8ref::cases {

using ref::Scaling;

std::int64_t WgradCase::block_rows() const {
  if (scaling != Scaling::blockwise && scaling != Scaling::mx) return 0;
  const std::int64_t w = scaling == Scaling::mx ? 32 : 128;
  std::int64_t r = (gs.tail + w - 1) / w;
  for (auto m : gs.sizes) r += (m + w - 1) / w;
  return r;
}

TensorFile save_wgrad(const WgradCase& w) {
  TensorFile tf;
  tf.tensors.push_back({"dy", u8_tensor(w.dy, {w.M, w.N})});
  tf.tensors.push_back({"x", u8_tensor(w.x, {w.M, w.K})});
  const std::int64_t R = w.block_rows();
  const bool blocks = R > 0 || w.scaling == Scaling::blockwise || w.scaling == Scaling::mx;
  tf.tensors.push_back({"scale_dy", f32_tensor(w.s_dy, blocks ? std::vector<std::int64_t>{R, w.N}
                                                              : std::vector<std::int64_t>{
                                                                    std::int64_t(w.s_dy.size())})});
  tf.tensors.push_back({"scale_x", f32_tensor(w.s_x, blocks ? std::vector<std::int64_t>{R, w.K}
                                                            : std::vector<std::int64_t>{
                                                                  std::int64_t(w.s_x.size())})});
  tf.tensors.push_back({"c", f32_tensor(w.c, {w.G, w.N, w.K})});
  save_group_sizes(w.gs, tf);
  MetaWriter m{tf};
  m["op"] = to_string(GemmOp::wgrad);
  m["N"] = std::to_string(w.N), m["K"] = std::to_string(w.K);
  m["format_dy"] = to_string(w.fdy), m["format_x"] = to_string(w.fx);
  m["values"] = to_string(w.v);
  m["scaling"] = ref::to_string(w.scaling);
  m["out"] = to_string(w.out);
  save_model(w.model, tf);
  return tf;
}

WgradCase load_wgrad(const TensorFile& tf) {
  WgradCase w;
  if (has_meta(tf, "op") && get_meta(tf, "op") != to_string(GemmOp::wgrad))
    throw std::invalid_argument("case file: op '" + get_meta(tf, "op") + "' is not a wgrad case");
  w.gs = load_group_sizes(tf);
  if (w.gs.sizes.empty()) throw std::invalid_argument("case file: bad group sizes");
  w.G = w.gs.groups();
  w.M = w.gs.total() + w.gs.tail;
  w.N = get_meta_int(tf, "N"), w.K = get_meta_int(tf, "K");
  if (w.N < 0 || w.K < 0) throw std::invalid_argument("case file: bad extents");
  w.fdy = format_from_name(get_meta(tf, "format_dy"));
  w.fx = format_from_name(get_meta(tf, "format_x"));
  const auto v = from_token(kValueClasses, get_meta(tf, "values"));
  if (!v) throw std::invalid_argument("case file: unknown value class");
  w.v = *v;
  w.scaling = scaling_from(get_meta(tf, "scaling"));
  if (w.scaling == Scaling::rowwise)
    throw std::invalid_argument("case file: rowwise is not a wgrad scaling");
  w.out = has_meta(tf, "out") ? out_from(get_meta(tf, "out")) : OutDtype::f32;
  w.model = load_model(tf);
  w.dy = get_u8(tf, "dy"), w.x = get_u8(tf, "x");
  w.s_dy = get_f32(tf, "scale_dy"), w.s_x = get_f32(tf, "scale_x");
  w.c = get_f32(tf, "c");
  const std::int64_t R = w.block_rows(), n_sdy = R ? R * w.N : 0, n_sx = R ? R * w.K : 0;
  const std::int64_t per = w.scaling == Scaling::tensorwise ? 1 : 0;
  if (std::int64_t(w.dy.size()) != w.M * w.N || std::int64_t(w.x.size()) != w.M * w.K ||
      std::int64_t(w.c.size()) != w.G * w.N * w.K ||
      std::int64_t(w.s_dy.size()) != (R ? n_sdy : per) ||
      std::int64_t(w.s_x.size()) != (R ? n_sx : per))
    throw std::invalid_argument("case file: tensor sizes do not match the case's shape");
  return w;
}

std::string wgrad_case_diff(const WgradCase& x, const WgradCase& y) {
  return first_difference({
      {"group sizes", x.gs == y.gs},
      {"extents", x.M == y.M && x.N == y.N && x.K == y.K && x.G == y.G},
      {"formats", x.fdy == y.fdy && x.fx == y.fx},
      {"value class", x.v == y.v},
      {"scaling", x.scaling == y.scaling},
      {"output dtype", x.out == y.out},
      {"model", x.model.model == y.model.model && x.model.split_k == y.model.split_k &&
                    x.model.split_blocks == y.model.split_blocks},
      {"epilogue", x.model.epilogue == y.model.epilogue},
      {"operands", x.dy == y.dy && x.x == y.x},
      {"scales", same_bits(x.s_dy, y.s_dy) && same_bits(x.s_x, y.s_x)},
      {"C", same_bits(x.c, y.c)},
  });
}

}  // namespace fp8ref::cases
