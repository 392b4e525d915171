// `fp8-check sweep` as a user runs it: the 2^16 bf16 sweeps against CUDA's host functions and the
// table oracle report "65536 inputs, 0 mismatches" and exit 0; a profile swept against a library
// it does not reproduce exits 1 with the first mismatches in input order, the same for any thread
// count; impossible requests exit 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "proptests/cli/cli_runner.h"

namespace fp8ref::test {
namespace {

using Args = std::vector<std::string>;

bool has(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

void expect_clean_sweep(const std::string& format, const std::string& profile,
                        const std::string& peer, const Args& extra = {}) {
  Args args = {"sweep",  "--format", format,      "--profile", profile,
               "--from", "bf16",     "--against", peer,        "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliRun r = run_fp8_check(args);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "\n65536 inputs, 0 mismatches\n")) << r.out;
}

TEST(SweepCommand, Bf16AgainstCudaHostFunctions) {
#if !FP8REF_CLI_TEST_HAVE_CUDA
  GTEST_SKIP() << "built without the CUDA toolkit: no cuda_fp8.h peer";
#endif
  for (const char* p : {"cuda_satfinite", "cuda_nosat"}) {
    expect_clean_sweep("e4m3", p, "cuda");
    expect_clean_sweep("e5m2", p, "cuda");
    expect_clean_sweep("e8m0", p, "cuda", {"--rounding", "rtz"});
    expect_clean_sweep("e8m0", p, "cuda", {"--rounding", "rup"});
  }
}

TEST(SweepCommand, Bf16AgainstTableOracle) {
  for (const char* f : {"e4m3", "e5m2", "e8m0"})
    for (const char* p : {"torch_2_11", "ml_dtypes_0_6", "ocp_sat", "ocp_nosat"})
      expect_clean_sweep(f, p, "oracle");
}

// --engine table swaps fp8ref's side for numerics/encode_table.h and says so; f64 is refused.
TEST(SweepCommand, TableEngineAgainstTableOracle) {
  for (const char* f : {"e4m3", "e5m2", "e8m0"}) {
    expect_clean_sweep(f, "ocp_nosat", "oracle", {"--engine", "table", "--rounding", "rup"});
    const CliRun r =
        run_fp8_check({"sweep", "--format", f, "--profile", "torch_2_11", "--from", "f16",
                       "--against", "oracle", "--engine", "table", "--json", "--quiet"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "\"engine\":\"table\"")) << r.out;
    EXPECT_TRUE(has(r.out, "\"inputs\":65536,\"mismatches\":0")) << r.out;
  }
  const CliRun r =
      run_fp8_check({"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--from", "f64",
                     "--samples", "16", "--against", "oracle", "--engine", "table", "--quiet"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "--engine table")) << r.err;
}

TEST(SweepCommand, JsonReportsCounts) {
  const CliRun r = run_fp8_check({"sweep", "--format", "e4m3", "--profile", "torch_2_11", "--from",
                                  "f16", "--against", "oracle", "--json", "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"schema\":\"fp8ref.sweep/1\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"inputs\":65536,\"mismatches\":0")) << r.out;
}

// torch_2_11 writes e5m2 NaN as 7f | sign, ml_dtypes as 7e | sign: sweeping one against the
// other fails on exactly the 2 * 127 bf16 NaN patterns, listed in input order whatever the
// thread count.
TEST(SweepCommand, MismatchesAreReportedInInputOrder) {
  const char* python = std::getenv("FP8REF_PYTHON");
  if (python == nullptr || *python == '\0') GTEST_SKIP() << "FP8REF_PYTHON is not set";
  for (const char* threads : {"1", "2", "3"}) {
    const CliRun r =
        run_fp8_check({"sweep", "--format", "e5m2", "--profile", "torch_2_11", "--from", "bf16",
                       "--against", "ml_dtypes", "--threads", threads, "--show", "3", "--quiet"});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "\n65536 inputs, 254 mismatches\n")) << r.out;
    EXPECT_TRUE(has(r.out,
                    "  0x7f81  expected 0x7e  got 0x7f\n"
                    "  0x7f82  expected 0x7e  got 0x7f\n"
                    "  0x7f83  expected 0x7e  got 0x7f\n"))
        << r.out;
  }
}

TEST(SweepCommand, ImpossibleRequestsExitTwo) {
  const auto expect_2 = [](const Args& args, const std::string& needle) {
    const CliRun r = run_fp8_check(args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_TRUE(has(r.err, needle)) << r.err;
  };
  expect_2({"sweep", "--format", "e4m3", "--profile", "torch_2_11", "--from", "bf16", "--against",
            "cuda"},
           "cuda");
  expect_2(
      {"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--from", "f64", "--against", "oracle"},
      "--samples");
  expect_2({"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--from", "bf16", "--against",
            "nobody"},
           "peer");
  expect_2({"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--from", "bf16", "--first",
            "65537", "--against", "oracle"},
           "--first");
  expect_2({"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--from", "bf16"}, "--against");
  expect_2({"sweep", "--format", "e4m3", "--profile", "ml_dtypes_0_6", "--from", "bf16",
            "--against", "ml_dtypes", "--python", "/nonexistent/python"},
           "ml_dtypes");
}

}  // namespace
}  // namespace fp8ref::test
