// `fp8-check golden verify | regen | accept | gen-codec` (golden/README.md, docs/cli.md).
// verify: every manifest entry's SHA-256, a fresh regeneration of every generated file into a
// temporary folder compared with the manifest's record, the manifest against the tool's plan,
// and no unlisted files. regen: rewrites the plan's files and the manifest, refusing a changed
// payload at an unchanged semantics version. accept: adds a case file as regressions/NAME.
// JSON schema "fp8ref.golden/1"; exit 0 pass, 1 golden mismatch / refused, 2 bad input.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8ref::cli {

// What a golden action did to one file (or found wrong with it); printed as its token.
enum class GoldenStatus : std::uint8_t {
  ok,         // verify: the file matches
  fail,       // verify / regen: see the reasons
  written,    // regen: a new file
  rewritten,  // regen: new bytes under a semantics-version bump
  unchanged,  // regen: the same bytes
  removed,    // regen: no longer in the golden plan
  kept,       // regen: a captured case, left as it is
  accepted,   // accept: a case pinned
};
constexpr const char* to_string(GoldenStatus s) {
  switch (s) {
    case GoldenStatus::ok: return "ok";
    case GoldenStatus::fail: return "fail";
    case GoldenStatus::written: return "written";
    case GoldenStatus::rewritten: return "rewritten";
    case GoldenStatus::unchanged: return "unchanged";
    case GoldenStatus::removed: return "removed";
    case GoldenStatus::kept: return "kept";
    case GoldenStatus::accepted: return "accepted";
  }
  return "?";
}

struct GoldenFileStatus {
  std::string path;
  GoldenStatus status = GoldenStatus::ok;
  std::vector<std::string> reasons;
};

struct GoldenReport {
  std::string action;
  std::vector<GoldenFileStatus> files;
  std::string temp_dir;  // verify: regenerated copies, kept when something failed
  bool passed() const;
};

struct AcceptOptions {
  std::string replay;                 // default: the case file's "fp8ref.replay" (or "replay")
  std::optional<std::uint64_t> seed;  // default: its "fp8ref.batch_seed" (or "seed"), if numeric
  bool replace = false;
};

GoldenReport golden_verify(const std::string& root, bool keep_temp);
GoldenReport golden_regen(const std::string& root);
GoldenReport golden_accept(const std::string& root, const std::string& file,
                           const std::string& name, const AcceptOptions& options);

void add_golden_command(CLI::App& app);

}  // namespace fp8ref::cli
