// What the GPU oracle's launchers share (docs/gpu_oracle.md §4): the CPU reference's argument
// checks and messages (std::invalid_argument before anything is written), a device buffer freed
// at scope exit, and a kernel launch timed with CUDA events. Host code, internal to gpu/oracle/.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/oracle/emu_exact.h"
#include "numerics/grouped_gemm_types.h"

namespace fp8ref::gpu::launch {

// Threads of one oracle block (64 × 2). The kernels are built for 4 such blocks per SM
// (__launch_bounds__): at most 128 registers a thread, 16 warps an SM. Without the bound the
// forward takes 130 registers and only 12 warps fit.
inline constexpr int kOracleBlockThreads = 128;

[[noreturn]] inline void fail(const std::string& what) {
  throw std::invalid_argument("fp8ref: " + what);
}

inline void expect_size(const char* name, std::size_t got, std::int64_t want) {
  if (std::int64_t(got) != want)
    fail(std::string(name) + " has " + std::to_string(got) + " elements, expected " +
         std::to_string(want));
}

inline void expect_scale(const char* name, std::span<const float> s, std::int64_t i, bool pow2) {
  const float v = s[std::size_t(i)];
  if (!std::isfinite(v))
    fail(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v) +
         " is not finite");
  if (pow2 && (v <= 0.0f || emu::odd_parts(v).sig != 1))
    fail(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v) +
         " is not a power of two (mx scales are E8M0 values)");
}

inline void check_model(ModelChoice m, Scaling s) {
  if (s == Scaling::nvfp4 || s == Scaling::mx16 || m.model >= AccumulationModel::blackwell_f8f6f4)
    fail(std::string("the GPU oracle emulates the exact, fp32_sequential and Hopper models, not ") +
         to_string(m.model) + " with " + to_string(s) + " scaling (use --device cpu)");
  if (m.split_k < 1) fail("split_k = " + std::to_string(m.split_k) + " must be >= 1");
  if (m.split_blocks < 0) fail("split_blocks must be >= 0");
  if (m.split_blocks > 0 && m.split_k != 1)
    fail("split_k and split_blocks: give a slice count or a slice length, not both");
  if (!accepts_split_k(m.model) && !m.split().is_single())
    fail(std::string("split-K applies to the hopper models only, not ") + to_string(m.model));
  const bool per_block = s == Scaling::blockwise || s == Scaling::mx;
  if (m.epilogue != Epilogue::model && (!accepts_epilogue(m.model) || per_block))
    fail(std::string("epilogue ") + to_string(m.epilogue) + " does not apply to model " +
         to_string(m.model) + " with " + to_string(s) + " scaling");
  if (per_block && needs_constant_scales(m.model))
    fail(std::string("model ") + to_string(m.model) + " needs scales constant over K");
}

// A device buffer freed at scope exit.
template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(std::size_t n) {
    if (n) FP8REF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)));
  }
  DeviceBuffer(const T* host, std::size_t n) : DeviceBuffer(n) {
    if (n) FP8REF_CUDA_CHECK(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Seconds the last oracle call spent in its kernel (without the transfers).
inline double& last_kernel_seconds() {
  static double seconds = 0.0;
  return seconds;
}

// Runs launch() (one kernel launch) between two CUDA events, waits, records the kernel time.
template <class Launch>
void timed_launch(Launch launch) {
  cudaEvent_t t0, t1;
  FP8REF_CUDA_CHECK(cudaEventCreate(&t0));
  FP8REF_CUDA_CHECK(cudaEventCreate(&t1));
  FP8REF_CUDA_CHECK(cudaEventRecord(t0));
  launch();
  FP8REF_CUDA_CHECK(cudaGetLastError());
  FP8REF_CUDA_CHECK(cudaEventRecord(t1));
  FP8REF_CUDA_CHECK(cudaEventSynchronize(t1));
  float ms = 0.0f;
  FP8REF_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  cudaEventDestroy(t0), cudaEventDestroy(t1);
  last_kernel_seconds() = ms * 1e-3;
}

}  // namespace fp8ref::gpu::launch
