// The recipe and geometry of a quantize case file (quantize_case.h).
#include "cases/quantize_case.h"

#include <array>
#include <bit>
#include <stdexcept>
#include <string>

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

}  // namespace fp8ref::cases
