// Fuzz reports after the run (docs/fuzz.md §Merging and JUnit): `fp8-check fuzz merge` reads the
// --json reports (schema fp8ref.fuzz/1) of several shards or runs back and folds them into one
// summary; `fuzz --junit FILE` (and `fuzz merge --junit FILE`) writes a JUnit XML report, one
// testcase per suite, for CI systems.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "campaign/runner.h"

namespace fp8ref::cli {

// Reads one fp8ref.fuzz/1 report file; UsageError (one line, exit 2) naming the file on
// anything else.
fuzz::CampaignReport read_fuzz_report(const std::string& path);

// One report of several: per suite (by name) cases, seconds and class counts add, a class is
// missing only if every report missed it, failures concatenate; status failed if any report
// failed, passed if any passed, else skipped. The reports' shards must be distinct (same seed
// and shard i/n twice would count its cases twice: UsageError). Suite fingerprints are folded
// (FNV-1a over the shards' fingerprints in shard order); seconds is the sum (CPU time of the
// shards, not wall time).
fuzz::CampaignReport merge_fuzz_reports(const std::vector<fuzz::CampaignReport>& reports,
                                        const std::vector<std::string>& files);

// JUnit XML: <testsuites> with one <testsuite name="fp8-check fuzz">, one <testcase> per suite
// (classname fp8ref.fuzz.<label>); a failure is a <failure> whose text has the counterexample,
// the replay command and the case file; a skipped suite has <skipped message=reason>.
std::string fuzz_junit_xml(const fuzz::CampaignReport& report);

// Writes `text` to `path` (UsageError when it cannot).
void write_report_file(const std::string& path, const std::string& text);

// A suite's test strength (docs/fuzz.md "Test strength") from its `strength:N` and `vacuous:*`
// class counts (tools/campaign/strength.h): measured cases, the distribution of N (how many
// configurations reproduce a case's output, the declared one included), the strength-1 count and
// share, the vacuous-data counts and a warning for each kind seen. Null when the suite measured
// nothing. Derived from the class counts, so `fuzz merge` folds it as it folds the classes.
nlohmann::json strength_json(const fuzz::SuiteReport& s);
// The same as text lines for the table (empty when nothing was measured).
std::vector<std::string> strength_lines(const fuzz::SuiteReport& s);

}  // namespace fp8ref::cli
