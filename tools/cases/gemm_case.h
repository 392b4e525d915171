// The grouped GEMM case (docs/design.md §9, docs/fuzz.md "Case files"): one struct for the
// campaign's drawn cases, the operands `fp8-check oracle|verify grouped-gemm` reads from a tensor
// file, the reference property suites (proptests/reference/gemm_problem.h), the GPU suites
// (tools/campaign/gpu_gemm_case.h adds the launch's own fields) and the fidelity driver
// (proptests/fidelity/); its safetensors form (save / load, every parameter in fp8ref.* metadata),
// and the first field in which two cases differ.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cases/adversarial.h"
#include "cases/group_sizes.h"
#include "cases/tensor_form.h"
#include "cases/value_class.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::cases {

// How the implementation is told which rows belong to which group.
enum class Desc : std::uint8_t { offs, aligned, masked };
inline constexpr std::array kAllDescs = {Desc::offs, Desc::aligned, Desc::masked};
constexpr const char* to_string(Desc d) {
  return d == Desc::offs ? "offs" : d == Desc::aligned ? "aligned" : "masked";
}

// Which grouped GEMM a case runs (docs/design.md §9): the M-grouped forward with offsets / aligned
// rows, the masked forward ((G, m_max) + masked_m), dgrad (W stored kn) or the K-grouped wgrad.
enum class GemmOp : std::uint8_t { forward, masked, dgrad, wgrad };
inline constexpr std::array kAllGemmOps = {GemmOp::forward, GemmOp::masked, GemmOp::dgrad,
                                           GemmOp::wgrad};
constexpr const char* to_string(GemmOp o) {
  return o == GemmOp::forward  ? "forward"
         : o == GemmOp::masked ? "masked"
         : o == GemmOp::dgrad  ? "dgrad"
                               : "wgrad";
}

struct GemmCase {
  // The drawn parameters (campaign cases; defaults for a case read from a user's tensors).
  GemmOp op = GemmOp::forward;
  GroupSizes gs;
  Desc desc = Desc::offs;
  std::int64_t M = 0, N = 0, K = 0, G = 0, m_max = 0;
  bool moe_shape = false;  // drawn from the MoE-like shapes (large K, N); a coverage class only
  // The campaign's adversarial class applied to the drawn case (cases/adversarial.h); a coverage
  // class only.
  Adversarial adversarial = Adversarial::none;
  Format fa = Format::e4m3, fb = Format::e4m3;
  ref::Scaling scaling = ref::Scaling::none;
  ref::BLayout b_layout = ref::BLayout::nk;
  ValueClass va = ValueClass::normal, vb = ValueClass::normal;
  OutDtype out = OutDtype::f32;
  ref::ModelChoice model{AccumulationModel::exact, 1};
  // The operands (reference/grouped_gemm.h shapes).
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb;
  std::vector<float> ta, tb;           // nvfp4 tensor scales: (1) and (G), or none
  std::vector<std::int64_t> offs;      // cumulative group ends, where the rows come as offsets
  std::vector<std::int32_t> group_of;  // row -> group (-1 padding), for the oracles
  ref::GroupedGemmOperands operands() const {
    return {M, N, K, G, fa, fb, a, b, b_layout, scaling, sa, sb, ta, tb};
  }
};

// Row -> group of each descriptor, computed from the sizes without reference/group_desc.
// Sets M to the number of rows.
std::vector<std::int32_t> rows_of(const GroupSizes& gs, Desc d, std::int64_t m_max,
                                  std::int64_t& M);

// Scale entries per row of A (0 where one scale is shared: none, tensorwise) and per group of B,
// and the counts of A's and B's scales, for the case's scaling (reference/grouped_gemm.h shapes).
// Inline: the reference suites use them without the library.
inline std::int64_t sa_per_row(const GemmCase& c) {
  const auto blocks = [&](std::int64_t w) { return (c.K + w - 1) / w; };
  switch (c.scaling) {
    case ref::Scaling::none:
    case ref::Scaling::tensorwise: return 0;
    case ref::Scaling::rowwise: return 1;
    case ref::Scaling::blockwise: return blocks(128);
    case ref::Scaling::mx: return blocks(32);
    case ref::Scaling::nvfp4:
    case ref::Scaling::mx16: return blocks(16);
  }
  return 0;
}
inline std::int64_t sb_per_group(const GemmCase& c) {
  const auto blocks = [&](std::int64_t w) { return (c.K + w - 1) / w; };
  switch (c.scaling) {
    case ref::Scaling::none: return 0;
    case ref::Scaling::tensorwise: return 1;
    case ref::Scaling::rowwise: return c.N;
    case ref::Scaling::blockwise: return (c.N + 127) / 128 * blocks(128);
    case ref::Scaling::mx: return c.N * blocks(32);
    case ref::Scaling::nvfp4:
    case ref::Scaling::mx16: return c.N * blocks(16);
  }
  return 0;
}
inline std::int64_t sa_count(const GemmCase& c) {
  return c.scaling == ref::Scaling::tensorwise ? 1 : c.M * sa_per_row(c);
}
inline std::int64_t sb_count(const GemmCase& c) { return c.G * sb_per_group(c); }

// The case file: operands, scales, group sizes, the row -> group map and every parameter.
TensorFile save_gemm(const GemmCase& c);
GemmCase load_gemm(const TensorFile& tf);  // std::invalid_argument on a malformed file
// "e4m3" / "e5m2", an output dtype, a scaling of a case file (std::invalid_argument otherwise).
Format format_from_name(const std::string& s);
OutDtype out_from(const std::string& s);
ref::Scaling scaling_from(const std::string& s);
// A model choice as case-file metadata (fp8ref.model, fp8ref.split_k, fp8ref.split_blocks,
// fp8ref.epilogue) and back (split_blocks and epilogue optional: files written before they
// existed).
void save_model(const ref::ModelChoice& m, TensorFile& tf);
ref::ModelChoice load_model(const TensorFile& tf);
// The first field in which two cases differ ("" when none; floats compared as bits).
std::string gemm_case_diff(const GemmCase& x, const GemmCase& y);

}  // namespace fp8ref::cases
