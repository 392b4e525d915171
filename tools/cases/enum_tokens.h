// Tokens <-> enums for every enum with a kAll list and a to_string overload (format, profile,
// model, epilogue, recipe, layout, scaling, size distribution, value class, descriptor): one
// parser and one "a|b|c" list for messages, found by argument-dependent lookup of to_string.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
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
std::string token_list(const List& all, std::string_view sep = "|");

// The element of `all` whose to_string is `token`; otherwise throws Error (a std::invalid_argument
// by default; the CLI passes its UsageError, exit 2) with the one-line message
// "unknown <what> '<token>' (one of: a, b, c)".
template <class Error = std::invalid_argument, class List>
auto parse_token(std::string_view what, std::string_view token, const List& all) {
  if (const auto e = from_token(all, token)) return *e;
  throw Error("unknown " + std::string(what) + " '" + std::string(token) +
              "' (one of: " + token_list(all, ", ") + ")");
}

// The element at index `i` of `all` (a case file's numeric id); nullopt outside the list.
template <class List>
auto enum_at(const List& all, std::int64_t i)
    -> std::optional<std::remove_cvref_t<decltype(*std::begin(all))>> {
  if (i < 0 || i >= std::int64_t(std::size(all))) return std::nullopt;
  return *(std::begin(all) + i);
}

template <class List>
std::string token_list(const List& all, std::string_view sep) {
  std::string out;
  for (const auto& e : all) {
    if (!out.empty()) out += sep;
    out += std::string_view(to_string(e));
  }
  return out;
}

}  // namespace fp8ref::cases
