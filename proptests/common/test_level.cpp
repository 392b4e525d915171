// Test levels, seeds and the RapidCheck property runner (see test_level.h).
#include "proptests/common/test_level.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace fp8ref::test {

int test_level() {
  const char* env = std::getenv("FP8REF_TEST_LEVEL");
  if (env == nullptr || *env == '\0') return 1;
  const std::string_view s(env);
  if (s == "1" || s == "2" || s == "3") return s[0] - '0';
  throw std::invalid_argument("FP8REF_TEST_LEVEL must be 1, 2 or 3, got '" + std::string(s) + "'");
}

int level_factor() {
  static const int factor = 1 << (2 * (test_level() - 1));
  return factor;
}

namespace {

// The value of the last `key=` word of RC_PARAMS (RapidCheck, too, takes the last of a repeated
// key: CTest prepends the CI seed, so one given in the environment wins), or nothing.
std::optional<std::string> rc_param(std::string_view key) {
  const char* env = std::getenv("RC_PARAMS");
  std::optional<std::string> value;
  std::istringstream words(env == nullptr ? "" : env);
  for (std::string w; words >> w;)
    if (w.size() > key.size() && w.compare(0, key.size(), key) == 0 && w[key.size()] == '=')
      value = w.substr(key.size() + 1);
  return value;
}

std::uint64_t parse_u64(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  try {
    const unsigned long long v = std::stoull(text, &used);
    if (used == text.size() && text[0] != '-') return v;
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument("RC_PARAMS: " + key + " must be an unsigned integer, got '" + text +
                              "'");
}

std::string this_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, std::size_t(n)) : std::string("<test executable>");
}

// Appends `key=value` to RC_PARAMS unless it names the key already (the environment wins).
void default_rc_param(const std::string& key, const std::string& value) {
  if (rc_param(key)) return;
  const char* env = std::getenv("RC_PARAMS");
  const std::string params = (env == nullptr ? std::string() : std::string(env) + " ");
  ::setenv("RC_PARAMS", (params + key + "=" + value).c_str(), 1);
}

// Runs the current test alone in a child process of this executable (same environment, so the
// same level and seed); returns its exit status, or 128 + the signal that ended it.
int run_current_test_alone() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string exe = this_executable();
  std::string filter =
      std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  char brief[] = "--gtest_brief=1";  // the child's own banner would repeat ours
  char* argv[] = {exe.data(), filter.data(), brief, nullptr};
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // the child's output follows ours in order
  pid_t pid = 0;
  if (::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, environ) != 0)
    throw std::runtime_error("cannot start " + exe + " to run " + filter);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed for " + filter);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// The ASan+UBSan job looks for memory and UB errors, not for rare inputs: a tenth of the cases.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSanitizerDivisor = 10;
#else
constexpr int kSanitizerDivisor = 1;
#endif

int rc_cases(int base_cases) {
  if (const auto n = rc_param("max_success")) return int(parse_u64("max_success", *n));
  return std::max(1, base_cases * level_factor() / kSanitizerDivisor);
}

std::uint64_t suite_seed() {
  static const std::uint64_t seed = [] {
    if (const auto s = rc_param("seed")) return parse_u64("seed", *s);
    std::random_device rd;  // no seed given: one per process, as RapidCheck would draw
    return (std::uint64_t(rd()) << 32) | rd();
  }();
  return seed;
}

std::string replay_command(int max_success) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::ostringstream os;
  os << "RC_PARAMS=\"seed=" << suite_seed();
  if (max_success > 0) os << " max_success=" << max_success;
  os << "\" FP8REF_TEST_LEVEL=" << test_level() << ' ' << this_executable();
  if (info != nullptr) os << " --gtest_filter=" << info->test_suite_name() << '.' << info->name();
  return os.str();
}

std::string current_test_id() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "/" + info->name();
}

bool property_ran_in_child(int base_cases) {
  default_rc_param("seed", std::to_string(suite_seed()));  // one seed for every property
  if (::testing::UnitTest::GetInstance()->test_to_run_count() != 1) {
    if (const int status = run_current_test_alone(); status != 0)
      ADD_FAILURE() << "the property failed in its own process (output above), exit status "
                    << status;
    return true;
  }
  // RapidCheck has not read RC_PARAMS yet unless a property ran before in this process (a test
  // repeated with --gtest_repeat): then it must ask for the same count.
  static const int first_count = rc_cases(base_cases);
  if (rc_cases(base_cases) != first_count)
    throw std::logic_error("two RapidCheck properties with different case counts in one test");
  default_rc_param("max_success", std::to_string(first_count));
  return false;
}

}  // namespace fp8ref::test
