// Option parsing shared by the codec subcommands (encode, decode, sweep, selfcheck): the policy
// tokens of docs/design.md §20 (formats e4m3 e5m2 e8m0, rounding rne rtz rup rdn sr, sources,
// profiles) turned into numerics/ enums, with a UsageError naming the accepted spellings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "numerics/profile.h"

namespace fp8ref::cli {

Format parse_format_option(std::string_view s);
Profile parse_profile_option(std::string_view s);
Source parse_source_option(std::string_view s);
Rounding parse_rounding_option(std::string_view s);

// "e4m3|e5m2|e8m0", "ocp_sat|...": for --help texts.
std::string format_choices();
std::string profile_choices();

// make_codec with the profile's natural rounding when `rounding` is empty; a combination the
// profile does not have becomes a UsageError.
ProfileCodec resolve_codec(Profile p, Format f, Source s, std::string_view rounding);

// Hex text of a bit pattern: `digits` lowercase hex digits with a 0x prefix.
std::string hex_bits(std::uint64_t bits, int digits);

}  // namespace fp8ref::cli
