// Tokens <-> enums for every enum with a kAll list and a to_string overload (format, profile,
// model, epilogue, recipe, layout, scaling, size distribution, value class, descriptor): one
// parser and one "a|b|c" list for messages, found by argument-dependent lookup of to_string.
#pragma once

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace fp8ref::cases {

// The element of `all` whose to_string is `token`; nullopt for any other token.
template <class List>
auto from_token(const List& all, std::string_view token)
    -> std::optional<std::remove_cvref_t<decltype(*std::begin(all))>> {
  for (const auto& e : all)
    if (std::string_view(to_string(e)) == token) return e;
  return std::nullopt;
}

// The tokens of `all` joined by `sep` ("e4m3|e5m2"), for usage lines and messages.
template <class List>
std::string token_list(const List& all, std::string_view sep = "|") {
  std::string out;
  for (const auto& e : all) {
    if (!out.empty()) out += sep;
    out += std::string_view(to_string(e));
  }
  return out;
}

}  // namespace fp8ref::cases
