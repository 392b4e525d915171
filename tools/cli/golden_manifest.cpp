// MANIFEST.json reading and writing (golden_manifest.h), with nlohmann::json.
#include "cli/golden_manifest.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cases/enum_tokens.h"
#include "cli/errors.h"

namespace fp8ref::cli {
namespace {

using Json = nlohmann::ordered_json;

// A relative path that stays inside the root: no absolute paths, no '..', no empty parts.
bool safe_relative_path(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = std::min(p.find('/', start), p.size());
    const std::string part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\\') != std::string::npos)
      return false;
    start = end + 1;
  }
  return true;
}

GoldenEntry parse_entry(const Json& j, const std::string& where) {
  GoldenEntry e;
  e.path = j.at("path").get<std::string>();
  if (!safe_relative_path(e.path))
    throw UsageError(where + ": entry path '" + e.path + "' leaves the golden folder");
  const std::string kind = j.at("kind").get<std::string>();
  const auto parsed = cases::from_token(kAllGoldenKinds, kind);
  if (!parsed) throw UsageError(where + ": " + e.path + ": unknown kind '" + kind + "'");
  e.kind = *parsed;
  e.command = j.at("command").get<std::string>();
  if (!j.at("seed").is_null()) e.seed = j.at("seed").get<std::uint64_t>();
  e.semantics_version = j.at("semantics_version").get<int>();
  e.sha256 = j.at("sha256").get<std::string>();
  e.bytes = j.at("bytes").get<std::uint64_t>();
  if (j.contains("classes"))
    e.classes = j.at("classes").get<std::map<std::string, std::uint64_t>>();
  if (j.contains("source")) e.source = j.at("source").get<std::string>();
  if (j.contains("replay")) e.replay = j.at("replay").get<std::string>();
  return e;
}

}  // namespace

GoldenEntry* GoldenManifest::find(const std::string& path) {
  const auto it = std::find_if(files.begin(), files.end(),
                               [&](const GoldenEntry& e) { return e.path == path; });
  return it == files.end() ? nullptr : &*it;
}

GoldenManifest parse_manifest(const std::string& text, const std::string& where) {
  GoldenManifest m;
  try {
    const Json j = Json::parse(text);
    if (j.at("schema") != kManifestSchema)
      throw UsageError(where + ": schema is not " + std::string(kManifestSchema));
    m.semantics_version = j.at("semantics_version").get<int>();
    for (const Json& e : j.at("files")) m.files.push_back(parse_entry(e, where));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(where + ": malformed manifest: " + e.what());
  }
  return m;
}

std::string manifest_text(GoldenManifest m) {
  std::sort(m.files.begin(), m.files.end(),
            [](const GoldenEntry& a, const GoldenEntry& b) { return a.path < b.path; });
  Json j = {
      {"schema", kManifestSchema},
      {"note",
       "Written by fp8-check golden regen | accept; never edit by hand (docs/cli.md, \"golden\")."},
      {"semantics_version", m.semantics_version},
      {"files", Json::array()}};
  for (const GoldenEntry& e : m.files) {
    Json f = {{"path", e.path},
              {"kind", to_string(e.kind)},
              {"command", e.command},
              {"seed", e.seed ? Json(*e.seed) : Json(nullptr)},
              {"semantics_version", e.semantics_version},
              {"bytes", e.bytes},
              {"sha256", e.sha256}};
    if (!e.classes.empty()) f["classes"] = e.classes;
    if (!e.source.empty()) f["source"] = e.source;
    if (!e.replay.empty()) f["replay"] = e.replay;
    j["files"].push_back(f);
  }
  return j.dump(2) + "\n";
}

}  // namespace fp8ref::cli
