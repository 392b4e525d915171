// The fuzz campaign runner behind `fp8-check fuzz` (docs/fuzz.md): runs suites in batches of
// RapidCheck cases, each batch seeded from (campaign seed, suite, batch index), so a campaign is
// reproducible from its seed and `--shard i/n` takes the batches b ≡ i (mod n): n shards cover
// disjoint cases. A failure is shrunk (property_driver.h), run once more to capture the case as a
// safetensors file, and reported with a one-line replay command.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp8ref::fuzz {

struct CampaignOptions {
  std::vector<std::string> suites;    // names or label:cpu / label:gpu; empty = every suite
  std::optional<double> seconds;      // time budget of the whole campaign (split over suites)
  std::optional<std::int64_t> cases;  // cases per suite (per shard); wins over seconds
  double case_factor = 1.0;           // neither set: each suite's ctest_cases times this
  std::uint64_t seed = 20261122;
  int shard_index = 0, shard_count = 1;
  int batch_cases = 25;
  std::string failure_dir;  // where failing cases are written
  std::string golden_dir;   // golden/ root for golden.regressions ("" = skip it)
#ifdef FP8REF_PLANT_HOOKS
  std::string plant;  // the planted bug (numerics/plant.h) of fp8-check-planted
#endif
  int threads = 1;  // OpenMP threads of the code under test
  // Fail a suite that passed but missed a required coverage class (SuiteInfo::classes, less the
  // rare ones below 4× the suite's level-1 case count).
  bool require_classes = false;
  std::string command = "fp8-check";  // how replay lines name the executable
};

struct FailureReport {
  std::string message;         // the property's message
  std::string counterexample;  // RapidCheck's shown values
  std::string replay;          // one-line replay command
  std::string dump;            // the written case file, or why none was written
  std::uint64_t batch_seed = 0;
};

// How a suite's run ended; reports print it with to_string (the JSON "status" token).
enum class SuiteStatus : std::uint8_t { passed, failed, skipped };
inline constexpr SuiteStatus kAllSuiteStatuses[] = {SuiteStatus::passed, SuiteStatus::failed,
                                                    SuiteStatus::skipped};
constexpr const char* to_string(SuiteStatus s) {
  switch (s) {
    case SuiteStatus::passed: return "passed";
    case SuiteStatus::failed: return "failed";
    case SuiteStatus::skipped: return "skipped";
  }
  return "?";
}

struct SuiteReport {
  std::string name, label, summary;
  SuiteStatus status = SuiteStatus::passed;
  std::string skip_reason;
  std::int64_t cases = 0;
  double seconds = 0;
  std::map<std::string, std::int64_t> class_counts;  // tag -> cases
  std::vector<std::string> classes_missing;          // declared classes not hit
  std::vector<std::string> classes_rare;             // declared classes not required at level 1
  std::int64_t classes_expected = 0;
  bool coverage_required = false;  // --require-classes applied to this suite
  std::uint64_t fingerprint = 0;
  std::vector<FailureReport> failures;
  double cases_per_second() const { return seconds > 0 ? double(cases) / seconds : 0.0; }
};

struct CampaignReport {
  std::vector<SuiteReport> suites;
  double seconds = 0;
  std::uint64_t seed = 0;
  int shard_index = 0, shard_count = 1;
  int threads = 1;
  bool ok() const;
};

// Progress after each batch: suite index, suite name, cases so far, failures so far, elapsed s.
using ProgressFn =
    std::function<void(std::size_t, const std::string&, std::int64_t, std::size_t, double)>;

// Throws std::invalid_argument for unknown suite names or bad options.
CampaignReport run_campaign(const CampaignOptions& opt, const ProgressFn& progress);

// Replays one shrunk case from its replay token (the `--replay` argument): the report has one
// case and, when it still fails, the failure (case file written again).
SuiteReport replay_token(const std::string& suite, const std::string& token,
                         const CampaignOptions& opt);

// Checks a case file (a dump, or a pinned regression) against the suite named in its metadata
// (`fp8ref.suite`) or `suite` when given.
SuiteReport replay_case_file(const std::string& path, const std::string& suite,
                             const CampaignOptions& opt);

// The names of the suites matching a selector list (see CampaignOptions::suites).
std::vector<std::string> select_suites(const std::vector<std::string>& selectors);

std::string hex_encode(const std::vector<std::uint8_t>& bytes);

}  // namespace fp8ref::fuzz
