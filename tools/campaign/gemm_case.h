// The M-grouped GEMM case of the fuzz suites (docs/fuzz.md "Adding a GPU
// suite"): the case struct, its draw from the shared generators of tools/campaign/gen/, its case
// file (save / load), coverage tags, and the independent fixed-point oracle of one output element.
// The CPU suites (suites_gemm.cpp) hold the reference to it; GPU GEMM suites reuse it with the
// kernel in place of the reference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "campaign/gen/fixed_oracle.h"
#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/suite.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

// How the implementation is told which rows belong to which group.
enum class Desc : std::uint8_t { offs, aligned, masked };
constexpr const char* to_string(Desc d) {
  return d == Desc::offs ? "offs" : d == Desc::aligned ? "aligned" : "masked";
}

struct GemmCase {
  gen::GroupSizes gs;
  Desc desc = Desc::offs;
  std::int64_t M = 0, N = 0, K = 0, G = 0, m_max = 0;
  bool moe_shape = false;  // drawn from the MoE-like shapes (large K, N); a coverage class only
  Format fa = Format::e4m3, fb = Format::e4m3;
  ref::Scaling scaling = ref::Scaling::none;
  ref::BLayout b_layout = ref::BLayout::nk;
  gen::ValueClass va = gen::ValueClass::normal, vb = gen::ValueClass::normal;
  OutDtype out = OutDtype::f32;
  ref::ModelChoice model{AccumulationModel::exact, 1};
  std::vector<std::uint8_t> a, b;
  std::vector<float> sa, sb;
  std::vector<std::int32_t> group_of;  // oracle's row -> group (-1 padding), built here
};

// What a suite lets draw_gemm produce.
struct DrawOptions {
  bool allow_nan_inf = true;   // NaN / Inf codes in the operands
  bool exact_only = false;     // the `exact` model only (else every model the scaling admits)
  bool need_padding = false;   // at least one row of no group
  bool allow_f16_out = false;  // f16 output too (overflows to Inf for large sums: exact only)
};

// Row -> group of each descriptor, computed from the sizes without reference/group_desc.
// Sets M to the number of rows.
std::vector<std::int32_t> rows_of(const gen::GroupSizes& gs, Desc d, std::int64_t m_max,
                                  std::int64_t& M);

// Scale counts of A and B for the case's scaling (reference/grouped_gemm.h shapes).
std::int64_t sa_count(const GemmCase& c);
std::int64_t sb_count(const GemmCase& c);

// A case from the shared generators (inside a RapidCheck property).
GemmCase draw_gemm(DrawOptions o);

// Coverage tags of a case, and every tag a suite drawing with `o` declares.
std::vector<std::string> gemm_tags(const GemmCase& c);
std::vector<std::string> gemm_classes(const DrawOptions& o);

// The case file: operands, scales, group sizes, the row -> group map and every parameter.
TensorFile save_gemm(const GemmCase& c);
GemmCase load_gemm(const TensorFile& tf);  // std::invalid_argument on a malformed file
// A model choice as case-file metadata (model, split_k, split_blocks, epilogue) and back
// (split_blocks and epilogue optional: files written before they existed).
// "e4m3" / "e5m2", an output dtype, a scaling of a case file (std::invalid_argument otherwise).
Format format_from_name(const std::string& s);
OutDtype out_from(const std::string& s);
ref::Scaling scaling_from(const std::string& s);
void save_model(const ref::ModelChoice& m, std::map<std::string, std::string>& metadata);
ref::ModelChoice load_model(const TensorFile& tf);
// The first field in which two cases differ ("" when none; floats compared as bits).
std::string gemm_case_diff(const GemmCase& x, const GemmCase& y);

// The exact value of output element (r, n) (r a row of a group), from the fixed-point oracle.
gen::ExactValue oracle(const GemmCase& c, std::int64_t r, std::int64_t n);
// That value rounded once to `d` (RNE, IEEE overflow to Inf), as a double; NaN for NaN.
double oracle_rounded(const gen::ExactValue& x, OutDtype d);
// The value of an output bit pattern of `d` (bf16 / f16 in the low 16 bits), decoded here.
double value_of(std::uint32_t bits, OutDtype d);
// |y - x| <= bound, exactly (y, bound finite doubles).
bool within(double y, const gen::ExactValue& x, double bound);

// Columns checked against the oracle in row r: all of them for N <= 16, else 8 spread ones
// (every row is checked, so a row in the wrong group is always seen).
std::vector<std::int64_t> oracle_columns(std::int64_t N, std::int64_t r);

// "row r (group g) col n of M=.. N=.. K=.. G=.. [desc, dist, scaling, model split S, out]".
std::string where(const GemmCase& c, std::int64_t r, std::int64_t n);
std::string hex32(std::uint32_t u);

}  // namespace fp8ref::fuzz
