// CTest resource allocation for the GPU gtests (docs/fuzz.md "Several GPUs with CTest resource
// specs"): when `ctest --resource-spec-file` gave this test a GPU (CTEST_RESOURCE_GROUP_0_GPUS =
// "id:3,slots:1"), the process sees only that one, as CUDA_VISIBLE_DEVICES=3, set before the
// CUDA runtime initialises (lazily, at the first CUDA call). proptests/campaign/gpu_suite.cmake
// does the same for the campaign's GPU suites.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[maybe_unused]] const bool kDeviceFromCTest = [] {
  const char* count = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  const char* gpus = std::getenv("CTEST_RESOURCE_GROUP_0_GPUS");
  if (!count || !gpus) return false;
  const std::string spec = gpus;
  const auto at = spec.find("id:");
  if (at == std::string::npos) return false;
  const std::string id = spec.substr(at + 3, spec.find_first_of(",;", at) - (at + 3));
  setenv("CUDA_VISIBLE_DEVICES", id.c_str(), 1);
  std::fprintf(stderr, "CTest resource gpus id %s -> CUDA_VISIBLE_DEVICES=%s\n", id.c_str(),
               id.c_str());
  return true;
}();

}  // namespace
