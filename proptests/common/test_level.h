// Test levels, seeds and the RapidCheck property runner shared by every suite (docs/design.md §14):
// FP8REF_TEST_LEVEL=1..3 scales case counts, RC_PARAMS (CTest prepends the CI seed) fixes the
// seed, and a failing property prints a one-line replay command.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

namespace fp8ref::test {

// FP8REF_TEST_LEVEL: 1 (default, CI), 2 or 3. Anything else is rejected loudly, never ignored.
int test_level();

// Case-count multiplier of a level: 1, 4, 16.
int level_factor();

// RapidCheck cases for a property whose level-1 count is `base_cases` (a tenth under
// AddressSanitizer); an explicit max_success in RC_PARAMS wins.
int rc_cases(int base_cases);

// The seed RapidCheck runs with (the last seed= of RC_PARAMS, else one drawn once per process and
// given to RapidCheck with the count), for generators outside RapidCheck (sampled sweeps) so that
// one RC_PARAMS replays everything.
std::uint64_t suite_seed();

// "RC_PARAMS=\"seed=S max_success=N\" FP8REF_TEST_LEVEL=L <this executable> --gtest_filter=T"
// for the running test (max_success left out when <= 0).
std::string replay_command(int max_success);

// RapidCheck takes its case count and seed only from RC_PARAMS, which it reads once per process
// (rc::check has no per-property parameters; only its private API has). So a property
// runs in a process of its own: when the current test is the only one this process runs (as under
// CTest, which starts each test alone), RC_PARAMS is set here to the property's seed and
// rc_cases(base_cases) before RapidCheck first reads it, and this returns false: run it here.
// Otherwise the test is run again alone in a child process of this executable (its output goes
// to ours; a non-zero exit fails the test) and this returns true.
bool property_ran_in_child(int base_cases);

// "Suite/Name" of the running test: the property's id in RapidCheck's reproduce strings.
std::string current_test_id();

// Sends what std::cerr receives to `sink` while it lives (rc::check reports on std::cerr).
class CerrTo {
 public:
  explicit CerrTo(std::ostream& sink) : saved_(std::cerr.rdbuf(sink.rdbuf())) {}
  ~CerrTo() { std::cerr.rdbuf(saved_); }
  CerrTo(const CerrTo&) = delete;
  CerrTo& operator=(const CerrTo&) = delete;

 private:
  std::streambuf* saved_;
};

// Runs a property as the current Google Test with rc_cases(base_cases) cases through RapidCheck's
// public rc::check. Its report goes to std::cout when the property holds (the RC_CLASSIFY
// distribution) and into the test's failure with the replay command when it does not.
template <typename Testable>
void check_property(Testable&& property, int base_cases) {
  if (property_ran_in_child(base_cases)) return;
  std::ostringstream report;
  bool held = false;
  {
    const CerrTo to_report(report);
    held = rc::check(current_test_id(), std::forward<Testable>(property));
  }
  if (held)
    std::cout << report.str() << std::flush;
  else
    ADD_FAILURE() << report.str() << "replay: " << replay_command(rc_cases(base_cases));
}

}  // namespace fp8ref::test

// A RapidCheck property as a Google Test, `base_cases` cases at level 1 (scaled by the level):
// FP8REF_RC_PROP(Codec, MatchesRationalOracle, 200, ()) { ... RC_ASSERT(...); }
#define FP8REF_RC_PROP(Suite, Name, base_cases, ArgList)                         \
  void fp8ref_prop_##Suite##_##Name ArgList;                                     \
  TEST(Suite, Name) {                                                            \
    ::fp8ref::test::check_property(&fp8ref_prop_##Suite##_##Name, (base_cases)); \
  }                                                                              \
  void fp8ref_prop_##Suite##_##Name ArgList
