// fp8-check inspect (inspect.h): reads any tensor file tensor_io supports and prints statistics of
// the decoded values; FP8/FP4 tensors also get their most frequent codes.
#include "cli/inspect.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/errors.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "tensor_io/element_values.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::tensor_io;

struct InspectOptions {
  std::string file;
  std::vector<std::string> as;
  bool json = false;
  bool no_progress = false;
  std::size_t top = 8;
};

constexpr std::uint64_t kProgressChunk = std::uint64_t{1} << 16;  // elements between updates
// Elements between releases of a mapped tensor's counted pages (inspect's RSS stays near this).
constexpr std::uint64_t kReleaseChunk = std::uint64_t{1} << 22;
constexpr std::uint64_t kProgressMinElements = std::uint64_t{1}
                                               << 22;  // smaller files: no progress

std::string code_hex(std::uint32_t code, DType t) {
  char buf[8];
  std::snprintf(buf, sizeof buf, t == DType::F4 ? "0x%01x" : "0x%02x", code);
  return buf;
}

nlohmann::ordered_json tensor_json(const NamedTensor& nt, const TensorStats& s) {
  nlohmann::ordered_json codes = nlohmann::ordered_json::array();
  for (const auto& [code, count] : s.top_codes) {
    codes.push_back({{"code", code_hex(code, nt.tensor.dtype)},
                     {"count", count},
                     {"value", decode_bits(nt.tensor.dtype, code)}});
  }
  nlohmann::ordered_json j = {{"name", json_text(nt.name)},
                              {"dtype", dtype_name(nt.tensor.dtype)},
                              {"shape", nt.tensor.shape},
                              {"numel", s.numel},
                              {"nan", s.nan},
                              {"pos_inf", s.pos_inf},
                              {"neg_inf", s.neg_inf},
                              {"finite", s.finite},
                              {"top_codes", codes}};
  if (s.finite > 0) j.update({{"min", s.min}, {"max", s.max}, {"mean", s.mean}});
  for (auto& c : j["top_codes"]) {
    if (std::isnan(c["value"].get<double>())) c["value"] = "nan";
  }
  return j;
}

void print_text(const NamedTensor& nt, const TensorStats& s) {
  std::printf("%s  %s %s  numel=%llu\n", escape_text(nt.name).c_str(),
              std::string(dtype_name(nt.tensor.dtype)).c_str(),
              shape_string(nt.tensor.shape).c_str(), static_cast<unsigned long long>(s.numel));
  if (s.finite > 0) std::printf("  min=%.9g max=%.9g mean=%.9g\n", s.min, s.max, s.mean);
  std::printf("  finite=%llu nan=%llu +inf=%llu -inf=%llu\n",
              static_cast<unsigned long long>(s.finite), static_cast<unsigned long long>(s.nan),
              static_cast<unsigned long long>(s.pos_inf),
              static_cast<unsigned long long>(s.neg_inf));
  if (!s.top_codes.empty()) {
    std::printf("  top codes:");
    for (const auto& [code, count] : s.top_codes) {
      std::printf(" %s(%.6g)x%llu", code_hex(code, nt.tensor.dtype).c_str(),
                  decode_bits(nt.tensor.dtype, code), static_cast<unsigned long long>(count));
    }
    std::printf("\n");
  }
}

void run_inspect(const InspectOptions& o) {
  ReadOptions ro;
  ro.map = true;  // safetensors / npy tensors view the mapped file (docs/security.md)
  apply_as_options(o.as, ro);
  FileFormat format{};
  TensorFile tf;
  try {
    tf = read_tensor_file(o.file, ro, &format);
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  for (const auto& [k, v] : tf.metadata) metadata[json_text(k)] = json_text(v);
  nlohmann::ordered_json out = {{"schema", "fp8ref.inspect/1"},
                                {"file", json_text(o.file)},
                                {"format", format_name(format)},
                                {"metadata", metadata},
                                {"tensors", nlohmann::ordered_json::array()}};
  if (!o.json)
    std::printf("%s (%s, %zu tensors)\n", escape_text(o.file).c_str(),
                std::string(format_name(format)).c_str(), tf.tensors.size());
  std::uint64_t total = 0;
  for (const NamedTensor& nt : tf.tensors) total += nt.tensor.numel();
  std::unique_ptr<Progress> progress;
  if (!o.no_progress && total >= kProgressMinElements)
    progress = std::make_unique<Progress>("inspect", total, default_progress_style(false));
  std::vector<TensorStats> stats;
  for (const NamedTensor& nt : tf.tensors) {
    stats.push_back(compute_stats(nt.tensor, o.top, progress.get()));
    if (nt.tensor.keep) release_pages(nt.tensor.view);  // RSS: about one tensor, not the file
  }
  if (progress) progress->finish();  // clears a bar before the report is printed
  for (std::size_t i = 0; i < stats.size(); ++i) {
    if (o.json)
      out["tensors"].push_back(tensor_json(tf.tensors[i], stats[i]));
    else
      print_text(tf.tensors[i], stats[i]);
  }
  if (o.json)
    std::cout << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

}  // namespace

tensor_io::DType parse_dtype_option(const std::string& s) {
  const auto t = tensor_io::dtype_from_name(s);
  if (!t)
    throw UsageError("--as: unknown dtype '" + s +
                     "' (try F8_E4M3, F8_E5M2, F8_E8M0, BF16, F16, F32, F4, U8, ...)");
  return *t;
}

void apply_as_options(const std::vector<std::string>& values, tensor_io::ReadOptions& ro) {
  for (const std::string& v : values) {
    const std::size_t eq = v.rfind('=');
    if (eq == std::string::npos) {
      if (ro.as_dtype)
        throw UsageError("--as: one DTYPE for every tensor, not two; NAME=DTYPE for one");
      ro.as_dtype = parse_dtype_option(v);
    } else if (eq == 0) {
      throw UsageError("--as: '" + v + "' has no tensor name before '='");
    } else if (!ro.as_by_name.emplace(v.substr(0, eq), parse_dtype_option(v.substr(eq + 1)))
                    .second) {
      throw UsageError("--as: tensor '" + v.substr(0, eq) + "' given twice");
    }
  }
}

TensorStats compute_stats(const tensor_io::Tensor& t, std::size_t top_n, Progress* progress) {
  TensorStats s;
  s.numel = t.numel();
  const bool codes = has_code_histogram(t.dtype);
  std::array<std::uint64_t, 256> hist{};
  double sum = 0;
  const std::uint64_t bits_per = static_cast<std::uint64_t>(dtype_bits(t.dtype));
  for (std::uint64_t i = 0; i < s.numel; ++i) {
    if (progress != nullptr && i % kProgressChunk == kProgressChunk - 1)
      progress->add(kProgressChunk);
    if (t.keep && i % kReleaseChunk == kReleaseChunk - 1)  // a mapped view: drop counted pages
      release_pages(t.view.subspan(0, (i + 1 - kReleaseChunk) * bits_per / 8));
    const std::uint64_t bits = raw_bits(t, i);
    if (codes) ++hist[bits & 0xff];
    switch (classify_bits(t.dtype, bits)) {
      case FpClass::NaN: ++s.nan; continue;
      case FpClass::PosInf: ++s.pos_inf; continue;
      case FpClass::NegInf: ++s.neg_inf; continue;
      case FpClass::Finite: break;
    }
    const double v = decode_bits(t.dtype, bits);
    s.min = s.finite == 0 ? v : std::min(s.min, v);
    s.max = s.finite == 0 ? v : std::max(s.max, v);
    sum += v;
    ++s.finite;
  }
  if (progress != nullptr) progress->add(s.numel % kProgressChunk);
  if (s.finite > 0) s.mean = sum / static_cast<double>(s.finite);
  for (std::uint32_t c = 0; codes && c < 256; ++c) {
    if (hist[c] > 0) s.top_codes.emplace_back(c, hist[c]);
  }
  std::stable_sort(s.top_codes.begin(), s.top_codes.end(),
                   [](auto& a, auto& b) { return a.second > b.second; });
  if (s.top_codes.size() > top_n) s.top_codes.resize(top_n);
  return s;
}

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Show the tensors of a safetensors / npy / npz / torch.save file");
  sub->add_option("file", o->file, "Tensor file")->required();
  sub->add_option("--as", o->as,
                  "Reinterpret every tensor's bytes as DTYPE (ml_dtypes '<V1'/'<V2' dumps, "
                  ".view(uint8); '<f1' reads as F8_E5M2); NAME=DTYPE: tensor NAME only "
                  "(repeatable, e.g. an .npz of FP6 codes and E8M0 scales)")
      ->allow_extra_args(false);
  sub->add_flag("--json", o->json, "Machine-readable output (schema fp8ref.inspect/1)");
  sub->add_option("--top", o->top, "Number of most frequent FP8/FP4 codes to list")
      ->check(count_in(0, 256))
      ->capture_default_str();
  sub->add_flag(
      "--no-progress", o->no_progress,
      "No progress on stderr (shown for >= 4M elements: a bar on a terminal, else a line per 10%)");
  sub->callback([o] { run_inspect(*o); });
}

}  // namespace fp8ref::cli
