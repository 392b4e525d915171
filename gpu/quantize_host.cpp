// quantize_host, swiglu_quantize_host (gpu/quantize.h): a host tensor through the device quantize
// kernels and back, on its own stream, with poisoned outputs; device buffers freed on every path.
#include <memory>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/quantize.h"

namespace fp8ref::gpu {
namespace {

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

DeviceBuffer device_alloc(std::size_t bytes) {
  void* p = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 16 : bytes));
  return DeviceBuffer(p);
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { FP8REF_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

}  // namespace

HostQuantized quantize_host(const void* host_x, Source src, std::int64_t rows, std::int64_t cols,
                            const Recipe& r, BlockGeometry g,
                            std::span<const std::int64_t> group_ends, ScaleLayoutF32 f32_layout,
                            ScaleLayoutE8m0 e8m0_layout, LaunchOptions opt, std::uint8_t poison) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("gpu quantize: negative shape");
  const std::size_t n = std::size_t(rows * cols), elem = src == Source::f32 ? 4 : 2;
  QuantizeOutput out{nullptr, n, nullptr, 0, f32_layout, e8m0_layout};
  HostQuantized h;
  h.grid = scale_grid_shape(g, rows, cols, group_ends);
  out.scales_bytes = scale_bytes(r, g, rows, cols, group_ends, out);
  if (const char* why = unsupported_reason(r))
    throw std::invalid_argument(std::string("gpu quantize: ") + why);
  Stream stream;
  DeviceBuffer dx = device_alloc(n * elem), dc = device_alloc(n),
               ds = device_alloc(out.scales_bytes);
  out.codes = static_cast<std::uint8_t*>(dc.get());
  out.scales = ds.get();
  // Everything on the one non-blocking stream: it does not order with the legacy default stream,
  // so a plain cudaMemcpy / cudaMemset (whose DMA may still be in flight when they return) could
  // race the kernel.
  if (n)
    FP8REF_CUDA_CHECK(
        cudaMemcpyAsync(dx.get(), host_x, n * elem, cudaMemcpyHostToDevice, stream.s));
  FP8REF_CUDA_CHECK(cudaMemsetAsync(dc.get(), poison, n ? n : 1, stream.s));
  FP8REF_CUDA_CHECK(
      cudaMemsetAsync(ds.get(), poison, out.scales_bytes ? out.scales_bytes : 1, stream.s));
  quantize({dx.get(), src, rows, cols}, r, g, group_ends, out, stream.s, opt);
  h.codes.resize(n);
  h.scales.resize(out.scales_bytes);
  if (n)
    FP8REF_CUDA_CHECK(
        cudaMemcpyAsync(h.codes.data(), dc.get(), n, cudaMemcpyDeviceToHost, stream.s));
  if (out.scales_bytes)
    FP8REF_CUDA_CHECK(cudaMemcpyAsync(h.scales.data(), ds.get(), out.scales_bytes,
                                      cudaMemcpyDeviceToHost, stream.s));
  FP8REF_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  return h;
}

HostQuantized swiglu_quantize_host(const std::uint16_t* host_gate_up, std::int64_t rows,
                                   std::int64_t two_h, const Recipe& r, ScaleLayoutF32 f32_layout,
                                   ScaleLayoutE8m0 e8m0_layout, LaunchOptions opt,
                                   std::uint8_t poison) {
  if (rows < 0 || two_h < 0 || two_h % 2 != 0)
    throw std::invalid_argument("gpu swiglu: the merged gate/up needs (rows, 2H) columns");
  if (const char* why = unsupported_reason(r))
    throw std::invalid_argument(std::string("gpu swiglu: ") + why);
  const std::int64_t h = two_h / 2;
  const BlockGeometry g = is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
  const std::size_t n_in = std::size_t(rows * two_h), n = std::size_t(rows * h);
  QuantizeOutput out{nullptr, n, nullptr, 0, f32_layout, e8m0_layout};
  HostQuantized hq;
  hq.grid = scale_grid_shape(g, rows, h, {});
  out.scales_bytes = scale_bytes(r, g, rows, h, {}, out);
  Stream stream;
  DeviceBuffer dx = device_alloc(n_in * 2), dc = device_alloc(n),
               ds = device_alloc(out.scales_bytes);
  out.codes = static_cast<std::uint8_t*>(dc.get());
  out.scales = ds.get();
  if (n_in)
    FP8REF_CUDA_CHECK(
        cudaMemcpyAsync(dx.get(), host_gate_up, n_in * 2, cudaMemcpyHostToDevice, stream.s));
  FP8REF_CUDA_CHECK(cudaMemsetAsync(dc.get(), poison, n ? n : 1, stream.s));
  FP8REF_CUDA_CHECK(
      cudaMemsetAsync(ds.get(), poison, out.scales_bytes ? out.scales_bytes : 1, stream.s));
  swiglu_quantize({dx.get(), Source::bf16, rows, two_h}, r, out, stream.s, opt);
  hq.codes.resize(n);
  hq.scales.resize(out.scales_bytes);
  if (n)
    FP8REF_CUDA_CHECK(
        cudaMemcpyAsync(hq.codes.data(), dc.get(), n, cudaMemcpyDeviceToHost, stream.s));
  if (out.scales_bytes)
    FP8REF_CUDA_CHECK(cudaMemcpyAsync(hq.scales.data(), ds.get(), out.scales_bytes,
                                      cudaMemcpyDeviceToHost, stream.s));
  FP8REF_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  return hq;
}

}  // namespace fp8ref::gpu
