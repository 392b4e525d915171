// Test levels, seeds and the RapidCheck property runner shared by every suite (docs/design.md §14):
// FP8REF_TEST_LEVEL=1..3 scales case counts, RC_PARAMS (CTest prepends the CI seed) fixes the
// seed, and a failing property prints a one-line replay command.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <string>

namespace fp8ref::test {

// FP8REF_TEST_LEVEL: 1 (default, CI), 2 or 3. Anything else is rejected loudly, never ignored.
int test_level();

// Case-count multiplier of a level: 1, 4, 16.
int level_factor();

// RapidCheck cases for a property whose level-1 count is `base_cases` (a tenth under
// AddressSanitizer); an explicit max_success in RC_PARAMS wins.
int rc_cases(int base_cases);

// The seed RapidCheck runs with (RC_PARAMS seed=, or the one it drew), for generators outside
// RapidCheck (sampled sweeps) so that one RC_PARAMS replays everything.
std::uint64_t suite_seed();

// "RC_PARAMS=\"seed=S max_success=N\" FP8REF_TEST_LEVEL=L <this executable> --gtest_filter=T"
// for the running test (max_success left out when <= 0).
std::string replay_command(int max_success);

// Runs a property as the current Google Test with rc_cases(base_cases) cases; on failure, fails
// the test with RapidCheck's counterexample and the replay command.
void check_property(const rc::detail::Property& property, int base_cases);

}  // namespace fp8ref::test

// A RapidCheck property as a Google Test, `base_cases` cases at level 1 (scaled by the level):
// FP8REF_RC_PROP(Codec, MatchesRationalOracle, 200, ()) { ... RC_ASSERT(...); }
#define FP8REF_RC_PROP(Suite, Name, base_cases, ArgList)                                    \
  void fp8ref_prop_##Suite##_##Name ArgList;                                                \
  TEST(Suite, Name) {                                                                       \
    ::fp8ref::test::check_property(::rc::detail::toProperty(&fp8ref_prop_##Suite##_##Name), \
                                   (base_cases));                                           \
  }                                                                                         \
  void fp8ref_prop_##Suite##_##Name ArgList
