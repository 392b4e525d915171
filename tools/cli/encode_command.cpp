// encode / decode subcommands (encode_command.h). The codec is numerics/profile.h's ProfileCodec;
// this file only parses lines and formats codes.
#include "cli/encode_command.h"

#include <bit>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/encode_options.h"
#include "cli/encode_stream.h"
#include "cli/errors.h"
#include "cli/number_options.h"
#include "numerics/codec.h"

namespace fp8ref::cli {
namespace {

struct EncodeOptions {
  std::string format;
  std::string profile;
  std::string from = "f32";
  std::string rounding;  // empty: the profile's natural rounding
  int sr_bits = 32;
};

struct DecodeOptions {
  std::string format;
  std::string to = "f32";
};

// Bad line shape: a UsageError that names the line.
[[noreturn]] void bad_line(const LineReader& in, const std::string& why) {
  throw UsageError("stdin line " + std::to_string(in.line_number()) + ": " + why);
}

void run_encode(const EncodeOptions& o) {
  const Format format = parse_format_option(o.format);
  const Profile profile = parse_profile_option(o.profile);
  const Source source = parse_source_option(o.from);
  ProfileCodec codec = resolve_codec(profile, format, source, o.rounding);
  const bool sr = codec.rounding == Rounding::sr;
  if (sr) {
    if (o.sr_bits < 1 || o.sr_bits > 32)
      throw UsageError("--sr-bits must be in 1..32, got " + std::to_string(o.sr_bits));
    codec.fp8.sr_bits = o.sr_bits;
  }
  const int digits = source_bits(source) / 4;
  const std::string what = std::string(to_string(source)) + " bit pattern";
  LineReader in(stdin);
  BlockWriter out(stdout);
  std::string_view line;
  std::string_view tok[2];
  const int want = sr ? 2 : 1;
  while (in.next(line)) {
    const int n = split_tokens(line, tok, 2);
    if (n == 0) continue;  // blank line
    if (n != want)
      bad_line(in, sr ? "expected 'HEX RAND' (stochastic rounding takes the random bits per line)"
                      : "expected one hex bit pattern, got " + std::to_string(n) + " fields");
    const std::uint64_t bits = parse_hex_token(tok[0], digits, what, in.line_number());
    const std::uint32_t rand =
        sr ? static_cast<std::uint32_t>(parse_hex_token(tok[1], 8, "random bits", in.line_number()))
           : 0;
    out.hex_line(codec.encode(bits, rand), 2);
  }
  out.flush();
}

void run_decode(const DecodeOptions& o) {
  const Format format = parse_format_option(o.format);
  const Source to = parse_source_option(o.to);
  if (to != Source::f32 && to != Source::f64)
    throw UsageError("--to must be f32 or f64, got '" + o.to + "'");
  LineReader in(stdin);
  BlockWriter out(stdout);
  std::string_view line;
  std::string_view tok[1];
  while (in.next(line)) {
    const int n = split_tokens(line, tok, 1);
    if (n == 0) continue;
    if (n != 1) bad_line(in, "expected one hex code, got " + std::to_string(n) + " fields");
    const auto code = static_cast<std::uint8_t>(
        parse_hex_token(tok[0], 2, std::string(to_string(format)) + " code", in.line_number()));
    if (to == Source::f32)
      out.hex_line(std::bit_cast<std::uint32_t>(decode_f32(format, code)), 8);
    else
      out.hex_line(std::bit_cast<std::uint64_t>(decode_f64(format, code)), 16);
  }
  out.flush();
}

}  // namespace

void add_encode_command(CLI::App& app) {
  auto opts = std::make_shared<EncodeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "encode",
      "Encode hex bit patterns from stdin (one per line, 0x optional) into FP8/E8M0 codes, one "
      "2-digit hex code per line. With --rounding sr each line is 'HEX RAND'.");
  cmd->add_option("--format", opts->format, "Target format: " + format_choices())->required();
  cmd->add_option("--profile", opts->profile, "Cast behaviour to reproduce: " + profile_choices())
      ->required();
  cmd->add_option("--from", opts->from, "Source type of the input patterns: f32|f64|bf16|f16")
      ->capture_default_str();
  cmd->add_option("--rounding", opts->rounding,
                  "rne|rtz|rup|rdn|sr (default: the profile's own rounding for the format)");
  cmd->add_option("--sr-bits", opts->sr_bits,
                  "Random bits consumed per stochastic rounding, 1..32 (numerics/codec.h)")
      ->capture_default_str()
      ->check(count_in(1, 32));
  cmd->callback([opts] { run_encode(*opts); });
}

void add_decode_command(CLI::App& app) {
  auto opts = std::make_shared<DecodeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "decode",
      "Decode hex FP8/E8M0 codes from stdin (one per line) into exact f32 (8 hex digits) or f64 "
      "(16 hex digits) bit patterns.");
  cmd->add_option("--format", opts->format, "Code format: " + format_choices())->required();
  cmd->add_option("--to", opts->to, "Output type: f32|f64")->capture_default_str();
  cmd->callback([opts] { run_decode(*opts); });
}

}  // namespace fp8ref::cli
