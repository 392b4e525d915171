// `fp8-check selfcheck` as a user runs it, on its bf16 rows (the plan of docs/cli.md: 8 cuda rows
// — e4m3 and e5m2 under both cuda profiles, e8m0 under both with rtz and rup — 6 oracle rows and
// 3 ml_dtypes rows): rows without a peer are listed as skipped and the run exits 3 with a
// SKIPPED verdict, never 0; a run where every row ran clean exits 0 with an OK verdict; bad
// --sources / --samples exit 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "proptests/cli/cli_runner.h"

namespace fp8ref::test {
namespace {

constexpr int kCudaRows = 8, kOracleRows = 6, kMlDtypesRows = 3;
constexpr int kBf16Rows = kCudaRows + kOracleRows + kMlDtypesRows;

bool has(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// An interpreter path that cannot exist: the ml_dtypes rows have no peer.
const char* kNoPython = "/nonexistent/fp8ref/python3";

TEST(SelfcheckCommand, MissingPeerRowsAreSkippedAndExitThree) {
  const int skipped = kMlDtypesRows + (FP8REF_CLI_TEST_HAVE_CUDA ? 0 : kCudaRows);
  const CliRun r =
      run_fp8_check({"selfcheck", "--sources", "bf16", "--python", kNoPython, "--quiet"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "SKIPPED: " + std::to_string(skipped) + " of " +
                             std::to_string(kBf16Rows) + " sweeps did not run"))
      << r.out;
  EXPECT_TRUE(
      has(r.out, std::to_string(kMlDtypesRows) + " without a peer: no Python with ml_dtypes"))
      << r.out;
  EXPECT_FALSE(has(r.out, "OK:")) << r.out;
  EXPECT_FALSE(has(r.out, "FAILED:")) << r.out;
  // Every row that ran is a clean 2^16 sweep.
  EXPECT_TRUE(has(r.out, "65536 inputs, 0 mismatches")) << r.out;
}

TEST(SelfcheckCommand, JsonCountsRanAndSkippedRows) {
  const int skipped = kMlDtypesRows + (FP8REF_CLI_TEST_HAVE_CUDA ? 0 : kCudaRows);
  const CliRun r =
      run_fp8_check({"selfcheck", "--sources", "bf16", "--python", kNoPython, "--quiet", "--json"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "\"ran\":" + std::to_string(kBf16Rows - skipped) +
                             ",\"failed\":0,\"skipped\":" + std::to_string(skipped)))
      << r.out;
  EXPECT_TRUE(has(r.err, "SKIPPED: ")) << r.err;  // with --json the verdict goes to stderr
}

TEST(SelfcheckCommand, EveryRowRanCleanExitsZero) {
  const char* python = std::getenv("FP8REF_PYTHON");
  if (python == nullptr || *python == '\0') GTEST_SKIP() << "FP8REF_PYTHON is not set";
  if (!FP8REF_CLI_TEST_HAVE_CUDA) GTEST_SKIP() << "built without cuda_fp8.h: no cuda peer";
  const CliRun r = run_fp8_check({"selfcheck", "--sources", "bf16", "--python", python, "--quiet"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "OK: all " + std::to_string(kBf16Rows) + " sweeps ran, 0 mismatches"))
      << r.out;
  EXPECT_FALSE(has(r.out, "SKIPPED")) << r.out;
}

TEST(SelfcheckCommand, BadSourcesOrSamplesExitTwo) {
  for (const auto& args : {std::vector<std::string>{"selfcheck", "--sources", "bf16,f33"},
                           std::vector<std::string>{"selfcheck", "--samples", "0"}}) {
    const CliRun r = run_fp8_check(args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_TRUE(has(r.err, "fp8-check: error:")) << r.err;
  }
}

}  // namespace
}  // namespace fp8ref::test
