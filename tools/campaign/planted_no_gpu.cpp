// The GPU suites of fp8-check-planted (docs/fuzz.md "Planted bugs"): none. The planted build has
// no GPU code, where the GPU suites (suites_gpu*.cpp) could only report themselves unavailable,
// so it lists the CPU suites alone instead of compiling those nine files a second time.
#include <vector>

#include "campaign/suite.h"

namespace fp8ref::fuzz {

void add_gpu_suites(std::vector<Suite>&) {}

}  // namespace fp8ref::fuzz
