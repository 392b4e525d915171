// The campaign's property driver (docs/fuzz.md "Batches, shrinking and replay"): runs a suite's
// property on RapidCheck's generators through the public API only (rc::gen::exec, rc::Random,
// Shrinkable), with the per-batch values the campaign needs and RapidCheck's own entry points
// (rc::check, RC_PARAMS) cannot give: a seed and case count per batch, the coverage classes of the
// passing cases, the shrunk failure and a token that replays it.
//
// The case sequence is RapidCheck's (its searchProperty and shrinkTestCase): case i of a batch is
// generated from the i-th split of Random(seed) at RapidCheck's size for i, and a failure is
// shrunk by taking the first failing shrink until none fails. So a batch draws the cases that
// RapidCheck's checkProperty would draw with the same seed and counts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "campaign/suite.h"

namespace fp8ref::fuzz::driver {

struct BatchOutcome {
  enum class Kind : std::uint8_t { passed, failed, gave_up } kind = Kind::passed;
  std::int64_t successes = 0;                // cases that passed before the outcome
  std::map<std::string, std::int64_t> tags;  // class -> passing cases (kind passed only)
  std::string message;                       // failed / gave_up: what the case threw
  std::string counterexample;                // failed: the shrunk case's coverage classes
  std::vector<std::uint8_t> reproduce;       // failed: the token that replays the shrunk case
};

using Property = std::function<void(CampaignContext&)>;

// Runs `property` for up to max_success passing cases from `seed` (sizes 0..max_size), shrinking
// the first failure; the shrunk case is run once more with ctx.capture set (ctx.captured then
// holds it). Every run folds its results into ctx.fingerprint.
BatchOutcome run_batch(const Property& property, CampaignContext& ctx, std::uint64_t seed,
                       int max_success, int max_size);

// Runs `property` once on the case a reproduce token names, with ctx.capture as the caller set
// it (std::invalid_argument when the token does not decode).
BatchOutcome replay(const Property& property, CampaignContext& ctx,
                    const std::vector<std::uint8_t>& token);

}  // namespace fp8ref::fuzz::driver
