// Comparison helpers of cases and results: equality as bit patterns (the sign of zero and NaN
// payloads count, which == on floats ignores or gets wrong) and the name of the first differing
// field of a case-file round trip. Header-only: the property suites use it without the library.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace fp8ref::cases {

inline bool same_bits(float x, float y) {
  return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}
inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() &&
         (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

// The name of the first field that differs ("" when none): the *_case_diff functions.
inline std::string first_difference(std::initializer_list<std::pair<const char*, bool>> same) {
  for (const auto& [what, ok] : same)
    if (!ok) return what;
  return "";
}

}  // namespace fp8ref::cases
