// A failing scale property writes its input as a safetensors file (docs/design.md §20): tensor x
// (F32 bit patterns, rows x cols flattened; `fp8-check inspect` opens it) with the recipe, the
// geometry and the replay command as metadata. RapidCheck re-runs failing cases while it
// shrinks, so the file left behind is the minimal counterexample.
#pragma once

#include <rapidcheck.h>

#include <bit>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "proptests/common/failure_dump.h"
#include "proptests/common/test_level.h"
#include "reference/quantize.h"

namespace fp8ref::ref {
inline std::ostream& operator<<(std::ostream& os, BlockGeometry g) { return os << to_string(g); }
}  // namespace fp8ref::ref

namespace fp8ref::test {

struct ScaleCase {
  std::string name;  // file stem, e.g. "scale_transpose_identity"
  const std::vector<float>* x;
  std::int64_t rows, cols;
  Recipe recipe;
  ref::BlockGeometry geometry;
};

inline std::string dump_scale_case(const ScaleCase& c) {
  DumpTensor t{"x", "F32", c.x->size(), {}};
  t.bytes.reserve(c.x->size() * 4);
  for (const float v : *c.x)
    for (int b = 0; b < 4; ++b)
      t.bytes.push_back(std::uint8_t(std::bit_cast<std::uint32_t>(v) >> (8 * b)));
  const Recipe& r = c.recipe;
  return dump_failure_case(
      c.name, {t},
      {{"rows", std::to_string(c.rows)},
       {"cols", std::to_string(c.cols)},
       {"recipe", std::string(to_string(r.kind))},
       {"format", std::string(to_string(r.elem))},
       {"runtime", std::string(to_string(r.runtime))},
       {"pow2", r.pow2 ? "1" : "0"},
       {"epsilon_bits", std::to_string(std::bit_cast<std::uint32_t>(r.epsilon))},
       {"block", std::string(to_string(c.geometry))},
       {"replay", replay_command(0)}});
}

// RC_ASSERT that also leaves the case on disk when it fails.
inline void require(bool ok, const char* what, const ScaleCase& c) {
  if (ok) return;
  RC_FAIL(std::string(what) + " (case written to " + dump_scale_case(c) + ")");
}

}  // namespace fp8ref::test
