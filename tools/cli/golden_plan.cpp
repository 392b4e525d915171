// Golden generators and plan (golden_plan.h). Every generated file is named by a canonical command
// (command_of), which is what the manifest records and what verify re-runs.
#include "cli/golden_plan.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/encode_options.h"
#include "cli/errors.h"
#include "cli/golden_codec.h"
#include "cli/number_options.h"
#include "cli/sha256.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor.h"

namespace fp8ref::cli {
namespace {

struct GenSpec {
  std::string table;  // encode | decode | cases
  std::string profile, format, from = "f32", rounding;
  std::size_t count = kGoldenCount;
  std::uint64_t seed = kGoldenSeed;
  std::string out;
  bool json = false;
};

std::string command_of(const GenSpec& s) {
  std::string c = "fp8-check golden gen-codec " + s.table;
  if (s.table == "encode") c += " --profile " + s.profile;
  c += " --format " + s.format;
  if (s.table == "decode") return c;
  c += " --from " + s.from;
  if (s.table == "encode") c += " --rounding " + s.rounding;
  return c + " --count " + std::to_string(s.count) + " --seed " + std::to_string(s.seed);
}

// Fills an omitted --rounding with the profile's natural one, so the command names it explicitly.
GenSpec canonical(GenSpec s) {
  if (s.table == "encode" && s.rounding.empty()) {
    s.rounding =
        to_string(natural_rounding(parse_profile_option(s.profile), parse_format_option(s.format)));
  }
  return s;
}

GeneratorOutput generate(const GenSpec& s) {
  const Format format = parse_format_option(s.format);
  GeneratorOutput out;
  if (s.table == "decode") {
    out.bytes = decode_table_hex(format);
    return out;
  }
  if (parse_source_option(s.from) != Source::f32)
    throw UsageError("gen-codec: only --from f32 inputs are generated so far");
  if (s.count == 0 || s.count > 1'000'000)
    throw UsageError("gen-codec: --count must be in 1..1000000");
  const std::vector<CodecInput> inputs = f32_codec_inputs(format, s.seed, s.count);
  out.seed = s.seed;
  out.classes = class_counts(inputs);
  if (s.table == "cases") {
    out.bytes = cast_cases_safetensors(format, inputs, command_of(s));
    return out;
  }
  const Profile profile = parse_profile_option(s.profile);
  const ProfileCodec codec = resolve_codec(profile, format, Source::f32, s.rounding);
  if (codec.rounding == Rounding::sr)
    throw UsageError("gen-codec: stochastic rounding has no fixed table");
  out.bytes = encode_table_hex(codec, inputs);
  return out;
}

void write_output(const GenSpec& given) {
  const GenSpec s = canonical(given);
  if (s.out.empty() && s.json)
    throw UsageError("gen-codec: --json needs --out (the table itself goes to stdout)");
  const GeneratorOutput g = generate(s);
  if (s.out.empty()) {
    std::fwrite(g.bytes.data(), 1, g.bytes.size(), stdout);
    return;
  }
  try {
    tensor_io::write_file_atomic(s.out, std::string_view(g.bytes));
  } catch (const tensor_io::Error& e) {
    throw UsageError(std::string("gen-codec: ") + e.what());
  }
  if (!s.json) return;
  nlohmann::ordered_json j = {
      {"schema", "fp8ref.golden/1"},
      {"action", "gen-codec"},
      {"command", command_of(s)},
      {"out", s.out},
      {"bytes", g.bytes.size()},
      {"sha256", sha256_hex(g.bytes)},
      {"seed", g.seed ? nlohmann::ordered_json(*g.seed) : nlohmann::ordered_json(nullptr)},
      {"classes", g.classes}};
  std::cout << j.dump(2) << "\n";
}

using Sink = std::function<void(const GenSpec&)>;

void define_gen_codec(CLI::App& golden, const Sink& sink) {
  CLI::App* gen =
      golden.add_subcommand("gen-codec", "Generate a codec golden file (stdout, or --out FILE)");
  gen->require_subcommand(1);
  const struct {
    const char* table;
    const char* help;
  } kTables[] = {
      {"encode",
       "TestFloat-style lines 'F32_HEX CODE_HEX' for a class-weighted, seeded set of f32 inputs"},
      {"decode", "Lines 'CODE_HEX F64_HEX' for all 256 codes of a format"},
      {"cases",
       "safetensors: tensor 'input' (F32) and each profile's natural-rounding cast of it"}};
  for (const auto& t : kTables) {
    auto s = std::make_shared<GenSpec>();
    s->table = t.table;
    CLI::App* sub = gen->add_subcommand(t.table, t.help);
    if (s->table == "encode") {
      sub->add_option("--profile", s->profile, profile_choices())->required();
      sub->add_option("--rounding", s->rounding,
                      "rne|rtz|rup|rdn (default: the profile's own rounding)");
    }
    sub->add_option("--format", s->format, format_choices())->required();
    if (s->table != "decode") {
      sub->add_option("--from", s->from, "Input type (f32)")->capture_default_str();
      sub->add_option("--count", s->count, "Number of inputs")
          ->capture_default_str()
          ->check(count_in(1, 1u << 24));
      sub->add_option("--seed", s->seed, "splitmix64 seed of the weighted draws")
          ->capture_default_str()
          ->check(count_in(0, UINT64_MAX));
    }
    sub->add_option("--out", s->out, "Write to FILE instead of stdout");
    sub->add_flag("--json", s->json, "With --out: print a summary (schema fp8ref.golden/1)");
    sub->callback([s, sink] { sink(*s); });
  }
}

GenSpec plan_spec(const char* table, std::string_view format, std::string_view profile = {},
                  std::string_view rounding = {}) {
  GenSpec s;
  s.table = table, s.format = format, s.profile = profile, s.rounding = rounding;
  return s;
}

}  // namespace

std::vector<PlannedFile> golden_plan() {
  static constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};
  std::vector<PlannedFile> plan;
  for (Format f : kFormats) {
    const std::string fs(to_string(f));
    plan.push_back({"numerics/decode/" + fs + ".hex", command_of(plan_spec("decode", fs))});
    plan.push_back(
        {"numerics/encode/" + fs + "_f32.safetensors", command_of(plan_spec("cases", fs))});
    for (Profile p : kAllProfiles) {
      const std::string ps(to_string(p));
      plan.push_back({"numerics/encode/" + ps + "_" + fs + "_f32.hex",
                      command_of(plan_spec("encode", fs, ps, to_string(natural_rounding(p, f))))});
    }
  }
  return plan;
}

GeneratorOutput run_generator_command(const std::string& command) {
  const std::string refused =
      "not a golden generator command (only 'fp8-check golden gen-codec ...' is run): ";
  if (command.rfind("fp8-check ", 0) != 0) throw UsageError(refused + command);
  CLI::App app{"", "fp8-check"};
  app.require_subcommand(1);
  CLI::App* golden = app.add_subcommand("golden");
  golden->require_subcommand(1);
  std::optional<GenSpec> parsed;
  define_gen_codec(*golden, [&parsed](const GenSpec& s) { parsed = s; });
  try {
    app.parse(command, true);
  } catch (const CLI::ParseError& e) {
    throw UsageError(refused + command + " (" + e.what() + ")");
  }
  if (!parsed) throw UsageError(refused + command);
  if (!parsed->out.empty() || parsed->json)
    throw UsageError("a golden command writes its file to stdout: drop --out / --json: " + command);
  return generate(canonical(*parsed));
}

void add_gen_codec_command(CLI::App& golden) { define_gen_codec(golden, write_output); }

}  // namespace fp8ref::cli
