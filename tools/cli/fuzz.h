// `fp8-check fuzz` (docs/fuzz.md): runs the property suites of tools/campaign as a
// campaign: live progress, a summary table (cases, classes hit, failures with their replay
// commands, cases/s), --json with schema fp8ref.fuzz/1, --shard i/n for job arrays, and the
// replay of one shrunk case (--replay TOKEN) or of a case file (--replay-file FILE); --junit FILE
// for CI systems and `fuzz merge` of several --json reports (fuzz_report.h).
// Exit 0: every suite that ran passed (skipped GPU suites are listed as skipped); 1: a failure;
// 2: bad usage or input.
#pragma once

#include <CLI/CLI.hpp>

namespace fp8ref::cli {

void add_fuzz_command(CLI::App& app);

}  // namespace fp8ref::cli
