// Device discovery and CUDA error reporting for the host launchers.
#include "gpu/device.h"

namespace fp8ref::gpu {

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                  cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

bool device_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

std::string device_description() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  if (n == 0) return "no CUDA device";
  cudaDeviceProp prop{};
  FP8REF_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs)";
}

int current_device_sm_count() {
  int dev = 0, sms = 0;
  FP8REF_CUDA_CHECK(cudaGetDevice(&dev));
  FP8REF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

}  // namespace fp8ref::gpu
