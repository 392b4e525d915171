// Campaign runner (runner.h) and the suite registry / case helpers (suite.h).
#include "campaign/runner.h"

#include <omp.h>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>

#include "campaign/suite.h"
#include "cases/split_mix64.h"
#include "numerics/plant.h"
#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::fuzz {

namespace {

bool g_capture = false;
TensorFile g_captured;
std::uint64_t g_fingerprint = 0xcbf29ce484222325ull;

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The seed of batch b of a suite: depends on the campaign seed, the suite and b only.
std::uint64_t batch_seed(std::uint64_t seed, const std::string& suite, std::int64_t b) {
  using cases::SplitMix64;
  return SplitMix64::mix(seed ^ SplitMix64::mix(fnv1a(suite) + SplitMix64::mix(std::uint64_t(b))));
}

class CountingListener : public rc::detail::TestListener {
 public:
  std::map<std::string, std::int64_t>* counts = nullptr;
  std::int64_t ok = 0;
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type != rc::detail::CaseResult::Type::Success) return;
    ++ok;
    if (counts)
      for (const std::string& t : d.tags) ++(*counts)[t];
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RC_TAG stores a std::string tag as its printed form, in double quotes.
std::string unquoted(const std::string& t) {
  return t.size() >= 2 && t.front() == '"' && t.back() == '"' ? t.substr(1, t.size() - 2) : t;
}

// RapidCheck prints its own configuration when first used; the campaign prints its seed itself.
void quiet_rapidcheck_configuration() {
  static const bool done = [] {
    std::streambuf* saved = std::cerr.rdbuf(nullptr);
    (void)rc::detail::configuration();
    std::cerr.rdbuf(saved);
    return true;
  }();
  (void)done;
}

const Suite& find_suite(const std::string& name) {
  for (const Suite& s : all_suites())
    if (s.info.name == name) return s;
  std::string known;
  for (const Suite& s : all_suites()) known += (known.empty() ? "" : ", ") + s.info.name;
  throw std::invalid_argument("unknown suite '" + name + "' (suites: " + known +
                              ", golden.regressions)");
}

std::string shown(const rc::detail::Example& ex) {
  std::string s;
  for (const auto& [type, value] : ex)
    if (value != "<\?\?\?>") s += (s.empty() ? "" : "; ") + value;
  if (s.size() > 600) s = s.substr(0, 600) + " ...";
  return s;
}

std::vector<std::uint8_t> hex_decode(const std::string& s) {
  if (s.size() % 2) throw std::invalid_argument("replay token: odd number of hex digits");
  std::vector<std::uint8_t> out;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument(std::string("replay token: not a hex digit: '") + c + "'");
  };
  for (std::size_t i = 0; i < s.size(); i += 2)
    out.push_back(std::uint8_t(nib(s[i]) * 16 + nib(s[i + 1])));
  return out;
}

std::string replay_line(const CampaignOptions& opt, const std::string& suite,
                        const std::string& token) {
  std::string cmd = opt.command + " fuzz --suite " + suite + " --replay " + token;
#ifdef FP8REF_PLANT_HOOKS
  if (!opt.plant.empty()) cmd += " --plant " + opt.plant;
#endif
  return cmd;
}

std::string failure_dir(const CampaignOptions& opt) {
  if (!opt.failure_dir.empty()) return opt.failure_dir;
  const char* env = std::getenv("FP8REF_FAILURE_DIR");
  return env && *env ? env : "fp8ref-failures";
}

// Re-runs the shrunk counterexample once with capture on and writes the case file.
std::string write_case(const Suite& s, const rc::detail::Reproduce& rep, const CampaignOptions& opt,
                       const FailureReport& f) {
  rc::detail::TestMetadata md{s.info.name, s.info.name};
  rc::detail::TestParams params;
  CountingListener quiet;
  request_capture(true);
  g_captured = {};
  std::string where;
  try {
    rc::detail::checkProperty(rc::detail::toProperty(s.property), md, params, quiet,
                              {{s.info.name, rep}});
  } catch (...) {
  }
  request_capture(false);
  TensorFile tf = take_captured();
  if (tf.tensors.empty() && tf.metadata.empty()) return "(not written: the case was not captured)";
  tf.metadata["fp8ref.suite"] = s.info.name;
  tf.metadata["replay"] = f.replay;
  tf.metadata["seed"] = std::to_string(f.batch_seed);
  std::string msg = f.message;
  if (msg.size() > 2000) msg.resize(2000);
  tf.metadata["failure"] = msg;
#ifdef FP8REF_PLANT_HOOKS
  if (!opt.plant.empty()) tf.metadata["plant"] = opt.plant;
#endif
  try {
    std::error_code ec;
    std::filesystem::create_directories(failure_dir(opt), ec);
    char name[64];
    std::snprintf(name, sizeof name, "-%016llx.safetensors",
                  static_cast<unsigned long long>(f.batch_seed));
    const std::filesystem::path p = std::filesystem::path(failure_dir(opt)) / (s.info.name + name);
    tensor_io::write_safetensors(p.string(), tf);
    return std::filesystem::absolute(p).string();
  } catch (const std::exception& e) {
    return std::string("(not written: ") + e.what() + ")";
  }
}

FailureReport failure_from(const Suite& s, const rc::detail::FailureResult& fr, std::uint64_t bseed,
                           const CampaignOptions& opt) {
  FailureReport f;
  f.message = fr.description;
  f.counterexample = shown(fr.counterExample);
  f.batch_seed = bseed;
  std::vector<std::uint8_t> bytes;
  rc::detail::serialize(fr.reproduce, std::back_inserter(bytes));
  f.replay = replay_line(opt, s.info.name, hex_encode(bytes));
  f.dump = write_case(s, fr.reproduce, opt, f);
  return f;
}

// The declared classes the run missed; with --require-classes a passed suite that missed a
// required one fails (rare classes are required from 4× the level-1 case count on).
void finish_classes(SuiteReport& r, const Suite& s, const CampaignOptions& opt) {
  r.classes_expected = std::int64_t(s.info.classes.size());
  r.classes_rare = s.info.rare_classes;
  for (const std::string& c : s.info.classes)
    if (!r.class_counts.count(c)) r.classes_missing.push_back(c);
  if (!opt.require_classes || r.status != "passed") return;
  r.coverage_required = true;
  const bool all = r.cases >= 4 * std::int64_t(s.info.ctest_cases);
  std::string missed;
  for (const std::string& c : r.classes_missing)
    if (all || std::find(r.classes_rare.begin(), r.classes_rare.end(), c) == r.classes_rare.end())
      missed += (missed.empty() ? "" : " ") + c;
  if (missed.empty()) return;
  FailureReport f;
  f.message =
      "coverage: required classes not hit in " + std::to_string(r.cases) + " cases: " + missed;
  r.failures.push_back(f);
  r.status = "failed";
}

SuiteReport start_report(const Suite& s) {
  SuiteReport r;
  r.name = s.info.name, r.label = s.info.label, r.summary = s.info.summary;
  return r;
}

// golden.regressions: every pinned case under <golden>/regressions that names a suite.
SuiteReport run_regressions(const CampaignOptions& opt) {
  SuiteReport r;
  r.name = "golden.regressions", r.label = "cpu";
  r.summary = "replays every pinned case of golden/regressions that names its suite";
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path dir = std::filesystem::path(opt.golden_dir) / "regressions";
  std::error_code ec;
  if (opt.golden_dir.empty() || !std::filesystem::is_directory(dir, ec)) {
    r.status = "skipped";
    r.skip_reason = opt.golden_dir.empty()
                        ? "no golden/regressions folder found (--golden DIR)"
                        : "no regressions folder under '" + opt.golden_dir + "' (--golden DIR)";
    return r;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    const TensorFile tf = tensor_io::read_tensor_file(p.string(), {});
    const auto it = tf.metadata.find("fp8ref.suite");
    if (it == tf.metadata.end()) continue;  // pinned by another harness (e.g. golden_step)
    ++r.cases;
    ++r.class_counts["suite:" + it->second];
    const Suite& s = find_suite(it->second);
    try {
      s.replay(tf);
    } catch (const std::exception& e) {
      FailureReport f;
      f.message = e.what();
      f.replay = opt.command + " fuzz --replay-file " + p.string();
      f.dump = p.string();
      r.failures.push_back(f);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = r.failures.empty() ? "passed" : "failed";
  if (r.cases == 0) {  // nothing replayed is not a pass
    r.status = "skipped";
    r.skip_reason = "no pinned cases naming a suite in " + dir.string();
  }
  return r;
}

}  // namespace

// --- suite.h state ---------------------------------------------------------------------------
bool capture_requested() { return g_capture; }
void request_capture(bool on) { g_capture = on; }
void set_captured(TensorFile tf) { g_captured = std::move(tf); }
TensorFile take_captured() { return std::move(g_captured); }
void fold_result(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = g_fingerprint;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  g_fingerprint = h;
}
std::uint64_t fingerprint() { return g_fingerprint; }
void reset_fingerprint() { g_fingerprint = 0xcbf29ce484222325ull; }
void plant_selected(const CampaignOptions& opt) {
#ifdef FP8REF_PLANT_HOOKS
  plant::set_active(plant::parse(opt.plant));
#else
  (void)opt;
#endif
}

TensorFile through_safetensors(const TensorFile& tf) {
  const std::vector<std::uint8_t> bytes = tensor_io::serialize_safetensors(tf, "case file");
  return tensor_io::parse_safetensors(bytes, "case file", {});
}

const std::vector<Suite>& all_suites() {
  static const std::vector<Suite> suites = [] {
    std::vector<Suite> v;
    add_gemm_suites(v);
    add_data_suites(v);
    add_oracle_suites(v);
    add_model_bits_suites(v);
    add_law_suites(v);
    add_blackwell_suites(v);
    add_gpu_suites(v);
    return v;
  }();
  return suites;
}

std::string hex_encode(const std::vector<std::uint8_t>& bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : bytes) s += d[b >> 4], s += d[b & 15];
  return s;
}

std::vector<std::string> select_suites(const std::vector<std::string>& selectors) {
  std::vector<std::string> all;
  for (const Suite& s : all_suites()) all.push_back(s.info.name);
  all.push_back("golden.regressions");
  if (selectors.empty()) return all;
  std::vector<std::string> out;
  auto add = [&out](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const std::string& sel : selectors) {
    if (sel.rfind("label:", 0) == 0) {
      const std::string label = sel.substr(6);
      if (label != "cpu" && label != "gpu")
        throw std::invalid_argument("unknown label '" + label + "' (cpu, gpu)");
      for (const Suite& s : all_suites())
        if (s.info.label == label) add(s.info.name);
      if (label == "cpu") add("golden.regressions");
      continue;
    }
    bool matched = false;
    for (const std::string& n : all)
      if (n == sel ||
          (sel.size() > 1 && sel.back() == '*' && n.rfind(sel.substr(0, sel.size() - 1), 0) == 0))
        add(n), matched = true;
    if (!matched) find_suite(sel);  // throws with the list of suites
  }
  return out;
}

bool CampaignReport::ok() const {
  for (const SuiteReport& s : suites)
    if (s.status == "failed") return false;
  return true;
}

CampaignReport run_campaign(const CampaignOptions& opt, const ProgressFn& progress) {
  if (opt.shard_count < 1 || opt.shard_index < 0 || opt.shard_index >= opt.shard_count)
    throw std::invalid_argument("--shard i/n needs 0 <= i < n");
  if (opt.batch_cases < 1) throw std::invalid_argument("batch size must be >= 1");
  if (opt.cases && *opt.cases < 0) throw std::invalid_argument("--cases must be >= 0");
  if (opt.seconds && !(*opt.seconds > 0)) throw std::invalid_argument("--seconds must be > 0");
  if (opt.threads < 1) throw std::invalid_argument("--threads must be >= 1");
  const std::vector<std::string> names = select_suites(opt.suites);
  quiet_rapidcheck_configuration();
  plant_selected(opt);
  // Cases are small: by default the reference runs single-threaded (OpenMP fork/join and spinning
  // would cost more than the work); --threads N runs it with N (the results must not change:
  // fuzz.campaign_deterministic compares the fingerprints). Suites that test thread-count
  // invariance also compare 1 and 2 threads themselves.
  const ThreadCount threads(opt.threads);
  CampaignReport rep;
  rep.seed = opt.seed, rep.shard_index = opt.shard_index, rep.shard_count = opt.shard_count;
  rep.threads = opt.threads;
  const auto c0 = std::chrono::steady_clock::now();
  std::size_t runnable = 0;
  for (const std::string& n : names)
    if (n == "golden.regressions" || find_suite(n).unavailable_reason().empty()) ++runnable;
  const double per_suite =
      opt.seconds ? *opt.seconds / double(std::max<std::size_t>(runnable, 1)) : 0.0;
  for (std::size_t si = 0; si < names.size(); ++si) {
    if (names[si] == "golden.regressions") {
      rep.suites.push_back(run_regressions(opt));
      if (progress)
        progress(si, names[si], rep.suites.back().cases, rep.suites.back().failures.size(),
                 rep.suites.back().seconds);
      continue;
    }
    const Suite& s = find_suite(names[si]);
    SuiteReport r = start_report(s);
    if (const std::string why = s.unavailable_reason(); !why.empty()) {
      r.status = "skipped", r.skip_reason = why;
      finish_classes(r, s, opt);
      r.classes_missing.clear();
      rep.suites.push_back(r);
      continue;
    }
    reset_fingerprint();
    const std::int64_t target =
        opt.cases
            ? *opt.cases
            : (opt.seconds
                   ? -1
                   : std::max<std::int64_t>(1, std::llround(s.info.ctest_cases * opt.case_factor)));
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&t0] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    for (std::int64_t k = 0;; ++k) {
      if (target >= 0 && r.cases >= target) break;
      if (target < 0 && k > 0 && elapsed() >= per_suite) break;
      const std::int64_t b = k * opt.shard_count + opt.shard_index;
      const std::uint64_t bseed = batch_seed(opt.seed, s.info.name, b);
      rc::detail::TestParams params;
      params.seed = bseed;
      params.maxSuccess =
          int(target >= 0 ? std::min<std::int64_t>(opt.batch_cases, target - r.cases)
                          : opt.batch_cases);
      params.maxSize = 100;
      CountingListener listener;
      rc::detail::TestMetadata md{s.info.name, s.info.name};
      const rc::detail::TestResult res =
          rc::detail::checkProperty(rc::detail::toProperty(s.property), md, params, listener);
      rc::detail::SuccessResult ok;
      rc::detail::FailureResult fail;
      rc::detail::GaveUpResult gave;
      rc::detail::Error err;
      if (res.match(ok)) {
        r.cases += ok.numSuccess;
        for (const auto& [tags, n] : ok.distribution)
          for (const std::string& t : tags) r.class_counts[unquoted(t)] += n;
      } else if (res.match(fail)) {
        r.cases += fail.numSuccess + 1;
        r.failures.push_back(failure_from(s, fail, bseed, opt));
      } else if (res.match(gave)) {
        r.cases += gave.numSuccess;
        FailureReport f;
        f.message = "gave up: " + gave.description;
        f.batch_seed = bseed;
        r.failures.push_back(f);
      } else if (res.match(err)) {
        FailureReport f;
        f.message = "error: " + err.description;
        f.batch_seed = bseed;
        r.failures.push_back(f);
      }
      if (progress) progress(si, s.info.name, r.cases, r.failures.size(), elapsed());
      if (!r.failures.empty()) break;  // one shrunk failure per suite is what a person can act on
    }
    r.seconds = elapsed();
    r.fingerprint = fingerprint();
    r.status = r.failures.empty() ? "passed" : "failed";
    finish_classes(r, s, opt);
    rep.suites.push_back(std::move(r));
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  return rep;
}

SuiteReport replay_token(const std::string& suite, const std::string& token,
                         const CampaignOptions& opt) {
  const Suite& s = find_suite(suite);
  if (const std::string why = s.unavailable_reason(); !why.empty())
    throw std::invalid_argument("suite " + suite + " cannot run here: " + why);
  const std::vector<std::uint8_t> bytes = hex_decode(token);
  rc::detail::Reproduce rep;
  try {
    const auto end = rc::detail::deserialize(bytes.begin(), bytes.end(), rep);
    if (end != bytes.end()) throw std::invalid_argument("trailing bytes");
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("replay token does not decode: ") + e.what());
  }
  quiet_rapidcheck_configuration();
  plant_selected(opt);
  const ThreadCount threads(std::max(opt.threads, 1));
  SuiteReport r = start_report(s);
  const auto t0 = std::chrono::steady_clock::now();
  rc::detail::TestMetadata md{s.info.name, s.info.name};
  rc::detail::TestParams params;
  CountingListener listener;
  const rc::detail::TestResult res = rc::detail::checkProperty(
      rc::detail::toProperty(s.property), md, params, listener, {{s.info.name, rep}});
  rc::detail::FailureResult fail;
  r.cases = 1;
  if (res.match(fail)) {
    FailureReport f;
    f.message = fail.description;
    f.counterexample = shown(fail.counterExample);
    f.replay = replay_line(opt, s.info.name, token);
    f.dump = write_case(s, rep, opt, f);
    r.failures.push_back(f);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = r.failures.empty() ? "passed" : "failed";
  return r;
}

SuiteReport replay_case_file(const std::string& path, const std::string& suite,
                             const CampaignOptions& opt) {
  const TensorFile tf = tensor_io::read_tensor_file(path, {});
  std::string name = suite;
  if (name.empty()) {
    const auto it = tf.metadata.find("fp8ref.suite");
    if (it == tf.metadata.end())
      throw std::invalid_argument(
          path + ": no 'fp8ref.suite' in its metadata; name the suite with --suite");
    name = it->second;
  }
  const Suite& s = find_suite(name);
  if (const std::string why = s.unavailable_reason(); !why.empty())
    throw std::invalid_argument("suite " + name + " cannot run here: " + why);
  plant_selected(opt);
  const ThreadCount threads(std::max(opt.threads, 1));
  SuiteReport r = start_report(s);
  const auto t0 = std::chrono::steady_clock::now();
  r.cases = 1;
  try {
    s.replay(tf);
  } catch (const Violation& e) {
    FailureReport f;
    f.message = e.what();
    f.replay = opt.command + " fuzz --replay-file " + path;
    f.dump = path;
    r.failures.push_back(f);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = r.failures.empty() ? "passed" : "failed";
  return r;
}

}  // namespace fp8ref::fuzz
