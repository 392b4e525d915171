// Byte buffers of the GPU suites (docs/fuzz.md "The suites"): device memory poisoned before a
// kernel writes it (an entry the kernel leaves unwritten shows), host copies of it, a stream of a
// second launch, and the byte comparison that names the first mismatch of a kernel output and the
// oracle's bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "campaign/suite.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/device.h"
#endif

namespace fp8ref::fuzz {

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
// Device bytes poisoned with 0xAB, or a copy of a host vector; host() reads them back.
struct DeviceBytes {
  void* p = nullptr;
  std::size_t n;
  explicit DeviceBytes(std::size_t bytes) : n(bytes) {
    FP8REF_CUDA_CHECK(cudaMalloc(&p, n ? n : 16));
    FP8REF_CUDA_CHECK(cudaMemset(p, 0xAB, n ? n : 16));
  }
  template <class T>
  explicit DeviceBytes(const std::vector<T>& v) : DeviceBytes(v.size() * sizeof(T)) {
    if (n) FP8REF_CUDA_CHECK(cudaMemcpy(p, v.data(), n, cudaMemcpyHostToDevice));
  }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  std::vector<std::uint8_t> host() const {
    FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint8_t> h(n);
    if (n) FP8REF_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
    return h;
  }
};

// A stream of its own (blocking: it waits for the legacy default stream's poison and copies).
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { FP8REF_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};
#endif

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Throws a one-line Violation "<context>: <what> byte i: kernel 0x.., oracle 0x.. (sizes)" at
// the first byte where got and want differ; returns when they are equal.
inline void require_same_bytes(const std::string& context, const char* what,
                               const std::vector<std::uint8_t>& got,
                               const std::vector<std::uint8_t>& want) {
  if (got == want) return;
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  char buf[160];
  std::snprintf(buf, sizeof buf, ": %s byte %zu: kernel 0x%02x, oracle 0x%02x (sizes %zu / %zu)",
                what, i, i < got.size() ? got[i] : 0u, i < want.size() ? want[i] : 0u, got.size(),
                want.size());
  throw Violation(context + buf);
}

}  // namespace fp8ref::fuzz
