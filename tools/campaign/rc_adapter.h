// The campaign's only contact with RapidCheck's internal API (rc::detail). RapidCheck's public
// API (rc::check, RC_GTEST_PROP) takes the seed, the case count and a reproduce string from the
// RC_PARAMS environment and reports by printing; the campaign needs them per batch, as values: a
// seed per batch, the tag distribution, the shrunk counterexample and its reproduce token. This
// file turns those calls into plain values, so runner.cpp never names rc::detail.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fp8ref::fuzz::rc_adapter {

struct BatchOutcome {
  enum class Kind : std::uint8_t { passed, failed, gave_up, error } kind = Kind::passed;
  std::int64_t successes = 0;                // cases that passed before the outcome
  std::map<std::string, std::int64_t> tags;  // tag -> passing cases (kind passed)
  std::string message;                       // failed / gave_up / error: RapidCheck's description
  std::string counterexample;                // failed: the shrunk values as RapidCheck shows them
  std::vector<std::uint8_t> reproduce;       // failed: the serialized reproduce token
};

// Runs `property` (a RapidCheck property: generators inside) for up to max_success cases from
// `seed`, shrinking the first failure.
BatchOutcome run_batch(const std::function<void()>& property, const std::string& name,
                       std::uint64_t seed, int max_success, int max_size);

// Runs `property` once on the case a reproduce token names (std::invalid_argument when the token
// does not decode).
BatchOutcome replay(const std::function<void()>& property, const std::string& name,
                    const std::vector<std::uint8_t>& token);

// Reads RapidCheck's configuration once with its banner silenced (the campaign prints its own).
void quiet_configuration();

}  // namespace fp8ref::fuzz::rc_adapter
