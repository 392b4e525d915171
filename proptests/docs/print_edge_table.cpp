// Prints docs/numerics.md's edge-class table (paste between the edge-table markers).
#include <cstdio>

#include "proptests/docs/edge_table.h"

int main() {
  for (auto f : {fp8ref::Format::e4m3, fp8ref::Format::e5m2, fp8ref::Format::e8m0})
    std::printf("%s\n", fp8ref::docs::edge_table(f).c_str());
}
