// HTML report rendering (report.h). Colour scale: log2(1 + max ULP) per cell, white = bitwise
// equal, dark red = NaN/Inf class mismatch; the histogram bars are log-scaled counts per ULP
// bucket.
#include "cli/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fp8ref::cli {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string colour(double ulp, double max_log) {
  if (ulp <= 0) return "#ffffff";
  if (ulp >= 1e30) return "#5a0000";
  const double t = max_log > 0 ? std::log2(1 + ulp) / max_log : 1;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#ff%02x%02x", static_cast<int>(220 * (1 - t)),
                static_cast<int>(180 * (1 - t)));
  return buf;
}

void heatmap_svg(std::ostringstream& o, const TensorDiff& d) {
  const int cell = 14;
  const std::size_t rows = d.heatmap.size(), cols = rows ? d.heatmap[0].size() : 0;
  double max_log = 0;
  for (const auto& r : d.heatmap) {
    for (double v : r) max_log = std::max(max_log, v < 1e30 ? std::log2(1 + v) : 0);
  }
  o << "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << cols * cell + 80
    << "\" height=\"" << rows * cell + 20 << "\"><title>max ULP per "
    << (d.groups.empty() ? "row bin" : "group") << " x column bin</title>\n";
  for (std::size_t r = 0; r < rows; ++r) {
    const std::string label = d.groups.empty()        ? "rows " + std::to_string(r)
                              : d.groups[r].group < 0 ? "pad"
                                                      : "g" + std::to_string(d.groups[r].group);
    o << "<text x=\"0\" y=\"" << r * cell + 11 << "\" font-size=\"10\">" << label << "</text>";
    for (std::size_t c = 0; c < cols; ++c) {
      o << "<rect x=\"" << 70 + c * cell << "\" y=\"" << r * cell << "\" width=\"" << cell - 1
        << "\" height=\"" << cell - 1 << "\" fill=\"" << colour(d.heatmap[r][c], max_log)
        << "\" stroke=\"#ddd\"><title>" << d.heatmap[r][c] << "</title></rect>";
    }
    o << "\n";
  }
  o << "</svg>\n";
}

void histogram_svg(std::ostringstream& o, const TensorDiff& d) {
  const int bar = 36, height = 120;
  std::uint64_t max_count = 1;
  for (const auto& [k, v] : d.ulp_hist) max_count = std::max(max_count, v);
  const std::size_t n = d.ulp_hist.size() + (d.class_mismatches ? 1 : 0);
  o << "<svg class=\"ulp-histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << n * bar + 10
    << "\" height=\"" << height + 30 << "\"><title>ULP histogram</title>\n";
  std::size_t i = 0;
  auto draw = [&](const std::string& label, std::uint64_t count, const char* fill) {
    const double h = count ? height * std::log2(1.0 + static_cast<double>(count)) /
                                 std::log2(1.0 + static_cast<double>(max_count))
                           : 0;
    o << "<rect x=\"" << i * bar + 2 << "\" y=\"" << height - h << "\" width=\"" << bar - 4
      << "\" height=\"" << h << "\" fill=\"" << fill << "\"><title>" << label << ": " << count
      << "</title></rect><text x=\"" << i * bar + 4 << "\" y=\"" << height + 14
      << "\" font-size=\"10\">" << label << "</text>\n";
    ++i;
  };
  for (const auto& [k, v] : d.ulp_hist)
    draw("≤" + std::to_string(k), v, k == 0 ? "#8fbc8f" : "#cd5c5c");
  if (d.class_mismatches) draw("class", d.class_mismatches, "#5a0000");
  o << "</svg>\n";
}

}  // namespace

std::string render_html_report(const std::string& title, const Metric& metric,
                               const std::vector<TensorDiff>& diffs) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fp8-check diff: "
    << escape(title)
    << "</title><style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px "
       "6px;font-size:12px}.differs{color:#a00}</style></head><body>\n";
  o << "<h1>fp8-check diff</h1><p>" << escape(title) << " &mdash; metric <code>"
    << escape(metric.text) << "</code></p>\n";
  for (const TensorDiff& d : diffs) {
    o << "<h2 class=\"" << (d.passes() ? "pass" : "differs") << "\">" << escape(d.name) << ": "
      << to_string(d.status) << "</h2>\n";
    o << "<p>bitwise mismatches " << d.bitwise_mismatches << " / " << d.numel
      << ", class mismatches " << d.class_mismatches << ", max ULP " << d.max_ulp << ", max abs "
      << d.max_abs << ", rel L2 " << d.rel_l2 << ", SQNR " << d.sqnr_db << " dB</p>\n";
    if (d.numel == 0) continue;
    heatmap_svg(o, d);
    histogram_svg(o, d);
    if (!d.groups.empty()) {
      o << "<table><tr><th>group</th><th>rows</th><th>mismatches</th><th>metric "
           "failures</th><th>max abs</th></tr>\n";
      for (const GroupStats& g : d.groups) {
        o << "<tr><td>" << (g.group < 0 ? std::string("padding") : std::to_string(g.group))
          << "</td><td>" << g.rows << "</td><td>" << g.mismatches << "</td><td>"
          << g.metric_failures << "</td><td>" << g.max_abs << "</td></tr>\n";
      }
      o << "</table>\n";
    }
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace fp8ref::cli
