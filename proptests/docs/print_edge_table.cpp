// Prints docs/numerics.md's edge-class tables: the f32 tables (paste between the edge-table
// markers), then the f16 / bf16 / f64 tables (paste between the source-table markers).
#include <cstdio>

#include "proptests/docs/edge_table.h"

int main() {
  constexpr fp8ref::Format kFormats[] = {fp8ref::Format::e4m3, fp8ref::Format::e5m2,
                                         fp8ref::Format::e8m0};
  std::printf("<!-- edge-table:begin -->\n");
  for (auto f : kFormats) std::printf("%s\n", fp8ref::docs::edge_table(f).c_str());
  std::printf("<!-- edge-table:end -->\n\n<!-- source-table:begin -->\n");
  for (auto f : kFormats) std::printf("%s\n", fp8ref::docs::source_table(f).c_str());
  std::printf("<!-- source-table:end -->\n");
}
