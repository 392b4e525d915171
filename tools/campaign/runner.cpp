// Campaign runner (runner.h) and the suite registry / case helpers (suite.h).
#include "campaign/runner.h"

#include <omp.h>

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

#include "campaign/property_driver.h"
#include "campaign/suite.h"
#include "cases/split_mix64.h"
#include "cases/tensor_form.h"
#include "numerics/plant.h"
#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::fuzz {

namespace {

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

const Suite& find_suite(const std::string& name) {
  for (const Suite& s : all_suites())
    if (s.info.name == name) return s;
  std::string known;
  for (const Suite& s : all_suites()) known += (known.empty() ? "" : ", ") + s.info.name;
  throw std::invalid_argument("unknown suite '" + name + "' (suites: " + known +
                              ", golden.regressions)");
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

// Where a failing case goes: <failure dir>/<suite>-<batch seed>.safetensors, with the failure,
// its replay line and batch seed in the metadata (the failure notes of cases/tensor_form.h).
std::string write_failure_file(const Suite& s, TensorFile tf, const CampaignOptions& opt,
                               const FailureReport& f) {
  cases::put_meta(tf, cases::kNoteSuite, s.info.name);
  cases::put_meta(tf, cases::kNoteReplay, f.replay);
  cases::put_meta(tf, cases::kNoteBatchSeed, std::to_string(f.batch_seed));
  std::string msg = f.message;
  if (msg.size() > 2000) msg.resize(2000);
  cases::put_meta(tf, cases::kNoteFailure, msg);
#ifdef FP8REF_PLANT_HOOKS
  if (!opt.plant.empty()) cases::put_meta(tf, cases::kNotePlant, opt.plant);
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

// Writes the case the last failing run captured in `ctx` (the driver reruns the shrunk case with
// capture on).
std::string write_case(const Suite& s, CampaignContext& ctx, const CampaignOptions& opt,
                       const FailureReport& f) {
  TensorFile tf = std::move(ctx.captured);
  ctx.captured = {};
  if (tf.tensors.empty() && tf.metadata.empty()) return "(not written: the case was not captured)";
  return write_failure_file(s, std::move(tf), opt, f);
}

// The report of a failed run: its message, classes, replay line (`token` in hex) and case file.
FailureReport failure_from(const Suite& s, CampaignContext& ctx, const driver::BatchOutcome& out,
                           const std::string& token, std::uint64_t bseed,
                           const CampaignOptions& opt) {
  FailureReport f;
  f.message = out.message;
  f.counterexample = out.counterexample;
  f.batch_seed = bseed;
  f.replay = replay_line(opt, s.info.name, token);
  f.dump = write_case(s, ctx, opt, f);
  return f;
}

// The declared classes the run missed; with --require-classes a passed suite that missed a
// required one fails (rare classes are required from 4× the level-1 case count on).
void finish_classes(SuiteReport& r, const Suite& s, const CampaignOptions& opt) {
  r.classes_expected = std::int64_t(s.info.classes.size());
  r.classes_rare = s.info.rare_classes;
  for (const std::string& c : s.info.classes)
    if (!r.class_counts.count(c)) r.classes_missing.push_back(c);
  if (!opt.require_classes || r.status != SuiteStatus::passed) return;
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
  r.status = SuiteStatus::failed;
}

SuiteReport start_report(const Suite& s) {
  SuiteReport r;
  r.name = s.info.name, r.label = s.info.label, r.summary = s.info.summary;
  return r;
}

// The pinned case files of golden/regressions, in name order.
std::vector<std::filesystem::path> regression_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Replays one pinned case file against the suite its metadata names (none: not a campaign case).
void replay_regression(SuiteReport& r, const std::filesystem::path& p, const CampaignOptions& opt) {
  const TensorFile tf = tensor_io::read_tensor_file(p.string(), {});
  const auto it = tf.metadata.find("fp8ref.suite");
  if (it == tf.metadata.end()) return;  // pinned by another harness (e.g. golden_step)
#ifdef FP8REF_PLANT_HOOKS
  // fp8-check-planted has no GPU suites (planted_no_gpu.cpp): their pinned cases are not its.
  if (it->second.starts_with("gpu.")) return;
#endif
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

// golden.regressions: every pinned case under <golden>/regressions that names a suite.
SuiteReport run_regressions(const CampaignOptions& opt) {
  SuiteReport r;
  r.name = "golden.regressions", r.label = "cpu";
  r.summary = "replays every pinned case of golden/regressions that names its suite";
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path dir = std::filesystem::path(opt.golden_dir) / "regressions";
  std::error_code ec;
  if (opt.golden_dir.empty() || !std::filesystem::is_directory(dir, ec)) {
    r.status = SuiteStatus::skipped;
    r.skip_reason = opt.golden_dir.empty()
                        ? "no golden/regressions folder found (--golden DIR)"
                        : "no regressions folder under '" + opt.golden_dir + "' (--golden DIR)";
    return r;
  }
  for (const auto& p : regression_files(dir)) replay_regression(r, p, opt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = r.failures.empty() ? SuiteStatus::passed : SuiteStatus::failed;
  if (r.cases == 0) {  // nothing replayed is not a pass
    r.status = SuiteStatus::skipped;
    r.skip_reason = "no pinned cases naming a suite in " + dir.string();
  }
  return r;
}

// Plants the bug --plant names (the planted-bug build only; numerics/plant.h).
void plant_selected(const CampaignOptions& opt) {
#ifdef FP8REF_PLANT_HOOKS
  plant::set_active(plant::parse(opt.plant));
#else
  (void)opt;
#endif
}

}  // namespace

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
    if (s.status == SuiteStatus::failed) return false;
  return true;
}

namespace {

void validate(const CampaignOptions& opt) {
  if (opt.shard_count < 1 || opt.shard_index < 0 || opt.shard_index >= opt.shard_count)
    throw std::invalid_argument("--shard i/n needs 0 <= i < n");
  if (opt.batch_cases < 1) throw std::invalid_argument("batch size must be >= 1");
  if (opt.cases && *opt.cases < 0) throw std::invalid_argument("--cases must be >= 0");
  if (opt.seconds && !(*opt.seconds > 0)) throw std::invalid_argument("--seconds must be > 0");
  if (opt.threads < 1) throw std::invalid_argument("--threads must be >= 1");
}

// Cases a suite runs: --cases, its level-1 count times the factor, or -1 (the time budget).
std::int64_t case_target(const Suite& s, const CampaignOptions& opt) {
  if (opt.cases) return *opt.cases;
  if (opt.seconds) return -1;
  return std::max<std::int64_t>(1, std::llround(s.info.ctest_cases * opt.case_factor));
}

// One batch's outcome folded into the suite's report.
void add_outcome(SuiteReport& r, CampaignContext& ctx, const driver::BatchOutcome& out,
                 const Suite& s, std::uint64_t bseed, const CampaignOptions& opt) {
  using Kind = driver::BatchOutcome::Kind;
  r.cases += out.successes + (out.kind == Kind::failed ? 1 : 0);
  for (const auto& [tag, n] : out.tags) r.class_counts[tag] += n;
  if (out.kind == Kind::passed) return;
  if (out.kind == Kind::failed) {
    r.failures.push_back(failure_from(s, ctx, out, hex_encode(out.reproduce), bseed, opt));
    return;
  }
  FailureReport f;
  f.message = "gave up: " + out.message;
  f.batch_seed = bseed;
  r.failures.push_back(f);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The batches of one suite until its case target or time share is reached, or it fails. The
// suite's context lives for the run: every batch folds into its fingerprint.
SuiteReport run_suite(const Suite& s, std::size_t si, double per_suite, const CampaignOptions& opt,
                      const ProgressFn& progress) {
  SuiteReport r = start_report(s);
  CampaignContext ctx;
  const std::int64_t target = case_target(s, opt);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t k = 0;; ++k) {
    if (target >= 0 && r.cases >= target) break;
    if (target < 0 && k > 0 && seconds_since(t0) >= per_suite) break;
    const std::int64_t b = k * opt.shard_count + opt.shard_index;
    const std::uint64_t bseed = batch_seed(opt.seed, s.info.name, b);
    const int n = int(target >= 0 ? std::min<std::int64_t>(opt.batch_cases, target - r.cases)
                                  : opt.batch_cases);
    add_outcome(r, ctx, driver::run_batch(s.property, ctx, bseed, n, 100), s, bseed, opt);
    if (progress) progress(si, s.info.name, r.cases, r.failures.size(), seconds_since(t0));
    if (!r.failures.empty()) break;  // one shrunk failure per suite is what a person can act on
  }
  r.seconds = seconds_since(t0);
  r.fingerprint = ctx.fingerprint.value;
  r.status = r.failures.empty() ? SuiteStatus::passed : SuiteStatus::failed;
  finish_classes(r, s, opt);
  return r;
}

SuiteReport skipped_suite(const Suite& s, const std::string& why, const CampaignOptions& opt) {
  SuiteReport r = start_report(s);
  r.status = SuiteStatus::skipped, r.skip_reason = why;
  finish_classes(r, s, opt);
  r.classes_missing.clear();
  return r;
}

// The time share of each suite that can run here (--seconds over the runnable suites).
double time_per_suite(const std::vector<std::string>& names, const CampaignOptions& opt) {
  std::size_t runnable = 0;
  for (const std::string& n : names)
    if (n == "golden.regressions" || find_suite(n).unavailable_reason().empty()) ++runnable;
  return opt.seconds ? *opt.seconds / double(std::max<std::size_t>(runnable, 1)) : 0.0;
}

// The suite a campaign runs at position `si`: the pinned regressions, a skipped suite that
// cannot run here, or its batches.
SuiteReport run_selected(const std::string& name, std::size_t si, double per_suite,
                         const CampaignOptions& opt, const ProgressFn& progress) {
  if (name == "golden.regressions") {
    SuiteReport r = run_regressions(opt);
    if (progress) progress(si, name, r.cases, r.failures.size(), r.seconds);
    return r;
  }
  const Suite& s = find_suite(name);
  if (const std::string why = s.unavailable_reason(); !why.empty())
    return skipped_suite(s, why, opt);
  return run_suite(s, si, per_suite, opt, progress);
}

// The suite a replay names, refused when it cannot run here.
const Suite& runnable_suite(const std::string& name) {
  const Suite& s = find_suite(name);
  if (const std::string why = s.unavailable_reason(); !why.empty())
    throw std::invalid_argument("suite " + name + " cannot run here: " + why);
  return s;
}

}  // namespace

CampaignReport run_campaign(const CampaignOptions& opt, const ProgressFn& progress) {
  validate(opt);
  const std::vector<std::string> names = select_suites(opt.suites);
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
  const double per_suite = time_per_suite(names, opt);
  for (std::size_t si = 0; si < names.size(); ++si)
    rep.suites.push_back(run_selected(names[si], si, per_suite, opt, progress));
  rep.seconds = seconds_since(c0);
  return rep;
}

SuiteReport replay_token(const std::string& suite, const std::string& token,
                         const CampaignOptions& opt) {
  const Suite& s = runnable_suite(suite);
  const std::vector<std::uint8_t> bytes = hex_decode(token);
  plant_selected(opt);
  const ThreadCount threads(std::max(opt.threads, 1));
  SuiteReport r = start_report(s);
  const auto t0 = std::chrono::steady_clock::now();
  CampaignContext ctx;
  ctx.capture = true;  // a case that still fails is written again
  const driver::BatchOutcome out = driver::replay(s.property, ctx, bytes);
  r.cases = 1;
  if (out.kind == driver::BatchOutcome::Kind::failed)
    r.failures.push_back(failure_from(s, ctx, out, token, 0, opt));
  r.seconds = seconds_since(t0);
  r.status = r.failures.empty() ? SuiteStatus::passed : SuiteStatus::failed;
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
  const Suite& s = runnable_suite(name);
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
  r.seconds = seconds_since(t0);
  r.status = r.failures.empty() ? SuiteStatus::passed : SuiteStatus::failed;
  return r;
}

}  // namespace fp8ref::fuzz
