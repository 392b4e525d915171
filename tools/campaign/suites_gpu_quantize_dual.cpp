// gpu.quantize_dual (docs/fuzz.md "The suites"): gpu::quantize_dual (gpu/quantize.h) == the
// oracle's 1x128 and 128x1 quantizations (MX: 1x32 and 32x1; reference/quantize, scales
// serialised by numerics/scale_layout.h) bitwise, both orientations, codes and scales, over the GPU
// recipes, bf16 (the one-read kernel) and f32 (two quantizes), partial row and column tiles, every
// scale layout per side, and tiles overwritten with NaN, Inf, the source's largest finite value,
// zeros or subnormals. Outputs are poisoned first; a second launch on another stream with another
// grid size gives the same bytes; shapes the recipe's library refuses are refused before a launch.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "campaign/gen/values.h"
#include "campaign/gpu_bytes.h"
#include "campaign/gpu_quantize_case.h"
#include "campaign/suite.h"
#include "cases/quantize_case.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/quantize.h"
#endif

namespace fp8ref::fuzz {

namespace {

// One tile of the grid of rowwise x columnwise blocks, overwritten after the fill: its values
// decide both orientations' scales of the blocks through it (amax NaN / Inf / 0, the saturating
// largest finite value, subnormals only, or the largest next to subnormals).
enum class TileEdit : std::uint8_t { none, nan, inf, max, zero, subnormal, max_tiny };
constexpr std::array kTileEdits = {TileEdit::none,    TileEdit::nan,  TileEdit::inf,
                                   TileEdit::max,     TileEdit::zero, TileEdit::subnormal,
                                   TileEdit::max_tiny};
constexpr const char* to_string(TileEdit e) {
  switch (e) {
    case TileEdit::none: return "none";
    case TileEdit::nan: return "nan";
    case TileEdit::inf: return "inf";
    case TileEdit::max: return "max";
    case TileEdit::zero: return "zero";
    case TileEdit::subnormal: return "subnormal";
    case TileEdit::max_tiny: return "max_tiny";
  }
  return "?";
}

// An f32 pattern of edit e with a random sign; a bf16 source keeps the top 16 bits (the
// subnormal's significand then lies in bits 16..22, so it stays a bf16 subnormal).
std::uint32_t edit_pattern(TileEdit e, std::size_t i, std::mt19937_64& rng) {
  const std::uint32_t sign = (rng() & 1) ? 0x80000000u : 0u;
  const std::uint32_t tiny = std::uint32_t((rng() % 0x7F + 1) << 16 | (rng() & 0xFFFF));
  switch (e) {
    case TileEdit::nan: return sign | 0x7FC00000u;
    case TileEdit::inf: return sign | 0x7F800000u;
    case TileEdit::max: return sign | 0x7F7FFFFFu;  // (2 - 2^-23) * 2^127; bf16: 0x7F7F
    case TileEdit::zero: return sign;
    case TileEdit::subnormal: return sign | tiny;
    case TileEdit::max_tiny: return sign | (i % 2 ? tiny : 0x7F7FFFFFu);
    case TileEdit::none: break;
  }
  return 0;
}

struct GpuDualCase {
  Recipe recipe{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  Source src = Source::bf16;
  std::int64_t rows = 0, cols = 1;
  gen::ValueClass values = gen::ValueClass::normal;
  TileEdit edit = TileEdit::none;
  int row_layout = 0, col_layout = 0;  // ScaleLayoutF32 (non-MX) or ScaleLayoutE8m0 (MX)
  int max_blocks = 0;                  // the first launch's grid cap
  std::vector<std::uint32_t> x;        // f32 patterns; bf16: the pattern in the low 16 bits
};

std::int64_t tile_width(const Recipe& r) { return is_mx(r.kind) ? 32 : 128; }
BlockGeometry row_geometry(const Recipe& r) {
  return is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
}
BlockGeometry col_geometry(const Recipe& r) {
  return is_mx(r.kind) ? BlockGeometry::b32x1 : BlockGeometry::b128x1;
}

// A tensor extent: a multiple of the tile width w, one off a multiple, or any size up to limit.
std::int64_t draw_extent(std::int64_t w, std::int64_t limit, bool any_shape) {
  const std::int64_t k = *rc::gen::inRange<std::int64_t>(1, 4);
  const int kind = any_shape ? *rc::gen::weightedElement<int>({{3, 0}, {2, 1}, {2, 2}}) : 0;
  if (kind == 0) return k * w;
  if (kind == 1) return k * w + *rc::gen::element<std::int64_t>(-1, 1);
  return *rc::gen::inRange<std::int64_t>(0, limit + 1);
}

// Overwrites the tile (tr, tc) of w x w elements (clipped to the tensor) with edit e.
void apply_edit(GpuDualCase& c, std::uint64_t seed) {
  if (c.edit == TileEdit::none || c.rows == 0) return;
  const std::int64_t w = tile_width(c.recipe);
  std::mt19937_64 rng(seed);
  const std::int64_t tr = std::int64_t(rng() % std::uint64_t((c.rows + w - 1) / w));
  const std::int64_t tc = std::int64_t(rng() % std::uint64_t((c.cols + w - 1) / w));
  for (std::int64_t r = tr * w; r < std::min(c.rows, tr * w + w); ++r)
    for (std::int64_t k = tc * w; k < std::min(c.cols, tc * w + w); ++k) {
      const std::size_t i = std::size_t(r * c.cols + k);
      const std::uint32_t p = edit_pattern(c.edit, i, rng);
      c.x[i] = c.src == Source::bf16 ? p >> 16 : p;
    }
}

GpuDualCase draw_gpu_dual() {
  GpuDualCase c;
  c.recipe = *rc::gen::elementOf(gpu_recipes());
  const std::int64_t w = tile_width(c.recipe);
  c.src = *rc::gen::weightedElement<Source>({{3, Source::bf16}, {1, Source::f32}});
  // TE takes any shape; the other libraries refuse most non-multiples, so those draw them less.
  const bool any_shape =
      c.recipe.kind == RecipeKind::te || *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  c.rows = draw_extent(w, 300, any_shape);
  const auto whole = rc::gen::element<std::int64_t>(128, 256, 384, 1024);
  c.cols =
      any_shape
          ? *rc::gen::weightedOneOf<std::int64_t>({{4, whole},
                                                   {2, rc::gen::element<std::int64_t>(32, 96, 160)},
                                                   {2, rc::gen::inRange<std::int64_t>(1, 300)}})
          : *whole;
  c.values = *gen::value_class(true);
  c.edit = *rc::gen::weightedElement<TileEdit>({{2, TileEdit::none},
                                                {1, TileEdit::nan},
                                                {1, TileEdit::inf},
                                                {1, TileEdit::max},
                                                {1, TileEdit::zero},
                                                {1, TileEdit::subnormal},
                                                {1, TileEdit::max_tiny}});
  const int layouts = is_mx(c.recipe.kind) ? 3 : 5;
  c.row_layout = *rc::gen::inRange(0, layouts);
  c.col_layout = *rc::gen::inRange(0, layouts);
  c.max_blocks = *rc::gen::element(0, 1, 3, 64);
  c.x = gen::fill_f32(c.values, c.rows * c.cols, *rc::gen::inRange(-20, 21),
                      *rc::gen::arbitrary<std::uint64_t>());
  if (c.src == Source::bf16)
    for (auto& v : c.x) v >>= 16;
  apply_edit(c, *rc::gen::arbitrary<std::uint64_t>());
  return c;
}

bool refused(const GpuDualCase& c) {
  return library_shape_check(c.recipe, row_geometry(c.recipe), c.rows, c.cols).rule !=
             ShapeRule::accepted ||
         library_shape_check(c.recipe, col_geometry(c.recipe), c.rows, c.cols).rule !=
             ShapeRule::accepted;
}

// The kernel reads the tensor once when it is bf16 with whole 128-column tiles (device buffers
// are 256-byte aligned); any other call runs two quantizes.
bool one_read(const GpuDualCase& c) {
  return c.src == Source::bf16 && c.rows > 0 && c.cols % 128 == 0;
}

std::vector<std::string> gpu_dual_tags(const GpuDualCase& c) {
  const std::int64_t w = tile_width(c.recipe);
  std::vector<std::string> t = {std::string("recipe:") + std::string(to_string(c.recipe.kind)),
                                c.recipe.elem == Format::e4m3 ? "elem:e4m3" : "elem:e5m2",
                                c.src == Source::bf16 ? "src:bf16" : "src:f32",
                                std::string("values:") + gen::to_string(c.values),
                                std::string("block:") + to_string(c.edit),
                                one_read(c) ? "path:one_read" : "path:two_reads"};
  if (c.rows % w) t.push_back("rows:partial");
  if (c.cols % w) t.push_back("cols:partial");
  if (c.rows == 0) t.push_back("rows:0");
  if (refused(c)) t.push_back("refused");
  return t;
}

[[maybe_unused]] std::string context_of(const GpuDualCase& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "gpu.quantize_dual %s %s%s %s (%lld, %lld) block:%s",
                std::string(to_string(c.recipe.kind)).c_str(),
                c.recipe.elem == Format::e4m3 ? "e4m3" : "e5m2", c.recipe.pow2 ? " pow2" : "",
                c.src == Source::bf16 ? "bf16" : "f32", (long long)c.rows, (long long)c.cols,
                to_string(c.edit));
  return buf;
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
// Codes and serialised scales of both orientations: rowwise, then columnwise.
using DualBytes = std::array<std::vector<std::uint8_t>, 4>;

gpu::QuantizeOutput output_of(const GpuDualCase& c, BlockGeometry g, int layout) {
  const std::size_t n = std::size_t(c.rows * c.cols);
  gpu::QuantizeOutput o{nullptr,
                        n,
                        nullptr,
                        0,
                        ScaleLayoutF32(layout),
                        ScaleLayoutE8m0(is_mx(c.recipe.kind) ? layout : 0)};
  o.scales_bytes = gpu::scale_bytes(c.recipe, g, c.rows, c.cols, {}, o);
  return o;
}

DualBytes launch_dual(const GpuDualCase& c, const void* dx, int max_blocks, cudaStream_t s) {
  gpu::QuantizeOutput row = output_of(c, row_geometry(c.recipe), c.row_layout);
  gpu::QuantizeOutput col = output_of(c, col_geometry(c.recipe), c.col_layout);
  DeviceBytes rc(row.codes_bytes), rs(row.scales_bytes), cc(col.codes_bytes), cs(col.scales_bytes);
  row.codes = static_cast<std::uint8_t*>(rc.p), row.scales = rs.p;
  col.codes = static_cast<std::uint8_t*>(cc.p), col.scales = cs.p;
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());  // the poison and the input are in place
  gpu::quantize_dual({dx, c.src, c.rows, c.cols}, c.recipe, row, col, s, {max_blocks});
  FP8REF_CUDA_CHECK(cudaStreamSynchronize(s));
  return {rc.host(), rs.host(), cc.host(), cs.host()};
}

DualBytes expected_dual(const GpuDualCase& c, const void* x) {
  const auto side = [&](BlockGeometry g, int layout) {
    return expected_quantize(x, c.src, c.rows, c.cols, c.recipe, g, {}, ScaleLayoutF32(layout),
                             ScaleLayoutE8m0(is_mx(c.recipe.kind) ? layout : 0));
  };
  ExpectedQuantize r = side(row_geometry(c.recipe), c.row_layout);
  ExpectedQuantize k = side(col_geometry(c.recipe), c.col_layout);
  return {std::move(r.q.codes), std::move(r.scales), std::move(k.q.codes), std::move(k.scales)};
}
#endif

void check_gpu_dual(const GpuDualCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  std::vector<std::uint16_t> bf16;
  for (auto v : c.x) bf16.push_back(std::uint16_t(v));
  const bool is_bf16 = c.src == Source::bf16;
  const void* x = is_bf16 ? static_cast<const void*>(bf16.data()) : c.x.data();
  const DeviceBytes dx(is_bf16 ? bytes_of(bf16) : bytes_of(c.x));
  const std::string context = context_of(c);
  if (refused(c)) {
    try {
      launch_dual(c, dx.p, 0, nullptr);
    } catch (const std::invalid_argument&) {
      return;
    }
    throw Violation(context + ": a shape the library refuses was not refused");
  }
  const DualBytes a = launch_dual(c, dx.p, c.max_blocks, nullptr);
  const Stream other;
  const DualBytes b = launch_dual(c, dx.p, c.max_blocks == 0 ? 2 : 0, other.s);
  for (const auto& v : a) fp.fold(v.data(), v.size());
  const DualBytes want = expected_dual(c, x);
  const char* what[] = {"rowwise codes", "rowwise scales", "columnwise codes", "columnwise scales"};
  for (int i = 0; i < 4; ++i) require_same_bytes(context, what[i], a[i], want[i]);
  for (int i = 0; i < 4; ++i)
    require_same_bytes(context + " (second launch, other stream and grid)", what[i], b[i], a[i]);
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.quantize_dual: built without CUDA");
#endif
}

TensorFile save_gpu_dual(const GpuDualCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"x_bits", u32_tensor(c.x, {c.rows, c.cols})});
  cases::save_recipe(c.recipe, row_geometry(c.recipe), tf);
  cases::MetaWriter m{tf};
  m["src"] = c.src == Source::bf16 ? "bf16" : "f32";
  m["rows"] = std::to_string(c.rows);
  m["cols"] = std::to_string(c.cols);
  m["values"] = gen::to_string(c.values);
  m["block"] = to_string(c.edit);
  m["row_layout"] = std::to_string(c.row_layout);
  m["col_layout"] = std::to_string(c.col_layout);
  m["max_blocks"] = std::to_string(c.max_blocks);
  return tf;
}

GpuDualCase load_gpu_dual(const TensorFile& tf) {
  GpuDualCase c;
  c.recipe = cases::load_recipe(tf).recipe;
  validate(c.recipe);
  const std::string src = get_meta(tf, "src");
  if (src != "bf16" && src != "f32") throw std::invalid_argument("case file: src bf16 or f32");
  c.src = src == "bf16" ? Source::bf16 : Source::f32;
  c.rows = get_meta_int(tf, "rows");
  c.cols = get_meta_int(tf, "cols");
  const auto values = cases::from_token(gen::kValueClasses, get_meta(tf, "values"));
  const auto edit = cases::from_token(kTileEdits, get_meta(tf, "block"));
  if (!values || !edit) throw std::invalid_argument("case file: unknown value class or block");
  c.values = *values, c.edit = *edit;
  c.row_layout = int(get_meta_int(tf, "row_layout"));
  c.col_layout = int(get_meta_int(tf, "col_layout"));
  c.max_blocks = int(get_meta_int(tf, "max_blocks"));
  c.x = get_u32(tf, "x_bits");
  const int layouts = is_mx(c.recipe.kind) ? 3 : 5;
  if (c.rows < 0 || c.cols < 1 || std::int64_t(c.x.size()) != c.rows * c.cols)
    throw std::invalid_argument("case file: x does not match rows x cols");
  if (c.row_layout < 0 || c.row_layout >= layouts || c.col_layout < 0 || c.col_layout >= layouts ||
      c.max_blocks < 0)
    throw std::invalid_argument("case file: layout or max_blocks out of range");
  return c;
}

std::string gpu_dual_diff(const GpuDualCase& x, const GpuDualCase& y) {
  return first_difference(
      {{"recipe", same_recipe(x.recipe, y.recipe)},
       {"source type", x.src == y.src},
       {"value class", x.values == y.values},
       {"block edit", x.edit == y.edit},
       {"layouts", x.row_layout == y.row_layout && x.col_layout == y.col_layout},
       {"grid cap", x.max_blocks == y.max_blocks},
       {"source tensor", x.rows == y.rows && x.cols == y.cols && x.x == y.x}});
}

}  // namespace

void add_gpu_quantize_dual_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes = {"src:bf16",       "src:f32",         "path:one_read",
                                      "path:two_reads", "rows:partial",    "cols:partial",
                                      "recipe:te",      "recipe:mx_rceil", "refused"};
  for (auto e : kTileEdits) classes.push_back(std::string("block:") + to_string(e));
  for (auto v : gen::kValueClasses) classes.push_back(std::string("values:") + gen::to_string(v));
  out.push_back(make_suite<GpuDualCase>(
      {"gpu.quantize_dual",
       "GPU dual-orientation quantize == reference/quantize 1x128 + 128x1 (MX 1x32 + 32x1) bitwise",
       "gpu",
       200,
       classes,
       {"rows:0"}},
      {draw_gpu_dual, check_gpu_dual, gpu_dual_tags, save_gpu_dual, load_gpu_dual, gpu_dual_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
