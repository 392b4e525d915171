// Column-block and dual-orientation quantize (device code; the launcher gpu/quantize.cpp checks the
// arguments): a CTA holds a tile of at most W rows x 128 T columns of a bf16 source in registers
// (W = 128, T = 1; W = 32, T = 4) and writes its Wx1 column blocks, and for quantize_dual with
// W = 128 also its 1xW row blocks, from that one read; quantize_dual's MX tiles (1x32 + 32x1) are
// warp tiles of 32 rows x 64 columns. Each output bitwise equal to its own single-orientation call
// (the dgrad operand and the wgrad operand of one tensor). Amax reductions are integer maxima of
// |x| patterns (max.u16x2 on packed bf16, shuffles, shared memory): no order to depend on.
#include <cstdint>

#include "gpu/device.h"
#include "gpu/quantize_device.cuh"
#include "gpu/quantize_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

// Tile geometry of W: thread (cg = tid % 16, rg = tid / 16) holds chunk cg of column group j
// (columns 128 j + 8 cg ..) in rows rg + 16 i, i < W / 16: eight chunks a thread either way.
template <int W>
struct Tile {
  static_assert(W == 128 || W == 32, "W = 128 or 32");
  static constexpr int T = 128 / W, kRows = W / 16, kCols = 128 * T;
};

// The broadcast of one row block's scale to the lanes that cast it.
struct RowScale {
  float factor;
  bool may_overflow;
};

// Block b (flat slot j * kRows + i) of a thread's eight 16-bit row maxima, by selects (no local
// memory for a dynamic index).
__device__ __forceinline__ std::uint32_t pick8(const std::uint32_t (&m)[8], int b) {
  std::uint32_t r = m[0];
#pragma unroll
  for (int k = 1; k < 8; ++k) r = b == k ? m[k] : r;
  return r;
}

// Row blocks (1xW) of the thread's eight chunks: G = W / 8 lanes of a half-warp share a block
// (16 for W = 128, 4 for W = 32) and each holds the same eight blocks' maxima after the shuffles;
// lane p of the group computes 8 / min(G, 8) of the scales (and stores them), then every lane
// takes its eight factors by shuffles. Returns the factors in rs.
template <int W, ScaleKind K>
__device__ __forceinline__ void row_scales(const QuantizeLaunch& q, std::int64_t r0,
                                           std::int64_t c0, const uint4 (&v)[8],
                                           RowScale (&rs)[8]) {
  using TL = Tile<W>;
  constexpr int G = W / 8, kPer = G >= 8 ? 1 : 8 / G;
  const int lane = int(threadIdx.x & 31), cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  std::uint32_t m[8];
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const uint4 one[1] = {v[s]};
    m[s] = chunks_max16(one, q.recipe.ignore_nan);
  }
#pragma unroll
  for (int s = 0; s < 8; s += 2) {  // two slots a shuffle: 16-bit maxima, packed
    std::uint32_t p = m[s] | (m[s + 1] << 16);
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1)
      p = max_u16x2(p, __shfl_xor_sync(0xFFFFFFFFu, p, off));
    m[s] = p & 0xFFFFu, m[s + 1] = p >> 16;
  }
  const int p = cg % G, group0 = lane - p;
  float fac[kPer];
  bool ovf[kPer];
#pragma unroll
  for (int t = 0; t < kPer; ++t) {
    const int s = (p * kPer + t) % 8, j = s / TL::kRows, i = s % TL::kRows;
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(pick8(m, s) << 16));
    fac[t] = d.factor, ovf[t] = d.may_overflow;
    const std::int64_t r = r0 + rg + 16 * i, c = c0 + 128 * j + 8 * cg;
    if (p * kPer + t < 8 && r < q.rows && c < q.cols) store_scale(q.scales, r, c / W, d);
  }
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const int owner = group0 + s / kPer;
    rs[s].factor = __shfl_sync(0xFFFFFFFFu, fac[s % kPer], owner);
    rs[s].may_overflow = false;
    if constexpr (K == ScaleKind::deepgemm)
      rs[s].may_overflow = __shfl_sync(0xFFFFFFFFu, int(ovf[s % kPer]), owner) != 0;
  }
}

// Per-thread packed maxima of |x| (abs: Abs16x2, or Abs16x2NoNan to drop NaN patterns) of
// each column pair over the thread's rows of column group j into cm[j]; returns their maximum.
template <int W, class Abs>
__device__ __forceinline__ std::uint32_t column_pass(const uint4 (&v)[8], Abs abs,
                                                     std::uint32_t (&cm)[Tile<W>::T][4]) {
  using TL = Tile<W>;
  std::uint32_t any = 0;
#pragma unroll
  for (int j = 0; j < TL::T; ++j) {
    cm[j][0] = cm[j][1] = cm[j][2] = cm[j][3] = 0;
#pragma unroll
    for (int i = 0; i < TL::kRows; ++i) {
      const uint4& u = v[j * TL::kRows + i];
      cm[j][0] = max_u16x2(cm[j][0], abs(u.x)), cm[j][1] = max_u16x2(cm[j][1], abs(u.y));
      cm[j][2] = max_u16x2(cm[j][2], abs(u.z)), cm[j][3] = max_u16x2(cm[j][3], abs(u.w));
    }
    any = max_u16x2(any, max_u16x2(max_u16x2(cm[j][0], cm[j][1]), max_u16x2(cm[j][2], cm[j][3])));
  }
  return any;
}

// Column maxima of the tile into shared memory: per thread a packed word per column pair (local
// over its rows), the other half-warp (xor 16), then one row of colmax per warp.
template <int W>
__device__ __forceinline__ void column_maxima(const uint4 (&v)[8], bool ignore_nan,
                                              std::uint32_t (*colmax)[Tile<W>::kCols / 2]) {
  using TL = Tile<W>;
  const int cg = int(threadIdx.x % 16), warp = int(threadIdx.x / 32);
  std::uint32_t cm[TL::T][4];
  const std::uint32_t any = column_pass<W>(v, Abs16x2{}, cm);
  if (ignore_nan && has_nan16x2(any))  // a NaN somewhere: again, NaN patterns as 0
    column_pass<W>(v, Abs16x2NoNan{}, cm);
#pragma unroll
  for (int j = 0; j < TL::T; ++j)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const std::uint32_t c = max_u16x2(cm[j][w], __shfl_xor_sync(0xFFFFFFFFu, cm[j][w], 16));
      if (threadIdx.x % 32 < 16) colmax[warp][j * 64 + cg * 4 + w] = c;
    }
}

// The tile's column scales from the warps' packed maxima: factor and overflow flag of each tile
// column into shared memory, the scale of each column inside the tensor into the sink.
template <int W, ScaleKind K>
__device__ __forceinline__ void column_scales(const QuantizeLaunch& q, std::int64_t br,
                                              std::int64_t c0,
                                              const std::uint32_t (*colmax)[Tile<W>::kCols / 2],
                                              float* colfac, std::uint8_t* colovf) {
  for (int col = int(threadIdx.x); col < Tile<W>::kCols; col += kThreads) {
    std::uint32_t mm = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) mm = max_u16x2(mm, colmax[w][col / 2]);
    mm = col % 2 ? mm >> 16 : mm & 0xFFFFu;
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(mm << 16));
    colfac[col] = d.factor, colovf[col] = d.may_overflow;
    if (c0 + col < q.cols) store_scale(q.scales, br, c0 + col, d);
  }
}

// Eight codes of a chunk, element e scaled by its column's factor f[e].
__device__ __forceinline__ uint2 cast8_cols(const RecipeParams& p, const float (&f)[8],
                                            bool may_overflow, const uint4& u) {
  std::uint32_t v[8];
  unpack_bf16(u, v);
  std::uint32_t w[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < 8; k += 2) {
    const float lo = __fmul_rn(__uint_as_float(v[k]), f[k]);
    const float hi = __fmul_rn(__uint_as_float(v[k + 1]), f[k + 1]);
    std::uint32_t c = cvt2(p.e4m3, hi, lo);
    if (p.nonsat && may_overflow) c = nonsat_fix(c & 0xFF, lo) | (nonsat_fix(c >> 8, hi) << 8);
    w[k / 4] |= c << (8 * (k % 4));
  }
  return make_uint2(w[0], w[1]);
}

// Tile it's eight chunks of this thread into its own slots of `stage` (slot s at s * kThreads +
// thread): only the thread that copies a chunk reads it, so a wait_group orders them, no barrier.
template <int W>
__device__ __forceinline__ void copy_tile(const QuantizeLaunch& q, std::int64_t it,
                                          std::int64_t nct, uint4* stage) {
  using TL = Tile<W>;
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const std::int64_t br = it / nct, c0 = (it % nct) * TL::kCols;
  const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const std::int64_t r = r0 + rg + 16 * (s % TL::kRows), c = c0 + 128 * (s / TL::kRows) + 8 * cg;
    const bool live = r < r1 && c < q.cols;
    copy_chunk(stage + s * kThreads + threadIdx.x, x + (live ? r * q.cols + c : 0), live);
  }
}

// The same chunks of tile (rows [r0, r1), columns from c0) straight into registers: plain
// 16-byte loads, all issued before any is used (zeros past the tensor).
template <int W>
__device__ __forceinline__ void load_tile(const QuantizeLaunch& q, std::int64_t r0, std::int64_t r1,
                                          std::int64_t c0, uint4 (&v)[8]) {
  using TL = Tile<W>;
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const auto* x = static_cast<const std::uint16_t*>(q.x);
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const std::int64_t r = r0 + rg + 16 * (s % TL::kRows), c = c0 + 128 * (s / TL::kRows) + 8 * cg;
    v[s] = r < r1 && c < q.cols ? load16(x + r * q.cols + c) : make_uint4(0, 0, 0, 0);
  }
}

constexpr int kTileBytes = 8 * kThreads * 16;  // one stage: eight chunks a thread (32 KiB)

// Whether the column-block tiles (launch_column_blocks_bf16) of W stream through shared memory:
// W = 32 (four column groups a thread) as persistent CTAs whose next tile is copied by cp.async
// while this one is cast (two CTAs an SM); W = 128 as one tile a CTA step loaded straight into
// registers (three CTAs an SM). Each the faster of the two on the H200 (docs/benchmarks.md "GPU
// data path"). quantize_dual takes dual_tile_kernel (1x128) and dual_quad32_kernel (MX) below.
template <int W>
constexpr bool kStaged = W == 32;
// dual_tile_kernel (quantize_dual, 1x128 + 128x1) casts every kind's tiles by cast_tile_lean at
// three CTAs an SM (80 registers), the fastest measured on the H200 (docs/benchmarks.md "Dual pass
// 3", "Dual pass 4"; deepgemm's special tiles are cast again with the fix, see fix_tile).
constexpr int kDualMinBlocks = 3;
// Warps a CTA and CTAs an SM of dual_quad32_kernel (quantize_dual, 1x32 + 32x1): four warps, five
// CTAs (96 registers), the fastest measured on the H200 (docs/benchmarks.md "Dual pass 2").
constexpr int kQuadWarps = 4, kQuadMinBlocks = 5;

// --- 1x128 + 128x1 tiles (docs/benchmarks.md "Dual pass 3", "Dual pass 4") -------------------
// One NaN test a thread serves both orientations (its column pass sees each of its elements). The
// column maxima go to shared memory first, so the column scales (threads 0..127) and the whole row
// half (row maxima, scales, codes) run between the two barriers, where the row work hides the
// scales' latency. The casts carry no overflow code: deepgemm's non-saturating fix runs only on a
// tile with a NaN or Inf in it (fix_tile), the only tiles whose blocks can pass 464.

// The thread's eight row blocks (rows r0 + rg + 16 s, columns from c0) from its chunk maxima m:
// reduced over the 16 lanes of the row; lane p < 8 of a half-warp computes and (kStore) stores slot
// p's scale, every lane takes its eight factors by shuffles.
template <ScaleKind K, bool kStore>
__device__ __forceinline__ void row_block_factors(const QuantizeLaunch& q, std::int64_t r0,
                                                  std::int64_t c0, std::uint32_t (&m)[8],
                                                  float (&rf)[8]) {
  const int lane = int(threadIdx.x & 31), cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
#pragma unroll
  for (int s = 0; s < 8; s += 2) {  // two slots a shuffle: 16-bit maxima, packed
    std::uint32_t p = m[s] | (m[s + 1] << 16);
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) p = max_u16x2(p, __shfl_xor_sync(0xFFFFFFFFu, p, off));
    m[s] = p & 0xFFFFu, m[s + 1] = p >> 16;
  }
  const int s = cg % 8;
  const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(pick8(m, s) << 16));
  const std::int64_t r = r0 + rg + 16 * s, c = c0 + 8 * cg;
  if (kStore && cg < 8 && r < q.rows && c < q.cols) store_scale(q.scales, r, c / 128, d);
#pragma unroll
  for (int k = 0; k < 8; ++k) rf[k] = __shfl_sync(0xFFFFFFFFu, d.factor, (lane & 16) + k);
}

// Factors of the thread's eight row blocks (row_block_factors) from maxima with NaN patterns as 0
// when nan; kStore: the scales stored too.
template <ScaleKind K, bool kStore = true>
__device__ __forceinline__ void lean_row_factors(const QuantizeLaunch& q, std::int64_t r0,
                                                 std::int64_t c0, const uint4 (&v)[8], bool nan,
                                                 float (&rf)[8]) {
  std::uint32_t m[8];
#pragma unroll
  for (int s = 0; s < 8; ++s)
    m[s] = fold16(nan ? chunk_max16x2(v[s], Abs16x2NoNan{}) : chunk_max16x2(v[s], Abs16x2{}));
  row_block_factors<K, kStore>(q, r0, c0, m, rf);
}

// Codes of chunks v[i] into codes (rows r0 + rg + 16 i, columns c0 + 8 cg ..), row i scaled by
// rf[i] (kRows), or column c0 + 8 cg + e by rf[e]; kFix: deepgemm's non-saturating fix on every
// element (it changes only |y| > 464), else none. The store addresses advance a row step at a
// time behind an asm barrier (not all held from the loads on: 80 registers).
template <bool kRows, bool kFix>
__device__ __forceinline__ void cast_codes(const QuantizeLaunch& q, std::uint8_t* codes,
                                           std::int64_t r0, std::int64_t r1, std::int64_t c0,
                                           const uint4 (&v)[8], const float (&rf)[8]) {
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  std::uint8_t* p = codes + (r0 + rg) * q.cols + c0 + 8 * cg;
  const std::int64_t step = 16 * q.cols;
  const bool live = c0 + 8 * cg < q.cols;
  asm volatile("" : "+l"(p) : "f"(rf[0]));
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    if (live && r0 + rg + 16 * i < r1) {
      if constexpr (kRows) {
        std::uint32_t f[8];
        unpack_bf16(v[i], f);
        *reinterpret_cast<uint2*>(p) = cast8(q.recipe, DevScale{0.0f, rf[i], false, 0, kFix}, f);
      } else {
        *reinterpret_cast<uint2*>(p) = cast8_cols(q.recipe, rf, kFix, v[i]);
      }
    }
    p += step;
    asm volatile("" : "+l"(p));
  }
}

// deepgemm's special tile (block row br, column tile ct: a NaN or Inf in it) after cast_tile_lean
// wrote it without the fix: both orientations' codes cast again with the fix on every element. A
// block without NaN or Inf cannot pass 464 (its amax times its factor is 448 to a few ulps), so
// only these tiles can differ. Everything is derived again (the tile from global memory, the NaN
// test, the row factors; the column factors from shared memory), so the usual path keeps nothing
// live for this one.
template <ScaleKind K>
__device__ __forceinline__ void fix_tile(const DualLaunch& dl, int br, int ct,
                                         const float* colfac) {
  const QuantizeLaunch& q = dl.col;
  const int cg = int(threadIdx.x % 16);
  const std::int64_t r0 = std::int64_t(br) * 128, c0 = std::int64_t(ct) * 128;
  const std::int64_t r1 = r0 + 128 < q.rows ? r0 + 128 : q.rows;
  uint4 v[8];
  load_tile<128>(q, r0, r1, c0, v);
  std::uint32_t cm[1][4];
  const bool nan = q.recipe.ignore_nan && has_nan16x2(column_pass<128>(v, Abs16x2{}, cm));
  float f[8];
  lean_row_factors<K, false>(dl.row, r0, c0, v, nan, f);
  cast_codes<true, true>(q, dl.row.codes, r0, r1, c0, v, f);
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = colfac[8 * cg + e];
  cast_codes<false, true>(q, q.codes, r0, r1, c0, v, f);
}

// One tile of quantize_dual in registers v (block row br, rows [r0, r1) of at most 128, columns
// from c0) reduced and cast, its 1x128 row blocks (dl.row) and 128x1 column blocks
// (dl.col); the shared arrays are the step's own (parity). deepgemm: whether the tile is special
// (a NaN or Inf pattern in it; every tile for e5m2, whose blocks pass 464) comes with the first
// barrier (__syncthreads_or), and a special tile is cast again by fix_tile.
template <ScaleKind K, bool kE4m3>
__device__ __forceinline__ void cast_tile_lean(const DualLaunch& dl, std::int64_t br,
                                               std::int64_t r0, std::int64_t r1, std::int64_t c0,
                                               const uint4 (&v)[8], std::uint32_t (*colmax)[64],
                                               float* colfac) {
  const QuantizeLaunch& q = dl.col;
  const int lane = int(threadIdx.x & 31), cg = int(threadIdx.x % 16);
  std::uint32_t cm[1][4];
  const std::uint32_t any = column_pass<128>(v, Abs16x2{}, cm);
  const bool nan = q.recipe.ignore_nan && has_nan16x2(any);
  if (nan) column_pass<128>(v, Abs16x2NoNan{}, cm);
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const std::uint32_t c = max_u16x2(cm[0][w], __shfl_xor_sync(0xFFFFFFFFu, cm[0][w], 16));
    if (lane < 16) colmax[threadIdx.x / 32][cg * 4 + w] = c;
  }
  bool special = false;
  if constexpr (K == ScaleKind::deepgemm)
    special = __syncthreads_or(!kE4m3 || (any & 0xFFFFu) >= 0x7F80u || (any >> 16) >= 0x7F80u);
  else
    __syncthreads();
  if (threadIdx.x < 128) {  // column col's scale from the eight warps' maxima
    const int col = int(threadIdx.x);
    std::uint32_t mm = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) mm = max_u16x2(mm, colmax[w][col / 2]);
    mm = col % 2 ? mm >> 16 : mm & 0xFFFFu;
    const DevScale d = block_scale_of<K>(q.recipe, std::int32_t(mm << 16));
    colfac[col] = d.factor;
    if (c0 + col < q.cols) store_scale(q.scales, br, c0 + col, d);
  }
  float f[8];
  lean_row_factors<K>(dl.row, r0, c0, v, nan, f);
  cast_codes<true, false>(q, dl.row.codes, r0, r1, c0, v, f);
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = colfac[8 * cg + e];
  cast_codes<false, false>(q, q.codes, r0, r1, c0, v, f);
  if (K == ScaleKind::deepgemm && special) fix_tile<K>(dl, int(br), int(c0 / 128), colfac);
}

// CTAs over tiles: tile it = block row br (rows [r0, r1), at most W) x column tile ct, its
// chunks into registers (kStaged: from the shared-memory stage the previous step filled), reduced
// and cast from registers. kRowBlocks: also the 1xW row blocks (quantize_dual; dl.row), else
// column blocks only (dl.col, which may carry per-group row starts).
template <int W, ScaleKind K, bool kRowBlocks>
__global__ void __launch_bounds__(kThreads, kStaged<W> ? 2 : 3) column_tile_kernel(DualLaunch dl) {
  static_assert(kThreads == 256, "16 chunks x 16 row lanes");
  using TL = Tile<W>;
  extern __shared__ uint4 stages[];  // 2 x 8 x kThreads chunks
  __shared__ std::uint32_t colmax[2][kThreads / 32][TL::kCols / 2];
  __shared__ float colfac[2][TL::kCols];
  __shared__ std::uint8_t colovf[2][TL::kCols];
  const QuantizeLaunch& q = dl.col;
  const int cg = int(threadIdx.x % 16), rg = int(threadIdx.x / 16);
  const std::int64_t nct = (q.cols + TL::kCols - 1) / TL::kCols, n = q.block_rows * nct;
  if constexpr (kStaged<W>) {
    if (blockIdx.x < n) copy_tile<W>(q, blockIdx.x, nct, stages);
    commit_copies();
  }
  int parity = 0;
  for (std::int64_t it = blockIdx.x; it < n; it += gridDim.x, parity ^= 1) {
    const std::int64_t br = it / nct, c0 = (it % nct) * TL::kCols;
    const std::int64_t r0 = row_start(q, br), r1 = row_end(q, br);
    uint4 v[8];
    if constexpr (kStaged<W>) {
      if (it + gridDim.x < n)
        copy_tile<W>(q, it + gridDim.x, nct, stages + (parity ^ 1) * 8 * kThreads);
      commit_copies();  // an empty group keeps the count uniform
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // tile it has landed
#pragma unroll
      for (int s = 0; s < 8; ++s) v[s] = stages[parity * 8 * kThreads + s * kThreads + threadIdx.x];
    } else {
      load_tile<W>(q, r0, r1, c0, v);
    }
    if constexpr (kRowBlocks) {
      RowScale rs[8];
      row_scales<W, K>(dl.row, r0, c0, v, rs);
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        const std::int64_t r = r0 + rg + 16 * (s % TL::kRows);
        const std::int64_t c = c0 + 128 * (s / TL::kRows) + 8 * cg;
        if (r >= r1 || c >= q.cols) continue;
        std::uint32_t f[8];
        unpack_bf16(v[s], f);
        const DevScale d{0.0f, rs[s].factor, false, 0, rs[s].may_overflow};
        *reinterpret_cast<uint2*>(dl.row.codes + r * q.cols + c) = cast8(q.recipe, d, f);
      }
    }
    column_maxima<W>(v, q.recipe.ignore_nan, colmax[parity]);
    __syncthreads();
    column_scales<W, K>(q, br, c0, colmax[parity], colfac[parity], colovf[parity]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TL::T; ++j) {
      const int cl = 128 * j + 8 * cg;
      float f[8];
      bool ovf = false;
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = colfac[parity][cl + e], ovf |= colovf[parity][cl + e] != 0;
#pragma unroll
      for (int i = 0; i < TL::kRows; ++i) {
        const std::int64_t r = r0 + rg + 16 * i, c = c0 + cl;
        if (r >= r1 || c >= q.cols) continue;
        *reinterpret_cast<uint2*>(q.codes + r * q.cols + c) =
            cast8_cols(q.recipe, f, ovf, v[j * TL::kRows + i]);
      }
    }
  }
}

// quantize_dual (no group starts): the CTA's tile is its grid position (blockIdx.x: column tile,
// blockIdx.y: block row; a grid smaller than the tile grid strides over both), so no division
// sits before the loads, which go straight into registers; kMinBlocks CTAs an SM. The element
// format is a constant (kE4m3: one cvt a pair, not both formats predicated), and a grid with a
// CTA a tile runs a copy of the body without loop state (fewer registers). Each tile is cast by
// cast_tile_lean.
template <int W, ScaleKind K, bool kE4m3, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) dual_tile_kernel(DualLaunch launch) {
  static_assert(W == 128, "1x128 + 128x1 tiles");
  using TL = Tile<W>;
  __shared__ std::uint32_t colmax[2][kThreads / 32][TL::kCols / 2];
  __shared__ __align__(16) float colfac[2][TL::kCols];
  DualLaunch dl = launch;
  dl.row.recipe.e4m3 = dl.col.recipe.e4m3 = kE4m3;
  const QuantizeLaunch& q = dl.col;
  const int nct = int((q.cols + TL::kCols - 1) / TL::kCols), nbr = int(q.block_rows);
  if (int(gridDim.y) >= nbr && int(gridDim.x) >= nct) {  // a tile a CTA: no loop state
    const std::int64_t r0 = std::int64_t(blockIdx.y) * W, c0 = std::int64_t(blockIdx.x) * TL::kCols;
    const std::int64_t r1 = r0 + W < q.rows ? r0 + W : q.rows;
    uint4 v[8];
    load_tile<W>(q, r0, r1, c0, v);
    cast_tile_lean<K, kE4m3>(dl, blockIdx.y, r0, r1, c0, v, colmax[0], colfac[0]);
    return;
  }
  int parity = 0;
  for (int br = int(blockIdx.y); br < nbr; br += int(gridDim.y))
    for (int ct = int(blockIdx.x); ct < nct; ct += int(gridDim.x), parity ^= 1) {
      const std::int64_t r0 = std::int64_t(br) * W, c0 = std::int64_t(ct) * TL::kCols;
      const std::int64_t r1 = r0 + W < q.rows ? r0 + W : q.rows;
      uint4 v[8];
      load_tile<W>(q, r0, r1, c0, v);
      cast_tile_lean<K, kE4m3>(dl, br, r0, r1, c0, v, colmax[parity], colfac[parity]);
    }
}

// --- MX warp tiles of quantize_dual (docs/benchmarks.md "Dual pass 2") ------------------------
// No shared memory for the amax: a column block's 32 rows lie in four lanes (in-thread over eight
// rows, then a reduce-scatter), a 1x32 row block's 32 columns in the four lanes of a quad (a
// reduce-scatter: each step halves the words a lane keeps and sends the other half), so each lane
// ends with two columns' and two rows' maxima and computes their scales.

// |x| of a word's two bf16 with NaN patterns as 0, as abs16x2_no_nan (gpu/quantize_bf16.cuh) by a
// packed compare (fewer live registers on the NaN path of dual_quad32).
struct Abs16x2NoNanV {
  __device__ std::uint32_t operator()(std::uint32_t w) const {
    const std::uint32_t a = w & 0x7FFF7FFFu;
    return a & ~__vcmpgtu2(a, 0x7F807F80u);
  }
};

// Packed 16-bit maxima of rows a (low half) and b (high half) from each's two |bf16| candidates.
__device__ __forceinline__ std::uint32_t pair_rows(std::uint32_t a, std::uint32_t b) {
  return max_u16x2(__byte_perm(a, b, 0x5410), __byte_perm(a, b, 0x7632));
}

// One reduce-scatter step over lanes xor O: of N words the lane keeps half (the upper half when
// lane bit O is set) and takes the partner's maxima of it.
template <int N, int O>
__device__ __forceinline__ void scatter_step(std::uint32_t (&p)[16]) {
  const bool up = (threadIdx.x & O) != 0;
#pragma unroll
  for (int k = 0; k < N / 2; ++k) {
    const std::uint32_t send = up ? p[k] : p[k + N / 2], keep = up ? p[k + N / 2] : p[k];
    p[k] = max_u16x2(keep, __shfl_xor_sync(0xFFFFFFFFu, send, O));
  }
}

// Two elements (packed bf16 word u) cast with factors flo / fhi: the two codes, low byte = low
// element; deepgemm's non-saturating fix when ovf.
template <ScaleKind K>
__device__ __forceinline__ std::uint32_t cast2(const RecipeParams& p, bool e4m3, std::uint32_t u,
                                               float flo, float fhi, bool ovf) {
  const float lo = __fmul_rn(__uint_as_float(u << 16), flo);
  const float hi = __fmul_rn(__uint_as_float(u & 0xFFFF0000u), fhi);
  std::uint32_t c = cvt2(e4m3, hi, lo);
  if constexpr (K == ScaleKind::deepgemm)
    if (p.nonsat && ovf) c = nonsat_fix(c & 0xFF, lo) | (nonsat_fix(c >> 8, hi) << 8);
  return c;
}

// MX dual (1x32 + 32x1), quad layout: the warp's tile is rows [r0, r0 + 32) x 64 columns from c0;
// lane = chunk q = lane % 8 (columns c0 + 8 q ..) in rows r0 + lane / 8 + 4 i, i < 8 (a warp load
// is four 128-byte row segments). Columns: in-thread over eight rows, then a reduce-scatter over
// the four lanes of a chunk (xor 16, 8): two columns' maxima a lane. Rows: a reduce-scatter over
// the four lanes of a 1x32 block (xor 2, 1): two rows' maxima a lane.

// The lane's chunks of the warp tile (rows from br * 32, nr of them; columns from c0) into v.
__device__ __forceinline__ void quad32_load(const QuantizeLaunch& q, std::int64_t br,
                                            std::int64_t c0, int nr, uint4 (&v)[8]) {
  const int lane = int(threadIdx.x & 31), rq = lane >> 3;
  // Addresses advance four rows at a time (asm: each computed when used, none held from the start).
  const auto* src =
      static_cast<const std::uint16_t*>(q.x) + (br * 32 + rq) * q.cols + c0 + 8 * (lane & 7);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    v[i] = rq + 4 * i < nr ? load16(src) : make_uint4(0, 0, 0, 0);
    src += 4 * q.cols;
    asm volatile("" : "+l"(src));
  }
}

// The warp tile in v reduced and cast: codes and scales of both orientations.
template <ScaleKind K, bool kE4m3, bool kPacked>
__device__ __forceinline__ void quad32_cast(const DualLaunch& dl, std::int64_t br, std::int64_t c0,
                                            int nr, const uint4 (&v)[8], std::uint16_t* packed) {
  const QuantizeLaunch& q = dl.col;
  const int lane = int(threadIdx.x & 31), cq = lane & 7, rq = lane >> 3;
  const std::int64_t r0 = br * 32, c = c0 + 8 * cq;
  const std::int64_t step = 4 * q.cols;  // elements from row i to row i + 4
  // Column maxima (in-thread over the eight rows) and the rows' packed partial maxima (rows i and
  // i + 4 a word); again with NaN patterns as 0 when the runtime ignores NaN and a lane of the warp
  // saw one (a warp-uniform branch; the other lanes' maxima are the same either way).
  std::uint32_t p[16];
  const auto pass = [&](auto abs) {
    uint4 m = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 a = {abs(v[i].x), abs(v[i].y), abs(v[i].z), abs(v[i].w)};
      const uint4 b = {abs(v[i + 4].x), abs(v[i + 4].y), abs(v[i + 4].z), abs(v[i + 4].w)};
      m.x = max_u16x2(m.x, max_u16x2(a.x, b.x)), m.y = max_u16x2(m.y, max_u16x2(a.y, b.y));
      m.z = max_u16x2(m.z, max_u16x2(a.z, b.z)), m.w = max_u16x2(m.w, max_u16x2(a.w, b.w));
      p[i] = pair_rows(max_u16x2(max_u16x2(a.x, a.y), max_u16x2(a.z, a.w)),
                       max_u16x2(max_u16x2(b.x, b.y), max_u16x2(b.z, b.w)));
    }
    return m;
  };
  uint4 cm = pass(Abs16x2{});
  if (q.recipe.ignore_nan &&
      __any_sync(0xFFFFFFFFu, has_nan16x2(max_u16x2(max_u16x2(cm.x, cm.y), max_u16x2(cm.z, cm.w)))))
    cm = pass(Abs16x2NoNanV{});
  // Columns: words x, y, z, w (column pairs 0-1 .. 6-7 of the chunk) scattered over xor 16, 8.
  std::uint32_t s[16] = {cm.x, cm.y, cm.z, cm.w};
  scatter_step<4, 16>(s);
  scatter_step<2, 8>(s);  // s[0]: columns 2 j, 2 j + 1 of the chunk, j = lane bits 3 (1), 4 (2)
  const int j = rq;
  const DevScale e0 = block_scale_of<K>(q.recipe, std::int32_t(s[0] << 16));
  const DevScale e1 = block_scale_of<K>(q.recipe, std::int32_t(s[0] & 0xFFFF0000u));
  // Rows: words i (rows i, i + 4 of the lane's eight) scattered over xor 2, 1.
  scatter_step<4, 2>(p);
  scatter_step<2, 1>(p);  // p[0]: own rows k = lane & 3 (low half) and k + 4 (high half)
  const int k = lane & 3;
  const DevScale d0 = block_scale_of<K>(q.recipe, std::int32_t(p[0] << 16));
  const DevScale d1 = block_scale_of<K>(q.recipe, std::int32_t(p[0] & 0xFFFF0000u));
  // Column factors of the chunk's eight columns: from lane (2 j's owner) = rq j of this chunk.
  float cf[8];
  bool covf = false;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int owner = cq | ((e / 2) << 3);
    cf[e] = __shfl_sync(0xFFFFFFFFu, e % 2 ? e1.factor : e0.factor, owner);
    if constexpr (K == ScaleKind::deepgemm)
      covf |= __shfl_sync(0xFFFFFFFFu, int(e % 2 ? e1.may_overflow : e0.may_overflow), owner) != 0;
  }
  std::uint8_t* rc = dl.row.codes + (r0 + rq) * q.cols + c;
  std::uint8_t* cc = q.codes + (r0 + rq) * q.cols + c;
  std::uint32_t last = 0;  // a code word, so the scales' index arithmetic waits for the casts
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int owner = (lane & ~3) | (i % 4);
    const float f = __shfl_sync(0xFFFFFFFFu, i < 4 ? d0.factor : d1.factor, owner);
    bool rovf = false;
    if constexpr (K == ScaleKind::deepgemm)
      rovf = __shfl_sync(0xFFFFFFFFu, int(i < 4 ? d0.may_overflow : d1.may_overflow), owner) != 0;
    if (rq + 4 * i < nr) {
      const std::uint32_t w4[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
      std::uint32_t rw[2] = {0, 0}, cw[2] = {0, 0};
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        rw[t / 2] |= cast2<K>(q.recipe, kE4m3, w4[t], f, f, rovf) << (16 * (t % 2));
        cw[t / 2] |= cast2<K>(q.recipe, kE4m3, w4[t], cf[2 * t], cf[2 * t + 1], covf)
                     << (16 * (t % 2));
      }
      *reinterpret_cast<uint2*>(rc) = make_uint2(rw[0], rw[1]);
      *reinterpret_cast<uint2*>(cc) = make_uint2(cw[0], cw[1]);
      last = cw[1];
    }
    rc += step, cc += step;
    asm volatile("" : "+l"(rc), "+l"(cc));
  }
  // The scales last: the compiler would otherwise compute their layouts' indices before the loads
  // and hold them through the tile (registers that cost occupancy).
  std::int64_t rb = br, cb = c0;
  asm volatile("" : "+l"(rb), "+l"(cb) : "r"(last));
  const std::int64_t cs = cb + 8 * cq + 2 * j;
  if constexpr (kPacked) {
    // Row-major E8M0 scales of both orientations (layout 10): the column pair as one 16-bit
    // store; the rows' two block bytes (this lane's and lane ^ 4's) into packed[4 row] for the CTA
    // to store eight bytes a row (fewer L2 requests than a byte a block).
    auto* col = static_cast<std::uint8_t*>(q.scales.data) + rb * q.scales.cols + cs;
    *reinterpret_cast<std::uint16_t*>(col) = std::uint16_t(e0.e8m0 | (e1.e8m0 << 8));
    const std::uint32_t mine = d0.e8m0 | (std::uint32_t(d1.e8m0) << 8);
    const std::uint32_t other = __shfl_xor_sync(0xFFFFFFFFu, mine, 4);
    if ((cq & 4) == 0) {
      packed[4 * (rq + 4 * k)] = std::uint16_t((mine & 0xFF) | ((other & 0xFF) << 8));
      packed[4 * (rq + 4 * (k + 4))] = std::uint16_t((mine >> 8) | (other & 0xFF00));
    }
  } else {
    store_scale(q.scales, rb, cs, e0);
    store_scale(q.scales, rb, cs + 1, e1);
    const std::int64_t rs = rb * 32 + rq, bc = (cb >> 5) + (cq >> 2);
    if (rq + 4 * k < nr) store_scale(dl.row.scales, rs + 4 * k, bc, d0);
    if (rq + 4 * (k + 4) < nr) store_scale(dl.row.scales, rs + 4 * (k + 4), bc, d1);
  }
}

// The warp tile of block row br, columns from c0: full tiles (32 rows) by their own copy of the
// code, with no row predicates. kPacked: the CTA's row scales of a row (four warps: eight bytes)
// from packed[row][warp] (shared memory) in one store, after a barrier.
template <ScaleKind K, bool kE4m3, bool kPacked>
__device__ __forceinline__ void dual_quad32_at(const DualLaunch& dl, std::int64_t br,
                                               std::int64_t c0, std::uint16_t (*packed)[4]) {
  const std::int64_t left = dl.col.rows - br * 32;
  const int nr = left >= 32 ? 32 : int(left), warp = int(threadIdx.x / 32);
  uint4 v[8];
  if (nr == 32) {
    quad32_load(dl.col, br, c0, 32, v);
    quad32_cast<K, kE4m3, kPacked>(dl, br, c0, 32, v, &packed[0][warp]);
  } else {
    quad32_load(dl.col, br, c0, nr, v);
    quad32_cast<K, kE4m3, kPacked>(dl, br, c0, nr, v, &packed[0][warp]);
  }
  if constexpr (kPacked) {
    __syncthreads();
    const int row = int(threadIdx.x);  // < 128: one row a thread of the first 32
    if (row < nr) {
      const ScaleSink& s = dl.row.scales;
      auto* dst =
          static_cast<std::uint8_t*>(s.data) + (br * 32 + row) * s.cols + c0 / 32 - 2 * warp;
      *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(packed[row]);
    }
  }
}

// CTAs of WX warps side by side (WX x 64 columns) over one 32-row block; when the grid is smaller
// than the tile grid, warps stride over both axes. kPacked (WX = 4, the warp tiles a block row a
// multiple of 4, so a CTA's warps take the same steps): row-major E8M0 scales stored packed.
template <ScaleKind K, bool kE4m3, bool kPacked, int WX, int kMinBlocks>
__global__ void __launch_bounds__(32 * WX, kMinBlocks) dual_quad32_kernel(DualLaunch dl) {
  static_assert(!kPacked || WX == 4, "packed row scales: four warps, eight bytes a row");
  __shared__ std::uint16_t packed[2][32][4];  // [parity][row][warp]: both block bytes of a warp
  const int nct = int(dl.col.cols / 64), nbr = int(dl.col.block_rows), warp = int(threadIdx.x / 32);
  if (int(gridDim.y) >= nbr && int(gridDim.x) * WX >= nct) {  // a tile a warp: no loop state
    const int ct = int(blockIdx.x) * WX + warp;
    if (ct < nct)
      dual_quad32_at<K, kE4m3, kPacked>(dl, blockIdx.y, std::int64_t(ct) * 64, packed[0]);
    return;
  }
  int parity = 0;
  for (int br = int(blockIdx.y); br < nbr; br += int(gridDim.y))
    for (int ct = int(blockIdx.x) * WX + warp; ct < nct; ct += int(gridDim.x) * WX, parity ^= 1)
      dual_quad32_at<K, kE4m3, kPacked>(dl, br, std::int64_t(ct) * 64, packed[parity]);
}

// The grid of dual_tile_kernel: every tile its own CTA, or at most max_blocks CTAs.
inline dim3 dual_grid(std::int64_t nct, std::int64_t block_rows, int max_blocks) {
  const std::int64_t cap = max_blocks > 0 ? max_blocks : std::int64_t(1) << 40;
  const std::int64_t gx = nct < cap ? nct : cap;
  std::int64_t gy = cap / gx;
  gy = gy < block_rows ? gy : block_rows;
  gy = gy < 65535 ? gy : 65535;
  return dim3(unsigned(gx), unsigned(gy > 0 ? gy : 1));
}

template <int W, ScaleKind K, bool kRowBlocks>
void launch_column_tiles(const DualLaunch& dl) {
  const QuantizeLaunch& q = dl.col;
  const std::int64_t tiles = q.block_rows * ((q.cols + Tile<W>::kCols - 1) / Tile<W>::kCols);
  const auto kernel = column_tile_kernel<W, K, kRowBlocks>;
  if constexpr (kStaged<W>) {
    constexpr int smem = 2 * kTileBytes;
    FP8REF_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<resident_grid(kernel, smem, tiles, q.max_blocks), kThreads, smem, q.stream>>>(dl);
  } else {
    kernel<<<grid_of(tiles, q.max_blocks), kThreads, 0, q.stream>>>(dl);
  }
}

template <ScaleKind K>
void launch_dual_tiles(const DualLaunch& dl) {
  const QuantizeLaunch& q = dl.col;
  const std::int64_t nct = (q.cols + Tile<128>::kCols - 1) / Tile<128>::kCols;
  if (q.block_rows > INT32_MAX || nct > INT32_MAX) {  // past dual_tile_kernel's int indices
    launch_column_tiles<128, K, true>(dl);
    return;
  }
  const auto kernel = q.recipe.e4m3 ? dual_tile_kernel<128, K, true, kDualMinBlocks>
                                    : dual_tile_kernel<128, K, false, kDualMinBlocks>;
  kernel<<<dual_grid(nct, q.block_rows, q.max_blocks), kThreads, 0, q.stream>>>(dl);
}

template <ScaleKind K>
void launch_dual_quads(const DualLaunch& dl) {
  const QuantizeLaunch& q = dl.col;
  const std::int64_t nct = q.cols / 64;               // warp tiles a block row (cols % 128 == 0)
  if (q.block_rows > INT32_MAX || nct > INT32_MAX) {  // past dual_quad32_kernel's int indices
    launch_column_tiles<32, K, true>(dl);
    return;
  }
  const dim3 grid = dual_grid((nct + kQuadWarps - 1) / kQuadWarps, q.block_rows, q.max_blocks);
  // Row-major E8M0 scales of both orientations: packed stores (dual_quad32_kernel).
  const auto align = reinterpret_cast<std::uintptr_t>(dl.row.scales.data) |
                     reinterpret_cast<std::uintptr_t>(q.scales.data);
  const bool packed = dl.row.scales.layout == 10 && q.scales.layout == 10 &&
                      nct % kQuadWarps == 0 && align % 8 == 0;
  const auto kernel = [](auto e4m3, auto pack) {
    return dual_quad32_kernel<K, decltype(e4m3)::value, decltype(pack)::value, kQuadWarps,
                              kQuadMinBlocks>;
  };
  using T = std::true_type;
  using F = std::false_type;
  const auto k = q.recipe.e4m3 ? (packed ? kernel(T{}, T{}) : kernel(T{}, F{}))
                               : (packed ? kernel(F{}, T{}) : kernel(F{}, F{}));
  k<<<grid, 32 * kQuadWarps, 0, q.stream>>>(dl);
}

}  // namespace

void launch_dual_bf16(const DualLaunch& dl) {
  with_scale_kind(dl.row.recipe.kind, [&](auto kind) {
    if (dl.row.block_w == 32)
      launch_dual_quads<decltype(kind)::value>(dl);
    else
      launch_dual_tiles<decltype(kind)::value>(dl);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
}

bool launch_column_blocks_bf16(const QuantizeLaunch& q) {
  if (!(q.bf16 && q.vec && q.cols % 8 == 0) || q.block_w != 1 || q.block_h > 128) return false;
  const DualLaunch dl{q, q};
  with_scale_kind(q.recipe.kind, [&](auto kind) {
    if (q.block_h <= 32)
      launch_column_tiles<32, decltype(kind)::value, false>(dl);
    else
      launch_column_tiles<128, decltype(kind)::value, false>(dl);
  });
  FP8REF_CUDA_CHECK(cudaGetLastError());
  return true;
}

}  // namespace fp8ref::gpu::detail
