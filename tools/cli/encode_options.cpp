// Option parsing for the codec subcommands (encode_options.h).
#include "cli/encode_options.h"

#include <cstdio>
#include <stdexcept>

#include "cli/errors.h"

namespace fp8ref::cli {
namespace {

template <class Enum, std::size_t N>
std::string choices(const Enum (&all)[N]) {
  std::string out;
  for (Enum e : all) {
    if (!out.empty()) out += '|';
    out += to_string(e);
  }
  return out;
}

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};
constexpr Source kSources[] = {Source::f32, Source::f64, Source::bf16, Source::f16};
constexpr Rounding kRoundings[] = {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn,
                                   Rounding::sr};
constexpr Profile kProfiles[] = {Profile::ocp_sat,    Profile::ocp_nosat,  Profile::cuda_satfinite,
                                 Profile::cuda_nosat, Profile::torch_2_11, Profile::ml_dtypes_0_6};

[[noreturn]] void unknown(std::string_view what, std::string_view got, const std::string& ok) {
  throw UsageError("unknown " + std::string(what) + " '" + std::string(got) + "' (expected " + ok +
                   ")");
}

}  // namespace

std::string format_choices() { return choices(kFormats); }
std::string profile_choices() { return choices(kProfiles); }

// The formats the codec subcommands cover (FP4 / FP6 / UE4M3 are checked by their own suites).
Format parse_format_option(std::string_view s) {
  for (Format f : kFormats)
    if (to_string(f) == s) return f;
  unknown("format", s, choices(kFormats));
}

Profile parse_profile_option(std::string_view s) {
  if (auto p = parse_profile(s)) return *p;
  unknown("profile", s, choices(kProfiles));
}

Source parse_source_option(std::string_view s) {
  if (auto x = parse_source(s)) return *x;
  unknown("source type", s, choices(kSources));
}

Rounding parse_rounding_option(std::string_view s) {
  if (auto r = parse_rounding(s)) return *r;
  unknown("rounding", s, choices(kRoundings));
}

ProfileCodec resolve_codec(Profile p, Format f, Source s, std::string_view rounding) {
  const Rounding r = rounding.empty() ? natural_rounding(p, f) : parse_rounding_option(rounding);
  try {
    return make_codec(p, f, s, r);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

std::string hex_bits(std::uint64_t bits, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(bits));
  return buf;
}

}  // namespace fp8ref::cli
