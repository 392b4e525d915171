// The law suites (docs/fuzz.md "Oracle suites"): for every planted-bug class a second suite whose
// oracle shares no code with the first one's (laws of the code under test, inverse maps, an
// independent table oracle), so that weakening one suite cannot let a bug through.
#pragma once

#include <vector>

#include "campaign/suite.h"

namespace fp8ref::fuzz {

void add_model_law_suites(std::vector<Suite>& out);       // gemm.model_laws
void add_codec_table_suites(std::vector<Suite>& out);     // codec.tables
void add_layout_inverse_suites(std::vector<Suite>& out);  // layout.inverse
void add_quantize_law_suites(std::vector<Suite>& out);    // quantize.laws
void add_data_law_suites(std::vector<Suite>& out);        // data.laws

}  // namespace fp8ref::fuzz
