// Hostile-input laws of fp8-check and its readers (docs/security.md): every file below is written
// at test time by hostile_files.h; each must end in one `fp8-check: error:` line and exit 2 (or,
// for a valid file, a normal result) within a time limit and a bounded peak RSS.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hostile_files.h"

namespace fp8ref::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fp8ref_hostile_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name, const Blob& bytes) {
    const fs::path p = dir_ / name;
    write_blob(p, bytes);
    return p.string();
  }
  static LimitedRun check(const std::vector<std::string>& args, std::chrono::milliseconds t = 20s,
                          const std::string& out_path = "") {
    return run_limited(FP8REF_FP8_CHECK, args, t, out_path);
  }
  // The promise for bad input: exit 2 and exactly one `fp8-check: error:` line on stderr.
  static void expect_refused(const LimitedRun& r, const std::string& what) {
    EXPECT_FALSE(r.timed_out) << what << ": still running at the time limit";
    EXPECT_EQ(r.status, 2) << what << ": stderr [" << r.err << "]";
    EXPECT_EQ(r.err.rfind("fp8-check: error: ", 0), 0u) << what << ": [" << r.err << "]";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": [" << r.err << "]";
  }
  static bool have_fuzz() { return check({"fuzz", "--list"}).status == 0; }

  fs::path dir_;
};

// --- crashes ------------------------------------------------------------------------------------

TEST_F(Hostile, ByteCountThatWrapsModulo2To64IsRefused) {
  // 2^62 F32 elements need 2^64 bytes: a wrapped count equals the empty span [0, 0].
  const std::string f =
      file("wrap.safetensors", safetensors_blob(R"({"a":{"dtype":"F32",)"
                                                R"("shape":[4611686018427387904],)"
                                                R"("data_offsets":[0,0]}})"));
  expect_refused(check({"inspect", f}), "inspect");
  expect_refused(check({"diff", f, f}), "diff");
  const std::string g =
      file("wrap2.safetensors", safetensors_blob(R"({"a":{"dtype":"F64",)"
                                                 R"("shape":[2305843009213693952],)"
                                                 R"("data_offsets":[0,0]}})"));
  expect_refused(check({"inspect", g}), "inspect F64");
}

TEST_F(Hostile, TorchStorageReusedWithAWiderDtypeIsBoundsChecked) {
  // Storage "0" holds 8 bytes; "b" re-reads it as 8 doubles (64 bytes).
  const Blob pickle = pkl::dict_of({{"a", pkl::tensor_1d("ByteStorage", "0", 8, 8)},
                                    {"b", pkl::tensor_1d("DoubleStorage", "0", 8, 8)}});
  const std::string f = file("wide.pt", torch_zip_blob(pickle, {{"0", Blob(8, '\1')}}));
  expect_refused(check({"inspect", f}), "wider dtype");
}

TEST_F(Hostile, TorchStorageReusedWithMoreElementsIsBoundsChecked) {
  const Blob pickle = pkl::dict_of({{"a", pkl::tensor_1d("FloatStorage", "0", 2, 2)},
                                    {"b", pkl::tensor_1d("FloatStorage", "0", 100000, 100000)}});
  const std::string f = file("more.pt", torch_zip_blob(pickle, {{"0", Blob(8, '\1')}}));
  expect_refused(check({"inspect", f}), "more elements");
}

TEST_F(Hostile, TorchStorageReadTwiceConsistentlyIsAccepted) {
  const Blob pickle = pkl::dict_of({{"a", pkl::tensor_1d("FloatStorage", "0", 2, 2)},
                                    {"b", pkl::tensor_1d("FloatStorage", "0", 2, 1)}});
  const std::string f = file("tied.pt", torch_zip_blob(pickle, {{"0", Blob(8, '\0')}}));
  const LimitedRun r = check({"inspect", f});
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(Hostile, FuzzThreadCountOutsideItsRangeIsRefused) {
  if (!have_fuzz()) GTEST_SKIP() << "fp8-check built without `fuzz` (no RapidCheck)";
  for (const char* n : {"100000", "0", "-1", "1e3"})
    expect_refused(check({"fuzz", "--threads", n, "--cases", "1", "--quiet"}),
                   std::string("--threads ") + n);
}

// The summary's total row says what its suites did: a GPU suite run where it is skipped (no
// device, no CUDA build) must not total "passed"; where it ran, its row and the total agree.
TEST_F(Hostile, FuzzTotalOfSkippedSuitesSaysSkipped) {
  if (!have_fuzz()) GTEST_SKIP() << "fp8-check built without `fuzz` (no RapidCheck)";
  const LimitedRun r = check({"fuzz", "--suite", "gpu.pad", "--cases", "2"}, 120s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto status_of = [&](const std::string& row) {
    const auto at = r.out.find("\n" + row + " ");
    if (at == std::string::npos) return std::string("(no row " + row + ")");
    std::istringstream line(r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1));
    std::string name, label, status;
    line >> name >> label;
    if (row == "total") return label;  // the total row has no label column
    line >> status;
    return status;
  };
  const std::string suite = status_of("gpu.pad");
  EXPECT_TRUE(suite == "skipped" || suite == "passed") << r.out;
  EXPECT_EQ(status_of("total"), suite) << r.out;
}

// --- hangs and memory blow-ups ------------------------------------------------------------------

constexpr long kRssBoundKib = 1024 * 1024;  // 1 GiB: far above a bounded read, far below a blow-up
// Peak-RSS laws tighter than a blow-up (a copy avoided) are checked without ASan, whose shadow
// memory and quarantine add to the RSS of the process under test.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kTightRss = false;
#else
constexpr bool kTightRss = true;
#endif

TEST_F(Hostile, PickleGraphLargerThanTheFileIsRefused) {
  // 120 bytes of pickle: t0 = (); t_{k+1} = (t_k, t_k) through DUP: a DAG whose tree has 2^61
  // nodes, nested less deep than the walker's depth limit.
  Blob p = "\x80\x02)";
  for (int k = 0; k < 60; ++k) p += "2\x86";
  p += ".";
  const std::string f = file("dag.pt", torch_zip_blob(p, {}));
  const LimitedRun r = check({"inspect", f}, 10s);
  expect_refused(r, "shared sub-tuples");
  EXPECT_LT(r.max_rss_kib, kRssBoundKib);
}

TEST_F(Hostile, DeflatedPickleIsBoundedRelativeToTheFile) {
  // 64 MiB of ")0" (push an empty tuple, pop it) deflates to ~64 KiB.
  Blob p = "\x80\x02";
  p.reserve(std::size_t{64} << 20);
  for (int k = 0; k < (32 << 20); ++k) p += ")0";
  p += "N.";
  const std::string f = file("tuples.pt", torch_zip_blob(p, {}, /*deflate_pickle=*/true));
  const LimitedRun r = check({"inspect", f}, 20s);
  expect_refused(r, "deflated empty tuples");
  EXPECT_LT(r.max_rss_kib, kRssBoundKib);
}

TEST_F(Hostile, DecompressedBytesAreBoundedRelativeToTheFile) {
  // The directory claims 2 GiB from 4 MiB of deflate (within deflate's 1032:1 ratio).
  const Blob npz = zip_blob({{"x.npy", Blob(4 << 20, 'z'), false, std::uint64_t{2} << 30}});
  Blob deflated = npz;
  deflated[8] = 8;  // local header method: deflate (the payload is never inflated)
  const std::size_t cd = npz.rfind(std::string("PK\x01\x02", 4));
  deflated[cd + 10] = 8;
  const std::string f = file("bomb.npz", deflated);
  const LimitedRun r = check({"inspect", f}, 10s);
  expect_refused(r, "2 GiB member");
  EXPECT_NE(r.err.find("FP8REF_MAX_READ_BYTES"), std::string::npos) << r.err;
  EXPECT_LT(r.max_rss_kib, kRssBoundKib);
}

TEST_F(Hostile, ReadLimitIsRaisableAndLowerable) {
  // 8 MiB of zeros deflated: within the default limit; refused under FP8REF_MAX_READ_BYTES=1e6.
  const Blob npy = npy_u8(8 << 20, '\0');
  const std::string f = file("zeros.npz", zip_blob({{"x.npy", npy, true, 0}}));
  EXPECT_EQ(check({"inspect", f}).status, 0);
  setenv("FP8REF_MAX_READ_BYTES", "1000000", 1);
  const LimitedRun r = check({"inspect", f});
  unsetenv("FP8REF_MAX_READ_BYTES");
  expect_refused(r, "FP8REF_MAX_READ_BYTES=1000000");
}

TEST_F(Hostile, AnNpzMemberCostsItsSizeOnceNotTwice) {
  // 128 MiB of zeros deflated (~128 KiB): extracted once and parsed in place.
  constexpr long kMemberKib = 128 * 1024;
  const std::string f = file("once.npz", zip_blob({{"x.npy", npy_u8(128 << 20, '\0'), true, 0}}));
  const LimitedRun r = check({"inspect", "--no-progress", f}, 30s);
  EXPECT_EQ(r.status, 0) << r.err;
  if (kTightRss) {
    EXPECT_LT(r.max_rss_kib, kMemberKib + kMemberKib / 2) << "peak RSS in KiB";
  }
}

TEST_F(Hostile, InputsThatAreNotRegularFilesAreRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "pipe").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(check({"inspect", fifo}, 5s), "named pipe");
  expect_refused(check({"diff", fifo, fifo}, 5s), "named pipe (diff)");
  expect_refused(check({"inspect", "/dev/zero"}, 5s), "character device");
  expect_refused(check({"inspect", dir_.string()}, 5s), "directory");
}

TEST_F(Hostile, QuantizeOfATensorWithAZeroExtentTerminates) {
  const std::string f =
      file("zero.safetensors", safetensors_blob(R"({"x":{"dtype":"F32",)"
                                                R"("shape":[1099511627776,0,128],)"
                                                R"("data_offsets":[0,0]}})"));
  const LimitedRun r = check({"quantize", "--recipe", "deepgemm", "--block", "1x128", "--layout",
                              "row_major", "--in", f, "--out", (dir_ / "q.safetensors").string()},
                             10s);
  expect_refused(r, "zero extent");
}

TEST_F(Hostile, WholeFileDiffIsNotQuadraticInTheTensorCount) {
  // 60000 one-byte tensors: a quadratic pairing takes minutes, a name index well under a second.
  std::string h = "{";
  for (int i = 0; i < 60000; ++i) {
    h += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[1],)" +
         R"("data_offsets":[)" + std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  }
  const std::string f = file("many.safetensors", safetensors_blob(h + "}", Blob(60000, '\7')));
  const LimitedRun r = check({"diff", f, f}, 8s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.err;
}

// --- exit codes and options ---------------------------------------------------------------------

Blob small_f32_file() {
  return safetensors_blob(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                          Blob("\0\0\x80\x3f\0\0\0\x40", 8));
}

TEST_F(Hostile, CountOptionsRefuseNegativeNanInfAndTrailingGarbage) {
  const std::string f = file("ok.safetensors", small_f32_file());
  const std::vector<std::vector<std::string>> uses = {
      {"inspect", f, "--top"},
      {"diff", f, f, "--max-report"},
      {"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--against", "oracle", "--threads"},
      {"sweep", "--format", "e4m3", "--profile", "ocp_sat", "--against", "oracle", "--show"},
      {"encode", "--format", "e4m3", "--profile", "ocp_sat", "--sr-bits"},
      {"golden", "gen-codec", "encode", "--profile", "ocp_sat", "--format", "e4m3", "--count"}};
  for (const auto& use : uses) {
    for (const char* bad : {"-1", "nan", "inf", "1abc", "", "1e3", "18446744073709551616"}) {
      std::vector<std::string> args = use;
      args.push_back(bad);
      expect_refused(check(args), use[0] + " " + use.back() + " '" + bad + "'");
    }
  }
}

TEST_F(Hostile, FuzzCasesZeroIsRefusedNotPassedOnNothing) {
  if (!have_fuzz()) GTEST_SKIP() << "fp8-check built without `fuzz` (no RapidCheck)";
  for (const char* n : {"0", "-3"}) expect_refused(check({"fuzz", "--cases", n}), n);
  for (const char* s : {"-1", "0", "nan", "inf", "1e400", "5s"})
    expect_refused(check({"fuzz", "--seconds", s}), std::string("--seconds ") + s);
  expect_refused(check({"fuzz", "--seed", "-1", "--cases", "1"}), "--seed -1");
}

TEST_F(Hostile, TolAndUlpMetricsAreReadWhole) {
  const std::string f = file("ok.safetensors", small_f32_file());
  for (const char* m : {"tol:1abc,0", "tol:1,0x", "tol:nan,0", "tol:0,inf", "tol:-1,0", "ulp: 5",
                        "ulp:+5", "ulp:5k"})
    expect_refused(check({"diff", f, f, "--metric", m}), m);
  EXPECT_EQ(check({"diff", f, f, "--metric", "tol:0.5,1e-3"}).status, 0);
  EXPECT_EQ(check({"diff", f, f, "--metric", "ulp:3"}).status, 0);
}

TEST_F(Hostile, AFailedWriteToStandardOutputExitsTwo) {
  const std::string f = file("ok.safetensors", small_f32_file());
  expect_refused(check({"inspect", "--json", f}, 20s, "/dev/full"), "inspect --json > /dev/full");
  expect_refused(check({"inspect", f}, 20s, "/dev/full"), "inspect > /dev/full");
  expect_refused(check({"diff", f, f}, 20s, "/dev/full"), "diff > /dev/full");
}

// --- messages -----------------------------------------------------------------------------------

bool has_byte(const std::string& s, char c) { return s.find(c) != std::string::npos; }

TEST_F(Hostile, FileDerivedNamesCannotForgeLinesOrMoveTheCursor) {
  const Blob npy = npy_u8(2, '\1');
  const std::string f = file("names.npz", zip_blob({{"a\nfp8-check: error: forged.npy", npy},
                                                    {"\x1b[2J\x1b]0;title\x07.npy", npy},
                                                    {"\xff\xfe\xc2\x9b.npy", npy}}));
  for (const std::vector<std::string>& args : {std::vector<std::string>{"inspect", f},
                                               {"inspect", "--json", f},
                                               {"diff", f, f},
                                               {"diff", "--json", f, f}}) {
    const LimitedRun r = check(args);
    const std::string what = args[0] + (args[1] == "--json" ? " --json" : "");
    EXPECT_EQ(r.status, 0) << what << ": " << r.err;
    EXPECT_FALSE(has_byte(r.out, '\x1b') || has_byte(r.out, '\x07')) << what;
    EXPECT_FALSE(has_byte(r.out, '\xff')) << what << ": a byte that is not UTF-8 printed raw";
    EXPECT_EQ(r.out.find("\nfp8-check: error"), std::string::npos) << what << ": forged line";
  }
  const LimitedRun r = check({"diff", f + ":\x1b[2Jnone", f});
  expect_refused(r, "unknown name with an escape");
  EXPECT_FALSE(has_byte(r.err, '\x1b')) << r.err;
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_F(Hostile, OutOfMemoryIsALineNamingTheFileNotAnExceptionName) {
  // 256 MiB of zeros (within the read limit of this ~256 KiB file) under a 192 MiB address space.
  const std::string f = file("big.npz", zip_blob({{"x.npy", npy_u8(256 << 20, '\0'), true, 0}}));
  const LimitedRun r =
      run_limited(FP8REF_FP8_CHECK, {"inspect", f}, 20s, "", std::uint64_t{192} << 20);
  expect_refused(r, "out of memory");
  EXPECT_NE(r.err.find("big.npz"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("std::"), std::string::npos) << r.err;
}
#endif

// --- unsafe writes ------------------------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> listing(const fs::path& d) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(d))
    out.push_back(fs::relative(e.path(), d).string());
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kGenCodec = {"golden",  "gen-codec", "encode", "--profile",
                                            "ocp_sat", "--format",  "e4m3",   "--out"};

TEST_F(Hostile, OutputsAreNeverWrittenThroughAPlantedSymlink) {
  const std::string f = file("ok.safetensors", small_f32_file());
  const std::string victim = file("victim", "keep");
  for (const char* out : {"report.html", "table.hex"}) {
    fs::create_symlink(victim, dir_ / (std::string(out) + ".tmp"));
    fs::create_symlink(victim, dir_ / out);  // the target itself a symlink: replaced, not followed
  }
  EXPECT_EQ(check({"diff", f, f, "--html", (dir_ / "report.html").string()}).status, 0);
  std::vector<std::string> gen = kGenCodec;
  gen.push_back((dir_ / "table.hex").string());
  EXPECT_EQ(check(gen).status, 0);
  EXPECT_EQ(slurp(victim), "keep");
  expect_refused(check({"diff", f, f, "--html", "/dev/null"}), "--html onto a device");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::is_symlink(dir_ / "report.html"));
  EXPECT_NE(slurp(dir_ / "table.hex").size(), 0u);
}

TEST_F(Hostile, AFailedOutputWriteLeavesNoPartialFileOrTemporary) {
  const std::string f = file("ok.safetensors", small_f32_file());
  std::vector<std::string> gen = kGenCodec;
  gen.push_back((dir_ / "table.hex").string());
  const std::string out = dir_.string() + ".stdout";
  const auto full_at = [&](const std::vector<std::string>& args, std::uint64_t bytes) {
    return run_limited(FP8REF_FP8_CHECK, args, 20s, out, 0, bytes);
  };
  expect_refused(full_at(gen, 4096), "gen-codec --out on a full disk");
  expect_refused(full_at({"diff", f, f, "--html", (dir_ / "r.html").string()}, 1024),
                 "diff --html on a full disk");
  const std::string big = file("big.safetensors", safetensors_blob(R"({"a":{"dtype":"F32",)"
                                                                   R"("shape":[1024],)"
                                                                   R"("data_offsets":[0,4096]}})",
                                                                   Blob(4096, '\0')));
  const std::vector<std::string> before_accept = listing(dir_);
  const std::string root = (dir_ / "golden").string();
  expect_refused(full_at({"golden", "accept", big, "--as", "case1", "--root", root}, 2048),
                 "golden accept on a full disk");
  std::vector<std::string> after = listing(dir_);
  std::erase_if(after,
                [](const std::string& p) { return p == "golden" || p == "golden/regressions"; });
  EXPECT_EQ(after, before_accept);
  fs::remove(out);
}

TEST_F(Hostile, GoldenAcceptLeavesExactlyTheCaseAndTheManifest) {
  const std::string f = file("ok.safetensors", small_f32_file());
  const std::string root = (dir_ / "golden").string();
  EXPECT_EQ(check({"golden", "accept", f, "--as", "case1", "--root", root}).status, 0);
  EXPECT_EQ(listing(root), (std::vector<std::string>{"MANIFEST.json", "regressions",
                                                     "regressions/case1.safetensors"}));
}

TEST_F(Hostile, AnOutputThatIsAnInputIsRefused) {
  const Blob bytes = small_f32_file();
  const std::string f = file("ok.safetensors", bytes);
  fs::create_symlink(f, dir_ / "alias.html");
  expect_refused(check({"diff", f, f, "--html", f}), "--html onto input A");
  expect_refused(check({"diff", f, f + ":a", "--html", (dir_ / "alias.html").string()}),
                 "--html onto input B through a symlink");
  expect_refused(check({"quantize", "--recipe", "deepgemm", "--block", "1x128", "--layout",
                        "row_major", "--in", f, "--out", f}),
                 "quantize --out onto --in");
  EXPECT_EQ(slurp(f), bytes);
}

// --- memory of a valid read ---------------------------------------------------------------------

TEST_F(Hostile, InspectOfALargeFileStaysWellWithinItsSize) {
  // 8 tensors of 16 MiB: mapped, viewed, their pages dropped once counted (not copied: 2x).
  constexpr std::uint64_t kPer = std::uint64_t{16} << 20;
  std::string h = "{";
  for (int i = 0; i < 8; ++i) {
    h += std::string(i ? "," : "") + "\"t" + std::to_string(i) + R"(":{"dtype":"F32","shape":[)" +
         std::to_string(kPer / 4) + R"(],"data_offsets":[)" + std::to_string(i * kPer) + "," +
         std::to_string((i + 1) * kPer) + "]}";
  }
  const std::string f = file("large.safetensors", safetensors_blob(h + "}", Blob(8 * kPer, '\1')));
  const LimitedRun r = check({"inspect", "--no-progress", f}, 60s);
  EXPECT_EQ(r.status, 0) << r.err;
  if (kTightRss) {
    EXPECT_LT(r.max_rss_kib, static_cast<long>(8 * kPer / 1024 / 2)) << "RSS KiB";
  }
  const std::string npy = file("large.npy", npy_u8(64 << 20, '\2'));
  const LimitedRun n = check({"inspect", "--no-progress", npy}, 60s);
  EXPECT_EQ(n.status, 0) << n.err;
  EXPECT_NE(n.out.find("min=2 max=2"), std::string::npos) << n.out;
  if (kTightRss) {
    EXPECT_LT(n.max_rss_kib, 64 * 1024 + 32 * 1024) << "RSS KiB: mapped pages only";
  }
}

}  // namespace
}  // namespace fp8ref::test
