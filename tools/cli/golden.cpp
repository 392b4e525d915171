// fp8-check golden (golden.h). The manifest's record (semantics version + SHA-256 per file) is the
// contract: a file must hash to it, and its generator must still produce exactly those bytes
// unless the semantics version moved on, in which case the fix is a regen, never a silent rewrite.
#include "cli/golden.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cases/tensor_form.h"
#include "cli/errors.h"
#include "cli/golden_manifest.h"
#include "cli/golden_plan.h"
#include "cli/number_options.h"
#include "cli/semantics_version.h"
#include "cli/sha256.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {
namespace {

namespace fs = std::filesystem;
const std::string kRegen = "run fp8-check golden regen";

// A golden file that is not a regular file (a named pipe would block the read) is refused.
std::optional<std::string> read_file(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw UsageError(p.string() + ": not a regular file (refused)");
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Writes a unique temporary file next to the target, then renames: a reader never sees half a
// golden file, and a failed write leaves neither a partial file nor a stray temporary.
void write_file(const fs::path& p, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  try {
    tensor_io::write_file_atomic(p.string(), std::string_view(bytes));
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
}

GoldenManifest load_manifest(const std::string& root, bool required) {
  const fs::path p = fs::path(root) / kManifestName;
  const std::optional<std::string> text = read_file(p);
  if (!text) {
    if (required)
      throw UsageError(p.string() + ": cannot read the golden manifest (" + kRegen +
                       " to create it)");
    return GoldenManifest{kSemanticsVersion, {}};
  }
  return parse_manifest(*text, p.string());
}

// "line 12: stored 'A' regenerated 'B'" for text, "byte 4096" otherwise.
std::string first_text_difference(const std::string& stored, const std::string& fresh) {
  const auto mm = std::mismatch(stored.begin(), stored.end(), fresh.begin(), fresh.end());
  const auto at = static_cast<std::size_t>(mm.first - stored.begin());
  const bool text = stored.find('\0') == std::string::npos && fresh.find('\0') == std::string::npos;
  if (!text) return "first difference at byte " + std::to_string(at);
  const std::size_t begin = stored.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t b = begin == std::string::npos || at == 0 ? 0 : begin + 1;
  const auto line_of = [b](const std::string& s) {
    return s.substr(b, std::min(s.find('\n', b), s.size()) - b);
  };
  return "first difference at line " +
         std::to_string(std::count(stored.begin(), stored.begin() + b, '\n') + 1) + ": stored '" +
         (b < stored.size() ? line_of(stored) : "") + "', regenerated '" +
         (b < fresh.size() ? line_of(fresh) : "") + "'";
}

std::string make_temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/fp8ref-golden-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr)
    throw UsageError("cannot create a temporary folder under " + templ);
  return templ;
}

// Checks one generated entry against the file on disk and a fresh run of its command.
void verify_generated(const GoldenEntry& e, const std::optional<std::string>& stored,
                      const std::string& temp, std::vector<std::string>& why) {
  GeneratorOutput g;
  try {
    g = run_generator_command(e.command);
  } catch (const UsageError& err) {
    why.push_back(std::string("generator: ") + err.what());
    return;
  }
  write_file(fs::path(temp) / e.path, g.bytes);
  const bool file_ok = stored && sha256_hex(*stored) == e.sha256;
  const bool gen_ok = sha256_hex(g.bytes) == e.sha256;
  if (stored && !file_ok) {
    why.push_back(
        "sha256 " + sha256_hex(*stored) + " != manifest " + e.sha256 +
        ": the file was changed outside fp8-check golden" +
        (gen_ok ? " (the generator still writes the recorded payload: " + kRegen + " to restore it)"
                : ""));
  }
  if (gen_ok) {
    if (e.semantics_version != kSemanticsVersion) {
      why.push_back("written under semantics version " + std::to_string(e.semantics_version) +
                    ", the tool is at " + std::to_string(kSemanticsVersion) + ": " + kRegen);
    }
    return;
  }
  const std::string where =
      (stored && file_ok ? first_text_difference(*stored, g.bytes) + "; " : std::string()) +
      "regenerated copy: " + (fs::path(temp) / e.path).string();
  if (e.semantics_version == kSemanticsVersion) {
    why.push_back("payload changed without a semantics-version bump (" + where +
                  "). If the change is intended, bump kSemanticsVersion in "
                  "tools/cli/semantics_version.h, then " +
                  kRegen);
  } else {
    why.push_back("semantics version moved from " + std::to_string(e.semantics_version) + " to " +
                  std::to_string(kSemanticsVersion) + " and the payload changed (" + where +
                  "): " + kRegen + " and commit the new files");
  }
}

// Files under the root that the manifest does not list (the manifest itself and README.md aside).
std::vector<std::string> unlisted_files(const std::string& root, GoldenManifest& m) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), root).generic_string();
    if (rel != kManifestName && rel != "README.md" && m.find(rel) == nullptr) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool GoldenReport::passed() const {
  return std::none_of(files.begin(), files.end(),
                      [](const GoldenFileStatus& f) { return f.status == GoldenStatus::fail; });
}

GoldenReport golden_verify(const std::string& root, bool keep_temp) {
  GoldenManifest m = load_manifest(root, true);
  GoldenReport r{"verify", {}, make_temp_dir()};
  std::map<std::string, std::string> plan;
  for (const PlannedFile& p : golden_plan()) plan[p.path] = p.command;
  for (const GoldenEntry& e : m.files) {
    GoldenFileStatus st{e.path, GoldenStatus::ok, {}};
    const std::optional<std::string> stored = read_file(fs::path(root) / e.path);
    if (!stored) st.reasons.push_back("missing (listed in " + std::string(kManifestName) + ")");
    if (e.kind == GoldenKind::generated) {
      verify_generated(e, stored, r.temp_dir, st.reasons);
      const auto it = plan.find(e.path);
      if (it == plan.end())
        st.reasons.push_back("not in the tool's golden plan: " + kRegen + " (it removes the file)");
      else if (it->second != e.command)
        st.reasons.push_back("manifest command differs from the plan's '" + it->second +
                             "': " + kRegen);
    } else if (stored) {
      if (sha256_hex(*stored) != e.sha256)
        st.reasons.push_back("sha256 differs from the manifest: the captured case was changed");
      try {
        tensor_io::read_tensor_file((fs::path(root) / e.path).string(), {});
      } catch (const tensor_io::Error& err) {
        st.reasons.push_back(std::string("not a readable tensor file: ") + err.what());
      }
    }
    if (!st.reasons.empty()) st.status = GoldenStatus::fail;
    r.files.push_back(std::move(st));
  }
  for (const auto& [path, command] : plan) {
    if (m.find(path) == nullptr)
      r.files.push_back({path,
                         GoldenStatus::fail,
                         {"in the tool's golden plan but not in the manifest: " + kRegen}});
  }
  for (const std::string& rel : unlisted_files(root, m)) {
    r.files.push_back({rel,
                       GoldenStatus::fail,
                       {"not listed in the manifest (golden files are written only by fp8-check "
                        "golden regen | accept)"}});
  }
  if (r.passed() && !keep_temp) {
    std::error_code ec;
    fs::remove_all(r.temp_dir, ec);
    r.temp_dir.clear();
  }
  return r;
}

GoldenReport golden_regen(const std::string& root) {
  const GoldenManifest old = load_manifest(root, false);
  GoldenManifest next{kSemanticsVersion, {}};
  GoldenReport r{"regen", {}, {}};
  std::vector<std::pair<std::string, std::string>> writes;
  for (const PlannedFile& p : golden_plan()) {
    const GeneratorOutput g = run_generator_command(p.command);
    const std::string sha = sha256_hex(g.bytes);
    const auto prev = std::find_if(old.files.begin(), old.files.end(),
                                   [&](const GoldenEntry& e) { return e.path == p.path; });
    const std::optional<std::string> stored = read_file(fs::path(root) / p.path);
    GoldenFileStatus st{p.path,
                        !stored              ? GoldenStatus::written
                        : *stored == g.bytes ? GoldenStatus::unchanged
                                             : GoldenStatus::rewritten,
                        {}};
    if (prev != old.files.end() && prev->command == p.command &&
        prev->semantics_version == kSemanticsVersion && prev->sha256 != sha) {
      st.status = GoldenStatus::fail;
      st.reasons.push_back(
          "payload changed without a semantics-version bump" +
          (stored ? " (" + first_text_difference(*stored, g.bytes) + ")" : std::string()) +
          ": bump kSemanticsVersion in tools/cli/semantics_version.h if the change is intended");
    }
    if (st.status == GoldenStatus::written || st.status == GoldenStatus::rewritten)
      writes.emplace_back(p.path, g.bytes);
    next.files.push_back({p.path,
                          GoldenKind::generated,
                          p.command,
                          g.seed,
                          kSemanticsVersion,
                          sha,
                          g.bytes.size(),
                          g.classes,
                          {},
                          {}});
    r.files.push_back(std::move(st));
  }
  std::vector<std::string> removed;
  for (const GoldenEntry& e : old.files) {
    if (e.kind == GoldenKind::captured && next.find(e.path) == nullptr) {
      next.files.push_back(e);
      r.files.push_back({e.path, GoldenStatus::kept, {}});
    } else if (e.kind == GoldenKind::generated && next.find(e.path) == nullptr) {
      removed.push_back(e.path);
      r.files.push_back({e.path, GoldenStatus::removed, {"no longer in the tool's golden plan"}});
    }
  }
  if (!r.passed()) return r;  // refused: nothing is written
  for (const auto& [path, bytes] : writes) write_file(fs::path(root) / path, bytes);
  for (const std::string& path : removed) fs::remove(fs::path(root) / path);
  write_file(fs::path(root) / kManifestName, manifest_text(next));
  return r;
}

namespace {

// The case file, then the manifest; when the manifest cannot be written the case file is restored
// (or removed), so a failed accept never leaves a file the manifest does not list.
void write_case_and_manifest(const std::string& root, const std::string& rel,
                             const std::string& bytes, const GoldenManifest& m) {
  const fs::path case_path = fs::path(root) / rel;
  const std::optional<std::string> before = read_file(case_path);
  write_file(case_path, bytes);
  try {
    write_file(fs::path(root) / kManifestName, manifest_text(m));
  } catch (const UsageError&) {
    std::error_code ec;
    if (!before) {
      fs::remove(case_path, ec);
    } else {
      try {
        write_file(case_path, *before);
      } catch (const UsageError&) {  // the manifest's failure is the one reported
      }
    }
    throw;
  }
}

}  // namespace

GoldenReport golden_accept(const std::string& root, const std::string& file,
                           const std::string& name_in, const AcceptOptions& o) {
  std::string name = name_in;
  if (name.size() > 12 && name.ends_with(".safetensors")) name.resize(name.size() - 12);
  if (!std::regex_match(name, std::regex("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}"))) {
    throw UsageError(
        "--as: NAME must be letters, digits, '_', '-' or '.', starting with a letter or digit; got "
        "'" +
        name_in + "'");
  }
  tensor_io::TensorFile tf;
  try {
    tf = tensor_io::read_tensor_file(file, {});
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
  const std::vector<std::uint8_t> raw = tensor_io::serialize_safetensors(tf, file);
  const std::string bytes(raw.begin(), raw.end());
  GoldenManifest m = load_manifest(root, false);
  const std::string rel = "regressions/" + name + ".safetensors";
  GoldenEntry* existing = m.find(rel);
  if (existing != nullptr && !o.replace)
    throw UsageError(rel + " is already in the golden set (pass --replace to overwrite it)");
  GoldenEntry e{rel,
                GoldenKind::captured,
                "fp8-check golden accept " + file + " --as " + name,
                o.seed,
                kSemanticsVersion,
                sha256_hex(bytes),
                bytes.size(),
                {},
                file,
                o.replay};
  // The campaign's failure notes (cases/tensor_form.h); files of older runners and of the test
  // suites' dumps hold the bare "replay" and "seed".
  const std::string* replay = cases::find_meta(tf, cases::kNoteReplay);
  if (e.replay.empty() && replay != nullptr) e.replay = *replay;
  if (const std::string* seed = cases::find_batch_seed(tf); !e.seed && seed != nullptr) {
    const std::string& s = *seed;
    if (!s.empty() && s.size() < 20 &&
        std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      e.seed = std::stoull(s);
  }
  if (existing != nullptr)
    *existing = e;
  else
    m.files.push_back(e);
  write_case_and_manifest(root, rel, bytes, m);
  return {"accept", {{rel, GoldenStatus::accepted, {}}}, {}};
}

namespace {

struct GoldenCliOptions {
  std::string root = "golden";
  bool json = false;
  bool keep_temp = false;
  std::string file, name, replay;
  std::optional<std::uint64_t> seed;
  bool replace = false;
};

void print_report(const GoldenReport& r, const GoldenCliOptions& o) {
  if (o.json) {
    nlohmann::ordered_json j = {{"schema", "fp8ref.golden/1"},
                                {"action", r.action},
                                {"root", o.root},
                                {"semantics_version", kSemanticsVersion},
                                {"result", r.passed() ? "pass" : "fail"}};
    if (!r.temp_dir.empty()) j["temp_dir"] = r.temp_dir;
    j["files"] = nlohmann::ordered_json::array();
    for (const GoldenFileStatus& f : r.files)
      j["files"].push_back(
          {{"path", f.path}, {"status", to_string(f.status)}, {"reasons", f.reasons}});
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::size_t failed = 0;
  for (const GoldenFileStatus& f : r.files) {
    failed += f.status == GoldenStatus::fail;
    if (f.status == GoldenStatus::ok || f.status == GoldenStatus::unchanged ||
        f.status == GoldenStatus::kept)
      continue;
    std::printf("%-9s %s\n", f.status == GoldenStatus::fail ? "FAIL" : to_string(f.status),
                f.path.c_str());
    for (const std::string& why : f.reasons) std::printf("          %s\n", why.c_str());
  }
  if (!r.temp_dir.empty()) std::printf("regenerated files kept in %s\n", r.temp_dir.c_str());
  std::printf("golden %s: %zu files, %zu failed (%s, semantics version %d)\n", r.action.c_str(),
              r.files.size(), failed, (fs::path(o.root) / kManifestName).string().c_str(),
              kSemanticsVersion);
}

void finish(const GoldenReport& r, const GoldenCliOptions& o) {
  print_report(r, o);
  std::cout.flush();
  if (!r.passed()) throw ExitCode{1};
}

}  // namespace

void add_golden_command(CLI::App& app) {
  CLI::App* golden = app.add_subcommand(
      "golden", "Golden files: verify | regen | accept | gen-codec (docs/cli.md)");
  golden->require_subcommand(1);
  auto add_common = [](CLI::App* sub, GoldenCliOptions& o) {
    sub->add_option("--root", o.root, "The golden folder (holds MANIFEST.json)")
        ->capture_default_str();
    sub->add_flag("--json", o.json, "Machine-readable output (schema fp8ref.golden/1)");
  };
  auto v = std::make_shared<GoldenCliOptions>();
  CLI::App* verify = golden->add_subcommand("verify",
                                            "Check every file's SHA-256, regenerate each generated "
                                            "file and byte-compare (exit 0 pass, 1 fail)");
  add_common(verify, *v);
  verify->add_flag("--keep-temp", v->keep_temp,
                   "Keep the regenerated copies even when everything passes");
  verify->callback([v] { finish(golden_verify(v->root, v->keep_temp), *v); });

  auto g = std::make_shared<GoldenCliOptions>();
  CLI::App* regen = golden->add_subcommand("regen",
                                           "Rewrite the golden files and the manifest (refuses a "
                                           "changed payload without a semantics-version bump)");
  add_common(regen, *g);
  regen->callback([g] { finish(golden_regen(g->root), *g); });

  auto a = std::make_shared<GoldenCliOptions>();
  CLI::App* accept = golden->add_subcommand(
      "accept", "Add a case file (e.g. a failing test's dump) as regressions/NAME.safetensors");
  add_common(accept, *a);
  accept->add_option("file", a->file, "Tensor file (safetensors, npy, npz, torch.save zip)")
      ->required();
  accept->add_option("--as", a->name, "NAME of the regression case")->required();
  accept->add_option("--replay", a->replay,
                     "Replay command to record (default: the file's metadata 'replay')");
  accept->add_option("--seed", a->seed, "Seed to record (default: the file's metadata 'seed')")
      ->check(count_in(0, UINT64_MAX));
  accept->add_flag("--replace", a->replace, "Overwrite an existing case of that name");
  accept->callback([a] {
    finish(golden_accept(a->root, a->file, a->name, {a->replay, a->seed, a->replace}), *a);
  });

  add_gen_codec_command(*golden);
}

}  // namespace fp8ref::cli
