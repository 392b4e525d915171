// Registration of the law suites (law_suites.h), in campaign order.
#include "campaign/laws/law_suites.h"

namespace fp8ref::fuzz {

void add_law_suites(std::vector<Suite>& out) {
  add_codec_table_suites(out);
  add_layout_inverse_suites(out);
  add_quantize_law_suites(out);
  add_model_law_suites(out);
  add_data_law_suites(out);
}

}  // namespace fp8ref::fuzz
