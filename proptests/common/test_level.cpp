// Test levels, seeds and the RapidCheck property runner (see test_level.h).
#include "proptests/common/test_level.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
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

bool rc_params_set_max_success() {
  const char* env = std::getenv("RC_PARAMS");
  return env != nullptr && std::string_view(env).find("max_success=") != std::string_view::npos;
}

std::string this_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, std::size_t(n)) : std::string("<test executable>");
}

}  // namespace

// The ASan+UBSan job looks for memory and UB errors, not for rare inputs: a tenth of the cases.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSanitizerDivisor = 10;
#else
constexpr int kSanitizerDivisor = 1;
#endif

int rc_cases(int base_cases) {
  if (rc_params_set_max_success()) return rc::detail::configuration().testParams.maxSuccess;
  return std::max(1, base_cases * level_factor() / kSanitizerDivisor);
}

std::uint64_t suite_seed() { return rc::detail::configuration().testParams.seed; }

std::string replay_command(int max_success) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::ostringstream os;
  os << "RC_PARAMS=\"seed=" << suite_seed();
  if (max_success > 0) os << " max_success=" << max_success;
  os << "\" FP8REF_TEST_LEVEL=" << test_level() << ' ' << this_executable();
  if (info != nullptr) os << " --gtest_filter=" << info->test_suite_name() << '.' << info->name();
  return os.str();
}

void check_property(const rc::detail::Property& property, int base_cases) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = rc_cases(base_cases);
  const rc::detail::TestResult result = rc::detail::checkProperty(property, metadata, params);
  if (result.is<rc::detail::SuccessResult>()) {  // prints the RC_CLASSIFY distribution
    rc::detail::printResultMessage(result, std::cout);
    std::cout << std::endl;
    return;
  }
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  ADD_FAILURE() << os.str() << "\nreplay: " << replay_command(params.maxSuccess);
}

}  // namespace fp8ref::test
