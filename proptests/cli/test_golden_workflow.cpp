// Tests for `fp8-check golden verify | regen | accept` (tools/cli/golden): on a fresh root, regen
// then verify passes; a hand edit, a payload change without a semantics-version bump, a stale
// version, unlisted and missing files each fail verify with a reason naming the fix; regen refuses
// to rewrite a payload at an unchanged version; accept adds a regression case; a manifest can
// never make the tool run anything but a golden generator.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/errors.h"
#include "cli/golden.h"
#include "cli/golden_manifest.h"
#include "cli/golden_plan.h"
#include "cli/semantics_version.h"
#include "cli/sha256.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::cli {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A fresh golden root per test, filled by regen.
class GoldenRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("fp8ref_golden_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    ASSERT_TRUE(golden_regen(root_.string()).passed());
  }
  void TearDown() override { fs::remove_all(root_); }

  GoldenManifest manifest() const { return parse_manifest(slurp(root_ / kManifestName), "test"); }
  void save(const GoldenManifest& m) const { spit(root_ / kManifestName, manifest_text(m)); }
  // verify, without leaving its regenerated copies behind.
  GoldenReport verify() const {
    GoldenReport r = golden_verify(root_.string(), false);
    if (!r.temp_dir.empty()) fs::remove_all(r.temp_dir);
    return r;
  }
  // The reasons verify gives for `path` ("" when it passes).
  std::string verify_reasons(const std::string& path) const {
    const GoldenReport r = verify();
    std::string all;
    for (const GoldenFileStatus& f : r.files) {
      if (f.path != path) continue;
      for (const std::string& why : f.reasons) all += why + "\n";
    }
    return all;
  }

  fs::path root_;
  const std::string table_ = "numerics/encode/ocp_sat_e4m3_f32.hex";
};

TEST_F(GoldenRoot, RegenWritesThePlanAndVerifyPasses) {
  const GoldenReport r = verify();
  EXPECT_TRUE(r.passed());
  EXPECT_TRUE(r.temp_dir.empty());
  EXPECT_EQ(r.files.size(), golden_plan().size());
  for (const GoldenEntry& e : manifest().files) {
    EXPECT_EQ(sha256_hex(slurp(root_ / e.path)), e.sha256) << e.path;
    EXPECT_EQ(e.semantics_version, kSemanticsVersion);
  }
  const GoldenReport again = golden_regen(root_.string());
  for (const GoldenFileStatus& f : again.files)
    EXPECT_EQ(f.status, GoldenStatus::unchanged) << f.path;
}

TEST_F(GoldenRoot, HandEditedFileFailsAndRegenRestoresIt) {
  std::string bytes = slurp(root_ / table_);
  bytes[0] = bytes[0] == '0' ? '1' : '0';
  spit(root_ / table_, bytes);
  const std::string why = verify_reasons(table_);
  EXPECT_NE(why.find("changed outside fp8-check golden"), std::string::npos) << why;
  EXPECT_NE(why.find("generator still writes the recorded payload"), std::string::npos) << why;
  EXPECT_TRUE(golden_regen(root_.string()).passed());
  EXPECT_EQ(verify_reasons(table_), "");
}

// As if the codec changed and someone re-recorded the file and its hash without bumping the
// version.
TEST_F(GoldenRoot, PayloadChangeWithoutVersionBumpFailsVerify) {
  std::string bytes = slurp(root_ / table_);
  bytes.replace(bytes.find('\n') - 2, 2, "55");
  spit(root_ / table_, bytes);
  GoldenManifest m = manifest();
  m.find(table_)->sha256 = sha256_hex(bytes);
  save(m);
  const std::string why = verify_reasons(table_);
  EXPECT_NE(why.find("payload changed without a semantics-version bump"), std::string::npos) << why;
  EXPECT_NE(why.find("first difference at line 1"), std::string::npos) << why;
  EXPECT_NE(why.find("kSemanticsVersion"), std::string::npos) << why;
}

TEST_F(GoldenRoot, RegenRefusesAChangedPayloadAtTheSameVersion) {
  GoldenManifest m = manifest();
  const std::string recorded = "0000000000000000000000000000000000000000000000000000000000000000";
  m.find(table_)->sha256 =
      recorded;  // the record says the payload was something else at this version
  save(m);
  const std::string before = slurp(root_ / kManifestName);
  const GoldenReport r = golden_regen(root_.string());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(slurp(root_ / kManifestName), before) << "a refused regen writes nothing";
}

TEST_F(GoldenRoot, OlderSemanticsVersionAsksForRegen) {
  GoldenManifest m = manifest();
  m.find(table_)->semantics_version = kSemanticsVersion - 1;
  save(m);
  EXPECT_NE(verify_reasons(table_).find("run fp8-check golden regen"), std::string::npos);
  std::string bytes = slurp(root_ / table_);
  bytes.replace(bytes.find('\n') - 2, 2, "55");
  spit(root_ / table_, bytes);
  m.find(table_)->sha256 = sha256_hex(bytes);
  save(m);
  EXPECT_NE(verify_reasons(table_).find("semantics version moved from"), std::string::npos);
  EXPECT_TRUE(golden_regen(root_.string()).passed())
      << "after a bump, regen may rewrite the payload";
  EXPECT_TRUE(verify().passed());
}

TEST_F(GoldenRoot, UnlistedMissingAndUnplannedFilesFail) {
  spit(root_ / "numerics/stray.hex", "00 00\n");
  EXPECT_NE(verify_reasons("numerics/stray.hex").find("not listed in the manifest"),
            std::string::npos);
  fs::remove(root_ / "numerics/stray.hex");
  fs::remove(root_ / table_);
  EXPECT_NE(verify_reasons(table_).find("missing"), std::string::npos);
  EXPECT_TRUE(golden_regen(root_.string()).passed());
  GoldenManifest m = manifest();
  m.files.erase(m.files.begin());
  save(m);
  EXPECT_FALSE(verify().passed()) << "a planned file missing from the manifest";
}

TEST_F(GoldenRoot, AcceptAddsARegressionCaseWithItsReplayCommand) {
  tensor_io::TensorFile tf;
  tf.metadata = {{"replay", "RC_PARAMS=\"reproduce=abc\" ./codec_tests"}, {"seed", "42"}};
  tf.tensors.push_back({"input", {tensor_io::DType::U64, {2}, std::vector<std::uint8_t>(16, 7)}});
  const fs::path src =
      root_.parent_path() / ("fp8ref_case_" + std::to_string(::getpid()) + ".safetensors");
  tensor_io::write_safetensors(src.string(), tf);
  const GoldenReport r = golden_accept(root_.string(), src.string(), "codec_nan_sign", {});
  ASSERT_TRUE(r.passed());
  GoldenManifest m = manifest();
  const GoldenEntry* e = m.find("regressions/codec_nan_sign.safetensors");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, GoldenKind::captured);
  EXPECT_EQ(e->replay, tf.metadata["replay"]);
  EXPECT_EQ(e->seed, std::optional<std::uint64_t>(42));
  EXPECT_TRUE(verify().passed());
  EXPECT_THROW(golden_accept(root_.string(), src.string(), "codec_nan_sign", {}), UsageError)
      << "no silent overwrite";
  EXPECT_THROW(golden_accept(root_.string(), src.string(), "../escape", {}), UsageError);
  EXPECT_THROW(golden_accept(root_.string(), (root_ / kManifestName).string(), "not_tensors", {}),
               UsageError);
  EXPECT_TRUE(golden_regen(root_.string()).passed());
  EXPECT_NE(manifest().find("regressions/codec_nan_sign.safetensors"), nullptr)
      << "regen keeps captured cases";
  fs::remove(src);
}

// The campaign's failure notes (tools/cases/tensor_form.h): fp8ref.replay and fp8ref.batch_seed
// are the defaults; a case's own fp8ref.seed is not the batch seed.
TEST_F(GoldenRoot, AcceptReadsTheCampaignsPrefixedFailureNotes) {
  tensor_io::TensorFile tf;
  tf.metadata = {{"fp8ref.replay", "fp8-check fuzz --suite gpu.pad --replay 01ab"},
                 {"fp8ref.batch_seed", "77"},
                 {"fp8ref.seed", "5"},
                 {"fp8ref.suite", "gpu.pad"}};
  tf.tensors.push_back({"input", {tensor_io::DType::U64, {2}, std::vector<std::uint8_t>(16, 7)}});
  const fs::path src =
      root_.parent_path() / ("fp8ref_notes_" + std::to_string(::getpid()) + ".safetensors");
  tensor_io::write_safetensors(src.string(), tf);
  ASSERT_TRUE(golden_accept(root_.string(), src.string(), "pad_notes", {}).passed());
  GoldenManifest m = manifest();
  const GoldenEntry* e = m.find("regressions/pad_notes.safetensors");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->replay, tf.metadata["fp8ref.replay"]);
  EXPECT_EQ(e->seed, std::optional<std::uint64_t>(77));
  tf.metadata.erase("fp8ref.batch_seed");  // no batch seed: fp8ref.seed is not one
  tensor_io::write_safetensors(src.string(), tf);
  AcceptOptions o;
  o.replace = true;
  ASSERT_TRUE(golden_accept(root_.string(), src.string(), "pad_notes", o).passed());
  EXPECT_EQ(manifest().find("regressions/pad_notes.safetensors")->seed, std::nullopt);
  fs::remove(src);
}

TEST(GoldenCommands, OnlyGoldenGeneratorsAreRun) {
  for (const char* cmd : {"rm -rf /", "fp8-check diff a b", "fp8-check golden regen",
                          "fp8-check golden gen-codec encode --format e4m3",
                          "fp8-check golden gen-codec decode --format e4m3 --out /tmp/x"}) {
    EXPECT_THROW(run_generator_command(cmd), UsageError) << cmd;
  }
  EXPECT_EQ(run_generator_command("fp8-check golden gen-codec decode --format e8m0").bytes.size(),
            256u * 20);
}

TEST(GoldenManifestFile, PathsMustStayInsideTheRoot) {
  for (const char* path : {"../x.hex", "/etc/passwd", "a//b", "a/./b", ""}) {
    const std::string text =
        std::string(
            R"({"schema": "fp8ref.golden-manifest/1", "semantics_version": 1, "files": [)") +
        R"({"path": ")" + path + R"(", "kind": "generated", "command": "c", "seed": null, )" +
        R"("semantics_version": 1, "bytes": 0, "sha256": ""}]})";
    EXPECT_THROW(parse_manifest(text, "m"), UsageError) << path;
  }
  EXPECT_THROW(parse_manifest("{", "m"), UsageError);
}

}  // namespace
}  // namespace fp8ref::cli
