// Device discovery and CUDA error handling for the host launchers (docs/design.md §3: gpu/).
// Every CUDA call in gpu/ goes through FP8REF_CUDA_CHECK, which throws with the call and reason.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace fp8ref::gpu {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);

// True when a CUDA device can be used (driver present, at least one device).
bool device_available();

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" or the reason none is available.
std::string device_description();

// Streaming multiprocessors of the current device (the grid of the persistent kernels).
int current_device_sm_count();

}  // namespace fp8ref::gpu

#define FP8REF_CUDA_CHECK(call)                                                \
  do {                                                                         \
    const cudaError_t fp8ref_err_ = (call);                                    \
    if (fp8ref_err_ != cudaSuccess)                                            \
      ::fp8ref::gpu::throw_cuda_error(fp8ref_err_, #call, __FILE__, __LINE__); \
  } while (0)
