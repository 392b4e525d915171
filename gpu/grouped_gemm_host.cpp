// Host-memory entry points of the FP8 grouped GEMM (gpu/grouped_gemm.h): copy the operands to the
// device, run the launcher on the default stream, copy the output back. For tests and tools; the
// device-pointer entry points are what a framework calls.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/grouped_gemm.h"

namespace fp8ref::gpu {
namespace {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) FP8REF_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  template <class T>
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size_bytes()) {
    if (!host.empty())
      FP8REF_CUDA_CHECK(cudaMemcpy(p_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// Output span of `out`'s dtype as bytes (f32 or u16 patterns).
std::span<std::uint8_t> out_bytes(const GemmOutput& out) {
  if (out.dtype == OutDtype::f32)
    return {reinterpret_cast<std::uint8_t*>(out.f32.data()), out.f32.size_bytes()};
  if (out.dtype == OutDtype::bf16)
    return {reinterpret_cast<std::uint8_t*>(out.u16.data()), out.u16.size_bytes()};
  throw std::invalid_argument("fp8ref gpu grouped GEMM: output must be f32 or bf16");
}
std::int64_t out_elems(const GemmOutput& out) {
  return std::int64_t(out.dtype == OutDtype::f32 ? out.f32.size() : out.u16.size());
}

// Runs `launch(device output)` with the output's current content on the device, then copies back.
template <class Launch>
void with_output(const GemmOutput& out, Launch launch) {
  const std::span<std::uint8_t> host = out_bytes(out);
  DeviceBuffer y{std::span<const std::uint8_t>(host)};
  launch(DeviceGemmOutput{out.dtype, y.as<void>(), out_elems(out)});
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  if (!host.empty())
    FP8REF_CUDA_CHECK(cudaMemcpy(host.data(), y.as<void>(), host.size(), cudaMemcpyDeviceToHost));
}

template <class Run>
void forward_on_device(const GroupedGemmOperands& op, const GemmOutput& out,
                       ScaleLayoutF32 sa_layout, Run run) {
  if (op.b_layout != BLayout::nk)
    throw std::invalid_argument("fp8ref gpu grouped GEMM: B must be stored (G, N, K) (nk)");
  DeviceBuffer a{op.a}, b{op.b}, sa{op.scale_a}, sb{op.scale_b};
  const DeviceGemmOperands d{op.M,
                             op.N,
                             op.K,
                             op.G,
                             op.fa,
                             op.fb,
                             a.as<const std::uint8_t>(),
                             b.as<const std::uint8_t>(),
                             op.scaling,
                             sa.as<const float>(),
                             std::int64_t(op.scale_a.size()),
                             sb.as<const float>(),
                             std::int64_t(op.scale_b.size()),
                             sa_layout};
  with_output(out, [&](const DeviceGemmOutput& y) { run(d, y); });
}

// A host call's device-side groups (gpu/grouped_gemm.h DeviceGroups): the int32 entries uploaded
// as they are, the workspace, and the status word set to -1 (no status the prologue writes), so
// that a status the prologue failed to write is reported too.
class UploadedGroups {
 public:
  UploadedGroups(std::span<const std::int32_t> entries, std::int64_t G,
                 std::size_t workspace_bytes = grouped_gemm_workspace_bytes())
      : entries_(entries),
        status_(sizeof(std::int32_t)),
        workspace_(workspace_bytes),
        workspace_bytes_(workspace_bytes) {
    if (std::int64_t(entries.size()) != G)
      throw std::invalid_argument("fp8ref gpu grouped GEMM: the device group entries must be G = " +
                                  std::to_string(G));
    FP8REF_CUDA_CHECK(cudaMemset(status_.as<void>(), 0xFF, sizeof(std::int32_t)));
  }
  DeviceGroups groups() const {
    return {entries_.as<const std::int32_t>(), status_.as<std::int32_t>(), workspace_.as<void>(),
            workspace_bytes_};
  }
  // After the launches (synchronised): std::invalid_argument with the status' one-line message
  // unless it is 0.
  void check() const {
    std::int32_t status = -1;
    FP8REF_CUDA_CHECK(
        cudaMemcpy(&status, status_.as<void>(), sizeof status, cudaMemcpyDeviceToHost));
    if (status != 0) throw std::invalid_argument(grouped_gemm_status_message(status));
  }

 private:
  DeviceBuffer entries_, status_, workspace_;
  std::size_t workspace_bytes_;
};

// The forwards' workspace bytes (grouped_gemm_forward_host_device_groups): the table's alone, or
// with room for the transposed row-major blockwise A scales of these operands.
std::size_t forward_workspace_bytes(const GroupedGemmOperands& op, ScaleLayoutF32 sa_layout,
                                    bool table_only) {
  if (table_only) return grouped_gemm_workspace_bytes();
  DeviceGemmOperands shape{};
  shape.M = op.M, shape.K = op.K, shape.scaling = op.scaling, shape.scale_a_layout = sa_layout;
  return grouped_gemm_workspace_bytes(shape);
}

}  // namespace

void grouped_gemm_forward_host(const GroupedGemmOperands& op, std::span<const std::int64_t> offs,
                               const GemmOutput& out, ScaleLayoutF32 scale_a_layout) {
  forward_on_device(op, out, scale_a_layout,
                    [&](const DeviceGemmOperands& d, const DeviceGemmOutput& y) {
                      grouped_gemm_forward(d, offs, y, nullptr);
                    });
}

void grouped_gemm_forward_masked_host(const GroupedGemmOperands& op, std::int64_t m_max,
                                      std::span<const std::int64_t> masked_m, const GemmOutput& out,
                                      ScaleLayoutF32 scale_a_layout) {
  forward_on_device(op, out, scale_a_layout,
                    [&](const DeviceGemmOperands& d, const DeviceGemmOutput& y) {
                      grouped_gemm_forward_masked(d, m_max, masked_m, y, nullptr);
                    });
}

namespace {

// Runs `run(device operands, device output)` on op uploaded.
template <class Run>
void dgrad_on_device(const DgradOperands& op, const GemmOutput& out, Run run) {
  DeviceBuffer dy{op.dy}, w{op.w}, sdy{op.scale_dy}, sw{op.scale_w};
  const DeviceDgradOperands d{op.M,
                              op.N,
                              op.K,
                              op.G,
                              op.fdy,
                              op.fw,
                              dy.as<const std::uint8_t>(),
                              w.as<const std::uint8_t>(),
                              op.w_layout,
                              op.scaling,
                              sdy.as<const float>(),
                              std::int64_t(op.scale_dy.size()),
                              sw.as<const float>(),
                              std::int64_t(op.scale_w.size())};
  with_output(out, [&](const DeviceGemmOutput& y) { run(d, y); });
}

}  // namespace

void grouped_gemm_dgrad_host(const DgradOperands& op, std::span<const std::int64_t> offs,
                             const GemmOutput& out) {
  dgrad_on_device(op, out, [&](const DeviceDgradOperands& d, const DeviceGemmOutput& y) {
    grouped_gemm_dgrad(d, offs, y, nullptr);
  });
}

void grouped_gemm_dgrad_host_device_groups(const DgradOperands& op,
                                           std::span<const std::int32_t> offs,
                                           const GemmOutput& out) {
  const UploadedGroups groups(offs, op.G);
  dgrad_on_device(op, out, [&](const DeviceDgradOperands& d, const DeviceGemmOutput& y) {
    grouped_gemm_dgrad(d, groups.groups(), y, nullptr);
  });
  groups.check();
}

void grouped_gemm_forward_host_device_groups(const GroupedGemmOperands& op,
                                             std::span<const std::int32_t> offs,
                                             const GemmOutput& out, ScaleLayoutF32 scale_a_layout,
                                             bool table_only_workspace) {
  const UploadedGroups groups(offs, op.G,
                              forward_workspace_bytes(op, scale_a_layout, table_only_workspace));
  forward_on_device(op, out, scale_a_layout,
                    [&](const DeviceGemmOperands& d, const DeviceGemmOutput& y) {
                      grouped_gemm_forward(d, groups.groups(), y, nullptr);
                    });
  groups.check();
}

void grouped_gemm_forward_masked_host_device_groups(
    const GroupedGemmOperands& op, std::int64_t m_max, std::span<const std::int32_t> masked_m,
    const GemmOutput& out, ScaleLayoutF32 scale_a_layout, bool table_only_workspace) {
  const UploadedGroups groups(masked_m, op.G,
                              forward_workspace_bytes(op, scale_a_layout, table_only_workspace));
  forward_on_device(op, out, scale_a_layout,
                    [&](const DeviceGemmOperands& d, const DeviceGemmOutput& y) {
                      grouped_gemm_forward_masked(d, m_max, groups.groups(), y, nullptr);
                    });
  groups.check();
}

void grouped_gemm_wgrad_host(const HostWgradOperands& op, std::span<const std::int64_t> offs,
                             const GemmOutput& dw) {
  DeviceBuffer dy{op.dy}, x{op.x}, sdy{op.scale_dy}, sx{op.scale_x}, c{op.c};
  const DeviceWgradOperands d{op.M,
                              op.N,
                              op.K,
                              op.G,
                              op.fdy,
                              op.fx,
                              dy.as<const std::uint8_t>(),
                              x.as<const std::uint8_t>(),
                              op.scaling,
                              sdy.as<const float>(),
                              std::int64_t(op.scale_dy.size()),
                              sx.as<const float>(),
                              std::int64_t(op.scale_x.size()),
                              c.as<const float>(),
                              op.layout};
  if (!op.dw_into_c) {
    with_output(dw, [&](const DeviceGemmOutput& y) { grouped_gemm_wgrad(d, offs, y, nullptr); });
    return;
  }
  if (dw.dtype != OutDtype::f32 || dw.f32.size() != op.c.size())
    throw std::invalid_argument("fp8ref gpu wgrad: dW into C needs an f32 dW of C's size");
  grouped_gemm_wgrad(d, offs, DeviceGemmOutput{OutDtype::f32, c.as<void>(), out_elems(dw)},
                     nullptr);
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  if (!dw.f32.empty())
    FP8REF_CUDA_CHECK(
        cudaMemcpy(dw.f32.data(), c.as<void>(), dw.f32.size_bytes(), cudaMemcpyDeviceToHost));
}

}  // namespace fp8ref::gpu
