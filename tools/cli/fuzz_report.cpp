// Fuzz report merge and JUnit output (fuzz_report.h).
#include "cli/fuzz_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "cases/enum_tokens.h"
#include "cli/errors.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor.h"

namespace fp8ref::cli {

using tensor_io::escape_text;

namespace {

constexpr std::uintmax_t kMaxReportBytes = 256u << 20;  // a report is kilobytes; refuse giants

std::uint64_t parse_hex64(const std::string& s) {
  std::uint64_t v = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0 || s.size() > 16) throw std::invalid_argument("fingerprint is not 16 hex digits");
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return v;
}

fuzz::SuiteReport suite_from_json(const nlohmann::json& j) {
  fuzz::SuiteReport s;
  s.name = j.at("name").get<std::string>();
  s.label = j.at("label").get<std::string>();
  const std::string status = j.at("status").get<std::string>();
  const auto parsed = cases::from_token(fuzz::kAllSuiteStatuses, status);
  if (!parsed) throw std::invalid_argument("suite " + s.name + " has status '" + status + "'");
  s.status = *parsed;
  s.skip_reason = j.value("skip_reason", "");
  s.cases = j.at("cases").get<std::int64_t>();
  s.seconds = j.at("seconds").get<double>();
  s.class_counts = j.at("classes").get<std::map<std::string, std::int64_t>>();
  s.classes_expected = j.at("classes_expected").get<std::int64_t>();
  s.classes_missing = j.at("classes_missing").get<std::vector<std::string>>();
  s.classes_rare = j.at("classes_rare").get<std::vector<std::string>>();
  s.coverage_required = j.at("coverage_required").get<bool>();
  s.fingerprint = parse_hex64(j.at("fingerprint").get<std::string>());
  for (const auto& f : j.at("failures"))
    s.failures.push_back({f.at("message").get<std::string>(),
                          f.at("counterexample").get<std::string>(),
                          f.at("replay").get<std::string>(), f.at("case_file").get<std::string>(),
                          f.at("batch_seed").get<std::uint64_t>()});
  return s;
}

std::string read_small_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(escape_text(path) + ": not a readable regular file");
  if (std::filesystem::file_size(path, ec) > kMaxReportBytes)
    throw UsageError(escape_text(path) + ": larger than 256 MiB, not a fuzz report");
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  if (!f) throw UsageError(escape_text(path) + ": cannot be read");
  return s.str();
}

// Folds one suite's report into the merged one of the same name.
void fold_suite(fuzz::SuiteReport& m, const fuzz::SuiteReport& s) {
  m.cases += s.cases;
  m.seconds += s.seconds;
  for (const auto& [k, v] : s.class_counts) m.class_counts[k] += v;
  std::vector<std::string> missing;
  for (const auto& c : m.classes_missing)
    if (std::find(s.classes_missing.begin(), s.classes_missing.end(), c) != s.classes_missing.end())
      missing.push_back(c);
  m.classes_missing = missing;
  m.classes_expected = std::max(m.classes_expected, s.classes_expected);
  m.coverage_required = m.coverage_required || s.coverage_required;
  m.failures.insert(m.failures.end(), s.failures.begin(), s.failures.end());
  if (s.status == fuzz::SuiteStatus::failed || m.status == fuzz::SuiteStatus::failed)
    m.status = fuzz::SuiteStatus::failed;
  else if (s.status == fuzz::SuiteStatus::passed)
    m.status = fuzz::SuiteStatus::passed;
  if (m.status != fuzz::SuiteStatus::skipped) m.skip_reason.clear();
  m.fingerprint = (m.fingerprint ^ s.fingerprint) * 0x100000001b3ull;
}

// Text for XML: each line made safe to print (escape_text: no control bytes, valid UTF-8), the
// markup characters as entities, lines joined by a newline.
std::string xml_escape(const std::string& raw) {
  std::string o;
  std::size_t start = 0;
  while (start <= raw.size()) {
    const std::size_t nl = std::min(raw.find('\n', start), raw.size());
    if (start) o += '\n';
    for (char c : escape_text(std::string_view(raw).substr(start, nl - start))) {
      switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\'': o += "&apos;"; break;
        default: o += c;
      }
    }
    start = nl + 1;
  }
  return o;
}

// RapidCheck prefixes a thrown message ("Exception thrown with message:\n..."): the attribute
// takes the property's own last line, the failure text the whole message.
std::string last_line(const std::string& s) {
  const std::string t = s.substr(0, s.find_last_not_of('\n') + 1);
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string seconds_attr(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s);
  return b;
}

}  // namespace

fuzz::CampaignReport read_fuzz_report(const std::string& path) {
  const std::string text = read_small_file(path);
  fuzz::CampaignReport r;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("schema", "") != "fp8ref.fuzz/1")
      throw std::invalid_argument("not a fuzz report (schema fp8ref.fuzz/1, from fuzz --json)");
    r.seed = j.at("seed").get<std::uint64_t>();
    r.shard_index = j.at("shard").at("index").get<int>();
    r.shard_count = j.at("shard").at("count").get<int>();
    r.threads = j.at("threads").get<int>();
    r.seconds = j.at("seconds").get<double>();
    for (const auto& s : j.at("suites")) r.suites.push_back(suite_from_json(s));
  } catch (const std::exception& e) {
    throw UsageError(escape_text(path) + ": " + escape_text(e.what()));
  }
  return r;
}

fuzz::CampaignReport merge_fuzz_reports(const std::vector<fuzz::CampaignReport>& reports,
                                        const std::vector<std::string>& files) {
  if (reports.empty()) throw UsageError("fuzz merge: no report files given");
  std::vector<std::size_t> order(reports.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(reports[a].seed, reports[a].shard_count, reports[a].shard_index) <
           std::tie(reports[b].seed, reports[b].shard_count, reports[b].shard_index);
  });
  std::map<std::tuple<std::uint64_t, int, int>, std::size_t> seen;
  fuzz::CampaignReport m;
  m.seed = reports[order[0]].seed;
  m.shard_count = 1;
  std::map<std::string, std::size_t> index;
  for (std::size_t i : order) {
    const auto& r = reports[i];
    const auto key = std::make_tuple(r.seed, r.shard_index, r.shard_count);
    if (const auto it = seen.find(key); it != seen.end())
      throw UsageError("fuzz merge: " + escape_text(files[i]) + " repeats seed " +
                       std::to_string(r.seed) + " shard " + std::to_string(r.shard_index) + "/" +
                       std::to_string(r.shard_count) + " of " + escape_text(files[it->second]));
    seen[key] = i;
    m.seconds += r.seconds;
    m.threads = std::max(m.threads, r.threads);
    for (const auto& s : r.suites) {
      const auto it = index.find(s.name);
      if (it == index.end()) {
        index[s.name] = m.suites.size();
        m.suites.push_back(s);
        m.suites.back().fingerprint = (0xcbf29ce484222325ull ^ s.fingerprint) * 0x100000001b3ull;
      } else {
        fold_suite(m.suites[it->second], s);
      }
    }
  }
  return m;
}

std::string fuzz_junit_xml(const fuzz::CampaignReport& report) {
  std::size_t failures = 0, skipped = 0;
  for (const auto& s : report.suites) {
    failures += s.status == fuzz::SuiteStatus::failed;
    skipped += s.status == fuzz::SuiteStatus::skipped;
  }
  const std::string counts = " tests=\"" + std::to_string(report.suites.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                             std::to_string(skipped) + "\" time=\"" + seconds_attr(report.seconds) +
                             "\"";
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"fp8-check fuzz\"" << counts << ">\n";
  x << "  <testsuite name=\"fp8-check fuzz\"" << counts << ">\n";
  x << "    <properties><property name=\"seed\" value=\"" << report.seed << "\"/></properties>\n";
  for (const auto& s : report.suites) {
    x << "    <testcase classname=\"fp8ref.fuzz." << xml_escape(s.label) << "\" name=\""
      << xml_escape(s.name) << "\" time=\"" << seconds_attr(s.seconds) << "\">\n";
    if (s.status == fuzz::SuiteStatus::skipped)
      x << "      <skipped message=\"" << xml_escape(s.skip_reason) << "\"/>\n";
    for (const auto& f : s.failures) {
      x << "      <failure type=\"property\" message=\"" << xml_escape(last_line(f.message))
        << "\">" << xml_escape(f.message) << "\n";
      if (!f.counterexample.empty())
        x << "counterexample: " << xml_escape(f.counterexample) << "\n";
      if (!f.replay.empty()) x << "replay: " << xml_escape(f.replay) << "\n";
      if (!f.dump.empty()) x << "case file: " << xml_escape(f.dump) << "\n";
      x << "</failure>\n";
    }
    if (s.status == fuzz::SuiteStatus::failed && s.failures.empty())
      x << "      <failure type=\"coverage\" message=\"suite failed\"/>\n";
    x << "      <system-out>" << s.cases << " cases</system-out>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

void write_report_file(const std::string& path, const std::string& text) {
  try {
    tensor_io::write_file_atomic(path, std::string_view(text));
  } catch (const std::exception& e) {
    throw UsageError(escape_text(e.what()));
  }
}

}  // namespace fp8ref::cli

namespace fp8ref::cli {

namespace {

// What each vacuous-data tag of tools/campaign/strength.h means, for the warnings.
struct VacuousKind {
  const char* tag;
  const char* key;
  const char* what;
};
constexpr VacuousKind kVacuous[] = {
    {"vacuous:all_agree", "all_agree",
     "every configuration reproduces the output: these cases cannot tell accumulation orders "
     "apart"},
    {"vacuous:zero_output", "zero_output",
     "every compared output is zero (zero operands, or scales that underflow every product)"},
    {"vacuous:zero_operand", "zero_operand", "an all-zero operand"},
    {"vacuous:no_rows", "no_rows", "no row in any group: nothing compared"},
};

std::int64_t count_of(const fuzz::SuiteReport& s, const std::string& tag) {
  const auto it = s.class_counts.find(tag);
  return it == s.class_counts.end() ? 0 : it->second;
}

}  // namespace

nlohmann::json strength_json(const fuzz::SuiteReport& s) {
  std::map<int, std::int64_t> dist;
  std::int64_t measured = 0, others = 0;
  for (const auto& [tag, n] : s.class_counts) {
    if (tag.rfind("strength:", 0) != 0) continue;
    const int k = std::atoi(tag.c_str() + 9);
    if (k < 1) continue;
    dist[k] += n, measured += n, others += n * (k - 1);
  }
  std::int64_t vacuous_total = 0;
  for (const VacuousKind& v : kVacuous) vacuous_total += count_of(s, v.tag);
  if (measured == 0 && vacuous_total == 0) return nullptr;
  nlohmann::json j;
  j["measured"] = measured;
  j["strength_1"] = dist.count(1) ? dist[1] : 0;
  j["strength_1_share"] = measured ? double(j["strength_1"].get<std::int64_t>()) / measured : 0.0;
  j["mean_other_configurations"] = measured ? double(others) / double(measured) : 0.0;
  j["distribution"] = nlohmann::json::object();
  for (const auto& [k, n] : dist) j["distribution"][std::to_string(k)] = n;
  j["vacuous"] = nlohmann::json::object();
  j["warnings"] = nlohmann::json::array();
  for (const VacuousKind& v : kVacuous) {
    const std::int64_t n = count_of(s, v.tag);
    j["vacuous"][v.key] = n;
    if (n > 0)
      j["warnings"].push_back(std::to_string(n) + " of " +
                              std::to_string(measured + count_of(s, "vacuous:no_rows")) +
                              " sampled cases: " + v.what);
  }
  return j;
}

std::vector<std::string> strength_lines(const fuzz::SuiteReport& s) {
  const nlohmann::json j = strength_json(s);
  if (j.is_null()) return {};
  char head[200];
  std::snprintf(head, sizeof head,
                "%s strength: %lld cases measured, %lld (%.0f%%) strength 1, %.2f other "
                "configurations per case",
                s.name.c_str(), static_cast<long long>(j["measured"].get<std::int64_t>()),
                static_cast<long long>(j["strength_1"].get<std::int64_t>()),
                100.0 * j["strength_1_share"].get<double>(),
                j["mean_other_configurations"].get<double>());
  std::vector<std::string> out{head};
  for (const auto& w : j["warnings"]) out.push_back("  warning: " + w.get<std::string>());
  return out;
}

}  // namespace fp8ref::cli
