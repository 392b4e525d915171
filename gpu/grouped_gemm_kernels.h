// The FP8 grouped GEMM kernel's launch interface (internal to gpu/: gpu/grouped_gemm.cpp checks the
// arguments and fills GemmKernelArgs, gpu/grouped_gemm_kernels.cu runs them). A tile is 128 rows of
// one group × 128, 192 or 256 columns; persistent CTAs walk the tiles (docs/gpu_gemm.md §2).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "gpu/grouped_wgrad_transpose.h"

namespace fp8ref::gpu::detail {

inline constexpr int kGemmBlockM = 128;  // output rows of a tile (two warpgroups of 64)
inline constexpr int kGemmBlockK = 128;  // K per pipeline stage = the promotion interval
inline constexpr int kGemmMaxGroups = 256;

enum class GemmScaleMode : std::uint8_t { tensorwise, rowwise, blockwise };

// Groups as row ranges [start, end) of A and Y (contiguous offsets, or masked_m's (G, M_max)
// slots); tile_prefix[g] = output row tiles of groups before g, tile_prefix[G] = all of them.
struct GemmGroupTable {
  int count;
  std::int32_t start[kGemmMaxGroups];
  std::int32_t end[kGemmMaxGroups];
  std::int32_t tile_prefix[kGemmMaxGroups + 1];
};

// Y (M, N) = per row r of group g: A[r] (K) · B[g] (N, K)ᵀ, both K contiguous (device pointers).
// Scales (f32 decode scales):
//   tensorwise: scale_a[0], scale_b[g]
//   rowwise:    scale_a[r], scale_b[g·N + n]
//   blockwise:  scale_a[r·sa_row + kb·sa_kb], scale_b[g·sb_group + (n/128)·sb_ntile + kb·sb_kblock]
// sa_mn_ld > 0: the forward's A scales are MN-major, (K/128, sa_mn_ld) with sa_mn_ld = M rounded
// up to 4 (ScaleLayoutF32::tma_mn_major): sa_row = 1, sa_kb = sa_mn_ld; 256-wide tiles then stage
// the block scales in shared memory (docs/gpu_gemm.md §2). 0: row-major, sa_row = K/128, sa_kb = 1.
struct GemmKernelArgs {
  const std::uint8_t* a;
  const std::uint8_t* b;
  const float* scale_a;
  const float* scale_b;
  void* y;
  std::int64_t M, N, K;
  std::int64_t sa_row, sb_group, sb_ntile, sb_kblock;
  std::int64_t sa_kb, sa_mn_ld;
  GemmScaleMode mode;
  bool out_bf16;
  bool a_e5m2, b_e5m2;
  GemmGroupTable groups;
  // The device-side groups' path (docs/gpu_gemm.md §1): non-null, the kernel reads the table there
  // (written by launch_group_table before it, on the stream) instead of `groups`, of which only
  // `count` (G) is set; row_tiles_bound bounds the table's row tiles (the grid's size). Placed
  // after `groups`, so that the host-table kernels' parameter offsets, and their SASS, stay as
  // they were.
  const GemmGroupTable* device_groups;
  std::int64_t row_tiles_bound;
};

// The one-block prologue of the device-side groups' path (docs/gpu_gemm.md §1, §4): reads the G
// int32 entries of `desc` (offs, or masked_m when `masked`; limit = M, or m_max), writes the group
// table into `table` (build_group_table, gpu/grouped_gemm_groups.h: empty on a bad entry) and the
// status word into `status` (0, or the first bad entry's kind | group << 4). Device pointers.
void launch_group_table(const std::int32_t* desc, int G, bool masked, std::int64_t limit,
                        GemmGroupTable* table, std::int32_t* status, cudaStream_t stream);

// The host launcher's group tables (gpu/grouped_gemm.cpp): contiguous offs (G entries,
// non-decreasing, <= M) or masked_m (each in [0, m_max]); std::invalid_argument (one line) on a
// bad entry. A CPU test holds build_group_table to them (docs/gpu_gemm.md §5).
GemmGroupTable host_group_table_offs(std::int64_t M, std::span<const std::int64_t> offs);
GemmGroupTable host_group_table_masked(std::int64_t m_max, std::span<const std::int64_t> masked_m);

// Throws CudaError (gpu/device.h) when the launch fails; arguments are assumed valid. block_n: the
// output columns of a tile, 128, 192 or 256 (gpu/grouped_gemm.cpp picks it, blockwise 128 or 256,
// docs/gpu_gemm.md §2).
void launch_grouped_gemm(const GemmKernelArgs& args, int block_n, cudaStream_t stream);

// Row-major (M, nkb) block scales `in` into the MN-major (nkb, ld) copy `out` (ld >= M, rows
// M .. ld - 1 zero): the layout GemmKernelArgs::sa_mn_ld describes.
void launch_scales_mn_major(const float* in, float* out, std::int64_t M, int nkb, std::int64_t ld,
                            cudaStream_t stream);

// K-grouped wgrad dW[g] (N, K) = C[g] + sum over the tokens t of group g of dY[t, n]·X[t, k], on
// the token-contiguous copies dYᵀ (N, M) and Xᵀ (K, M) (device pointers). Group g = tokens
// [start[g], end[g]): a non-empty group's start a multiple of 16 (its blocks' TMA boxes start
// there, and a box's global address must be 16-byte aligned: PTX ISA §5.5.3.1 "Bounding Box"),
// its end any token; its 128-token blocks use scale rows blk0[g] + 0, 1, ...
// Scales: blockwise scale_dy[row·N + n], scale_x[row·K + k]; tensorwise scale_dy[0], scale_x[0].
struct WgradKernelArgs {
  const std::uint8_t* dy_t;
  const std::uint8_t* x_t;
  const float* scale_dy;
  const float* scale_x;
  const float* c;  // (G, N, K) f32
  void* dw;        // (G, N, K) f32 or bf16
  std::int64_t M, N, K;
  int groups;
  bool blockwise, out_bf16, dy_e5m2, x_e5m2;
  std::int32_t scale_rows;  // blockwise: rows of scale_dy (rows, N) and scale_x (rows, K)
  std::int32_t start[kGemmMaxGroups];
  std::int32_t end[kGemmMaxGroups];
  std::int32_t blk0[kGemmMaxGroups];
  std::int32_t order[kGemmMaxGroups];  // the groups by descending token count: tile order
};
// block_k: the dW columns of a tile, 128, 192 or 256 (gpu/grouped_gemm.cpp picks it).
void launch_grouped_wgrad(const WgradKernelArgs& args, int block_k, cudaStream_t stream);

// Groups at any token moved to 16-token aligned starts for the wgrad kernel: rows of `m` bytes
// (rows_a of a, then rows_b of b: dYᵀ and Xᵀ, m % 16 == 0, 16-byte aligned) into rows of `m_out`
// bytes of `out` (m_out % 16 == 0, 16-byte aligned), the 16-byte chunk at column j of
// [to[g], to[g + 1]) taking the bytes from[g] + j - to[g] .. + 15 of its row (zero past m).
// to[0] = 0, to[g + 1] - to[g] >= the group's tokens rounded up to 16, to[groups] = m_out.
struct WgradRepackArgs {
  const std::uint8_t* a;
  const std::uint8_t* b;
  std::uint8_t* out;
  std::int64_t rows_a, rows_b, m, m_out;
  int groups;
  std::int32_t from[kGemmMaxGroups];
  std::int32_t to[kGemmMaxGroups + 1];
};
void launch_wgrad_repack(const WgradRepackArgs& args, cudaStream_t stream);

// Row-major dY (M, N) and X (M, K) into the token-contiguous, per-group aligned (N + K, m_out) copy
// WgradTransposeArgs describes (gpu/grouped_wgrad_transpose.cu), in one pass; m_out % 64 == 0.
void launch_wgrad_transpose(const WgradTransposeArgs& args, cudaStream_t stream);

// out[b] (cols, rows) = in[b] (rows, cols)ᵀ for b < batches: byte matrices, rows and cols multiples
// of 64, both pointers 16-byte aligned (gpu/grouped_gemm_transpose.cu: dgrad's W stored nk).
void launch_fp8_transpose(const std::uint8_t* in, std::uint8_t* out, std::int64_t batches,
                          std::int64_t rows, std::int64_t cols, cudaStream_t stream);

}  // namespace fp8ref::gpu::detail
