// selfcheck (selfcheck.h): a fixed plan of sweeps (sweep.h), optionally restricted to some
// sources, run one after another; rows whose peer this build or machine lacks (CUDA toolkit
// headers, a Python with ml_dtypes) are skipped, and a plan with skipped rows exits 3.
#include "cli/selfcheck.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/encode_options.h"
#include "cli/errors.h"
#include "cli/number_options.h"
#include "cli/sweep.h"

namespace fp8ref::cli {
namespace {

struct SelfcheckOptions {
  bool quick = false, json = false, quiet = false;
  unsigned threads = 0;
  std::vector<std::string> source_tokens;  // --sources (empty: all)
  std::vector<Source> sources;             // parsed from source_tokens
  std::uint64_t samples = 0;               // --samples for the f64 rows (0: the default)
  StreamOptions stream;
};

// Exit status of a selfcheck that ran every planned sweep cleanly except that some rows could
// not run here (docs/cli.md): distinct from 0 (all checked) and 1 (a mismatch or a failing peer).
constexpr int kExitSkipped = 3;

struct Row {
  SweepSpec spec;
  std::string skipped;  // why the row did not run (empty: it ran)
  std::string error;    // the peer failed midway
  SweepResult result;
};

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};
constexpr std::uint64_t kFullSamples = 10'000'000;  // sampled f64 rows, full run
constexpr std::uint64_t kQuickSamples = 1u << 20;   // sampled f64 rows, --quick

// Rows of the plan: sources f32 (2^32), bf16, f16 (2^16) and f64 (sampled) per (format, profile,
// rounding, peer), restricted to --sources. --quick keeps the 16-bit and sampled rows plus one
// f32 sweep.
std::vector<Row> plan(const SelfcheckOptions& o, bool have_ml_dtypes) {
  std::vector<Row> rows;
  bool f32_kept = false;
  const std::uint64_t samples = o.samples ? o.samples : o.quick ? kQuickSamples : kFullSamples;
  auto add = [&](Format f, Profile p, Source s, Rounding r, PeerKind peer) {
    if (!o.sources.empty() && std::find(o.sources.begin(), o.sources.end(), s) == o.sources.end())
      return;
    SweepSpec spec{};
    spec.codec = make_codec(p, f, s, r);
    spec.peer = peer;
    spec.samples = s == Source::f64 ? samples : 0;
    spec.threads = o.threads;
    spec.stream = o.stream;
    Row row{spec, "", "", {}};
    if (peer == PeerKind::cuda && !cuda_peer_available())
      row.skipped = "built without the CUDA toolkit's cuda_fp8.h";
    if (peer == PeerKind::ml_dtypes && !have_ml_dtypes)
      row.skipped = "no Python with ml_dtypes (set FP8REF_PYTHON)";
    if (o.quick && s == Source::f32) {  // the first f32 sweep that can run here
      if (f32_kept || !row.skipped.empty()) return;
      f32_kept = true;
    }
    rows.push_back(std::move(row));
  };
  constexpr Profile kCuda[] = {Profile::cuda_satfinite, Profile::cuda_nosat};
  constexpr Profile kLibraries[] = {Profile::torch_2_11, Profile::ml_dtypes_0_6};
  // 1. CUDA profiles against cuda_fp8.h (f64 through __nv_cvt_double_to_fp8 and
  //    __nv_cvt_double_to_e8m0, sampled).
  for (Format f : kFormats)
    for (Profile p : kCuda) {
      if (f == Format::e8m0) {
        for (Rounding r : {Rounding::rtz, Rounding::rup})
          for (Source s : {Source::f32, Source::bf16, Source::f64}) add(f, p, s, r, PeerKind::cuda);
      } else {
        for (Source s : {Source::f32, Source::bf16, Source::f16, Source::f64})
          add(f, p, s, Rounding::rne, PeerKind::cuda);
      }
    }
  // 2. Library profiles against the table oracle.
  for (Format f : kFormats)
    for (Profile p : kLibraries)
      for (Source s : {Source::f32, Source::bf16, Source::f16, Source::f64})
        add(f, p, s, natural_rounding(p, f), PeerKind::oracle);
  // 3. ml_dtypes_0_6 against the ml_dtypes package itself.
  for (Format f : kFormats)
    for (Source s : {Source::f32, Source::bf16, Source::f16, Source::f64})
      add(f, Profile::ml_dtypes_0_6, s, Rounding::rne, PeerKind::ml_dtypes);
  return rows;
}

std::string row_label(const Row& r) {
  return codec_label(r.spec.codec) + " vs " + std::string(to_string(r.spec.peer));
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-5s %-15s %-5s %-4s %-10s %12s %11s %9s %10s\n", "fmt", "profile", "src", "rnd",
              "peer", "inputs", "mismatches", "seconds", "inputs/s");
  for (const Row& r : rows) {
    const ProfileCodec& c = r.spec.codec;
    std::printf("%-5s %-15s %-5s %-4s %-10s ", std::string(to_string(c.format)).c_str(),
                std::string(to_string(c.profile)).c_str(), std::string(to_string(c.source)).c_str(),
                std::string(to_string(c.rounding)).c_str(),
                std::string(to_string(r.spec.peer)).c_str());
    if (!r.skipped.empty()) {
      std::printf("skipped: %s\n", r.skipped.c_str());
    } else if (!r.error.empty()) {
      std::printf("error: %s\n", r.error.c_str());
    } else {
      std::printf("%12llu %11llu %9.2f %10s\n", static_cast<unsigned long long>(r.result.inputs),
                  static_cast<unsigned long long>(r.result.mismatches), r.result.seconds,
                  si_count(double(r.result.inputs) / r.result.seconds).c_str());
    }
  }
}

struct Tally {
  std::size_t ran = 0, failed = 0, skipped = 0;
  std::map<std::string, std::size_t> skip_reasons;  // reason -> rows
};

Tally tally(const std::vector<Row>& rows) {
  Tally t;
  for (const Row& r : rows) {
    if (!r.skipped.empty()) {
      ++t.skipped;
      ++t.skip_reasons[r.skipped];
      continue;
    }
    ++t.ran;
    if (!r.error.empty() || r.result.mismatches != 0) ++t.failed;
  }
  return t;
}

// The closing verdict: one FAILED and / or SKIPPED line, or OK when every planned row ran clean.
void print_verdict(std::FILE* out, const Tally& t, std::size_t planned) {
  if (t.failed)
    std::fprintf(out, "FAILED: %zu of %zu sweeps found mismatches or errors\n", t.failed, t.ran);
  if (t.skipped) {
    std::fprintf(out,
                 "SKIPPED: %zu of %zu sweeps did not run, so this check is incomplete:", t.skipped,
                 planned);
    const char* sep = " ";
    for (const auto& [why, n] : t.skip_reasons) {
      std::fprintf(out, "%s%zu without a peer: %s", sep, n, why.c_str());
      sep = "; ";
    }
    std::fprintf(out, "\n");
  }
  if (!t.failed && !t.skipped) std::fprintf(out, "OK: all %zu sweeps ran, 0 mismatches\n", t.ran);
}

void print_json(const std::vector<Row>& rows, bool quick) {
  const Tally t = tally(rows);
  std::cout << "{\"schema\":\"fp8ref.selfcheck/1\",\"quick\":" << (quick ? "true" : "false")
            << ",\"ran\":" << t.ran << ",\"failed\":" << t.failed << ",\"skipped\":" << t.skipped
            << ",\"rows\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const ProfileCodec& c = r.spec.codec;
    std::cout << (i ? "," : "") << "{\"format\":\"" << to_string(c.format) << "\",\"profile\":\""
              << to_string(c.profile) << "\",\"source\":\"" << to_string(c.source)
              << "\",\"rounding\":\"" << to_string(c.rounding) << "\",\"peer\":\""
              << to_string(r.spec.peer) << '"';
    if (!r.skipped.empty())
      std::cout << ",\"status\":\"skipped\",\"reason\":\"" << r.skipped << "\"}";
    else if (!r.error.empty())
      std::cout << ",\"status\":\"error\",\"reason\":\"" << r.error << "\"}";
    else
      std::cout << ",\"status\":\"" << (r.result.mismatches ? "mismatch" : "ok")
                << "\",\"inputs\":" << r.result.inputs << ",\"mismatches\":" << r.result.mismatches
                << ",\"seconds\":" << r.result.seconds << '}';
  }
  std::cout << "]}\n";
}

void run(const SelfcheckOptions& o) {
  std::string why;
  const std::string ml = probe_stream_library(PeerKind::ml_dtypes, o.stream, &why);
  std::vector<Row> rows = plan(o, !ml.empty());
  std::FILE* log = o.json ? stderr : stdout;  // --json keeps stdout for the document
  std::fprintf(log, "fp8-check selfcheck%s: %zu sweeps; ml_dtypes: %s\n", o.quick ? " --quick" : "",
               rows.size(), ml.empty() ? ("unavailable (" + why + ")").c_str() : ml.c_str());
  std::fflush(log);
  const ProgressStyle style = default_progress_style(o.quiet);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    const std::string label =
        "[" + std::to_string(i + 1) + "/" + std::to_string(rows.size()) + "] " + row_label(r);
    if (!r.skipped.empty()) {
      std::fprintf(log, "%s: skipped (%s)\n", label.c_str(), r.skipped.c_str());
      continue;
    }
    try {
      r.result = run_sweep(r.spec, style, label);
      std::fprintf(log, "%s: %llu inputs, %llu mismatches (%.2f s)\n", label.c_str(),
                   static_cast<unsigned long long>(r.result.inputs),
                   static_cast<unsigned long long>(r.result.mismatches), r.result.seconds);
      const int digits = source_bits(r.spec.codec.source) / 4;
      for (const SweepMismatch& m : r.result.first)
        std::fprintf(log, "    %s  expected %s  got %s\n", hex_bits(m.input, digits).c_str(),
                     hex_bits(m.expected, 2).c_str(), hex_bits(m.got, 2).c_str());
    } catch (const std::exception& e) {
      r.error = e.what();
      std::fprintf(log, "%s: error: %s\n", label.c_str(), e.what());
    }
    std::fflush(log);
  }
  if (o.json)
    print_json(rows, o.quick);
  else
    print_table(rows);
  std::fflush(stdout);
  const Tally t = tally(rows);
  print_verdict(log, t, rows.size());
  std::fflush(log);
  if (t.failed) throw ExitCode{1};
  if (t.skipped) throw ExitCode{kExitSkipped};
}

}  // namespace

void add_selfcheck_command(CLI::App& app) {
  auto o = std::make_shared<SelfcheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "selfcheck",
      "Run every exhaustive codec verification (CUDA host functions, the table oracle, "
      "ml_dtypes) and print a summary table; exit 0 iff every sweep ran and found no mismatch, "
      "1 on a mismatch or a failing peer, 3 when sweeps were skipped (peer missing here).");
  cmd->add_flag("--quick", o->quick, "16-bit sources, sampled f64 and one 2^32 f32 sweep only");
  cmd->add_option("--sources", o->source_tokens,
                  "Only the rows of these sources (comma-separated: f32,bf16,f16,f64)")
      ->delimiter(',');
  cmd->add_option("--samples", o->samples, "Samples per f64 row (default 10^7, 2^20 with --quick)")
      ->check(count_in(1, std::uint64_t{1} << 48));
  cmd->add_flag("--json", o->json, "Print the summary as JSON (schema fp8ref.selfcheck/1)");
  cmd->add_flag("--quiet,--no-progress", o->quiet, "No progress output on stderr");
  cmd->add_option("--threads", o->threads, "Worker threads per sweep (default: all cores)")
      ->check(count_in(1, kMaxThreads));
  cmd->add_option("--python", o->stream.python,
                  "Python with ml_dtypes (default: $FP8REF_PYTHON, else python3)");
  cmd->callback([o] {
    for (const std::string& t : o->source_tokens) o->sources.push_back(parse_source_option(t));
    run(*o);
  });
}

}  // namespace fp8ref::cli
