// The `fp8-check explain grouped-gemm` subcommand (explain.h): options, candidates, and the
// report as text (one summary line, then the ranking and the first element's story) or JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/errors.h"
#include "cli/explain.h"
#include "cli/number_options.h"
#include "cli/oracle_gemm.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;

struct ExplainOptions {
  GemmOptions g;
  std::size_t top = 5;
};

std::string hex(std::uint32_t bits, OutDtype d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, d == OutDtype::f32 ? "0x%08x" : "0x%04x", bits);
  return buf;
}

// The preset's members (or --model's configuration) first, then the wide set, each once.
std::vector<ref::ModelChoice> candidates(const std::vector<ref::ModelChoice>& members,
                                         GemmOptions& o, const GivenOptions& given,
                                         const LoadedCase& lc, OutDtype d) {
  std::vector<ref::ModelChoice> c = members;
  if (o.kernel.empty() && given.model) c.push_back(parse_model(o));
  std::vector<std::string> seen;
  for (const ref::ModelChoice& m : c) seen.push_back(ref::describe_member(m));
  for (const ref::ModelChoice& m : wide_candidates(lc, d))
    if (std::find(seen.begin(), seen.end(), ref::describe_member(m)) == seen.end()) {
      seen.push_back(ref::describe_member(m));
      c.push_back(m);
    }
  return c;
}

void print_story(const ElementStory& s, OutDtype d) {
  std::printf("first failing element [%lld, %lld] (group %lld):\n", (long long)s.row,
              (long long)s.col, (long long)s.group);
  std::printf("  got  %s (%.9g)\n  best %s (%.9g)  distance %+lld ulp of %s\n",
              hex(s.got, d).c_str(), out_value(s.got, d), hex(s.ref_z, d).c_str(),
              out_value(s.ref_z, d), (long long)s.ulps, to_string(d));
  std::printf("  why: %s: %s\n", s.kind.c_str(), s.because.c_str());
  for (std::size_t i = 0; i < s.reproduced_by.size() && i < 5; ++i)
    std::printf("  reproduced by: %s\n", s.reproduced_by[i].c_str());
  if (s.reproduced_by.size() > 5)
    std::printf("  ... and %zu more configurations give this element's bits\n",
                s.reproduced_by.size() - 5);
  std::printf("  partial sums (f32) over the first K elements, per 128-K chunk:\n");
  std::printf("  %6s %8s %16s %16s %16s\n", "chunk", "K end", "exact", "best", "explaining");
  const std::int64_t nb = std::int64_t(s.chain.size()), div = s.diverged_chunk.value_or(-100);
  for (std::int64_t j = 0; j < nb; ++j) {
    if (nb > 24 && j >= 6 && std::abs(j - div) > 2 && j != nb - 1) continue;
    const ChunkSum& c = s.chain[std::size_t(j)];
    std::printf("  %6lld %8lld %16.9g %16.9g %16.9g%s\n", (long long)j, (long long)c.k_end, c.exact,
                c.best, c.explaining, j == div ? "  <- diverges" : "");
  }
}

// A configuration's mismatches: a full count, or the screen's ("12 of 4096 screened").
std::string count(const MemberScore& m) {
  return m.screened_out
             ? std::to_string(m.mismatches) + " of " + std::to_string(m.compared) + " screened"
             : std::to_string(m.mismatches);
}

void print_report(const ExplainReport& r, const ExplainOptions& o, OutDtype d) {
  if (o.g.json) {
    const nlohmann::json j = explain_json(r, d, o.top);
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("explain grouped-gemm: %s\n", r.summary.c_str());
  if (r.screened) {
    const auto full = std::count_if(r.ranked.begin(), r.ranked.end(),
                                    [](const MemberScore& m) { return !m.screened_out; });
    std::printf(
        "screen: each configuration first on %zu sampled elements%s; %zu of %zu compared on every "
        "element (the first %zu by screened mismatches, and every one whose screened count "
        "does not rule it out as the best), the others on the screen only (\"N of M "
        "screened\")\n",
        r.screened,
        r.screened_rows ? (" and " + std::to_string(r.screened_rows) + " whole rows").c_str() : "",
        std::size_t(full), r.ranked.size(), std::max<std::size_t>(o.top, 2));
  }
  std::printf("ranking (fewest mismatches first, %zu configurations):\n", r.ranked.size());
  for (std::size_t i = 0; i < r.ranked.size() && i < o.top; ++i)
    std::printf("  %2zu. %-64s %s\n", i + 1, ref::describe_member(r.ranked[i].m).c_str(),
                count(r.ranked[i]).c_str());
  std::printf("best:      %s\n", ref::describe_member(r.ranked[0].m).c_str());
  if (r.ranked.size() > 1)
    std::printf("runner-up: %s (%s mismatches)\n", ref::describe_member(r.ranked[1].m).c_str(),
                count(r.ranked[1]).c_str());
  if (r.first) print_story(*r.first, d);
}

void run_explain(ExplainOptions o, const GivenOptions& given) {
  std::vector<ref::ModelChoice> members;  // resolving also fills scaling, layout and dtype
  if (!o.g.kernel.empty()) members = resolve_kernel(o.g, given).members;
  const OutDtype d = parse_out_dtype(o.g.out_dtype);
  const LoadedCase lc = load_for_run(o.g);
  const std::vector<ref::ModelChoice> c = candidates(members, o.g, given, lc, d);
  const std::string got_path = o.g.got_file.empty() ? o.g.in : o.g.got_file;
  const TensorFile gf = load_file(got_path);
  const Tensor& got = find_tensor(gf, got_path, o.g.got, "--got");
  const DType want = d == OutDtype::f32    ? DType::F32
                     : d == OutDtype::bf16 ? DType::BF16
                                           : DType::F16;
  if (got.shape != lc.shape || got.dtype != want)
    usage("--got: '" + o.g.got + "' is " + std::string(dtype_name(got.dtype)) + " " +
          shape_string(got.shape) + ", expected " + o.g.out_dtype + " " + shape_string(lc.shape));
  const ExplainReport r = explain(lc, got, c, members.size(), d, o.top, o.g.screen);
  print_report(r, o, d);
  if (!r.exact_match) throw ExitCode{1};
}

}  // namespace

void add_explain_command(CLI::App& app) {
  CLI::App* e = app.add_subcommand(
      "explain", "Say where and why a dumped result differs from the models (docs/cli.md)");
  e->require_subcommand(1);
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* c = e->add_subcommand(
      "grouped-gemm",
      "Rank configurations by mismatches and explain the first failing element (exit 0 exact "
      "match, 1 differs, 2 bad input)");
  const GemmFlags f = add_gemm_options(c, o->g);
  c->add_option("--got", o->g.got, "The result to explain, (M, N) or (G, M, N)")->required();
  c->add_option("--got-file", o->g.got_file, "File holding --got (default: --in)");
  c->add_option("--top", o->top, "Configurations listed in the ranking")
      ->check(count_in(1, 1000))
      ->capture_default_str();
  c->add_flag("--json", o->g.json,
              "Print the report as JSON (schema fp8ref.explain_grouped_gemm/1)");
  c->add_option("--screen", o->g.screen,
                "Elements sampled (a grid of rows x columns, as verify's) on which each "
                "configuration is scored before the report's few are compared on every element; "
                "0: compare every configuration on every element")
      ->check(count_in(0, 1u << 20))
      ->capture_default_str();
  c->callback([o, f] { run_explain(*o, f.given()); });
}

}  // namespace fp8ref::cli
