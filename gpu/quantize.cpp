// The quantize launcher (gpu/quantize.h): checks every argument on the host and throws one line
// before any launch; then fills the scale layout's padding, uploads the group row starts and runs
// the kernel family of the geometry (gpu/quantize_kernels.cu).
#include "gpu/quantize.h"

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu {
namespace {

[[noreturn]] void fail(const std::string& why) {
  throw std::invalid_argument("gpu quantize: " + why);
}

// First row of every block row, then rows (ref::quantize_grouped_rows' boundaries).
std::vector<std::int64_t> row_starts(BlockGeometry g, std::int64_t rows, std::int64_t cols,
                                     std::span<const std::int64_t> group_ends) {
  const std::int64_t h = block_shape(g, rows, cols).rows;
  std::vector<std::int64_t> starts;
  std::int64_t begin = 0;
  const std::vector<std::int64_t> whole{rows};
  for (const std::int64_t end :
       group_ends.empty() ? std::span<const std::int64_t>(whole) : group_ends) {
    if (end < begin) fail("group ends decrease");
    for (std::int64_t s = begin; s < end; s += h) starts.push_back(s);
    begin = end;
  }
  if (begin != rows) fail("the last group end must equal rows (" + std::to_string(rows) + ")");
  starts.push_back(rows);
  return starts;
}

detail::RecipeParams params_of(const Recipe& r, Source src) {
  detail::RecipeParams p{};
  p.kind = r.kind == RecipeKind::deepgemm  ? detail::ScaleKind::deepgemm
           : r.kind == RecipeKind::torchao ? detail::ScaleKind::torchao
           : r.kind == RecipeKind::te      ? detail::ScaleKind::te
           : r.kind == RecipeKind::mx_rceil
               ? (r.runtime == Runtime::cuda_kernel ? detail::ScaleKind::mx_rceil_kernel
                                                    : detail::ScaleKind::mx_rceil_torch)
               : detail::ScaleKind::mx_torchao;
  p.e4m3 = r.elem == Format::e4m3;
  p.pow2 = r.pow2;
  p.mx_ceil = r.kind == RecipeKind::mx_ceil;
  p.mx_even = r.kind == RecipeKind::mx_even;
  p.nonsat = r.kind == RecipeKind::deepgemm;
  p.ignore_nan = r.runtime == Runtime::cuda_kernel;
  p.elem_max = p.e4m3 ? 448.0f : 57344.0f;
  p.max_rcp = static_cast<float>(1.0 / static_cast<double>(p.elem_max));
  p.epsilon = r.epsilon;
  p.source_max = std::bit_cast<float>(src == Source::bf16 ? 0x7F7F0000u : 0x7F7FFFFFu);
  p.elem_emax = p.e4m3 ? 8 : 15;
  return p;
}

int layout_number(const Recipe& r, const QuantizeOutput& out) {
  if (is_mx(r.kind))
    return 10 + int(out.e8m0_layout == ScaleLayoutE8m0::blocked_128x4) +
           2 * int(out.e8m0_layout == ScaleLayoutE8m0::deepgemm_packed);
  switch (out.f32_layout) {
    case ScaleLayoutF32::col_major: return 1;
    case ScaleLayoutF32::tma_mn_major: return 2;
    case ScaleLayoutF32::cublas_k_major_pad4: return 3;
    default: return 0;
  }
}

void check_arguments(const DeviceMatrix& x, const Recipe& r, BlockGeometry g,
                     const QuantizeOutput& out, std::size_t need_scales) {
  if (const char* why = unsupported_reason(r)) fail(why);
  if (x.src != Source::bf16 && x.src != Source::f32) fail("the source must be bf16 or f32");
  if (x.rows < 0 || x.cols < 0) fail("negative shape");
  const std::int64_t n = x.rows * x.cols;
  if (x.cols != 0 && n / x.cols != x.rows) fail("rows * cols overflows");
  require_library_shape(r, g, x.rows, x.cols);
  if (n > 0 && (x.data == nullptr || out.codes == nullptr)) fail("null device buffer");
  if (out.codes_bytes < std::size_t(n))
    fail("codes buffer of " + std::to_string(out.codes_bytes) + " bytes, needs " +
         std::to_string(n));
  if (out.scales_bytes < need_scales)
    fail("scales buffer of " + std::to_string(out.scales_bytes) + " bytes, needs " +
         std::to_string(need_scales));
  if (need_scales > 0 && out.scales == nullptr) fail("null scales buffer");
}

// One call's kernel arguments, the row starts not yet on the device.
detail::QuantizeLaunch launch_of(const DeviceMatrix& x, const Recipe& r, BlockGeometry g,
                                 std::int64_t block_rows, const QuantizeOutput& out,
                                 cudaStream_t stream, LaunchOptions opt) {
  const BlockShape b = block_shape(g, x.rows, x.cols);
  const ScaleGridShape grid{block_rows, (x.cols + b.cols - 1) / b.cols};
  const bool aligned = reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out.codes) % 8 == 0;
  return {.x = x.data,
          .bf16 = x.src == Source::bf16,
          .rows = x.rows,
          .cols = x.cols,
          .block_h = b.rows,
          .block_w = b.cols,
          .block_rows = block_rows,
          .starts = nullptr,
          .codes = out.codes,
          .scales = {out.scales, layout_number(r, out), grid.rows, grid.cols},
          .recipe = params_of(r, x.src),
          .vec = aligned && x.cols % 8 == 0,
          .amax_ws = nullptr,
          .max_blocks = opt.max_blocks,
          .chunks_per_lane = opt.chunks_per_lane,
          .stream = stream};
}

// The scale layout's padding entries (1.0 for cuBLAS K-major pad4, else zero bytes); the dense
// layouts (row-major, column-major, E8M0 row-major) have none, the kernels write every entry.
void fill_scale_padding(const detail::QuantizeLaunch& q, std::size_t bytes) {
  if (q.scales.layout == 0 || q.scales.layout == 1 || q.scales.layout == 10) return;
  if (q.scales.layout == 3)
    detail::launch_fill_words(q.scales.data, 0x3F800000u, std::int64_t(bytes / 4), q.stream);
  else
    FP8REF_CUDA_CHECK(cudaMemsetAsync(q.scales.data, 0, bytes, q.stream));
}

}  // namespace

ScaleGridShape scale_grid_shape(BlockGeometry g, std::int64_t rows, std::int64_t cols,
                                std::span<const std::int64_t> group_ends) {
  const BlockShape b = block_shape(g, rows, cols);
  const std::int64_t block_rows =
      group_ends.empty() ? (rows + b.rows - 1) / b.rows
                         : std::int64_t(row_starts(g, rows, cols, group_ends).size()) - 1;
  return {block_rows, (cols + b.cols - 1) / b.cols};
}

std::size_t scale_bytes(const Recipe& r, BlockGeometry g, std::int64_t rows, std::int64_t cols,
                        std::span<const std::int64_t> group_ends, const QuantizeOutput& out) {
  const ScaleGridShape s = scale_grid_shape(g, rows, cols, group_ends);
  return is_mx(r.kind) ? serialized_size(out.e8m0_layout, 1, s.rows, s.cols)
                       : serialized_size(out.f32_layout, 1, s.rows, s.cols);
}

const char* unsupported_reason(const Recipe& r) {
  if (r.runtime == Runtime::torch_cpu)
    return "runtime torch_cpu is torch on the CPU; the GPU kernels reproduce torch_cuda and "
           "cuda_kernel";
  return nullptr;
}

void quantize(const DeviceMatrix& x, const Recipe& r, BlockGeometry g,
              std::span<const std::int64_t> group_ends, const QuantizeOutput& out,
              cudaStream_t stream, LaunchOptions opt) {
  validate(r);
  if (x.rows < 0 || x.cols < 0) fail("negative shape");
  const BlockShape b = block_shape(g, x.rows, x.cols);
  const bool grouped = !group_ends.empty() && b.rows > 1;
  // Global blocking needs no row-start table: block row br starts at br * h.
  const std::vector<std::int64_t> starts =
      grouped ? row_starts(g, x.rows, x.cols, group_ends) : std::vector<std::int64_t>{};
  if (!grouped && !group_ends.empty()) row_starts(g, x.rows, x.cols, group_ends);  // checks
  const std::int64_t block_rows =
      grouped ? std::int64_t(starts.size()) - 1 : (x.rows + b.rows - 1) / b.rows;
  check_arguments(x, r, g, out, scale_bytes(r, g, x.rows, x.cols, group_ends, out));
  if (x.rows == 0 || x.cols == 0) return;
  detail::QuantizeLaunch q = launch_of(x, r, g, block_rows, out, stream, opt);
  fill_scale_padding(q, scale_bytes(r, g, x.rows, x.cols, group_ends, out));
  void* ws = nullptr;
  const std::size_t ws_bytes = grouped ? starts.size() * sizeof(std::int64_t) : 4;
  const bool need_ws = grouped || g == BlockGeometry::tensorwise;
  if (need_ws) {
    FP8REF_CUDA_CHECK(cudaMallocAsync(&ws, ws_bytes, stream));
    if (grouped)
      FP8REF_CUDA_CHECK(
          cudaMemcpyAsync(ws, starts.data(), ws_bytes, cudaMemcpyHostToDevice, stream));
    else
      FP8REF_CUDA_CHECK(cudaMemsetAsync(ws, 0, ws_bytes, stream));
  }
  if (grouped) q.starts = static_cast<const std::int64_t*>(ws);
  if (b.cols == 1)
    detail::launch_column_blocks(q);
  else if (g == BlockGeometry::tensorwise && !grouped)
    q.amax_ws = static_cast<std::uint32_t*>(ws), detail::launch_tensorwise(q);
  else if (b.rows == 1 && (b.cols == 32 || b.cols == 128) && g != BlockGeometry::rowwise)
    detail::launch_small_blocks(q);
  else
    detail::launch_tile_blocks(q);
  if (need_ws) {
    FP8REF_CUDA_CHECK(cudaFreeAsync(ws, stream));
  }
}

void quantize_dual(const DeviceMatrix& x, const Recipe& r, const QuantizeOutput& rowwise,
                   const QuantizeOutput& columnwise, cudaStream_t stream, LaunchOptions opt) {
  validate(r);
  const bool mx = is_mx(r.kind);
  const BlockGeometry gr = mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
  const BlockGeometry gc = mx ? BlockGeometry::b32x1 : BlockGeometry::b128x1;
  const auto addr = reinterpret_cast<std::uintptr_t>(x.data) |
                    reinterpret_cast<std::uintptr_t>(rowwise.codes) |
                    reinterpret_cast<std::uintptr_t>(columnwise.codes);
  if (x.src != Source::bf16 || x.rows <= 0 || x.cols <= 0 || x.cols % 128 != 0 || addr % 16 != 0) {
    quantize(x, r, gr, {}, rowwise, stream, opt);  // two reads, the same bits
    quantize(x, r, gc, {}, columnwise, stream, opt);
    return;
  }
  const std::size_t row_sb = scale_bytes(r, gr, x.rows, x.cols, {}, rowwise);
  const std::size_t col_sb = scale_bytes(r, gc, x.rows, x.cols, {}, columnwise);
  check_arguments(x, r, gr, rowwise, row_sb);
  check_arguments(x, r, gc, columnwise, col_sb);
  const std::int64_t w = mx ? 32 : 128;
  const detail::DualLaunch dl{launch_of(x, r, gr, x.rows, rowwise, stream, opt),
                              launch_of(x, r, gc, (x.rows + w - 1) / w, columnwise, stream, opt)};
  fill_scale_padding(dl.row, row_sb);
  fill_scale_padding(dl.col, col_sb);
  detail::launch_dual_bf16(dl);
}

void swiglu_quantize(const DeviceMatrix& gate_up, const Recipe& r, const QuantizeOutput& out,
                     cudaStream_t stream, LaunchOptions opt) {
  validate(r);
  const bool mx = is_mx(r.kind);
  const BlockGeometry g = mx ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
  const std::int64_t w = mx ? 32 : 128;
  if (gate_up.src != Source::bf16) fail("swiglu: the merged gate/up must be bf16");
  if (gate_up.rows < 0 || gate_up.cols < 0 || gate_up.cols % (2 * w) != 0)
    fail("swiglu: the merged gate/up needs 2H columns with H % " + std::to_string(w) + " == 0");
  const DeviceMatrix h{gate_up.data, Source::f32, gate_up.rows, gate_up.cols / 2};
  const std::size_t sb = scale_bytes(r, g, h.rows, h.cols, {}, out);
  check_arguments(h, r, g, out, sb);
  if (reinterpret_cast<std::uintptr_t>(gate_up.data) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(out.codes) % 8 != 0)
    fail("swiglu: the gate/up buffer must be 16-byte aligned and the codes 8-byte aligned");
  if (h.rows == 0 || h.cols == 0) return;
  const detail::QuantizeLaunch q = launch_of(h, r, g, h.rows, out, stream, opt);
  fill_scale_padding(q, sb);
  detail::launch_swiglu_bf16(q);
}

}  // namespace fp8ref::gpu
