// Quantize / dequantize under a recipe and block geometry (reference/quantize.h,
// docs/design.md §6).
// Each block is reduced and cast on its own and writes only its own outputs, so the OpenMP
// schedule cannot change a bit. The hot loops are templates over the source type and the cast
// policy, chosen once per call, computing exactly block_scale / quantize_element of
// numerics/scale_recipe.h (NaN signs included: scale_element).
#include "reference/quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "numerics/codec.h"
#include "numerics/source.h"
#include "reference/encode_f32_rne.h"

namespace fp8ref::ref {
namespace {

constexpr std::int32_t kF32InfBits = 0x7F800000;

// The row loops are also compiled for AVX2 and picked at load time (GCC function multiversioning);
// both clones compute the same IEEE operations, so results do not depend on the machine.
// (-DFP8REF_NO_TARGET_CLONES builds the default clone alone, e.g. to test it on an AVX2 machine.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(FP8REF_NO_TARGET_CLONES)
#define FP8REF_ROW_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define FP8REF_ROW_LOOP
#endif

// Source element -> f32 bit pattern, as the library loads it: f32 as is, bf16 as the top half,
// f16 widened exactly (NaN quieted, sign kept; a table of the codec's own widening).
struct F32Bits {
  using T = std::uint32_t;
  static std::uint32_t bits(T v) { return v; }
};
struct Bf16Bits {
  using T = std::uint16_t;
  static std::uint32_t bits(T v) { return std::uint32_t(v) << 16; }
};
const std::array<std::uint32_t, 65536>& f16_table() {
  static const auto table = [] {
    std::array<std::uint32_t, 65536> t{};
    for (std::uint32_t h = 0; h < 65536; ++h)
      t[h] = std::bit_cast<std::uint32_t>(
          float(std::bit_cast<double>(f16_to_f64_bits(std::uint16_t(h)))));
    return t;
  }();
  return table;
}
struct F16Bits {
  using T = std::uint16_t;
  static std::uint32_t bits(T v) { return f16_table()[v]; }
};

struct Rect {
  std::int64_t r0, r1, c0, c1;
};

// Row kernels over `n` elements of one row starting at element `off` (stride in elements).
// Amax as f32 bits: |x| orders like its bit pattern (below 2^31, so a signed integer max, which
// vectorizes), NaN patterns above +Inf: propagate -> any NaN shows as m > Inf and becomes the
// canonical quiet NaN (amax_fold); ignore -> NaN elements count as +0 (fmaxf from +0).
template <class S, bool kIgnoreNan>
inline std::int32_t abs_bits(typename S::T v) {
  std::int32_t a = std::int32_t(S::bits(v) & 0x7FFFFFFFu);
  if constexpr (kIgnoreNan) a = a > kF32InfBits ? 0 : a;
  return a;
}

// One row segment of `nb` blocks `bw` wide (the last may be shorter, `n` elements in all):
// m[t] = max(m[t], |x| over block t).
template <class S, bool kIgnoreNan>
FP8REF_ROW_LOOP void amax_blocks(const void* data, std::int64_t off, std::int64_t n,
                                 std::int64_t stride, std::int64_t bw, std::int32_t* m) {
  const auto* row = static_cast<const typename S::T*>(data) + off;
  for (std::int64_t c0 = 0, t = 0; c0 < n; c0 += bw, ++t) {
    const std::int64_t c1 = std::min(n, c0 + bw);
    std::int32_t acc = m[t];
    if (stride == 1 && c1 - c0 == 32) {  // whole 32- and 128-wide blocks: fixed trip counts
      for (std::int64_t j = 0; j < 32; ++j)
        acc = std::max(acc, abs_bits<S, kIgnoreNan>(row[c0 + j]));
    } else if (stride == 1 && c1 - c0 == 128) {
      for (std::int64_t j = 0; j < 128; ++j)
        acc = std::max(acc, abs_bits<S, kIgnoreNan>(row[c0 + j]));
    } else if (stride == 1) {
      for (std::int64_t j = c0; j < c1; ++j) acc = std::max(acc, abs_bits<S, kIgnoreNan>(row[j]));
    } else {
      for (std::int64_t j = c0; j < c1; ++j)
        acc = std::max(acc, abs_bits<S, kIgnoreNan>(row[j * stride]));
    }
    m[t] = acc;
  }
}

// Column blocks (one column wide): m[j] = max(m[j], |x_j|).
template <class S, bool kIgnoreNan>
FP8REF_ROW_LOOP void amax_columns(const void* data, std::int64_t off, std::int64_t n,
                                  std::int64_t stride, std::int32_t* m) {
  const auto* row = static_cast<const typename S::T*>(data) + off;
  if (stride == 1) {
    for (std::int64_t j = 0; j < n; ++j) m[j] = std::max(m[j], abs_bits<S, kIgnoreNan>(row[j]));
  } else {
    for (std::int64_t j = 0; j < n; ++j)
      m[j] = std::max(m[j], abs_bits<S, kIgnoreNan>(row[j * stride]));
  }
}

// code = encode(scale_element(x, factor)), as quantize_element. The sign of a NaN y (read by the
// signed NaN encoding of torch_cpu only) is the factor's when it is NaN, else x's when x is NaN,
// else the negative default NaN: `nan_sign` is the factor's sign or 0xFFFFFFFF (not NaN).
// kFixNan = false skips that where no y can be NaN (torch runtimes: a finite block amax means no
// NaN or Inf element, and a finite non-zero factor then gives no NaN).
inline std::uint32_t nan_sign_of(float factor) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(factor);
  return (f & 0x7FFFFFFFu) > 0x7F800000u ? f & 0x80000000u : 0xFFFFFFFFu;
}

template <class S, class T, bool kSat, bool kNanPositive, bool kDivide,
          bool kFixNan = !kNanPositive>
inline std::uint8_t cast(typename S::T v, float factor, std::uint32_t nan_sign) {
  const std::uint32_t xb = S::bits(v);
  const float xv = std::bit_cast<float>(xb);
  const float y = kDivide ? xv / factor : xv * factor;
  std::uint32_t yb = std::bit_cast<std::uint32_t>(y);
  if constexpr (kFixNan) {
    const std::uint32_t x_sign =
        std::int32_t(xb & 0x7FFFFFFFu) > kF32InfBits ? xb & 0x80000000u : 0x80000000u;
    const std::uint32_t sign = nan_sign != 0xFFFFFFFFu ? nan_sign : x_sign;
    yb = y != y ? 0x7FC00000u | sign : yb;
  }
  return encode_f32_rne<T, kSat, kNanPositive>(yb);
}

// One block's span of a contiguous row; W > 0 fixes the length at compile time (whole 32- and
// 128-wide blocks: straight-line vector code without a remainder loop).
template <int W, class S, class T, bool kSat, bool kNanPositive, bool kDivide, bool kFixNan>
inline void encode_span(const typename S::T* row, std::int64_t n, float f, std::uint32_t ns,
                        std::uint8_t* out) {
  const std::int64_t len = W > 0 ? W : n;
  for (std::int64_t j = 0; j < len; ++j)
    out[j] = cast<S, T, kSat, kNanPositive, kDivide, kFixNan>(row[j], f, ns);
}

template <class S, class T, bool kSat, bool kNanPositive, bool kDivide, bool kFixNan>
inline void encode_span_any(const typename S::T* row, std::int64_t n, float f, std::uint32_t ns,
                            std::uint8_t* out) {
  if (n == 128)
    encode_span<128, S, T, kSat, kNanPositive, kDivide, kFixNan>(row, n, f, ns, out);
  else if (n == 32)
    encode_span<32, S, T, kSat, kNanPositive, kDivide, kFixNan>(row, n, f, ns, out);
  else
    encode_span<0, S, T, kSat, kNanPositive, kDivide, kFixNan>(row, n, f, ns, out);
}

template <class S, class T, bool kSat, bool kNanPositive, bool kDivide>
FP8REF_ROW_LOOP void encode_blocks(const void* data, std::int64_t off, std::int64_t n,
                                   std::int64_t stride, std::int64_t bw, const float* factor,
                                   const std::uint8_t* may_nan, std::uint8_t* out) {
  const auto* row = static_cast<const typename S::T*>(data) + off;
  for (std::int64_t c0 = 0, t = 0; c0 < n; c0 += bw, ++t) {
    const std::int64_t c1 = std::min(n, c0 + bw);
    const float f = factor[t];
    const std::uint32_t ns = nan_sign_of(f);
    if (stride == 1) {
      if (kNanPositive || !may_nan[t])
        encode_span_any<S, T, kSat, kNanPositive, kDivide, false>(row + c0, c1 - c0, f, ns,
                                                                  out + c0);
      else
        encode_span_any<S, T, kSat, kNanPositive, kDivide, true>(row + c0, c1 - c0, f, ns,
                                                                 out + c0);
    } else {
      for (std::int64_t j = c0; j < c1; ++j)
        out[j] = cast<S, T, kSat, kNanPositive, kDivide>(row[j * stride], f, ns);
    }
  }
}

template <class S, class T, bool kSat, bool kNanPositive, bool kDivide>
FP8REF_ROW_LOOP void encode_columns(const void* data, std::int64_t off, std::int64_t n,
                                    std::int64_t stride, const float* factor, std::uint8_t* out) {
  const auto* row = static_cast<const typename S::T*>(data) + off;
  if (stride == 1) {
    for (std::int64_t j = 0; j < n; ++j)
      out[j] = cast<S, T, kSat, kNanPositive, kDivide>(row[j], factor[j], nan_sign_of(factor[j]));
  } else {
    for (std::int64_t j = 0; j < n; ++j)
      out[j] = cast<S, T, kSat, kNanPositive, kDivide>(row[j * stride], factor[j],
                                                       nan_sign_of(factor[j]));
  }
}

// The kernels of one quantize call, chosen once from the source type and the recipe's policies:
// row segments of blocks at least 2 wide, and of one-column blocks.
struct RowKernels {
  void (*amax)(const void*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int32_t*);
  void (*amax_cols)(const void*, std::int64_t, std::int64_t, std::int64_t, std::int32_t*);
  void (*encode)(const void*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, const float*,
                 const std::uint8_t*, std::uint8_t*);
  void (*encode_cols)(const void*, std::int64_t, std::int64_t, std::int64_t, const float*,
                      std::uint8_t*);
};

template <class S, class T, bool kSat, bool kNanPositive, bool kDivide>
RowKernels kernels(AmaxNan p) {
  const bool ignore = p == AmaxNan::ignore;
  return {ignore ? &amax_blocks<S, true> : &amax_blocks<S, false>,
          ignore ? &amax_columns<S, true> : &amax_columns<S, false>,
          &encode_blocks<S, T, kSat, kNanPositive, kDivide>,
          &encode_columns<S, T, kSat, kNanPositive, kDivide>};
}
template <class S, class T, bool kSat, bool kNanPositive>
RowKernels kernels(AmaxNan p, bool divide) {
  return divide ? kernels<S, T, kSat, kNanPositive, true>(p)
                : kernels<S, T, kSat, kNanPositive, false>(p);
}
template <class S, class T>
RowKernels kernels(AmaxNan p, const EncodeSpec& spec, bool divide) {
  if (spec.rounding != Rounding::rne || spec.inf != InfEncoding::saturate ||
      (spec.nan != NanEncoding::quiet_signed && spec.nan != NanEncoding::positive_all_ones))
    throw std::logic_error("quantize: element_spec outside the RNE cast kernels");
  const bool pos = spec.nan == NanEncoding::positive_all_ones;
  if (spec.overflow == Overflow::sat)
    return pos ? kernels<S, T, true, true>(p, divide) : kernels<S, T, true, false>(p, divide);
  return pos ? kernels<S, T, false, true>(p, divide) : kernels<S, T, false, false>(p, divide);
}
template <class S>
RowKernels kernels(Format f, AmaxNan p, const EncodeSpec& spec, bool divide) {
  return f == Format::e4m3 ? kernels<S, E4m3Traits>(p, spec, divide)
                           : kernels<S, E5m2Traits>(p, spec, divide);
}
RowKernels kernels(Source src, Format f, AmaxNan p, const EncodeSpec& spec, bool divide) {
  switch (src) {
    case Source::f32: return kernels<F32Bits>(f, p, spec, divide);
    case Source::bf16: return kernels<Bf16Bits>(f, p, spec, divide);
    case Source::f16: return kernels<F16Bits>(f, p, spec, divide);
    default: break;
  }
  throw std::invalid_argument("quantize: source must be f32, bf16 or f16");
}

void check_view(const SourceView2d& x) {
  if (x.src != Source::f32 && x.src != Source::bf16 && x.src != Source::f16)
    throw std::invalid_argument("quantize: source must be f32, bf16 or f16");
  if (x.rows < 0 || x.cols < 0 || x.row_stride < 0 || x.col_stride < 0)
    throw std::invalid_argument("quantize: negative shape or stride");
  if (x.rows * x.cols > 0 && x.data == nullptr) throw std::invalid_argument("quantize: null data");
}

// What every task of one quantize call shares: the source, the recipe, its row kernels, the block
// width and whether a finite amax can rule out NaN elements.
struct QuantizeRun {
  const SourceView2d& x;
  const Recipe& r;
  RowKernels k;
  std::int64_t bw;  // block width in columns
  bool ignore_nan;  // the amax skips NaN elements, so a finite amax proves nothing
};

// One task: block row br, blocks [bc0, bc0 + nb) of it, source rows [r0, r1), columns [c0, c1).
struct QuantizeTask {
  std::int64_t br, bc0, nb, r0, r1, c0, c1;
};

// A thread's per-block scratch, sized for the largest task.
struct TaskScratch {
  explicit TaskScratch(std::int64_t n)
      : amax(std::size_t(n)),
        amax_f(std::size_t(n)),
        factor(std::size_t(n)),
        may_nan(std::size_t(n)),
        scales(std::size_t(n)) {}
  std::vector<std::int32_t> amax;  // |x| bit patterns, the largest per block
  std::vector<float> amax_f;       // the same as f32, NaN for any NaN pattern
  std::vector<float> factor;
  std::vector<std::uint8_t> may_nan;
  std::vector<BlockScale> scales;
};

// Sizes q for x under g with the given row-block boundaries (starts, then x.rows).
BlockShape shape_output(const SourceView2d& x, const Recipe& r, BlockGeometry g,
                        std::vector<std::int64_t> starts, Quantized& q) {
  const BlockShape b = block_shape(g, x.rows, x.cols);
  q.recipe = r, q.geometry = g, q.rows = x.rows, q.cols = x.cols;
  q.codes.resize(std::size_t(x.rows * x.cols));
  q.scale_rows = std::int64_t(starts.size()) - 1, q.scale_cols = (x.cols + b.cols - 1) / b.cols;
  q.block_row_start = std::move(starts);
  const std::int64_t nblocks = q.scale_rows * q.scale_cols;
  q.scale.resize(std::size_t(nblocks));
  q.e8m0.resize(is_mx(r.kind) ? std::size_t(nblocks) : 0);
  return b;
}

// Step 1: the amax of each block of the task, over its real elements.
void reduce_amax(const QuantizeRun& run, const QuantizeTask& t, TaskScratch& s) {
  std::fill(s.amax.begin(), s.amax.begin() + t.nb, 0);
  for (std::int64_t i = t.r0; i < t.r1; ++i) {
    const std::int64_t off = i * run.x.row_stride + t.c0 * run.x.col_stride;
    if (run.bw == 1)
      run.k.amax_cols(run.x.data, off, t.c1 - t.c0, run.x.col_stride, s.amax.data());
    else
      run.k.amax(run.x.data, off, t.c1 - t.c0, run.x.col_stride, run.bw, s.amax.data());
  }
  for (std::int64_t j = 0; j < t.nb; ++j) {
    const std::int32_t m = s.amax[std::size_t(j)];
    s.amax_f[std::size_t(j)] =
        m > kF32InfBits ? std::numeric_limits<float>::quiet_NaN() : std::bit_cast<float>(m);
  }
}

// Step 2: the recipe's scale of each block, stored in q, and the factor the cast applies.
void store_scales(const QuantizeRun& run, const QuantizeTask& t, TaskScratch& s, Quantized& q) {
  block_scales(run.r, s.amax_f.data(), std::size_t(t.nb), run.x.src, s.scales.data());
  for (std::int64_t j = 0; j < t.nb; ++j) {
    const float a = s.amax_f[std::size_t(j)];
    const BlockScale& bs = s.scales[std::size_t(j)];
    const std::size_t blk = std::size_t(t.br * q.scale_cols + t.bc0 + j);
    q.scale[blk] = bs.s;
    if (is_mx(run.r.kind)) q.e8m0[blk] = bs.e8m0;
    s.factor[std::size_t(j)] = bs.factor;
    s.may_nan[std::size_t(j)] =
        run.ignore_nan || !(std::isfinite(a) && std::isfinite(bs.factor) && bs.factor != 0.0f);
  }
}

// Step 3: the elements of the task scaled and cast.
void cast_rows(const QuantizeRun& run, const QuantizeTask& t, const TaskScratch& s, Quantized& q) {
  for (std::int64_t i = t.r0; i < t.r1; ++i) {
    const std::int64_t off = i * run.x.row_stride + t.c0 * run.x.col_stride;
    std::uint8_t* out = q.codes.data() + i * run.x.cols + t.c0;
    if (run.bw == 1)
      run.k.encode_cols(run.x.data, off, t.c1 - t.c0, run.x.col_stride, s.factor.data(), out);
    else
      run.k.encode(run.x.data, off, t.c1 - t.c0, run.x.col_stride, run.bw, s.factor.data(),
                   s.may_nan.data(), out);
  }
}

// Quantize into q (its storage reused) with the given row-block boundaries (starts, then
// x.rows). Every code, scale and E8M0 entry is written, so q's old contents do not matter.
void quantize_blocks(const SourceView2d& x, const Recipe& r, BlockGeometry g,
                     std::vector<std::int64_t> starts, Quantized& q) {
  validate(r);
  check_view(x);
  const BlockShape b = shape_output(x, r, g, std::move(starts), q);
  if (x.src == Source::f16) f16_table();  // built before the parallel region
  // Whether elements are divided by the factor is a property of the recipe (torchao to_mx); asking
  // block_scale once here also raises its exceptions outside the parallel region.
  const bool divide = block_scale(r, 1.0f, x.src).divide;
  const QuantizeRun run{x, r, kernels(x.src, r.elem, amax_nan_policy(r), element_spec(r), divide),
                        b.cols, amax_nan_policy(r) == AmaxNan::ignore};
  // Tasks: one block row x a run of block columns about kTaskCols source columns wide, so that row
  // segments stream and the task (<= 128 rows) stays in L2 for the second (cast) pass.
  constexpr std::int64_t kTaskCols = 1024;
  const std::int64_t per_task = std::max<std::int64_t>(1, kTaskCols / run.bw);
  const std::int64_t chunks = (q.scale_cols + per_task - 1) / per_task,
                     ntasks = q.scale_rows * chunks;
#pragma omp parallel
  {
    TaskScratch scratch(per_task);
#pragma omp for schedule(static)
    for (std::int64_t task = 0; task < ntasks; ++task) {
      const std::int64_t br = task / chunks, bc0 = (task % chunks) * per_task;
      const std::int64_t nb = std::min(q.scale_cols, bc0 + per_task) - bc0;
      const QuantizeTask t{br,
                           bc0,
                           nb,
                           q.block_row_start[std::size_t(br)],
                           q.block_row_start[std::size_t(br) + 1],
                           bc0 * run.bw,
                           std::min(x.cols, (bc0 + nb) * run.bw)};
      reduce_amax(run, t, scratch);
      store_scales(run, t, scratch, q);
      cast_rows(run, t, scratch, q);
    }
  }
}

std::vector<std::int64_t> global_starts(const SourceView2d& x, BlockGeometry g) {
  const std::int64_t h = block_shape(g, x.rows, x.cols).rows;
  std::vector<std::int64_t> starts;
  for (std::int64_t s = 0; s < x.rows; s += h) starts.push_back(s);
  starts.push_back(std::max<std::int64_t>(x.rows, 0));
  return starts;
}

}  // namespace

Quantized quantize(const SourceView2d& x, const Recipe& r, BlockGeometry g) {
  Quantized q{};
  quantize_blocks(x, r, g, global_starts(x, g), q);
  return q;
}

void quantize_into(const SourceView2d& x, const Recipe& r, BlockGeometry g, Quantized& out) {
  quantize_blocks(x, r, g, global_starts(x, g), out);
}

Quantized quantize_grouped_rows(const SourceView2d& x, const Recipe& r, BlockGeometry g,
                                std::span<const std::int64_t> group_ends) {
  if (group_ends.empty() || group_ends.back() != x.rows)
    throw std::invalid_argument("quantize_grouped_rows: the last group end must equal rows (" +
                                std::to_string(x.rows) + ")");
  const std::int64_t h = block_shape(g, x.rows, x.cols).rows;
  std::vector<std::int64_t> starts;
  std::int64_t begin = 0;
  for (const std::int64_t end : group_ends) {
    if (end < begin) throw std::invalid_argument("quantize_grouped_rows: group ends decrease");
    for (std::int64_t s = begin; s < end; s += h) starts.push_back(s);
    begin = end;
  }
  starts.push_back(x.rows);
  Quantized q{};
  quantize_blocks(x, r, g, std::move(starts), q);
  return q;
}

std::vector<Quantized> quantize_3d(const SourceView3d& x, const Recipe& r, BlockGeometry g) {
  if (x.groups < 0 || x.group_stride < 0) throw std::invalid_argument("quantize_3d: bad groups");
  const std::size_t elem = x.plane.src == Source::f32 ? 4 : 2;
  std::vector<Quantized> out;
  for (std::int64_t i = 0; i < x.groups; ++i) {
    SourceView2d p = x.plane;
    p.data =
        static_cast<const unsigned char*>(x.plane.data) + std::size_t(i * x.group_stride) * elem;
    out.push_back(quantize(p, r, g));
  }
  return out;
}

std::vector<double> dequantize(const Quantized& q) {
  std::vector<double> z(q.codes.size());
  const BlockShape b = block_shape(q.geometry, q.rows, q.cols);
  for (std::int64_t br = 0; br < q.scale_rows; ++br)
    for (std::int64_t i = q.block_row_start[std::size_t(br)];
         i < q.block_row_start[std::size_t(br) + 1]; ++i)
      for (std::int64_t j = 0; j < q.cols; ++j) {
        const double s = q.scale[std::size_t(br * q.scale_cols + j / b.cols)];
        z[std::size_t(i * q.cols + j)] =
            decode_f64(q.recipe.elem, q.codes[std::size_t(i * q.cols + j)]) * s;
      }
  return z;
}

void check_nan_input(const SourceView2d& x, NanInput policy) {
  check_view(x);
  if (policy == NanInput::propagate) return;
  for (std::int64_t i = 0; i < x.rows; ++i)
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const std::int64_t k = i * x.row_stride + j * x.col_stride;
      std::uint32_t b = 0;
      switch (x.src) {
        case Source::f32: b = F32Bits::bits(static_cast<const std::uint32_t*>(x.data)[k]); break;
        case Source::bf16: b = Bf16Bits::bits(static_cast<const std::uint16_t*>(x.data)[k]); break;
        default: b = F16Bits::bits(static_cast<const std::uint16_t*>(x.data)[k]); break;
      }
      if (std::int32_t(b & 0x7FFFFFFFu) > kF32InfBits)
        throw std::invalid_argument("input has NaN at (" + std::to_string(i) + ", " +
                                    std::to_string(j) + ") and the NaN policy is reject");
    }
}

}  // namespace fp8ref::ref
