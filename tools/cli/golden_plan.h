// The golden set fp8-check maintains and its generators (`fp8-check golden gen-codec`). A
// golden file is the stdout of one generator command; verify re-runs the command
// from the manifest through the same CLI11 definitions, in process. Only gen-codec commands are
// accepted there: a manifest never makes fp8-check run anything else.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp8ref::cli {

inline constexpr std::uint64_t kGoldenSeed = 20261122;  // the CI seed of the property suites
inline constexpr std::size_t kGoldenCount = 2000;       // f32 inputs per encode table

struct GeneratorOutput {
  std::string bytes;
  std::optional<std::uint64_t> seed;
  std::map<std::string, std::uint64_t> classes;  // input-class counts, for the manifest
};

struct PlannedFile {
  std::string path;  // relative to the golden root
  std::string command;
};

// decode/<format>.hex, encode/<profile>_<format>_f32.hex (natural rounding),
// encode/<format>_f32.safetensors.
std::vector<PlannedFile> golden_plan();

// Parses "fp8-check golden gen-codec ..." and generates its output; UsageError for anything else.
GeneratorOutput run_generator_command(const std::string& command);

// Registers `gen-codec encode|decode|cases` under the `golden` subcommand.
void add_gen_codec_command(CLI::App& golden);

}  // namespace fp8ref::cli
