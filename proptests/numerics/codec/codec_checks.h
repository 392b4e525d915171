// Helpers shared by the codec suites: naming configurations for mismatch reports, and failing a
// RapidCheck case (with the mismatches in hex and a safetensors dump) when a batch mismatched.
#pragma once

#include <rapidcheck.h>

#include <map>
#include <string>
#include <vector>

#include "numerics/profile.h"
#include "proptests/common/parallel_sweep.h"
#include "proptests/common/sweep_report.h"
#include "proptests/common/test_level.h"

namespace fp8ref::test {

inline std::string config_name(std::string_view who, Profile p, Format f, Rounding r) {
  return std::string(who) + " " + std::string(to_string(f)) + " " + std::string(to_string(p)) +
         " " + std::string(to_string(r));
}

inline std::string spec_name(std::string_view who, Format f, const EncodeSpec& s) {
  return std::string(who) + " " + std::string(to_string(f)) + " " +
         std::string(to_string(s.rounding)) + " " + std::string(to_string(s.overflow)) + " nan" +
         std::to_string(int(s.nan)) + " inf" + std::to_string(int(s.inf));
}

inline std::string e8m0_spec_name(std::string_view who, const E8m0Spec& s) {
  constexpr const char* modes[] = {"floor", "ceil", "nearest_ties_up", "nearest_ties_even",
                                   "nearest_f32_field"};
  return std::string(who) + " e8m0 " + modes[int(s.rounding)] + (s.saturate ? " sat" : " nonsat") +
         (s.zero_is_nan ? " zero_is_nan" : "") + (s.negative_is_nan ? " negative_is_nan" : "");
}

// Inside a RapidCheck property: fail the case when the batch log has mismatches.
inline void rc_assert_batch_clean(const std::string& case_name, std::uint64_t inputs,
                                  const SweepLog& log, const std::vector<std::string>& names) {
  if (log.count == 0) return;
  std::map<std::string, std::string> metadata{{"replay", replay_command(0)}};
  for (std::size_t i = 0; i < names.size(); ++i) metadata["config." + std::to_string(i)] = names[i];
  const std::string path = dump_mismatches(case_name, log.first, metadata);
  RC_FAIL(std::to_string(log.count) + " mismatches in a batch of " + std::to_string(inputs) +
          "; first:\n" + format_mismatches(log.first, names, 16) + "dump: " + path);
}

}  // namespace fp8ref::test
