// Hostile-input laws of fp8-check and its readers (docs/security.md): every file below is written
// at test time by hostile_files.h; each must end in one `fp8-check: error:` line and exit 2 (or,
// for a valid file, a normal result) within a time limit and a bounded peak RSS.
#include <gtest/gtest.h>

#include <filesystem>

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

}  // namespace
}  // namespace fp8ref::test
