// `fp8-check fuzz` (fuzz.h): option parsing, progress and the summary; the campaign itself is
// tools/campaign/runner.h.
#include "cli/fuzz.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "campaign/runner.h"
#include "campaign/suite.h"
#include "cli/errors.h"
#include "cli/fuzz_report.h"
#include "cli/number_options.h"
#include "numerics/plant.h"

#ifndef FP8REF_SOURCE_DIR
#define FP8REF_SOURCE_DIR ""
#endif

namespace fp8ref::cli {

namespace {

struct FuzzArgs {
  std::vector<std::string> suites;
  double seconds = 0;
  std::int64_t cases = -1;
  std::uint64_t seed = 20261122;
  std::string shard = "0/1";
  bool json = false, quiet = false, list = false;
  std::string replay, replay_file, plant, failure_dir, golden;
  std::string junit;                     // --junit FILE
  std::vector<std::string> merge_files;  // fuzz merge FILE...
  int batch = 25;
  int threads = 1;
  bool test_level = false;
  bool require_classes = false;
#ifdef FP8REF_PLANT_HOOKS
  bool list_plants = false;
#endif
};

// FP8REF_TEST_LEVEL (1..3) as proptests/common reads it: case multiplier 1, 4, 16.
int level_factor() {
  const char* env = std::getenv("FP8REF_TEST_LEVEL");
  const std::string v = env ? env : "";
  if (v.empty() || v == "1") return 1;
  if (v == "2") return 4;
  if (v == "3") return 16;
  throw UsageError("FP8REF_TEST_LEVEL must be 1, 2 or 3, got '" + v + "'");
}

#if defined(__SANITIZE_ADDRESS__)
constexpr int kSanitizerDivisor = 10;  // ASan+UBSan builds run a tenth of the cases
#else
constexpr int kSanitizerDivisor = 1;
#endif

std::string default_golden() {
  std::error_code ec;
  if (std::filesystem::is_directory("golden/regressions", ec)) return "golden";
  const std::string src = std::string(FP8REF_SOURCE_DIR) + "/golden";
  if (!std::string(FP8REF_SOURCE_DIR).empty() &&
      std::filesystem::is_directory(src + "/regressions", ec))
    return src;
  return "";
}

void parse_shard(const std::string& s, int& i, int& n) {
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    std::size_t p1 = 0, p2 = 0;
    i = std::stoi(s.substr(0, slash), &p1);
    n = std::stoi(s.substr(slash + 1), &p2);
    if (p1 != slash || p2 != s.size() - slash - 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError("--shard wants i/n (e.g. 3/8), got '" + s + "'");
  }
  if (n < 1 || i < 0 || i >= n) throw UsageError("--shard i/n needs 0 <= i < n, got '" + s + "'");
}

std::string hex64(std::uint64_t x) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x));
  return b;
}

std::string fixed(double x, int prec) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

nlohmann::json suite_json(const fuzz::SuiteReport& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["label"] = s.label;
  j["status"] = fuzz::to_string(s.status);
  if (!s.skip_reason.empty()) j["skip_reason"] = s.skip_reason;
  j["cases"] = s.cases;
  j["seconds"] = s.seconds;
  j["cases_per_second"] = s.cases_per_second();
  j["classes"] = nlohmann::json::object();
  for (const auto& [k, v] : s.class_counts) j["classes"][k] = v;
  j["classes_expected"] = s.classes_expected;
  j["classes_missing"] = s.classes_missing;
  j["classes_rare"] = s.classes_rare;
  j["coverage_required"] = s.coverage_required;
  j["fingerprint"] = hex64(s.fingerprint);
  if (nlohmann::json st = strength_json(s); !st.is_null()) j["strength"] = std::move(st);
  j["failures"] = nlohmann::json::array();
  for (const auto& f : s.failures)
    j["failures"].push_back({{"message", f.message},
                             {"counterexample", f.counterexample},
                             {"replay", f.replay},
                             {"case_file", f.dump},
                             {"batch_seed", f.batch_seed}});
  return j;
}

void print_failures(const fuzz::SuiteReport& s) {
  for (const auto& f : s.failures) {
    std::cout << "\nFAILED " << s.name << ": " << f.message << "\n";
    if (!f.counterexample.empty()) std::cout << "  counterexample: " << f.counterexample << "\n";
    if (!f.replay.empty()) std::cout << "  replay: " << f.replay << "\n";
    if (!f.dump.empty()) std::cout << "  case file: " << f.dump << "\n";
    if (!f.dump.empty() && f.dump[0] != '(')
      std::cout << "  pin it: fp8-check golden accept " << f.dump << " --as " << s.name << "_"
                << hex64(f.batch_seed).substr(0, 8) << "\n";
  }
}

void print_table(const fuzz::CampaignReport& rep) {
  std::printf("\n%-22s %-5s %-8s %9s %9s %9s %8s\n", "suite", "label", "status", "cases", "cases/s",
              "classes", "failures");
  std::int64_t total = 0;
  std::size_t failures = 0;
  for (const auto& s : rep.suites) {
    const std::string classes =
        s.classes_expected
            ? std::to_string(s.classes_expected - std::int64_t(s.classes_missing.size())) + "/" +
                  std::to_string(s.classes_expected)
            : std::to_string(s.class_counts.size());
    std::printf(
        "%-22s %-5s %-8s %9lld %9s %9s %8zu\n", s.name.c_str(), s.label.c_str(),
        fuzz::to_string(s.status), static_cast<long long>(s.cases),
        s.status == fuzz::SuiteStatus::skipped ? "-" : fixed(s.cases_per_second(), 1).c_str(),
        s.status == fuzz::SuiteStatus::skipped ? "-" : classes.c_str(), s.failures.size());
    total += s.cases;
    failures += s.failures.size();
  }
  // Every suite skipped (GPU suites on a machine without one): the total says so, not "passed".
  const bool all_skipped =
      !rep.suites.empty() && std::all_of(rep.suites.begin(), rep.suites.end(), [](const auto& s) {
        return s.status == fuzz::SuiteStatus::skipped;
      });
  std::printf("%-22s %-5s %-8s %9lld %9s %9s %8zu\n", "total", "",
              !rep.ok()     ? "FAILED"
              : all_skipped ? "skipped"
                            : "passed",
              static_cast<long long>(total),
              fixed(rep.seconds > 0 ? double(total) / rep.seconds : 0, 1).c_str(), "", failures);
  for (const auto& s : rep.suites) {
    if (s.status == fuzz::SuiteStatus::skipped)
      std::printf("  %s skipped: %s\n", s.name.c_str(), s.skip_reason.c_str());
    if (!s.classes_missing.empty() && s.status == fuzz::SuiteStatus::passed) {
      std::string m;
      for (const auto& c : s.classes_missing) {
        const bool rare =
            std::find(s.classes_rare.begin(), s.classes_rare.end(), c) != s.classes_rare.end();
        m += (m.empty() ? "" : " ") + c + (rare ? " (rare)" : "");
      }
      std::printf("  %s: classes not hit in this run: %s\n", s.name.c_str(), m.c_str());
    }
  }
  for (const auto& s : rep.suites)
    for (const std::string& line : strength_lines(s)) std::printf("  %s\n", line.c_str());
  for (const auto& s : rep.suites) print_failures(s);
  std::fflush(stdout);
}

nlohmann::json report_json(const fuzz::CampaignReport& rep) {
  nlohmann::json j;
  j["schema"] = "fp8ref.fuzz/1";
  j["seed"] = rep.seed;
  j["shard"] = {{"index", rep.shard_index}, {"count", rep.shard_count}};
  j["threads"] = rep.threads;
  j["seconds"] = rep.seconds;
  j["ok"] = rep.ok();
  j["suites"] = nlohmann::json::array();
  for (const auto& s : rep.suites) j["suites"].push_back(suite_json(s));
  return j;
}

// The report on stdout (table or --json), the --junit file, and the exit code.
void finish(const fuzz::CampaignReport& rep, const FuzzArgs& a) {
  if (!a.junit.empty()) write_report_file(a.junit, fuzz_junit_xml(rep));
  if (a.json)
    std::cout << report_json(rep).dump(2) << "\n";
  else
    print_table(rep);
  std::cout.flush();
  if (!rep.ok()) throw ExitCode{1};
}

// The campaign options of the command line (UsageError for a bad combination).
fuzz::CampaignOptions campaign_options(const FuzzArgs& a) {
  fuzz::CampaignOptions opt;
  opt.suites = a.suites;
  opt.seed = a.seed;
  parse_shard(a.shard, opt.shard_index, opt.shard_count);
  if (a.cases >= 0) opt.cases = a.cases;
  if (a.test_level) {
    if (a.cases >= 0 || a.seconds > 0)
      throw UsageError("--test-level excludes --cases and --seconds");
    opt.case_factor = double(level_factor()) / kSanitizerDivisor;
  }
  if (a.seconds > 0) opt.seconds = a.seconds;
  if (a.cases < 0 && a.seconds <= 0 && !a.test_level) opt.seconds = 60;  // the default campaign
  if (a.batch < 1) throw UsageError("--batch must be >= 1");
  opt.batch_cases = a.batch;
  opt.failure_dir = a.failure_dir;
  if (a.threads < 1) throw UsageError("--threads must be >= 1");
  opt.threads = a.threads;
  opt.require_classes = a.require_classes;
  std::error_code ec;
  if (!a.golden.empty() && !std::filesystem::is_directory(a.golden + "/regressions", ec))
    throw UsageError("--golden " + a.golden + ": no regressions/ folder there");
  opt.golden_dir = a.golden.empty() ? default_golden() : a.golden;
#ifdef FP8REF_PLANT_HOOKS
  try {
    (void)plant::parse(a.plant);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--plant: ") + e.what());
  }
  opt.plant = a.plant;
  opt.command = "fp8-check-planted";
#endif
  return opt;
}

// --list (and --list-plants in the planted build); false when neither was asked for.
bool print_lists(const FuzzArgs& a) {
#ifdef FP8REF_PLANT_HOOKS
  if (a.list_plants) {
    for (std::size_t i = 1; i < plant::kNames.size(); ++i)
      std::printf("%s\n", std::string(plant::kNames[i]).c_str());
    return true;
  }
#endif
  if (!a.list) return false;
  for (const auto& s : fuzz::all_suites())
    std::printf("%-22s %-4s %s%s\n", s.info.name.c_str(), s.info.label.c_str(),
                s.info.summary.c_str(),
                s.unavailable_reason().empty()
                    ? ""
                    : (" [unavailable: " + s.unavailable_reason() + "]").c_str());
  std::printf("%-22s %-4s %s\n", "golden.regressions", "cpu",
              "replays the pinned cases of golden/regressions");
  return true;
}

// --replay TOKEN or --replay-file FILE: one case, as a one-suite report.
fuzz::CampaignReport run_replay(const FuzzArgs& a, const fuzz::CampaignOptions& opt) {
  if (!a.replay.empty() && !a.replay_file.empty())
    throw UsageError("--replay and --replay-file exclude each other");
  if (!a.replay.empty() && a.suites.size() != 1)
    throw UsageError("--replay needs exactly one --suite");
  if (a.suites.size() > 1) throw UsageError("--replay-file takes at most one --suite");
  const std::string suite = a.suites.empty() ? "" : a.suites[0];
  fuzz::CampaignReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  rep.suites.push_back(a.replay.empty() ? fuzz::replay_case_file(a.replay_file, suite, opt)
                                        : fuzz::replay_token(suite, a.replay, opt));
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

// The campaign with its header line and progress on stderr (a status line on a terminal, one
// line per suite and every 10 s otherwise).
fuzz::CampaignReport run_with_progress(const FuzzArgs& a, const fuzz::CampaignOptions& opt) {
  const bool tty = isatty(2) && !a.quiet;
  auto last = std::make_shared<double>(-100.0);
  auto current = std::make_shared<std::size_t>(std::size_t(-1));
  const std::size_t nsuites = fuzz::select_suites(opt.suites).size();
  if (!a.quiet && !a.json)
    std::fprintf(stderr, "fp8-check fuzz: seed %llu, shard %d/%d, %zu suites, %s\n",
                 static_cast<unsigned long long>(opt.seed), opt.shard_index, opt.shard_count,
                 nsuites,
                 opt.cases     ? (std::to_string(*opt.cases) + " cases each").c_str()
                 : opt.seconds ? (fixed(*opt.seconds, 0) + " s budget").c_str()
                               : "the test-level case counts");
  auto progress = [&, last, current](std::size_t si, const std::string& name, std::int64_t cases,
                                     std::size_t fails, double secs) {
    if (a.quiet) return;
    const bool new_suite = *current != si;
    *current = si;
    if (!tty && !new_suite && secs - *last < 10.0) return;
    *last = new_suite ? 0.0 : secs;
    std::fprintf(stderr, "%s[%zu/%zu] %-22s %8lld cases %8.1f/s %zu failures%s", tty ? "\r" : "",
                 si + 1, nsuites, name.c_str(), static_cast<long long>(cases),
                 secs > 0 ? double(cases) / secs : 0.0, fails, tty ? "   " : "\n");
    std::fflush(stderr);
  };
  fuzz::CampaignReport rep = fuzz::run_campaign(opt, progress);
  if (tty) std::fprintf(stderr, "\n");
  return rep;
}

void run(const FuzzArgs& a) {
  const fuzz::CampaignOptions opt = campaign_options(a);
  if (print_lists(a)) return;
  fuzz::CampaignReport rep =
      !a.replay.empty() || !a.replay_file.empty() ? run_replay(a, opt) : run_with_progress(a, opt);
  rep.seed = opt.seed;
  rep.shard_index = opt.shard_index;
  rep.shard_count = opt.shard_count;
  rep.threads = opt.threads;
  finish(rep, a);
}

// `fuzz merge FILE...`: the --json reports of shards or runs as one summary.
void run_merge(const FuzzArgs& a) {
  std::vector<fuzz::CampaignReport> reports;
  for (const auto& f : a.merge_files) reports.push_back(read_fuzz_report(f));
  finish(merge_fuzz_reports(reports, a.merge_files), a);
}

}  // namespace

void add_fuzz_command(CLI::App& app) {
  auto a = std::make_shared<FuzzArgs>();
  CLI::App* c =
      app.add_subcommand("fuzz", "Run the property suites as a fuzz campaign (docs/fuzz.md)");
  c->add_option("--suite", a->suites,
                "Suite name, prefix* or label:cpu|label:gpu (repeatable; default: all)");
  c->add_option("--seconds", a->seconds,
                "Time budget of the campaign, split over the suites (default 60)")
      ->check(seconds_up_to(kMaxSeconds));
  c->add_option("--cases", a->cases, "Cases per suite (per shard); wins over --seconds")
      ->check(count_in(1, std::uint64_t{1} << 40));
  c->add_option("--seed", a->seed, "Campaign seed (default 20261122, the CI seed)")
      ->check(count_in(0, UINT64_MAX));
  c->add_option("--shard", a->shard,
                "i/n: run the i-th of n disjoint slices of the seed space (default 0/1)");
  c->add_option("--batch", a->batch, "Cases per seeded batch (default 25)")
      ->check(count_in(1, 1'000'000));
  c->add_option("--threads", a->threads,
                "OpenMP threads of the code under test (default 1; results must not change)")
      ->check(count_in(1, kMaxThreads));
  c->add_flag("--require-classes", a->require_classes,
              "Fail a suite that missed a required coverage class (rare ones from 4x the level-1 "
              "case count)");
  c->add_flag("--test-level", a->test_level,
              "Each suite's CTest case count times the FP8REF_TEST_LEVEL factor (1, 4, 16)");
  c->add_flag("--json", a->json, "Print the report as JSON (schema fp8ref.fuzz/1)");
  c->add_flag("--quiet", a->quiet, "No progress on stderr");
  c->add_flag("--list", a->list, "List the suites and exit");
  c->add_option("--replay", a->replay,
                "Replay one shrunk case from the token a failure printed (with --suite)");
  c->add_option("--replay-file", a->replay_file,
                "Check a case file (a failure's dump or a pinned regression)");
  c->add_option(
      "--failure-dir", a->failure_dir,
      "Where failing cases are written (default $FP8REF_FAILURE_DIR or ./fp8ref-failures)");
  c->add_option("--golden", a->golden,
                "golden/ folder whose regressions/ the golden.regressions suite replays");
#ifdef FP8REF_PLANT_HOOKS
  c->add_option("--plant", a->plant,
                "Plant one catalogued bug (numerics/plant.h) in the code under test");
  c->add_flag("--list-plants", a->list_plants, "List the catalogued bugs and exit");
#endif
  c->add_option("--junit", a->junit,
                "Also write a JUnit XML report to FILE (one testcase per suite; failures carry "
                "the replay command)");
  CLI::App* m = c->add_subcommand(
      "merge", "Fold the --json reports of shards or runs into one summary (docs/fuzz.md)");
  m->add_option("files", a->merge_files, "fp8ref.fuzz/1 report files")->required();
  m->add_flag("--json", a->json, "Print the merged report as JSON (schema fp8ref.fuzz/1)");
  m->add_option("--junit", a->junit, "Also write the merged report as JUnit XML to FILE");
  m->callback([a] { run_merge(*a); });
  c->callback([a, m] {
    if (!m->parsed()) run(*a);
  });
}

}  // namespace fp8ref::cli
