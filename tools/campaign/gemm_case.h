// The M-grouped GEMM case of the fuzz suites (docs/fuzz.md "Adding a GPU suite"): its draw from
// the shared generators of tools/campaign/gen/, coverage tags, and the independent fixed-point
// oracle of one output element. The case itself and its case file: tools/cases/gemm_case.h.
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
#include "cases/gemm_case.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::fuzz {

using cases::Desc;
using cases::format_from_name;
using cases::gemm_case_diff;
using cases::GemmCase;
using cases::load_gemm;
using cases::load_model;
using cases::out_from;
using cases::rows_of;
using cases::sa_count;
using cases::save_gemm;
using cases::save_model;
using cases::sb_count;
using cases::scaling_from;

// What a suite lets draw_gemm produce.
struct DrawOptions {
  bool allow_nan_inf = true;   // NaN / Inf codes in the operands
  bool exact_only = false;     // the `exact` model only (else every model the scaling admits)
  bool need_padding = false;   // at least one row of no group
  bool allow_f16_out = false;  // f16 output too (overflows to Inf for large sums: exact only)
  bool adversarial = false;    // the adversarial classes of cases/adversarial.h (CPU suites)
  // f32 output in two thirds of the cases (else a half or a third): rounding to bf16 / f16 hides
  // the differences between accumulation orders, so f32 raises the test strength (docs/fuzz.md
  // "Test strength").
  bool prefer_f32_out = false;
};

// A case from the shared generators (inside a RapidCheck property).
GemmCase draw_gemm(DrawOptions o);

// Coverage tags of a case, and every tag a suite drawing with `o` declares.
std::vector<std::string> gemm_tags(const GemmCase& c);
std::vector<std::string> gemm_classes(const DrawOptions& o);

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
