// Host launcher of the FP8 grouped GEMM (gpu/grouped_gemm.h): checks every argument and throws
// one line before any launch, builds the group table (row ranges and tile prefix) and the scale
// strides of the forward / dgrad view, then launches gpu/grouped_gemm_kernels.cu.
#include "gpu/grouped_gemm.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/grouped_gemm_groups.h"
#include "gpu/grouped_gemm_kernels.h"

namespace fp8ref::gpu {
namespace {

using detail::GemmKernelArgs;
using detail::GemmScaleMode;
using detail::kGemmBlockK;
using detail::kGemmBlockM;

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("fp8ref gpu grouped GEMM: " + what);
}

GemmScaleMode scale_mode(Scaling s) {
  switch (s) {
    case Scaling::tensorwise: return GemmScaleMode::tensorwise;
    case Scaling::rowwise: return GemmScaleMode::rowwise;
    case Scaling::blockwise: return GemmScaleMode::blockwise;
    default:
      bad(std::string("scaling ") + to_string(s) + " is not implemented (tensorwise, " +
          "rowwise, blockwise)");
  }
}

// The leading dimension of MN-major blockwise A scales (ScaleLayoutF32::tma_mn_major): M rounded
// up to 4, the layout's geometry (numerics/scale_layout.h).
std::int64_t mn_major_scale_ld(std::int64_t M) {
  return fp8ref::detail::f32_geometry(ScaleLayoutF32::tma_mn_major, M, 1).inner;
}

bool is_e5m2(Format f, const char* name) {
  if (f != Format::e4m3 && f != Format::e5m2)
    bad(std::string(name) + " must be e4m3 or e5m2 codes");
  return f == Format::e5m2;
}

void check_aligned(const void* p, const char* name) {
  if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    bad(std::string(name) + " must be a 16-byte aligned device pointer");
}

// Whether [p, p + pb) and [q, q + qb) share a byte (an empty or null range shares none): an output
// must not overlap what the launch reads, since tiles would read what others wrote.
bool overlap(const void* p, std::int64_t pb, const void* q, std::int64_t qb) {
  const auto at = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x); };
  return p != nullptr && q != nullptr && pb > 0 && qb > 0 && at(p) < at(q) + std::uintptr_t(qb) &&
         at(q) < at(p) + std::uintptr_t(pb);
}

// The bytes of a launch's output: the kernel view's M × N elements of its dtype.
std::int64_t output_bytes(const GemmKernelArgs& p) { return p.M * p.N * (p.out_bf16 ? 2 : 4); }

void check_size(std::int64_t got, std::int64_t want, const char* name) {
  if (got != want)
    bad(std::string(name) + " has " + std::to_string(got) + " elements, expected " +
        std::to_string(want));
}

// The kernel's view: Y (M, N) = A (M, K) · B[g] (N, K)ᵀ, scale sizes checked by the caller.
GemmKernelArgs kernel_view(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t G,
                           const DeviceGemmOutput& y) {
  if (M < 0 || M >= (std::int64_t(1) << 31)) bad("M must be in [0, 2^31)");
  if (N <= 0 || N % 128 != 0) bad("N = " + std::to_string(N) + " is not a multiple of 128");
  if (K <= 0 || K % kGemmBlockK != 0) bad("K = " + std::to_string(K) + " is not a multiple of 128");
  if (G < 1 || G > detail::kGemmMaxGroups) bad("G must be in [1, 256]");
  if (G * N >= (std::int64_t(1) << 31))
    bad("G * N (the rows of B) must be below 2^31: TMA coordinates are 32-bit");
  if (y.dtype != OutDtype::f32 && y.dtype != OutDtype::bf16) bad("output must be f32 or bf16");
  check_size(y.size, M * N, "output");
  if (M > 0) check_aligned(y.y, "output");
  GemmKernelArgs p{};
  p.M = M, p.N = N, p.K = K, p.y = y.y, p.out_bf16 = y.dtype == OutDtype::bf16;
  return p;
}

// Group g = rows [start[g], end[g]); the tile prefix counts 128-row tiles per group. The bytes
// past the groups stay zero (the device-side prologue writes them so too, docs/gpu_gemm.md §5).
detail::GemmGroupTable group_table(const std::vector<std::int64_t>& start,
                                   const std::vector<std::int64_t>& end) {
  detail::GemmGroupTable t{};
  t.count = int(start.size());
  t.tile_prefix[0] = 0;
  for (std::size_t g = 0; g < start.size(); ++g) {
    t.start[g] = std::int32_t(start[g]);
    t.end[g] = std::int32_t(end[g]);
    const std::int64_t tiles = (end[g] - start[g] + kGemmBlockM - 1) / kGemmBlockM;
    t.tile_prefix[g + 1] = std::int32_t(t.tile_prefix[g] + tiles);
  }
  return t;
}

void contiguous_groups(GemmKernelArgs& p, std::int64_t G, std::span<const std::int64_t> offs) {
  if (std::int64_t(offs.size()) != G) bad("offs must have G = " + std::to_string(G) + " entries");
  p.groups = detail::host_group_table_offs(p.M, offs);
}

// Forward-shaped operands (A (M, K), B (G, N, K)) with their scales into p.
void set_operands(GemmKernelArgs& p, std::int64_t G, Format fa, Format fb, const std::uint8_t* a,
                  const std::uint8_t* b, Scaling scaling, const float* sa, std::int64_t sa_size,
                  const float* sb, std::int64_t sb_size, bool dgrad,
                  ScaleLayoutF32 sa_layout = ScaleLayoutF32::row_major) {
  p.a_e5m2 = is_e5m2(fa, "A"), p.b_e5m2 = is_e5m2(fb, "B");
  p.mode = scale_mode(scaling);
  if (p.M > 0) check_aligned(a, "A");
  check_aligned(b, "B");
  const std::int64_t nkb = p.K / kGemmBlockK, nnb = p.N / 128;
  const bool mn_major = sa_layout == ScaleLayoutF32::tma_mn_major;
  if (sa_layout != ScaleLayoutF32::row_major && (!mn_major || p.mode != GemmScaleMode::blockwise))
    bad("scale_a_layout " + std::string(to_string(sa_layout)) +
        " is not accepted (row_major; blockwise also tma_mn_major)");
  switch (p.mode) {
    case GemmScaleMode::tensorwise:
      check_size(sa_size, 1, "scale_a (tensorwise)"),
          check_size(sb_size, G, "scale_b (tensorwise)");
      break;
    case GemmScaleMode::rowwise:
      check_size(sa_size, p.M, "scale_a (rowwise)");
      check_size(sb_size, G * p.N, "scale_b (rowwise)");
      break;
    case GemmScaleMode::blockwise:
      if (mn_major) {
        const std::int64_t ld = mn_major_scale_ld(p.M);
        check_size(sa_size, nkb * ld, "scale_a (blockwise 1x128, tma_mn_major)");
        if (p.M > 0) check_aligned(sa, "scale_a (tma_mn_major)");
        p.sa_row = 1, p.sa_kb = ld, p.sa_mn_ld = ld;
      } else {
        check_size(sa_size, p.M * nkb, "scale_a (blockwise 1x128)");
        p.sa_row = nkb, p.sa_kb = 1;
      }
      check_size(sb_size, G * nnb * nkb, "scale_b (blockwise 128x128)");
      p.sb_group = nnb * nkb;
      p.sb_ntile = dgrad ? 1 : nkb, p.sb_kblock = dgrad ? nnb : 1;
      break;
  }
  if (sa_size > 0 && sa == nullptr) bad("scale_a is null");
  if (sb_size > 0 && sb == nullptr) bad("scale_b is null");
  // The output is written while A, B and the scales are read: it must overlap none of them.
  const std::int64_t y_bytes = output_bytes(p);
  if (overlap(p.y, y_bytes, a, p.M * p.K) || overlap(p.y, y_bytes, b, G * p.N * p.K))
    bad(dgrad ? "the output overlaps dY or W" : "the output overlaps A or B");
  if (overlap(p.y, y_bytes, sa, sa_size * 4) || overlap(p.y, y_bytes, sb, sb_size * 4))
    bad("the output overlaps a scale tensor");
  p.a = a, p.b = b, p.scale_a = sa, p.scale_b = sb;
}

// Rows of block scales of a K-grouped operand: ceil(m_g / 128) per group, plus the tail's.
std::int64_t wgrad_scale_rows(std::int64_t M, std::span<const std::int64_t> offs,
                              std::vector<std::int32_t>& blk0) {
  std::int64_t rows = 0, prev = 0;
  for (std::int64_t end : offs) {
    blk0.push_back(std::int32_t(rows));
    rows += (end - prev + 127) / 128, prev = end;
  }
  return rows + (M - prev + 127) / 128;
}

void check_wgrad(const DeviceWgradOperands& op, std::span<const std::int64_t> offs,
                 const DeviceGemmOutput& dw) {
  const bool row_major = op.layout == WgradOperandLayout::row_major;
  if (!row_major && op.layout != WgradOperandLayout::token_contiguous)
    bad("wgrad operand layout must be token_contiguous or row_major");
  if (op.M < 0 || op.M >= (std::int64_t(1) << 31)) bad("wgrad needs M (tokens) in [0, 2^31)");
  if (!row_major && op.M % 16 != 0)
    bad("wgrad on token-contiguous dY^T / X^T needs M (tokens) a multiple of 16");
  if (op.N <= 0 || op.N % 128 != 0)
    bad("N = " + std::to_string(op.N) + " is not a multiple of 128");
  if (op.K <= 0 || op.K % 128 != 0)
    bad("K = " + std::to_string(op.K) + " is not a multiple of 128");
  if (op.G < 1 || op.G > detail::kGemmMaxGroups) bad("G must be in [1, 256]");
  if (std::int64_t(offs.size()) != op.G) bad("offs must have G entries");
  std::int64_t prev = 0;
  for (std::size_t g = 0; g < offs.size(); ++g) {
    if (offs[g] < prev) bad("offs out of order at group " + std::to_string(g));
    if (offs[g] > op.M) bad("offs[" + std::to_string(g) + "] exceeds M");
    prev = offs[g];
  }
  if (op.scaling != Scaling::blockwise && op.scaling != Scaling::tensorwise)
    bad(std::string("wgrad scaling ") + to_string(op.scaling) + " is not implemented (blockwise, " +
        "tensorwise)");
  if (dw.dtype != OutDtype::f32 && dw.dtype != OutDtype::bf16) bad("output must be f32 or bf16");
  check_size(dw.size, op.G * op.N * op.K, "dW");
  check_aligned(dw.y, "dW"), check_aligned(op.c, "C");
  // dW is written while C, the operands and their scales are read: f32 dW may be C itself
  // (accumulation in place, each tile reading its block of C before writing it), else dW must not
  // overlap any of them.
  const std::int64_t dw_bytes = dw.size * (dw.dtype == OutDtype::f32 ? 4 : 2);
  const auto overlaps = [&](const void* p, std::int64_t bytes) {
    return overlap(dw.y, dw_bytes, p, bytes);
  };
  const std::int64_t c_floats = op.G * op.N * op.K;
  if (!(dw.dtype == OutDtype::f32 && dw.y == op.c) && overlaps(op.c, c_floats * 4))
    bad("dW overlaps C: f32 dW may be C itself (accumulation in place), else they must not "
        "overlap");
  if (op.M > 0 && (overlaps(op.dy, op.N * op.M) || overlaps(op.x, op.K * op.M)))
    bad("dW overlaps dY or X");
  if (overlaps(op.scale_dy, op.scale_dy_size * 4) || overlaps(op.scale_x, op.scale_x_size * 4))
    bad("dW overlaps a scale tensor");
  if (op.M > 0 && row_major)
    check_aligned(op.x, "X (row-major)"), check_aligned(op.dy, "dY (row-major)");
  if (op.M > 0 && !row_major) check_aligned(op.x, "X^T"), check_aligned(op.dy, "dY^T");
}

// Blockwise 256-wide tiles (two 128-column halves, docs/gpu_gemm.md §2) for the forward and for
// dgrad, one-line switches: the forward's measured 6-8% faster than 128-wide on the H200; dgrad's
// measured 9% slower than 128-wide (as did 192-wide blockwise tiles, docs/benchmarks.md), so
// dgrad stays 128-wide.
constexpr bool kBlockwiseWideForward = true;
constexpr bool kBlockwiseWideDgrad = false;

// The output columns of a tile (docs/gpu_gemm.md §2): 256 where N is a multiple of 256 or large
// enough (>= 2048) that the masked columns of the last tile cost less than the L2 traffic the
// wider tile saves (blockwise: where the switch above allows), else rowwise / tensorwise 192
// where N is a multiple of 192, else 128 (192-wide blockwise tiles measured slower for dgrad and
// no faster for the forward, docs/benchmarks.md).
// Row-major blockwise A scales of the forward's 256-wide tiles: transposed by a pre-kernel into
// an MN-major copy in stream-ordered scratch memory, so that the tiles stage them (the producer
// warp's coalesced loads, docs/gpu_gemm.md §2; pre-kernel included, +1.5-1.9% over the
// consumers' own loads of the row-major scales, docs/benchmarks.md), or read as they are (false:
// the consumers' own loads), a one-line switch.
constexpr bool kTransposeRowMajorScales = true;

// use(scratch) on `bytes` of stream-ordered scratch memory, freed (stream-ordered) after what use
// enqueued, or at once when it throws: the copies the launchers make before a kernel reads them.
template <class Use>
void with_scratch(std::size_t bytes, cudaStream_t stream, Use&& use) {
  void* scratch = nullptr;
  FP8REF_CUDA_CHECK(cudaMallocAsync(&scratch, bytes, stream));
  try {
    use(static_cast<std::uint8_t*>(scratch));
  } catch (...) {
    cudaFreeAsync(scratch, stream);
    throw;
  }
  FP8REF_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

// The bytes of an MN-major copy of M rows' blockwise A scales over K: K/128 · align(M, 4) floats.
std::size_t mn_major_scale_bytes(std::int64_t M, std::int64_t K) {
  return std::size_t(mn_major_scale_ld(M) * (K / kGemmBlockK)) * 4;
}
// Where a device-side groups' workspace holds that copy: past the table, 256-byte aligned.
constexpr std::size_t kWorkspaceScalesAt = (sizeof(detail::GemmGroupTable) + 255) / 256 * 256;

// launch_grouped_gemm on an MN-major copy of p's row-major blockwise A scales written into `mn`
// (mn_major_scale_bytes) first, on the stream.
void launch_transposed_into(GemmKernelArgs p, int block_n, float* mn, cudaStream_t stream) {
  const std::int64_t ld = mn_major_scale_ld(p.M), nkb = p.K / kGemmBlockK;
  detail::launch_scales_mn_major(p.scale_a, mn, p.M, int(nkb), ld, stream);
  p.scale_a = mn, p.sa_row = 1, p.sa_kb = ld, p.sa_mn_ld = ld;
  detail::launch_grouped_gemm(p, block_n, stream);
}
// The same with the copy in stream-ordered scratch memory, freed (stream-ordered) after the launch.
void launch_transposed(const GemmKernelArgs& p, int block_n, cudaStream_t stream) {
  with_scratch(mn_major_scale_bytes(p.M, p.K), stream, [&](std::uint8_t* scratch) {
    launch_transposed_into(p, block_n, reinterpret_cast<float*>(scratch), stream);
  });
}

// `scale_ws`: on device-side groups, room in the caller's workspace for the MN-major copy of
// row-major blockwise A scales (nullptr: none).
void launch(const GemmKernelArgs& p, bool dgrad, cudaStream_t stream, float* scale_ws = nullptr) {
  const bool blockwise = p.mode == GemmScaleMode::blockwise;
  const bool wide_ok = !blockwise || (dgrad ? kBlockwiseWideDgrad : kBlockwiseWideForward);
  int block_n = 128;
  if (wide_ok && (p.N % 256 == 0 || p.N >= 2048))
    block_n = 256;
  else if (!blockwise && p.N % 192 == 0)
    block_n = 192;
  // (Device-side groups: the copy goes into the caller's workspace where it has room, else the
  // consumers load the row-major scales themselves, docs/gpu_gemm.md §1: no allocation there.)
  if (kTransposeRowMajorScales && blockwise && !dgrad && block_n == 256 && p.sa_mn_ld == 0) {
    if (p.device_groups == nullptr && p.groups.tile_prefix[p.groups.count] > 0)
      return launch_transposed(p, block_n, stream);
    if (p.device_groups != nullptr && scale_ws != nullptr && p.M > 0)
      return launch_transposed_into(p, block_n, scale_ws, stream);
  }
  detail::launch_grouped_gemm(p, block_n, stream);
}

// Groups at any token (docs/gpu_gemm.md §1): where a non-empty group starts off a multiple of 16
// tokens, the kernel's TMA boxes could not start there (gpu/grouped_wgrad_repack.cu), so dYᵀ and
// Xᵀ are first copied into stream-ordered scratch memory with every group at a multiple of
// kRepackAlign tokens (a pass over (N + K)·M bytes), and the kernel reads that copy; the scales
// are indexed per group block and stay as they are. Otherwise the kernel reads them in place.
// kRepackAlign = 128 rather than the 16 TMA needs: starts 16 mod 32 cost the kernel 17.5% and
// 0 mod 32 but not mod 128 1.5% (docs/gpu_gemm.md §2), for at most 127 more scratch tokens a group.
// Row-major operands are copied into the same aligned layout, transposed on the way.
constexpr std::int64_t kRepackAlign = 128;

// The aligned layout: group g's tokens move from `from[g]` to to[g] (to[0] = 0, to[g + 1] - to[g]
// its tokens rounded up to kRepackAlign); p's groups and M become the copy's. Returns p's old
// starts in `from`.
void align_wgrad_groups(detail::WgradKernelArgs& p, std::int32_t* from, std::int32_t* to) {
  std::int64_t total = 0;
  for (int g = 0; g < p.groups; ++g)
    total += (p.end[g] - p.start[g] + kRepackAlign - 1) / kRepackAlign * kRepackAlign;
  if (total >= (std::int64_t(1) << 31))
    bad("wgrad: the tokens, each group's rounded up to 128, must stay below 2^31");
  to[0] = 0;
  for (int g = 0; g < p.groups; ++g) {
    const std::int32_t m = p.end[g] - p.start[g];
    const auto padded = std::int32_t((m + kRepackAlign - 1) / kRepackAlign * kRepackAlign);
    from[g] = p.start[g], to[g + 1] = to[g] + padded;
    p.start[g] = to[g], p.end[g] = to[g] + m;
  }
  p.M = total;
}

// Runs `copy(scratch)` then the kernel on the (N + K, p.M) scratch copy it wrote: dYᵀ rows, then
// Xᵀ rows (stream-ordered; freed on the stream after the kernel).
template <class Copy>
void wgrad_on_copy(detail::WgradKernelArgs p, int block_k, cudaStream_t stream, Copy copy) {
  with_scratch(std::size_t((p.N + p.K) * p.M), stream, [&](std::uint8_t* out) {
    copy(out);
    p.dy_t = out, p.x_t = out + p.N * p.M;
    detail::launch_grouped_wgrad(p, block_k, stream);
  });
}

void launch_wgrad(detail::WgradKernelArgs p, int block_k, cudaStream_t stream) {
  bool aligned = true;
  for (int g = 0; g < p.groups; ++g)
    aligned = aligned && (p.end[g] == p.start[g] || p.start[g] % 16 == 0);
  if (aligned) return detail::launch_grouped_wgrad(p, block_k, stream);
  detail::WgradRepackArgs r{};
  r.a = p.dy_t, r.b = p.x_t, r.rows_a = p.N, r.rows_b = p.K, r.m = p.M, r.groups = p.groups;
  align_wgrad_groups(p, r.from, r.to);
  r.m_out = p.M;
  wgrad_on_copy(p, block_k, stream, [&](std::uint8_t* out) {
    r.out = out;
    detail::launch_wgrad_repack(r, stream);
  });
}

// Row-major dY (M, N) and X (M, K) (WgradOperandLayout::row_major): transposed into the aligned
// layout in one pass (gpu/grouped_wgrad_transpose.cu), whatever the group starts.
void launch_wgrad_row_major(detail::WgradKernelArgs p, const std::uint8_t* dy,
                            const std::uint8_t* x, int block_k, cudaStream_t stream) {
  detail::WgradTransposeArgs t{};
  t.dy = dy, t.x = x, t.N = p.N, t.K = p.K, t.groups = p.groups;
  for (int g = 0; g < p.groups; ++g) t.count[g] = p.end[g] - p.start[g];
  align_wgrad_groups(p, t.from, t.to);
  t.m_out = p.M;
  if (p.M == 0) {  // no tokens in any group: nothing is read, dW = C
    p.dy_t = p.x_t = nullptr;
    return detail::launch_grouped_wgrad(p, block_k, stream);
  }
  wgrad_on_copy(p, block_k, stream, [&](std::uint8_t* out) {
    t.out = out;
    detail::launch_wgrad_transpose(t, stream);
  });
}

// dgrad's kernel view: output K columns, reduction over N (DeviceDgradOperands).
GemmKernelArgs dgrad_view(const DeviceDgradOperands& op, const DeviceGemmOutput& da) {
  if (op.w_layout != BLayout::kn && op.w_layout != BLayout::nk) bad("W layout must be kn or nk");
  if (op.N % 128 != 0) bad("N = " + std::to_string(op.N) + " is not a multiple of 128");
  GemmKernelArgs p = kernel_view(op.M, op.K, op.N, op.G, da);  // output K columns, reduce over N
  set_operands(p, op.G, op.fdy, op.fw, op.dy, op.w, op.scaling, op.scale_dy, op.scale_dy_size,
               op.scale_w, op.scale_w_size, true);
  return p;
}

// dgrad's launch; `rows`: some group has rows (else nothing reads W).
void launch_dgrad(GemmKernelArgs p, const DeviceDgradOperands& op, bool rows, cudaStream_t stream) {
  if (op.w_layout == BLayout::kn || !rows) return launch(p, true, stream);
  // W stored nk (G, N, K): the kernel reads W with the reduction dimension N contiguous (FP8 wgmma
  // has no transposed shared-memory operand), so each W[g] is first transposed into (K, N) scratch
  // (gpu/grouped_gemm_transpose.cu: a pass over G·N·K bytes); its scales are the same either way.
  with_scratch(std::size_t(op.G * op.N * op.K), stream, [&](std::uint8_t* wt) {
    detail::launch_fp8_transpose(op.w, wt, op.G, op.N, op.K, stream);
    p.b = wt;
    launch(p, true, stream);
  });
}

// The device-side groups' path (docs/gpu_gemm.md §1): the pointers checked (never read here), the
// prologue launched on `stream` to check the entries and write the table into the caller's
// workspace and the status word, and p pointed at that table; row_tiles bounds its row tiles.
// Returns where the workspace has room for the MN-major copy of p's A scales (a forward's
// row-major blockwise ones: grouped_gemm_workspace_bytes(op)), else nullptr.
// sa_bytes, sb_bytes: the scale tensors' bytes (p holds their pointers).
float* set_device_groups(GemmKernelArgs& p, std::int64_t G, const DeviceGroups& d, bool masked,
                         std::int64_t limit, std::int64_t row_tiles, std::int64_t sa_bytes,
                         std::int64_t sb_bytes, cudaStream_t stream) {
  if (d.entries == nullptr) bad("the device group entries are null");
  if (d.status == nullptr || reinterpret_cast<std::uintptr_t>(d.status) % 4 != 0)
    bad("status must be a 4-byte aligned device pointer");
  check_aligned(d.workspace, "workspace");
  if (d.workspace_size != 0 && d.workspace_size < sizeof(detail::GemmGroupTable))
    bad("workspace_size " + std::to_string(d.workspace_size) +
        " is less than grouped_gemm_workspace_bytes()");
  // The prologue writes the workspace and the status word while the entries are read, and the
  // GEMM reads the table while it writes the output: none of them may overlap another or what the
  // GEMM reads.
  const std::int64_t ws_bytes =
      std::max<std::int64_t>(std::int64_t(d.workspace_size), sizeof(detail::GemmGroupTable));
  const struct {
    const void* at;
    std::int64_t bytes;
  } read[] = {{d.entries, G * 4},   {p.y, output_bytes(p)}, {p.a, p.M * p.K},
              {p.b, G * p.N * p.K}, {p.scale_a, sa_bytes},  {p.scale_b, sb_bytes}};
  for (const auto& r : read) {
    if (overlap(d.workspace, ws_bytes, r.at, r.bytes))
      bad("the workspace overlaps the group entries, the output or an operand");
    if (overlap(d.status, 4, r.at, r.bytes))
      bad("status overlaps the group entries, the output or an operand");
  }
  if (overlap(d.workspace, ws_bytes, d.status, 4)) bad("status overlaps the workspace");
  auto* table = static_cast<detail::GemmGroupTable*>(d.workspace);
  detail::launch_group_table(d.entries, int(G), masked, limit, table, d.status, stream);
  p.groups.count = int(G), p.device_groups = table, p.row_tiles_bound = row_tiles;
  const bool copy = p.mode == GemmScaleMode::blockwise && p.sa_mn_ld == 0;
  if (!copy || d.workspace_size < kWorkspaceScalesAt + mn_major_scale_bytes(p.M, p.K))
    return nullptr;
  return reinterpret_cast<float*>(static_cast<std::uint8_t*>(d.workspace) + kWorkspaceScalesAt);
}

}  // namespace

namespace detail {

GemmGroupTable host_group_table_offs(std::int64_t M, std::span<const std::int64_t> offs) {
  if (offs.empty() || offs.size() > std::size_t(kGemmMaxGroups)) bad("G must be in [1, 256]");
  std::vector<std::int64_t> start(offs.size()), end(offs.begin(), offs.end());
  std::int64_t prev = 0;
  for (std::size_t g = 0; g < offs.size(); ++g) {
    if (offs[g] < prev) bad("offs out of order at group " + std::to_string(g));
    if (offs[g] > M) bad("offs[" + std::to_string(g) + "] exceeds M");
    start[g] = prev, prev = offs[g];
  }
  return group_table(start, end);
}

GemmGroupTable host_group_table_masked(std::int64_t m_max, std::span<const std::int64_t> masked_m) {
  if (masked_m.empty() || masked_m.size() > std::size_t(kGemmMaxGroups))
    bad("G must be in [1, 256]");
  std::vector<std::int64_t> start(masked_m.size()), end(masked_m.size());
  for (std::size_t g = 0; g < masked_m.size(); ++g) {
    if (masked_m[g] < 0 || masked_m[g] > m_max)
      bad("masked_m[" + std::to_string(g) + "] is outside [0, m_max]");
    start[g] = std::int64_t(g) * m_max, end[g] = start[g] + masked_m[g];
  }
  return group_table(start, end);
}

}  // namespace detail

std::size_t grouped_gemm_workspace_bytes() { return sizeof(detail::GemmGroupTable); }

std::size_t grouped_gemm_workspace_bytes(const DeviceGemmOperands& op) {
  if (op.scaling != Scaling::blockwise || op.scale_a_layout != ScaleLayoutF32::row_major)
    return grouped_gemm_workspace_bytes();
  return kWorkspaceScalesAt + mn_major_scale_bytes(op.M, op.K);
}

std::string grouped_gemm_status_message(std::int32_t status) {
  const std::string g = std::to_string(status >> 4), at = "fp8ref gpu grouped GEMM: ";
  switch (status & 15) {
    case detail::kGroupsOk:
      if (status == 0) return "";
      break;
    case detail::kGroupsOutOfOrder: return at + "offs out of order at group " + g;
    case detail::kGroupsPastM: return at + "offs[" + g + "] exceeds M";
    case detail::kGroupsMaskedRange: return at + "masked_m[" + g + "] is outside [0, m_max]";
  }
  return at + "device status " + std::to_string(status) + " is no status the prologue writes";
}

ModelChoice grouped_gemm_declared_model(Scaling s) {
  switch (scale_mode(s)) {
    case GemmScaleMode::blockwise: return {AccumulationModel::hopper_promoted_blockwise, 1};
    case GemmScaleMode::rowwise:
      return {AccumulationModel::hopper_promoted_rowwise, 1, 0, Epilogue::a_then_b};
    case GemmScaleMode::tensorwise: return {AccumulationModel::hopper_promoted_tensorwise, 1};
  }
  bad("unreachable scaling");
}

void grouped_gemm_forward(const DeviceGemmOperands& op, std::span<const std::int64_t> offs,
                          const DeviceGemmOutput& y, cudaStream_t stream) {
  GemmKernelArgs p = kernel_view(op.M, op.N, op.K, op.G, y);
  set_operands(p, op.G, op.fa, op.fb, op.a, op.b, op.scaling, op.scale_a, op.scale_a_size,
               op.scale_b, op.scale_b_size, false, op.scale_a_layout);
  contiguous_groups(p, op.G, offs);
  launch(p, false, stream);
}

void grouped_gemm_forward_masked(const DeviceGemmOperands& op, std::int64_t m_max,
                                 std::span<const std::int64_t> masked_m, const DeviceGemmOutput& y,
                                 cudaStream_t stream) {
  GemmKernelArgs p = kernel_view(op.M, op.N, op.K, op.G, y);
  set_operands(p, op.G, op.fa, op.fb, op.a, op.b, op.scaling, op.scale_a, op.scale_a_size,
               op.scale_b, op.scale_b_size, false, op.scale_a_layout);
  if (m_max < 0 || op.G * m_max != op.M) bad("masked layout needs M = G * m_max");
  if (std::int64_t(masked_m.size()) != op.G) bad("masked_m must have G entries");
  p.groups = detail::host_group_table_masked(m_max, masked_m);
  launch(p, false, stream);
}

void grouped_gemm_dgrad(const DeviceDgradOperands& op, std::span<const std::int64_t> offs,
                        const DeviceGemmOutput& da, cudaStream_t stream) {
  GemmKernelArgs p = dgrad_view(op, da);
  contiguous_groups(p, op.G, offs);
  launch_dgrad(p, op, p.groups.tile_prefix[p.groups.count] > 0, stream);
}

// Device-side groups (docs/gpu_gemm.md §1): contiguous groups hold at most (M + 127·G) / 128 row
// tiles (each group's rows rounded up to 128), masked ones G·ceil(m_max / 128).
void grouped_gemm_forward(const DeviceGemmOperands& op, const DeviceGroups& offs,
                          const DeviceGemmOutput& y, cudaStream_t stream) {
  GemmKernelArgs p = kernel_view(op.M, op.N, op.K, op.G, y);
  set_operands(p, op.G, op.fa, op.fb, op.a, op.b, op.scaling, op.scale_a, op.scale_a_size,
               op.scale_b, op.scale_b_size, false, op.scale_a_layout);
  const std::int64_t bound = op.M > 0 ? (op.M + 127 * op.G) / 128 : 0;
  float* scale_ws = set_device_groups(p, op.G, offs, false, op.M, bound, op.scale_a_size * 4,
                                      op.scale_b_size * 4, stream);
  launch(p, false, stream, scale_ws);
}

void grouped_gemm_forward_masked(const DeviceGemmOperands& op, std::int64_t m_max,
                                 const DeviceGroups& masked_m, const DeviceGemmOutput& y,
                                 cudaStream_t stream) {
  GemmKernelArgs p = kernel_view(op.M, op.N, op.K, op.G, y);
  set_operands(p, op.G, op.fa, op.fb, op.a, op.b, op.scaling, op.scale_a, op.scale_a_size,
               op.scale_b, op.scale_b_size, false, op.scale_a_layout);
  if (m_max < 0 || op.G * m_max != op.M) bad("masked layout needs M = G * m_max");
  float* scale_ws = set_device_groups(p, op.G, masked_m, true, m_max, op.G * ((m_max + 127) / 128),
                                      op.scale_a_size * 4, op.scale_b_size * 4, stream);
  launch(p, false, stream, scale_ws);
}

void grouped_gemm_dgrad(const DeviceDgradOperands& op, const DeviceGroups& offs,
                        const DeviceGemmOutput& da, cudaStream_t stream) {
  GemmKernelArgs p = dgrad_view(op, da);
  const std::int64_t bound = op.M > 0 ? (op.M + 127 * op.G) / 128 : 0;
  set_device_groups(p, op.G, offs, false, op.M, bound, op.scale_dy_size * 4, op.scale_w_size * 4,
                    stream);
  launch_dgrad(p, op, bound > 0, stream);  // (M = 0: no rows, nothing reads W)
}

void grouped_gemm_wgrad(const DeviceWgradOperands& op, std::span<const std::int64_t> offs,
                        const DeviceGemmOutput& dw, cudaStream_t stream) {
  check_wgrad(op, offs, dw);
  detail::WgradKernelArgs p{};
  std::vector<std::int32_t> blk0;
  const std::int64_t rows = wgrad_scale_rows(op.M, offs, blk0);
  const bool blockwise = op.scaling == Scaling::blockwise;
  check_size(op.scale_dy_size, blockwise ? rows * op.N : 1, "scale_dy");
  check_size(op.scale_x_size, blockwise ? rows * op.K : 1, "scale_x");
  if ((op.scale_dy_size > 0 && op.scale_dy == nullptr) ||
      (op.scale_x_size > 0 && op.scale_x == nullptr))
    bad("a scale tensor is null");
  p.dy_t = op.dy, p.x_t = op.x, p.scale_dy = op.scale_dy, p.scale_x = op.scale_x, p.c = op.c;
  p.dw = dw.y, p.M = op.M, p.N = op.N, p.K = op.K, p.groups = int(op.G);
  p.blockwise = blockwise, p.out_bf16 = dw.dtype == OutDtype::bf16;
  p.dy_e5m2 = is_e5m2(op.fdy, "dY"), p.x_e5m2 = is_e5m2(op.fx, "X");
  p.scale_rows = std::int32_t(rows);
  std::int64_t prev = 0;
  for (std::size_t g = 0; g < offs.size(); ++g) {
    p.start[g] = std::int32_t(prev), p.end[g] = std::int32_t(offs[g]), p.blk0[g] = blk0[g];
    p.order[g] = std::int32_t(g), prev = offs[g];
  }
  // The tiles of the groups with most tokens first, so that the persistent CTAs' static tile
  // walk does not leave the longest reductions for last (docs/gpu_gemm.md §2).
  std::stable_sort(p.order, p.order + offs.size(), [&](std::int32_t x, std::int32_t y) {
    return p.end[x] - p.start[x] > p.end[y] - p.start[y];
  });
  const int block_k = grouped_gemm_wgrad_block_k(op.K);
  if (op.layout == WgradOperandLayout::row_major)
    return launch_wgrad_row_major(p, op.dy, op.x, block_k, stream);
  launch_wgrad(p, block_k, stream);
}

}  // namespace fp8ref::gpu
