// The inputs of `fp8-check oracle|verify grouped-gemm` (oracle_gemm.h;
// docs/design.md §9-12): options, the operands read from a tensor file and checked in full against
// the shapes the scaling and --b-layout require (reference/grouped_gemm.h), and --model parsing
// with the short model names (docs/design.md §10) accepted as aliases. Every failure is a
// cli::UsageError (one line, exit 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cases/gemm_case.h"
#include "numerics/models.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {

// verify's screen: elements sampled (a grid of 64 rows x 64 columns) on which each configuration is
// evaluated before it is evaluated in full (kernel_screen.h); 0 turns the screen off.
inline constexpr std::size_t kDefaultScreen = 4096;

struct GemmOptions {
  std::string in, a, b, scale_a, scale_b, offs, b_layout = "nk", scaling = "none", model;
  std::string grouping = "m";  // m: groups of rows of A; k: groups of K (wgrad-style)
  std::string tensor_scale_a, tensor_scale_b;  // nvfp4's per-tensor scales (optional)
  std::vector<std::string> as;  // --as NAME=DTYPE[:unpacked] for tensors of --in (load_input)
  std::string out_dtype = "f32", out, out_name = "out", got, got_file;
  int split_k = 1;
  std::int64_t split_blocks = 0;
  std::string epilogue = "model";
  std::string device = "cpu";  // cpu | cuda | auto: where the oracle runs (docs/gpu_oracle.md)
  bool bound = false, within_bound = false;
  std::size_t max_report = 10;
  std::string kernel;  // a kernel preset (reference/kernel_preset.h), with fast_accum
  bool fast_accum = false, strength = false, json = false;
  std::size_t screen = kDefaultScreen;
};

// The case as the reference op takes it (owning storage): tools/cases/gemm_case.h.
using cases::GemmCase;

// --grouping k: A (M, K) and B (N, K) `nk` or (K, N) `kn` whose K columns are cut into G groups
// by `offs` (cumulative K ends; columns past offs[G-1] belong to no group); output (G, M, N),
// out[g] = the forward of group g's K columns alone, so its 128-K blocks start at the group's
// first column. Scales: none; tensorwise scale_a (1), scale_b (1); rowwise scale_a (G·M),
// scale_b (G·N), one per output row / column of each group, as torch `_scaled_grouped_mm` takes
// them; blockwise / mx as below. `groups[g]` is group g as a one-group forward case (K = 0 for an
// empty group).
struct KGroupedCase {
  std::int64_t M = 0, N = 0, K = 0, G = 0;
  std::vector<std::int64_t> offs;
  std::vector<GemmCase> groups;
  // blockwise (1x128) / mx (1x32) scales along K, restarting at each group start: scale_a
  // (M, R), scale_b (N, R), R = sum_g ceil(k_g / blk) + ceil((K - offs[G-1]) / blk). Such a
  // case is evaluated as the wgrad of reference/grouped_gemm.h with K as its tokens: dy = A^T
  // (K, M), x = B as (K, N), scales transposed to (R, M) / (R, N), C = -0 (so RN(C + acc) is
  // acc); `groups` then carry no scales.
  ref::Scaling block_scaling = ref::Scaling::none;
  Format fa = Format::e4m3, fb = Format::e4m3;
  std::vector<std::uint8_t> dy, x;
  std::vector<float> sdy, sx;
  // The (G·M, N) stacking of the output as an M-grouped case (group g: rows [g·M, (g+1)·M)),
  // for the per-group comparison of verify.
  GemmCase stacked() const;
};
KGroupedCase load_kgrouped_case(const GemmOptions& o);
// The same on tensors already in memory (the Python module's arrays).
KGroupedCase load_kgrouped_case(const tensor_io::TensorFile& tf, const GemmOptions& o);

// K elements per scale along K for the per-block scalings (0 for the scalar ones).
std::int64_t scale_block_k(ref::Scaling s);

// The first of group g's rows in KGroupedCase's (rows, R) block-scale layout: every group before
// it takes ceil(k_h / blk) rows (group h spans offs[h-1]..offs[h], offs[-1] = 0). g = offs.size()
// gives the first row of the trailing columns past offs.back().
std::int64_t kgroup_first_scale_row(std::span<const std::int64_t> offs, std::int64_t g,
                                    std::int64_t blk);

[[noreturn]] void usage(const std::string& what);

tensor_io::TensorFile load_file(const std::string& path);
// --in read with the --as options (docs/cli.md): NAME=DTYPE reinterprets tensor NAME as inspect's
// --as does; NAME=DTYPE:unpacked reads a U8 / I8 tensor NAME of one e2m1 / e2m3 / e3m2 code per
// byte in the low bits (torchao's *_unpacked, quantize --f6-codes u8) as that format.
tensor_io::TensorFile load_input(const GemmOptions& o);
const tensor_io::Tensor& find_tensor(const tensor_io::TensorFile& tf, const std::string& file,
                                     const std::string& name, const char* flag);

// Reads and checks A, B, the scales and the offsets named by `o` (see oracle_gemm.cpp's header
// and docs/cli.md for the shape rules).
GemmCase load_case(const GemmOptions& o);
// The same on tensors already in memory (the Python module's arrays); `o.in` names them in
// messages.
GemmCase load_case(const tensor_io::TensorFile& tf, const GemmOptions& o);

// A --model name: a canonical model name (to_string(AccumulationModel)) or a short alias
// (promoted_blockwise, promoted_tensorwise, promoted_rowwise); nullopt for anything else.
std::optional<AccumulationModel> model_from_cli_name(std::string_view name);

// --model, --split-k / --split-k-blocks and --epilogue.
ref::ModelChoice parse_model(const GemmOptions& o);
OutDtype parse_out_dtype(const std::string& s);

}  // namespace fp8ref::cli
