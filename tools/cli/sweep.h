// Exhaustive (or sampled f64) comparison of a profile codec with a peer implementation
// (docs/design.md §14, docs/numerics.md "Verification"): every input of the source type is encoded
// by fp8ref and by the peer, in parallel blocks; the result counts mismatches and keeps the first
// ones in input order, whatever the thread count.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/progress.h"
#include "cli/sweep_domain.h"
#include "cli/sweep_peer.h"
#include "numerics/profile.h"

namespace fp8ref::cli {

// What computes fp8ref's side of a sweep: the generic codec (ProfileCodec::encode, the
// definition; the default), or numerics/encode_table.h's EncodeTable built from it (f32, bf16,
// f16; faster, and equal to the generic codec on every input by the ctest suites
// fp8ref_encode_table_tests, so a clean table sweep says the same of the generic codec only
// through them).
enum class Engine : std::uint8_t { generic, table };

Engine parse_engine_option(std::string_view s);  // throws UsageError
std::string_view to_string(Engine e);

struct SweepSpec {
  ProfileCodec codec;
  PeerKind peer;
  Engine engine = Engine::generic;
  std::uint64_t first = 0;    // exhaustive: only inputs 0..first-1 (0: all 2^bits)
  std::uint64_t samples = 0;  // f64 source: this many class-weighted samples
  std::uint64_t seed = 1;
  unsigned threads = 0;   // 0: std::thread::hardware_concurrency()
  std::size_t keep = 10;  // how many first mismatches to keep
  StreamOptions stream;
};

struct SweepMismatch {
  std::uint64_t input;    // source bit pattern
  std::uint8_t expected;  // the peer's code
  std::uint8_t got;       // fp8ref's code
};

struct SweepResult {
  std::string peer_description;
  std::uint64_t inputs = 0;
  std::uint64_t mismatches = 0;
  std::vector<SweepMismatch> first;
  double seconds = 0;
  unsigned threads = 0;
  SampleClassCounts classes{};  // sampled sweeps: inputs drawn per class
};

// The domain a spec sweeps; throws UsageError for an impossible one (f64 without --samples...).
SweepDomain sweep_domain(const SweepSpec& spec);

// Runs the sweep, reporting progress under `label`. Throws UsageError when the peer is
// unavailable or cannot check this codec, std::runtime_error when a stream peer fails midway.
SweepResult run_sweep(const SweepSpec& spec, ProgressStyle style, const std::string& label);

// "e4m3 cuda_satfinite f32 rne"
std::string codec_label(const ProfileCodec& c);

void add_sweep_command(CLI::App& app);

}  // namespace fp8ref::cli
