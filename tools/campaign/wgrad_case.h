// The K-grouped wgrad case of the `gemm.wgrad` fuzz suite (docs/fuzz.md): its draw from the shared
// generators and its coverage tags. The case itself and its case file: tools/cases/wgrad_case.h.
#pragma once

#include <string>
#include <vector>

#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/suite.h"
#include "cases/wgrad_case.h"

namespace fp8ref::fuzz {

using cases::load_wgrad;
using cases::save_wgrad;
using cases::wgrad_case_diff;
using cases::WgradCase;

WgradCase draw_wgrad();  // inside a RapidCheck property
std::vector<std::string> wgrad_tags(const WgradCase& w);
std::vector<std::string> wgrad_classes();

// Registers `gemm.wgrad` (suites_wgrad.cpp).
void add_wgrad_suite(std::vector<Suite>& out);

}  // namespace fp8ref::fuzz
