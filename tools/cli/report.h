// Self-contained HTML report for `fp8-check diff --html FILE`: per tensor, an inline-SVG heatmap of
// the max ULP per (group or row bin) x column bin, and the ULP histogram. No scripts, no fetches.
#pragma once

#include <string>
#include <vector>

#include "cli/diff.h"

namespace fp8ref::cli {

std::string render_html_report(const std::string& title, const Metric& metric,
                               const std::vector<TensorDiff>& diffs);

}  // namespace fp8ref::cli
