// Range-checked numeric options for fp8-check (docs/security.md "Options"): counts accept only
// decimal digits inside [lo, hi] (so "-1" never wraps to 2^64 - 1 and "1e3" or "7abc" are not
// half-read), durations only finite decimal numbers inside (0, hi]. A CLI11 validator returns
// the reason as a string; fp8-check prints it as its one `error:` line and exits 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fp8ref::cli {

// A count in [lo, hi], decimal digits only.
inline CLI::Validator count_in(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        const bool digits =
            !s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long v = digits ? std::strtoull(s.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || v < lo || v > hi)
          return "'" + s + "' is not a whole number in " + range;
        return {};
      },
      "INT in " + range);
}

// A duration in seconds: a finite decimal number with 0 < value <= hi.
inline CLI::Validator seconds_up_to(double hi) {
  return CLI::Validator(
      [hi](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
        const bool plain = !s.empty() && s.find_first_not_of("0123456789.") == std::string::npos;
        if (!plain || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0 || v > hi)
          return "'" + s + "' is not a number of seconds in (0, " +
                 std::to_string(static_cast<long long>(hi)) + "]";
        return {};
      },
      "SECONDS");
}

inline constexpr std::uint64_t kMaxReport = 1u << 20;    // listed mismatches
inline constexpr std::uint64_t kMaxThreads = 1024;       // more is a typo, not a machine
inline constexpr double kMaxSeconds = 30.0 * 24 * 3600;  // a month

}  // namespace fp8ref::cli
