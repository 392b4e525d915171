// fp8-check oracle / verify grouped-gemm (oracle_gemm.h): run the reference forward on the case
// gemm_case.h loads and checks (A (M, K), B (G, N, K) `nk` or (G, K, N) `kn`, scales in the shapes
// of reference/grouped_gemm.h, torch `offs`), then write it or diff a dumped result per group.
// Rows past the last offset are written as +0 by `oracle` and ignored by `verify` (they are
// not part of the result: docs/design.md §9).
#include "cli/oracle_gemm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/errors.h"
#include "cli/gemm_case.h"
#include "cli/kernel_match.h"
#include "cli/number_options.h"
#include "cli/oracle_run.h"
#include "numerics/models.h"
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/element_values.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;

DType out_tensor_dtype(OutDtype d) {
  return d == OutDtype::f32 ? DType::F32 : d == OutDtype::bf16 ? DType::BF16 : DType::F16;
}

// The run in one line, with the canonical model name whatever alias --model used.
std::string describe(const GemmCase& c, const ref::ModelChoice& m, const GemmOptions& o,
                     const std::string& what) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "M=%lld N=%lld K=%lld G=%lld", (long long)c.M, (long long)c.N,
                (long long)c.K, (long long)c.G);
  return std::string(to_string(m.model)) + " (split-K " + m.split().str() + ", epilogue " +
         to_string(m.epilogue) + "), " + o.scaling + " scaling, b-layout " + o.b_layout + ", " +
         o.out_dtype + ", " + (what.empty() ? std::string(buf) : what);
}

// The members of a --kernel preset (or the one --model configuration).
std::vector<ref::ModelChoice> configurations(GemmOptions& o, const GivenOptions& given,
                                             std::optional<ResolvedKernel>& rk) {
  if (!o.kernel.empty()) {
    rk = resolve_kernel(o, given);
    return rk->members;
  }
  if (!given.model) usage("--model or --kernel is required");
  return {parse_model(o)};
}

void run_oracle_command(GemmOptions o, const GivenOptions& given) {
  if (tensor_io::same_file(o.out, o.in))
    throw UsageError("--out " + o.out + " is the input file " + o.in + ": refused");
  std::optional<ResolvedKernel> rk;
  const std::vector<ref::ModelChoice> configs = configurations(o, given, rk);
  const ref::ModelChoice m = configs.front();
  if (configs.size() > 1)
    std::printf(
        "kernel %s: writing its first member; the kernel may also run %zu other%s "
        "(verify --kernel tries each)\n",
        std::string(rk->preset->alias).c_str(), configs.size() - 1, configs.size() == 2 ? "" : "s");
  const OutDtype d = parse_out_dtype(o.out_dtype);
  const LoadedCase lr = load_for_run(o);
  const GemmCase& c = lr.c;
  const OracleRun r = run_loaded(lr, m, d, use_gpu(o));
  const int w = d == OutDtype::f32 ? 4 : 2;
  Tensor y{out_tensor_dtype(d), lr.shape,
           std::vector<std::uint8_t>(r.bits.size() * std::size_t(w))};
  for (std::size_t i = 0; i < r.bits.size(); ++i)
    std::memcpy(y.data.data() + i * std::size_t(w), &r.bits[i], std::size_t(w));
  TensorFile out;
  out.tensors.push_back({o.out_name, std::move(y)});
  if (o.bound) {
    Tensor b{DType::F64, lr.shape, std::vector<std::uint8_t>(r.bound.size() * 8)};
    std::memcpy(b.data.data(), r.bound.data(), b.data.size());
    out.tensors.push_back({o.out_name + ".bound", std::move(b)});
  }
  out.metadata = {{"op", o.grouping == "k" ? "grouped_gemm_k_grouped" : "grouped_gemm_forward"},
                  {"model", to_string(m.model)},
                  {"split_k", std::to_string(m.split_k)},
                  {"split", m.split().str()},
                  {"epilogue", to_string(m.epilogue)},
                  {"scaling", o.scaling},
                  {"b_layout", o.b_layout},
                  {"out_dtype", o.out_dtype},
                  {"rows_outside_groups", "zero"}};
  try {
    write_tensor_file(o.out, out);
  } catch (const tensor_io::Error& e) {
    usage(e.what());
  }
  std::printf("fp8-check oracle grouped-gemm: %s -> %s:%s\n", describe(c, m, o, lr.what).c_str(),
              o.out.c_str(), o.out_name.c_str());
}

struct GroupCount {
  std::int64_t rows = 0, elements = 0, mismatches = 0;
  double max_abs = 0.0;
};

std::string hex(std::uint32_t bits, OutDtype d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, d == OutDtype::f32 ? "0x%08x" : "0x%04x", bits);
  return buf;
}

// Whether got passes: bitwise, or within the model's bound of the exact value (up to the
// half-ulp f32 rounding of the exact value, which is what is computed).
bool element_passes(std::uint32_t got, std::uint32_t ref_z, double bound, double exact, OutDtype d,
                    bool within) {
  if (got == ref_z) return true;
  if (!within) return false;
  const double g = out_value(got, d);
  if (!std::isfinite(g) || !std::isfinite(exact))
    return std::isnan(g) ? std::isnan(exact) : g == exact;
  return std::fabs(g - exact) <= bound + std::ldexp(std::fabs(exact), -24) + 0x1p-150;
}

struct VerifyCounts {
  std::vector<GroupCount> groups;
  std::int64_t padding_rows = 0, failures = 0;
};

// Compares got with the oracle's bits element by element over the rows of every group, listing
// the first o.max_report failing elements.
VerifyCounts compare(const GemmCase& c, const Tensor& got, const OracleRun& r, const OracleRun& ex,
                     OutDtype d, const GemmOptions& o) {
  const auto map = ref::row_map_from_offsets(c.offs, c.M);
  VerifyCounts v{std::vector<GroupCount>(std::size_t(c.G)), 0, 0};
  for (std::int64_t row = 0; row < c.M; ++row) {
    const std::int32_t g = map[std::size_t(row)];
    if (g < 0) {
      ++v.padding_rows;
      continue;
    }
    GroupCount& gc = v.groups[std::size_t(g)];
    ++gc.rows;
    for (std::int64_t n = 0; n < c.N; ++n) {
      const std::size_t i = std::size_t(row * c.N + n);
      const std::uint32_t gb = std::uint32_t(raw_bits(got, i)), rb = r.bits[i];
      ++gc.elements;
      if (gb == rb) continue;
      ++gc.mismatches;
      gc.max_abs = std::max(gc.max_abs, std::fabs(out_value(gb, d) - out_value(rb, d)));
      const double exact = o.within_bound ? double(std::bit_cast<float>(ex.bits[i])) : 0.0;
      if (element_passes(gb, rb, r.bound[i], exact, d, o.within_bound)) continue;
      if (std::size_t(v.failures++) < o.max_report && !o.json)
        std::printf("  [%lld, %lld] group %d: got %s (%.9g)  ref %s (%.9g)  bound %.3g\n",
                    (long long)row, (long long)n, g, hex(gb, d).c_str(), out_value(gb, d),
                    hex(rb, d).c_str(), out_value(rb, d), r.bound[i]);
    }
  }
  return v;
}

// The got tensor, checked against the output dtype and shape.
const Tensor& load_got(const GemmOptions& o, const TensorFile& gf, const std::string& got_path,
                       OutDtype d, const std::vector<std::int64_t>& shape) {
  const Tensor& got = find_tensor(gf, got_path, o.got, "--got");
  if (got.dtype != out_tensor_dtype(d))
    usage("--got: '" + o.got + "' is " + std::string(dtype_name(got.dtype)) +
          " but --out-dtype is " + o.out_dtype);
  if (got.shape != shape)
    usage("--got: '" + o.got + "' has shape " + shape_string(got.shape) + ", expected " +
          shape_string(shape));
  return got;
}

void print_selection(const Selection& sel, const std::optional<ResolvedKernel>& rk,
                     const GemmOptions& o) {
  if (rk)
    std::printf("kernel: %s = %s (%s), %s scaling, %s accumulation: %zu member%s\n",
                std::string(rk->preset->alias).c_str(), std::string(rk->preset->name).c_str(),
                std::string(rk->preset->measured).c_str(), o.scaling.c_str(),
                o.fast_accum ? "fast" : "default", rk->members.size(),
                rk->members.size() == 1 ? "" : "s");
  if (sel.screened && !sel.scores.empty())
    std::printf(
        "screen: each configuration first on %zu sampled elements%s; only those reproducing "
        "all of them are compared on every element\n",
        sel.screened,
        sel.screened_rows
            ? (", then on " + std::to_string(sel.screened_rows) + " whole rows").c_str()
            : "");
  for (const MemberScore& m : sel.scores)
    std::printf("  %-64s %s\n", ref::describe_member(m.m).c_str(),
                m.error ? ("refused: " + m.why).c_str()
                : m.screened_out
                    ? (std::to_string(m.mismatches) + " of " + std::to_string(m.compared) +
                       " screened elements differ (not compared further)")
                          .c_str()
                    : (std::to_string(m.mismatches) + " mismatches").c_str());
  if (rk || sel.scores.size() > 1)
    std::printf("matched: %s\n",
                sel.matched ? ref::describe_member(sel.chosen).c_str() : "none (best below)");
  if (sel.strength) {
    std::printf("strength: %zu configuration%s reproduce%s the data\n", sel.also.size() + 1,
                sel.also.empty() ? "" : "s", sel.also.empty() ? "s" : "");
    for (const std::string& a : sel.also)
      std::printf("  also matches %s: cannot tell them apart\n", a.c_str());
    for (const std::string& w : sel.warnings) std::printf("warning: %s\n", w.c_str());
  }
}

void print_verify_json(const Selection& sel, const std::optional<ResolvedKernel>& rk,
                       const GemmOptions& o, const VerifyCounts& v, bool pass) {
  nlohmann::json j{{"schema", "fp8ref.verify_grouped_gemm/1"},
                   {"result", pass ? "PASS" : "DIFFERS"},
                   {"failures", v.failures},
                   {"scaling", o.scaling},
                   {"b_layout", o.b_layout},
                   {"out_dtype", o.out_dtype},
                   {"configuration", ref::describe_member(sel.chosen)},
                   {"matched", pass ? nlohmann::json(ref::describe_member(sel.chosen))
                                    : nlohmann::json(nullptr)}};
  if (rk)
    j["kernel"] = {
        {"name", rk->preset->name}, {"alias", rk->preset->alias}, {"fast_accum", o.fast_accum}};
  for (const MemberScore& m : sel.scores)
    j["members"].push_back(
        {{"configuration", ref::describe_member(m.m)},
         {"mismatches", m.error ? nlohmann::json(nullptr) : nlohmann::json(m.mismatches)},
         {"compared", m.compared},
         {"screened_out", m.screened_out}});
  j["screen"] = {{"elements", sel.screened}, {"rows", sel.screened_rows}};
  if (sel.strength) {
    j["strength"] = {{"matching_configurations", sel.also.size() + (pass ? 1 : 0)},
                     {"also_matches", sel.also},
                     {"warnings", sel.warnings}};
  }
  for (const GroupCount& g : v.groups)
    j["groups"].push_back(
        {{"rows", g.rows}, {"elements", g.elements}, {"mismatches", g.mismatches}});
  std::printf("%s\n", j.dump(2).c_str());
}

void run_verify_command(GemmOptions o, const GivenOptions& given) {
  std::optional<ResolvedKernel> rk;
  const std::vector<ref::ModelChoice> configs = configurations(o, given, rk);
  const OutDtype d = parse_out_dtype(o.out_dtype);
  const bool on_gpu = use_gpu(o);
  const LoadedCase lc = load_for_run(o);
  const GemmCase& c = lc.c;
  const std::string got_path = o.got_file.empty() ? o.in : o.got_file;
  const TensorFile gf = load_file(got_path);
  const Tensor& got = load_got(o, gf, got_path, d, lc.shape);
  const Selection sel =
      select_configuration(lc, got, configs, d, on_gpu, o.strength, rk.has_value(), o.screen);
  const ref::ModelChoice m = sel.chosen;
  std::optional<OracleRun> fresh;  // the chosen configuration's run, unless scoring kept it
  if (!sel.run) fresh = run_loaded(lc, m, d, on_gpu);
  const OracleRun& r = sel.run ? *sel.run : *fresh;
  const OracleRun ex = o.within_bound
                           ? run_loaded(lc, {AccumulationModel::exact, 1}, OutDtype::f32, false)
                           : OracleRun{};
  if (!o.json) {
    print_selection(sel, rk, o);
    std::printf(
        "fp8-check verify grouped-gemm: %s, %s, oracle on %s\n", describe(c, m, o, lc.what).c_str(),
        o.within_bound ? "within the model's bound of exact" : "bitwise", on_gpu ? "cuda" : "cpu");
  }
  const VerifyCounts v = compare(c, got, r, ex, d, o);
  if (o.json) {
    print_verify_json(sel, rk, o, v, v.failures == 0);
  } else {
    std::printf("  group      rows  elements  mismatches  max |got-ref|\n");
    for (std::size_t g = 0; g < v.groups.size(); ++g)
      std::printf("  %5zu  %8lld  %8lld  %10lld  %.6g\n", g, (long long)v.groups[g].rows,
                  (long long)v.groups[g].elements, (long long)v.groups[g].mismatches,
                  v.groups[g].max_abs);
    if (v.padding_rows)
      std::printf("  rows outside every group: %lld (not compared)\n", (long long)v.padding_rows);
    std::printf("result: %s (%lld element%s failing)\n", v.failures ? "DIFFERS" : "PASS",
                (long long)v.failures, v.failures == 1 ? "" : "s");
  }
  if (v.failures) throw ExitCode{1};
}

}  // namespace

void add_kernel_options(CLI::App* c, GemmOptions& o) {
  c->add_option("--kernel", o.kernel,
                "A kernel preset (docs/presets.md): torch._scaled_mm, torch._scaled_grouped_mm, "
                "deep_gemm.fp8_gemm_nt, ...; fixes model, epilogue and split-K family");
  c->add_flag("--fast-accum", o.fast_accum, "--kernel: the kernel's fast-accumulation mode");
}

namespace {

// The operand files and tensors: --in, A, B, their scales, the group offsets and grouping.
void add_operand_options(CLI::App* c, GemmOptions& o) {
  c->add_option("--in", o.in, "Tensor file holding the operands (safetensors, npz, torch zip)")
      ->required();
  c->add_option("--a", o.a, "A (M, K), F8_E4M3 or F8_E5M2; F4 (e2m1) for the Blackwell models")
      ->required();
  c->add_option("--b", o.b, "B (G, N, K) for nk, (G, K, N) for kn")->required();
  c->add_option("--as", o.as,
                "NAME=DTYPE: read --in's tensor NAME as DTYPE (as inspect --as); "
                "NAME=e2m1|e2m3|e3m2:unpacked: a U8 tensor of one FP4 / FP6 code per byte "
                "(repeatable)")
      ->allow_extra_args(false);
  c->add_option("--scale-a", o.scale_a,
                "A's decode scales, F32 or F8_E8M0: () tensorwise, (M) rowwise, (M, ceil(K/128)) "
                "blockwise, (M, ceil(K/32)) mx, (M, ceil(K/16)) mx16 (ue8m0 values) / nvfp4 "
                "(ue4m3 values)");
  c->add_option(
      "--scale-b", o.scale_b,
      "B's decode scales, F32 or F8_E8M0: (G) tensorwise, (G, N) rowwise, "
      "(G, ceil(N/128), ceil(K/128)) blockwise, (G, N, ceil(K/32)) mx, (G, N, ceil(K/16)) "
      "mx16 / nvfp4");
  c->add_option("--tensor-scale-a", o.tensor_scale_a,
                "nvfp4: A's per-tensor decode scale, F32 () (optional, with --tensor-scale-b)");
  c->add_option("--tensor-scale-b", o.tensor_scale_b,
                "nvfp4: B's per-tensor decode scales, F32 (G)");
  c->add_option("--offs", o.offs,
                "Cumulative group ends (torch offs), length G: rows of A, or K columns with "
                "--grouping k");
  c->add_option("--grouping", o.grouping,
                "m: groups of rows (B (G, N, K)); k: groups of K, A (M, K), B (N, K) nk or "
                "(K, N) kn, rowwise scales (G*M) / (G*N), output (G, M, N)")
      ->capture_default_str();
}

}  // namespace

GemmFlags add_gemm_options(CLI::App* c, GemmOptions& o) {
  GemmFlags f{};
  add_operand_options(c, o);
  f.b_layout = c->add_option("--b-layout", o.b_layout, "nk | kn (--kernel: read from B's shape)")
                   ->capture_default_str();
  f.scaling =
      c->add_option("--scaling", o.scaling,
                    "none | tensorwise | rowwise | blockwise | mx | mx16 | nvfp4 (--kernel: "
                    "read from the scale sizes)")
          ->capture_default_str();
  add_kernel_options(c, o);
  f.model =
      c->add_option("--model", o.model,
                    "Accumulation model (docs/models.md), e.g. exact, hopper_promoted_blockwise, "
                    "blackwell_mxf8f6f4, blackwell_mxf4nvf4, rtx_blackwell_mxf4; aliases "
                    "promoted_blockwise, promoted_tensorwise, promoted_rowwise (or --kernel)");
  f.split_k = c->add_option("--split-k", o.split_k, "Split-K: S equal slices (hopper models)")
                  ->check(count_in(1, 1u << 20))
                  ->capture_default_str();
  f.split_blocks =
      c->add_option("--split-k-blocks", o.split_blocks,
                    "Split-K: slices of L 128-blocks each (hopper models; instead of --split-k)")
          ->check(count_in(0, 1u << 20));
  f.epilogue =
      c->add_option(
           "--epilogue", o.epilogue,
           "Scalar-scale order: model | scale_product | b_then_a | a_then_b (a_then_b: torch "
           "_scaled_grouped_mm rowwise)")
          ->capture_default_str();
  f.out_dtype = c->add_option("--out-dtype", o.out_dtype, "f32 | bf16 | f16 (--kernel: --got's)")
                    ->capture_default_str();
  c->add_option("--device", o.device,
                "Where the oracle runs: cpu | cuda (the GPU oracle, same bits) | auto (cuda when a "
                "device is present and no bound is asked)")
      ->capture_default_str();
  return f;
}

void add_oracle_command(CLI::App& app) {
  CLI::App* oracle =
      app.add_subcommand("oracle", "Recompute an op from dumped inputs under a named model");
  oracle->require_subcommand(1);
  auto o = std::make_shared<GemmOptions>();
  CLI::App* c = oracle->add_subcommand(
      "grouped-gemm", "M-grouped forward Y[r] = A[r]·B[g(r)]^T (exit 0, 2 bad input)");
  const GemmFlags f = add_gemm_options(c, *o);
  c->add_option("--out", o->out, "Output file (.safetensors, .npz, .npy)")->required();
  c->add_option("--out-name", o->out_name, "Name of the output tensor")->capture_default_str();
  c->add_flag("--bound", o->bound,
              "Also write <out-name>.bound (F64): the per-element bound against exact");
  c->callback([o, f] { run_oracle_command(*o, f.given()); });
}

void add_verify_command(CLI::App& app) {
  CLI::App* verify =
      app.add_subcommand("verify", "Diff a dumped result against an op recomputed under a model");
  verify->require_subcommand(1);
  auto o = std::make_shared<GemmOptions>();
  CLI::App* c = verify->add_subcommand(
      "grouped-gemm", "Check a dumped grouped forward (exit 0 pass, 1 differs, 2 bad input)");
  const GemmFlags f = add_gemm_options(c, *o);
  c->add_option("--got", o->got, "The result to check, (M, N) in --out-dtype")->required();
  c->add_option("--got-file", o->got_file, "File holding --got (default: --in)");
  c->add_flag("--within-bound", o->within_bound,
              "Pass elements within the model's bound of the exact value");
  c->add_option("--max-report", o->max_report, "Failing elements listed")
      ->check(count_in(0, kMaxReport))
      ->capture_default_str();
  c->add_flag("--strength", o->strength,
              "Also score the wide set of configurations: report the others that reproduce the "
              "data, and warn on vacuous data");
  c->add_flag("--json", o->json, "Print the result as JSON (schema fp8ref.verify_grouped_gemm/1)");
  c->add_option("--screen", o->screen,
                "--kernel / --strength: elements sampled (a grid of rows x columns) on which each "
                "configuration is tried before it is compared on every element; 0: compare every "
                "configuration on every element (same result, slower)")
      ->check(count_in(0, 1u << 20))
      ->capture_default_str();
  c->callback([o, f] { run_verify_command(*o, f.given()); });
}

}  // namespace fp8ref::cli
