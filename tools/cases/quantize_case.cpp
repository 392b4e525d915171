// The recipe and geometry of a quantize case file (quantize_case.h).
#include "cases/quantize_case.h"

#include <array>
#include <bit>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases/enum_tokens.h"

namespace fp8ref::cases {

namespace {
constexpr std::array kElementFormats = {Format::e4m3, Format::e5m2};  // ids 0, 1
}  // namespace

void save_recipe(const Recipe& r, BlockGeometry g, TensorFile& tf) {
  MetaWriter m{tf};
  m["recipe_kind"] = std::to_string(int(r.kind));
  m["recipe"] = std::string(to_string(r.kind));
  m["elem"] = std::to_string(int(r.elem));
  m["runtime"] = std::to_string(int(r.runtime));
  // A std::string, not the literal: GCC 12's -Wrestrict misfires on assigning a literal here.
  m["pow2"] = std::string(r.pow2 ? "1" : "0");
  m["epsilon_bits"] = std::to_string(std::bit_cast<std::uint32_t>(r.epsilon));
  m["geometry"] = std::to_string(int(g));
  m["geometry_name"] = std::string(to_string(g));
}

RecipeGeometry load_recipe(const TensorFile& tf) {
  const auto kind = enum_at(kAllRecipeKinds, get_meta_int(tf, "recipe_kind"));
  const auto elem = enum_at(kElementFormats, get_meta_int(tf, "elem"));
  const auto rt = enum_at(kAllRuntimes, get_meta_int(tf, "runtime"));
  const auto geo = enum_at(kAllBlockGeometries, get_meta_int(tf, "geometry"));
  if (!kind || !elem || !rt || !geo)
    throw std::invalid_argument("case file: recipe / geometry out of range");
  const float eps = has_meta(tf, "epsilon_bits")
                        ? std::bit_cast<float>(std::uint32_t(get_meta_int(tf, "epsilon_bits")))
                        : 0.0f;
  return {{*kind, *elem, *rt, get_meta(tf, "pow2") == "1", eps}, *geo};
}

void save_quantize_case(const QuantizeCase& q, SourceShape shape, TensorFile& tf) {
  const std::vector<std::int64_t> dims = shape == SourceShape::matrix
                                             ? std::vector<std::int64_t>{q.gs.total(), q.cols}
                                             : std::vector<std::int64_t>{std::int64_t(q.x.size())};
  tf.tensors.push_back({"x_bits", u32_tensor(q.x, dims)});
  save_group_sizes(q.gs, tf);
  save_recipe(q.recipe, q.geometry, tf);
  MetaWriter m{tf};
  m["cols"] = std::to_string(q.cols);
  m["values"] = to_string(q.values);
}

void load_quantize_case(const TensorFile& tf, QuantizeCase& q) {
  q.gs = load_group_sizes(tf);
  const RecipeGeometry rg = load_recipe(tf);
  q.recipe = rg.recipe;
  q.geometry = rg.geometry;
  q.cols = get_meta_int(tf, "cols");
  if (const auto v = from_token(kValueClasses, get_meta(tf, "values"))) q.values = *v;
  q.x = get_u32(tf, "x_bits");
  if (q.cols < 1 || std::int64_t(q.x.size()) != q.gs.total() * q.cols)
    throw std::invalid_argument("case file: x does not match the group sizes x cols");
  validate(q.recipe);
}

}  // namespace fp8ref::cases
