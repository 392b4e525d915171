// The fused transpose-and-repack of the K-grouped wgrad's row-major operands (docs/gpu_gemm.md §1,
// §2; internal to gpu/): dY (M, N) and X (M, K) row-major become the token-contiguous dYᵀ and Xᵀ
// that FP8 wgmma reads (K-major shared-memory operands only), written straight into the aligned
// per-group layout the launcher's repack makes (every group at a multiple of 128 tokens), in one
// pass. The index mapping and the two halves of a CTA's tile are __host__ __device__, so that the
// kernel (gpu/grouped_wgrad_transpose.cu) and a host emulation of it
// (proptests/gpu/wgrad_transpose_emulated_test.cpp, label cpu) run the same code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8REF_WT_HD __host__ __device__ __forceinline__
#else
#define FP8REF_WT_HD inline
#endif

namespace fp8ref::gpu::detail {

inline constexpr int kWgradTransposeMaxGroups = 256;  // = kGemmMaxGroups (grouped_gemm_kernels.h)
inline constexpr int kWgradTransposeTile = 64;        // a CTA's tile: 64 tokens × 64 features
inline constexpr int kWgradTransposeThreads = 256;    // a thread: 16 bytes of a tile row in and out
inline constexpr int kWgradTransposePitch = 64 + 16;  // shared row pitch: 16-byte aligned rows

// Output rows r < N are dYᵀ's (feature r of dY), rows N + k Xᵀ's (feature k of X), each m_out
// bytes: the column j in [to[g], to[g] + count[g]) of every row holds the input row (token)
// from[g] + j - to[g]; the columns [to[g] + count[g], to[g + 1]) hold zeros. N and K multiples of
// 128; to[0] = 0, to[g + 1] - to[g] the group's count rounded up to a multiple of 64 (the launcher
// rounds to 128), to[groups] = m_out; dy, x and out 16-byte aligned (N and K being multiples of
// 16, every input row then is too). Input rows of no group are never read.
struct WgradTransposeArgs {
  const std::uint8_t* dy;  // (M, N) row-major
  const std::uint8_t* x;   // (M, K) row-major
  std::uint8_t* out;       // (N + K, m_out)
  std::int64_t N, K, m_out;
  int groups;
  std::int32_t from[kWgradTransposeMaxGroups];
  std::int32_t count[kWgradTransposeMaxGroups];
  std::int32_t to[kWgradTransposeMaxGroups + 1];
};

// The group of output column j in a layout whose groups start at to[0] = 0 <= to[1] <= ... (of
// `groups`): the last g < groups with to[g] <= j, so that an empty group, which shares its `to`
// with the next, is skipped. Both copies into the aligned layout use it (wgrad_transpose_source
// and the repack, gpu/grouped_wgrad_repack.cu).
FP8REF_WT_HD int aligned_group_of(const std::int32_t* to, int groups, std::int64_t j) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (to[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The input token of output column j (0 <= j < m_out), or -1 where column j is past its group's
// tokens.
FP8REF_WT_HD std::int64_t wgrad_transpose_source(const WgradTransposeArgs& p, std::int64_t j) {
  const int lo = aligned_group_of(p.to, p.groups, j);
  const std::int64_t i = j - p.to[lo];
  return i < p.count[lo] ? p.from[lo] + i : -1;
}

// 16 bytes from src to dst (both 16-byte aligned on the device), or zeros where src is null.
FP8REF_WT_HD void wgrad_copy16(std::uint8_t* dst, const std::uint8_t* src) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(dst) =
      src != nullptr ? *reinterpret_cast<const uint4*>(src) : uint4{0, 0, 0, 0};
#else
  if (src != nullptr)
    std::memcpy(dst, src, 16);
  else
    std::memset(dst, 0, 16);
#endif
}

// The shared tile holds token r's features c at [r][c ^ (r & 48)]: its 16-byte chunks swizzled by
// bits 4-5 of the token, so that the second half's byte reads of one column from the rows
// 16·(t % 4) + i of a warp fall in four different banks instead of one (a row pitch that keeps
// the 16-byte stores aligned is a multiple of 16 bytes, and 16 rows of it a multiple of 32 words).
// First half of the CTA of output columns [64·tile_j, + 64) and output rows [64·tile_f, + 64):
// thread t loads the 16 features 16·(t % 4) .. + 15 of the tile's token t / 4 (zeros for a
// column past its group's tokens) into tile row t / 4. A 64-row tile lies in dYᵀ or in Xᵀ (N is
// a multiple of 128).
FP8REF_WT_HD void wgrad_transpose_load(const WgradTransposeArgs& p, std::int64_t tile_j,
                                       std::int64_t tile_f, int t,
                                       std::uint8_t (*tile)[kWgradTransposePitch]) {
  const int tr = t / 4, tc = (t % 4) * 16;
  const std::int64_t f0 = tile_f * kWgradTransposeTile;
  const bool in_dy = f0 < p.N;
  const std::uint8_t* base = in_dy ? p.dy : p.x;
  const std::int64_t ld = in_dy ? p.N : p.K, col = (in_dy ? f0 : f0 - p.N) + tc;
  const std::int64_t src = wgrad_transpose_source(p, tile_j * kWgradTransposeTile + tr);
  wgrad_copy16(&tile[tr][tc ^ (tr & 48)], src >= 0 ? base + src * ld + col : nullptr);
}

// Second half (after the CTA's barrier): thread t stores output row 64·tile_f + t / 4, columns
// 64·tile_j + 16·(t % 4) .. + 15: feature t / 4 of tokens 16·(t % 4) .. + 15, at shared column
// (t / 4) ^ 16·(t % 4) (the rows' swizzle, above).
FP8REF_WT_HD void wgrad_transpose_store(const WgradTransposeArgs& p, std::int64_t tile_j,
                                        std::int64_t tile_f, int t,
                                        const std::uint8_t (*tile)[kWgradTransposePitch]) {
  const int tr = t / 4, tc = (t % 4) * 16, col = tr ^ tc;  // rows tc .. tc + 15: r & 48 = tc
  std::uint32_t w[4];
  for (int i = 0; i < 4; ++i)
    w[i] = std::uint32_t(tile[tc + 4 * i][col]) | std::uint32_t(tile[tc + 4 * i + 1][col]) << 8 |
           std::uint32_t(tile[tc + 4 * i + 2][col]) << 16 |
           std::uint32_t(tile[tc + 4 * i + 3][col]) << 24;
  std::uint8_t* dst =
      p.out + (tile_f * kWgradTransposeTile + tr) * p.m_out + tile_j * kWgradTransposeTile + tc;
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(dst) = uint4{w[0], w[1], w[2], w[3]};
#else
  for (int i = 0; i < 16; ++i) dst[i] = std::uint8_t(w[i / 4] >> (8 * (i % 4)));
#endif
}

}  // namespace fp8ref::gpu::detail
