// `fp8-check sweep`: one profile codec against one peer over every input of the source type
// (or sampled f64), printing `N inputs, M mismatches` and the first mismatches; exit 0 iff M = 0.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/encode_options.h"
#include "cli/errors.h"
#include "cli/number_options.h"
#include "cli/sweep.h"

namespace fp8ref::cli {
namespace {

struct SweepOptions {
  std::string format, profile, from = "f32", rounding, against, engine = "generic";
  std::uint64_t first = 0, samples = 0, seed = 1;
  unsigned threads = 0;
  std::size_t show = 10;
  bool json = false, quiet = false;
  StreamOptions stream;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

void print_text(const SweepSpec& spec, const SweepResult& r) {
  const int digits = source_bits(spec.codec.source) / 4;
  std::cout << "sweep " << codec_label(spec.codec)
            << (spec.engine == Engine::table ? " (table engine)" : "") << " against "
            << to_string(spec.peer) << " (" << r.peer_description << "), " << r.threads
            << " threads\n";
  std::cout << r.inputs << " inputs, " << r.mismatches << " mismatches\n";
  std::printf("%.2f s, %.1f M inputs/s\n", r.seconds, double(r.inputs) / r.seconds / 1e6);
  std::fflush(stdout);
  if (spec.codec.source == Source::f64) {
    std::cout << "sample classes:";
    for (int c = 0; c < kSampleClassCount; ++c)
      std::cout << ' ' << to_string(static_cast<SampleClass>(c)) << ' ' << r.classes[c];
    std::cout << " (seed " << spec.seed << ")\n";
  }
  if (r.first.empty()) return;
  std::cout << "first mismatches (input, expected = " << to_string(spec.peer)
            << ", got = fp8ref):\n";
  for (const SweepMismatch& m : r.first)
    std::cout << "  " << hex_bits(m.input, digits) << "  expected " << hex_bits(m.expected, 2)
              << "  got " << hex_bits(m.got, 2) << '\n';
}

void print_json(const SweepSpec& spec, const SweepResult& r) {
  const int digits = source_bits(spec.codec.source) / 4;
  std::cout << "{\"schema\":\"fp8ref.sweep/1\",\"format\":\"" << to_string(spec.codec.format)
            << "\",\"profile\":\"" << to_string(spec.codec.profile) << "\",\"source\":\""
            << to_string(spec.codec.source) << "\",\"rounding\":\""
            << to_string(spec.codec.rounding) << "\",\"engine\":\"" << to_string(spec.engine)
            << "\",\"peer\":\"" << to_string(spec.peer) << "\",\"peer_description\":\""
            << json_escape(r.peer_description) << "\",\"inputs\":" << r.inputs
            << ",\"mismatches\":" << r.mismatches << ",\"seconds\":" << r.seconds
            << ",\"threads\":" << r.threads;
  if (spec.codec.source == Source::f64) {
    std::cout << ",\"seed\":" << spec.seed << ",\"sample_classes\":{";
    for (int c = 0; c < kSampleClassCount; ++c)
      std::cout << (c ? "," : "") << '"' << to_string(static_cast<SampleClass>(c))
                << "\":" << r.classes[c];
    std::cout << '}';
  }
  std::cout << ",\"first_mismatches\":[";
  for (std::size_t i = 0; i < r.first.size(); ++i)
    std::cout << (i ? "," : "") << "{\"input\":\"" << hex_bits(r.first[i].input, digits)
              << "\",\"expected\":\"" << hex_bits(r.first[i].expected, 2) << "\",\"got\":\""
              << hex_bits(r.first[i].got, 2) << "\"}";
  std::cout << "]}\n";
}

// A profile pins a library version; say so when the peer runs another one, whose casts may
// differ for reasons that are not fp8ref's (torch 2.13 made eager e4m3 casts saturate, §3.2).
void warn_on_version_skew(const SweepSpec& spec, const std::string& peer_description) {
  bool skew = false;
  if (spec.peer == PeerKind::ml_dtypes && spec.codec.profile == Profile::ml_dtypes_0_6)
    skew = peer_description.rfind("ml_dtypes 0.6.", 0) != 0;
  if (spec.peer == PeerKind::torch && spec.codec.profile == Profile::torch_2_11) {
    int major = 0, minor = 0;  // torch_2_11 reproduces torch <= 2.12
    skew = std::sscanf(peer_description.c_str(), "torch %d.%d", &major, &minor) != 2 ||
           major != 2 || minor > 12;
  }
  if (skew)
    std::fprintf(stderr, "fp8-check: note: profile %s does not pin this peer version: %s\n",
                 std::string(to_string(spec.codec.profile)).c_str(), peer_description.c_str());
}

void run(const SweepOptions& o) {
  const Format format = parse_format_option(o.format);
  const Profile profile = parse_profile_option(o.profile);
  const Source source = parse_source_option(o.from);
  SweepSpec spec{};
  spec.codec = resolve_codec(profile, format, source, o.rounding);
  spec.peer = parse_peer_option(o.against);
  spec.engine = parse_engine_option(o.engine);
  spec.first = o.first;
  spec.samples = o.samples;
  spec.seed = o.seed;
  spec.threads = o.threads;
  spec.keep = o.show;
  spec.stream = o.stream;
  const SweepResult r =
      run_sweep(spec, default_progress_style(o.quiet), "sweep " + codec_label(spec.codec));
  warn_on_version_skew(spec, r.peer_description);
  if (o.json)
    print_json(spec, r);
  else
    print_text(spec, r);
  std::cout.flush();
  if (r.mismatches != 0) throw ExitCode{1};
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Compare a profile codec with a peer implementation over every input of the source type "
      "(all 2^32 for f32), or over N sampled f64 inputs. Exit 0 iff there is no mismatch.");
  cmd->add_option("--format", o->format, "Target format: " + format_choices())->required();
  cmd->add_option("--profile", o->profile, "Profile: " + profile_choices())->required();
  cmd->add_option("--from", o->from, "Source type: f32|bf16|f16, or f64 with --samples")
      ->capture_default_str();
  cmd->add_option("--rounding", o->rounding, "rne|rtz|rup|rdn (default: the profile's own)");
  cmd->add_option("--against", o->against, "Peer: cuda|ml_dtypes|torch|oracle")->required();
  cmd->add_option("--engine", o->engine,
                  "fp8ref side: generic (the codec itself) or table (numerics/encode_table.h, "
                  "built from it; f32/bf16/f16)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Worker threads (default: all cores)")
      ->check(count_in(1, kMaxThreads));
  cmd->add_option("--first", o->first, "Only the first N input patterns 0..N-1")
      ->check(count_in(1, UINT64_MAX));
  cmd->add_option("--samples", o->samples, "f64 only: number of class-weighted samples")
      ->check(count_in(1, std::uint64_t{1} << 48));
  cmd->add_option("--seed", o->seed, "f64 only: sample stream seed")
      ->check(count_in(0, UINT64_MAX))
      ->capture_default_str();
  cmd->add_option("--show", o->show, "How many first mismatches to print")
      ->check(count_in(0, kMaxReport))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the result as JSON (schema fp8ref.sweep/1)");
  cmd->add_flag("--quiet,--no-progress", o->quiet, "No progress output on stderr");
  cmd->add_option("--python", o->stream.python,
                  "Python for ml_dtypes/torch (default: $FP8REF_PYTHON, else python3)");
  cmd->add_option("--script", o->stream.script, "Path of tools/python/cast_stream.py");
  cmd->add_option("--device", o->stream.device, "torch device: cpu|cuda")->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace fp8ref::cli
