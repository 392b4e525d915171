// `fp8-check encode` / `decode` as a user runs them: known values piped through the executable,
// bytes checked. Expected codes are derived by hand from the OCP FP8 v1.0 / MX v1.0 definitions
// (derivation next to each) and agree with ml_dtypes 0.6 astype where that library has the cast;
// never computed by numerics/. Bad input must give exit 2 and exactly one `fp8-check: error:` line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proptests/cli/cli_runner.h"

namespace fp8ref::test {
namespace {

using Args = std::vector<std::string>;

// Runs encode/decode and expects exit 0 with `expected` as the whole stdout.
void expect_output(const Args& args, const std::string& in, const std::string& expected) {
  const CliRun r = run_fp8_check(args, in);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.err, "");
}

void expect_usage_error(const Args& args, const std::string& in, const std::string& needle) {
  const CliRun r = run_fp8_check(args, in);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("fp8-check: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(EncodeCommand, E4m3FromF32KnownCodes) {
  // f32 pattern -> e4m3 (bias 7, 3 fraction bits), round to nearest even:
  //   0x43e00000 = 448 = 1.75 * 2^8: e = 8 + 7 = 0b1111, m = 0b110  -> 0_1111_110 = 7e (max)
  //   0x43e80000 = 464, halfway 448 | 480: 480 would be m = 0b111 (odd) -> 448         = 7e
  //   0x3f800000 = 1:     e = 0 + 7 = 0b0111, m = 0                  -> 0_0111_000 = 38
  //   0xbf800000 = -1:    sign bit set                                ->              b8
  //   0x3b000000 = 2^-9 = 1 * 2^-6 * 1/8, smallest subnormal          -> 0_0000_001 = 01
  //   0x3a800000 = 2^-10, halfway 0 | 2^-9, tie to even (0)           ->              00
  //   0x3ac00000 = 1.5 * 2^-10, above the midpoint                    ->              01
  //   0x80000000 = -0 keeps its sign                                  ->              80
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat"},
                "43e00000\n43e80000\n3f800000\nbf800000\n3b000000\n3a800000\n3ac00000\n80000000\n",
                "7e\n7e\n38\nb8\n01\n00\n01\n80\n");
}

TEST(EncodeCommand, E4m3OverflowAndNanPerProfile) {
  // 0x43e80001: just above 464, nearer 480 (not a value): saturating -> 7e, else NaN 7f.
  // +Inf: saturating profiles clamp to max (7e); torch keeps it as NaN (7f). NaN: torch keeps
  // the sign (0xffc00000 -> ff); cuda_fp8.h's float path writes 7f for every NaN.
  const std::string in = "43e80001\n7f800000\n7fc00000\nffc00000\n";
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat"}, in, "7e\n7e\n7f\nff\n");
  expect_output({"encode", "--format", "e4m3", "--profile", "torch_2_11"}, in, "7f\n7f\n7f\nff\n");
  expect_output({"encode", "--format", "e4m3", "--profile", "cuda_nosat"}, in, "7f\n7f\n7f\n7f\n");
}

TEST(EncodeCommand, E5m2BoundariesAndLibraryNans) {
  // e5m2 (bias 15, 2 fraction bits): 0x47600000 = 57344 = 1.75 * 2^15 -> 0_11110_11 = 7b (max);
  // 0x47700000 = 61440, halfway 57344 (m = 11, odd) | 65536 = 0_11111_00 (Inf, even): ties go
  // to Inf without saturation (7c), to max with it (7b). NaN: ml_dtypes writes 7e | sign, torch
  // 7f | sign.
  const std::string in = "47600000\n47700000\n7fc00000\nffc00000\n";
  expect_output({"encode", "--format", "e5m2", "--profile", "ml_dtypes_0_6"}, in,
                "7b\n7c\n7e\nfe\n");
  expect_output({"encode", "--format", "e5m2", "--profile", "torch_2_11"}, in, "7b\n7c\n7f\nff\n");
  expect_output({"encode", "--format", "e5m2", "--profile", "cuda_satfinite"}, in,
                "7b\n7b\n7f\n7f\n");
}

TEST(EncodeCommand, E8m0RoundingsAndZeroHandling) {
  // e8m0 = 2^(code - 127): 1 -> 7f. Nearest with ties up (torch, ml_dtypes): 1.5 -> 2 (80),
  // 0.75 -> 1 (7f), 3 -> 4 (81). 0: ml_dtypes NaN ff, torch 2^-127 (00); -1: ml_dtypes ff, torch
  // ignores the sign (7f). CUDA rz floors 1.5 -> 7f, rp rounds it up -> 80.
  const std::string in = "3f800000\n3fc00000\n3f400000\n40400000\n00000000\nbf800000\n";
  expect_output({"encode", "--format", "e8m0", "--profile", "ml_dtypes_0_6"}, in,
                "7f\n80\n7f\n81\nff\nff\n");
  expect_output({"encode", "--format", "e8m0", "--profile", "torch_2_11"}, in,
                "7f\n80\n7f\n81\n00\n7f\n");
  expect_output({"encode", "--format", "e8m0", "--profile", "cuda_satfinite", "--rounding", "rtz"},
                "3fc00000\n", "7f\n");
  expect_output({"encode", "--format", "e8m0", "--profile", "cuda_satfinite", "--rounding", "rup"},
                "3fc00000\n", "80\n");
}

TEST(EncodeCommand, OtherSourceTypes) {
  // 448 as bf16 (top half of the f32 pattern) 43e0, as f16 1.75 * 2^8 -> e = 23 = 0b10111,
  // m = 0b1100000000 -> 5f00, as f64 0x407c000000000000: all -> 7e.
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--from", "bf16"}, "43e0\n",
                "7e\n");
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--from", "f16"}, "5f00\n",
                "7e\n");
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--from", "f64"},
                "407c000000000000\n", "7e\n");
}

TEST(EncodeCommand, StochasticRoundingReadsRandomBits) {
  // 0x3f880000 = 1.0625, halfway 1 (38) | 1.125 (39): discarded fraction f = 1/2. With R = 1
  // random bit it rounds away iff floor(f * 2) + rand >= 2, i.e. iff rand = 1.
  expect_output(
      {"encode", "--format", "e4m3", "--profile", "ocp_sat", "--rounding", "sr", "--sr-bits", "1"},
      "3f880000 0\n3f880000 1\n", "38\n39\n");
}

TEST(EncodeCommand, TextFormTolerance) {
  // 0x / 0X prefix, surrounding blanks, CRLF, blank lines, upper-case digits, no final newline.
  expect_output({"encode", "--format", "e4m3", "--profile", "ocp_sat"},
                "0x3f800000\n  0X3F800000\t\r\n\n   \n3F800000", "38\n38\n38\n");
}

TEST(DecodeCommand, KnownValues) {
  // e4m3 7e = 448 -> f32 0x43e00000; 01 = 2^-9 -> 0x3b000000; 80 = -0 -> 0x80000000.
  expect_output({"decode", "--format", "e4m3"}, "7e\n01\n80\n", "43e00000\n3b000000\n80000000\n");
  // e5m2 7c = +Inf; e8m0 00 = 2^-127 (an f32 subnormal, 0x00400000), 7f = 1.
  expect_output({"decode", "--format", "e5m2"}, "7c\n", "7f800000\n");
  expect_output({"decode", "--format", "e8m0"}, "00\n7f\n", "00400000\n3f800000\n");
  expect_output({"decode", "--format", "e4m3", "--to", "f64"}, "0x7e\n", "407c000000000000\n");
}

TEST(CodecCommands, BadInputExitsTwoWithOneLine) {
  const Args enc = {"encode", "--format", "e4m3", "--profile", "ocp_sat"};
  expect_usage_error(enc, "xyz\n", "malformed hex");
  expect_usage_error(enc, "0x\n", "malformed hex");
  expect_usage_error(enc, "123456789\n", "too wide");  // 9 digits for a 32-bit source
  expect_usage_error(enc, "3f800000 1\n", "fields");
  expect_usage_error({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--from", "bf16"},
                     "3f800\n", "too wide");
  expect_usage_error({"encode", "--format", "e4m3", "--profile", "no_such_profile"}, "", "profile");
  expect_usage_error({"encode", "--format", "e9m9", "--profile", "ocp_sat"}, "", "format");
  expect_usage_error({"encode", "--profile", "ocp_sat"}, "", "--format");
  expect_usage_error({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--from", "f8"}, "",
                     "source");
  expect_usage_error({"encode", "--format", "e4m3", "--profile", "torch_2_11", "--rounding", "rtz"},
                     "", "torch_2_11");
  expect_usage_error({"encode", "--format", "e4m3", "--profile", "ocp_sat", "--rounding", "sr"},
                     "3f800000\n", "RAND");
  expect_usage_error({"decode", "--format", "e4m3"}, "100\n", "too wide");
  expect_usage_error({"decode", "--format", "e4m3", "--to", "f16"}, "", "--to");
  expect_usage_error({"no_such_command"}, "", "");
  // The error names the line it found.
  expect_usage_error(enc, "3f800000\n\n3f80000g\n", "line 3");
}

TEST(CodecCommands, VersionFlag) {
  const CliRun r = run_fp8_check({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("fp8-check ", 0), 0u) << r.out;
}

}  // namespace
}  // namespace fp8ref::test
