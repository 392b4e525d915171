// gpu.quantize (docs/fuzz.md "The suites"): the GPU quantize kernels (gpu/quantize.h) == the
// oracle (reference/quantize + numerics/scale_layout.h) bitwise, codes and serialised scales, over
// the GPU recipes, every geometry, bf16 / f32, every scale layout, global and per-group blocking on
// the campaign's tokens-per-group draws (empty groups, M = 0 included); outputs are poisoned
// first, and a second launch on another stream with another grid size gives the same bytes.
// Shapes the recipe's library refuses must be refused by the launcher, before any launch.
#include <cstdio>
#include <stdexcept>

#include "campaign/gen/choices.h"
#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/gpu_quantize_case.h"
#include "campaign/suite.h"
#include "cases/quantize_case.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/quantize.h"
#endif

namespace fp8ref::fuzz {

namespace {

// The quantize case (x: f32 patterns; bf16: the pattern in the low 16 bits) and the launch.
struct GpuQuantCase : cases::QuantizeCase {
  Source src = Source::bf16;
  bool grouped = false;
  int layout = 0;      // ScaleLayoutF32 (non-MX) or ScaleLayoutE8m0 (MX) as a number
  int max_blocks = 0;  // the first launch's grid cap
};

std::int64_t block_height(BlockGeometry g) {
  const std::int64_t h = fixed_block_extent(g).rows;
  return h == 0 ? 128 : h;
}

GpuQuantCase draw_gpu_quant() {
  GpuQuantCase c;
  c.recipe = *rc::gen::elementOf(gpu_recipes());
  const bool mx = is_mx(c.recipe.kind);
  c.geometry = mx ? *rc::gen::element(BlockGeometry::b1x32, BlockGeometry::b32x1)
                  : *rc::gen::element(BlockGeometry::b1x128, BlockGeometry::b128x128,
                                      BlockGeometry::b128x1, BlockGeometry::rowwise,
                                      BlockGeometry::tensorwise, BlockGeometry::per_channel);
  c.src = *rc::gen::element(Source::bf16, Source::f32);
  c.grouped = *rc::gen::arbitrary<bool>();
  gen::SizeLimits lim;
  lim.max_total = 300;
  lim.max_groups = 16;
  lim.aligns = {std::max<std::int64_t>(block_height(c.geometry), 4)};
  c.gs = *gen::group_sizes(lim);
  c.gs.tail = 0;
  c.cols = *rc::gen::weightedOneOf<std::int64_t>(
      {{3, rc::gen::element<std::int64_t>(32, 128, 256, 1024)},
       {1, rc::gen::inRange<std::int64_t>(1, 300)}});
  c.values = *gen::value_class(true);
  c.layout = mx ? *rc::gen::inRange(0, 3) : *rc::gen::inRange(0, 5);
  c.max_blocks = *rc::gen::element(0, 1, 3, 64);
  c.x = gen::fill_f32(c.values, c.gs.total() * c.cols, *rc::gen::inRange(-20, 21),
                      *rc::gen::arbitrary<std::uint64_t>());
  if (c.src == Source::bf16)
    for (auto& v : c.x) v >>= 16;
  return c;
}

[[maybe_unused]] std::vector<std::int64_t> group_ends(const GpuQuantCase& c) {
  return c.grouped ? c.gs.ends() : std::vector<std::int64_t>{};
}

std::vector<std::string> gpu_quant_tags(const GpuQuantCase& c) {
  std::vector<std::string> t = c.grouped ? gen::size_tags(c.gs) : std::vector<std::string>{};
  t.push_back(std::string("recipe:") + std::string(to_string(c.recipe.kind)));
  t.push_back(std::string("geometry:") + std::string(to_string(c.geometry)));
  t.push_back(c.src == Source::bf16 ? "src:bf16" : "src:f32");
  t.push_back(std::string("values:") + gen::to_string(c.values));
  if (c.gs.total() == 0) t.push_back("rows:0");
  return t;
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
// The first byte where got and want differ, as a one-line Violation.
void require_same(const char* what, const std::vector<std::uint8_t>& got,
                  const std::vector<std::uint8_t>& want, const GpuQuantCase& c) {
  if (got == want) return;
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "gpu.quantize %s %s %s (%lld, %lld): %s byte %zu: kernel 0x%02x, oracle 0x%02x "
                "(sizes %zu / %zu)",
                std::string(to_string(c.recipe.kind)).c_str(),
                std::string(to_string(c.geometry)).c_str(), c.src == Source::bf16 ? "bf16" : "f32",
                (long long)c.gs.total(), (long long)c.cols, what, i, i < got.size() ? got[i] : 0,
                i < want.size() ? want[i] : 0, got.size(), want.size());
  throw Violation(buf);
}
#endif

void check_gpu_quant(const GpuQuantCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::int64_t rows = c.gs.total();
  std::vector<std::uint16_t> bf16;
  for (auto v : c.x) bf16.push_back(std::uint16_t(v));
  const void* x = c.src == Source::bf16 ? static_cast<const void*>(bf16.data()) : c.x.data();
  const auto ends = group_ends(c);
  const auto f32l = ScaleLayoutF32(c.layout);
  const auto e8l = ScaleLayoutE8m0(c.layout < 3 ? c.layout : 0);
  const auto run = [&](int max_blocks) {
    return gpu::quantize_host(x, c.src, rows, c.cols, c.recipe, c.geometry, ends, f32l, e8l,
                              {max_blocks});
  };
  if (library_shape_check(c.recipe, c.geometry, rows, c.cols).rule != ShapeRule::accepted) {
    try {
      run(0);
    } catch (const std::invalid_argument&) {
      return;
    }
    throw Violation("gpu.quantize: a shape the library refuses was not refused");
  }
  const gpu::HostQuantized a = run(c.max_blocks), b = run(c.max_blocks == 0 ? 2 : 0);
  fp.fold(a.codes.data(), a.codes.size());
  fp.fold(a.scales.data(), a.scales.size());
  const ExpectedQuantize e =
      expected_quantize(x, c.src, rows, c.cols, c.recipe, c.geometry, ends, f32l, e8l);
  require_same("codes", a.codes, e.q.codes, c);
  require_same("scales", a.scales, e.scales, c);
  require_same("codes (second launch)", b.codes, a.codes, c);
  require_same("scales (second launch)", b.scales, a.scales, c);
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.quantize: built without CUDA");
#endif
}

TensorFile save_gpu_quant(const GpuQuantCase& c) {
  TensorFile tf;
  cases::save_quantize_case(c, cases::SourceShape::flat, tf);
  cases::MetaWriter m{tf};
  m["src"] = c.src == Source::bf16 ? "bf16" : "f32";
  m["grouped"] = c.grouped ? "1" : "0";
  m["layout"] = std::to_string(c.layout);
  m["max_blocks"] = std::to_string(c.max_blocks);
  return tf;
}

GpuQuantCase load_gpu_quant(const TensorFile& tf) {
  GpuQuantCase c;
  cases::load_quantize_case(tf, c);
  const std::string src = get_meta(tf, "src");
  if (src != "bf16" && src != "f32") throw std::invalid_argument("case file: src bf16 or f32");
  c.src = src == "bf16" ? Source::bf16 : Source::f32;
  c.grouped = get_meta(tf, "grouped") == "1";
  c.layout = int(get_meta_int(tf, "layout"));
  c.max_blocks = int(get_meta_int(tf, "max_blocks"));
  if (c.layout < 0 || c.layout > 4 || c.max_blocks < 0)
    throw std::invalid_argument("case file: layout or max_blocks out of range");
  return c;
}

std::string gpu_quant_diff(const GpuQuantCase& x, const GpuQuantCase& y) {
  return first_difference({{"recipe", same_recipe(x.recipe, y.recipe)},
                           {"geometry", x.geometry == y.geometry},
                           {"source type", x.src == y.src},
                           {"grouping", x.grouped == y.grouped && x.gs.sizes == y.gs.sizes},
                           {"value class", x.values == y.values},
                           {"layout", x.layout == y.layout && x.max_blocks == y.max_blocks},
                           {"source tensor", x.cols == y.cols && x.x == y.x}});
}

}  // namespace

void add_gpu_quantize_suites(std::vector<Suite>& out) {
  out.push_back(make_suite<GpuQuantCase>(
      {"gpu.quantize",
       "GPU quantize kernels == reference/quantize bitwise (codes, scales in every layout)",
       "gpu",
       300,
       {"src:bf16", "src:f32", "geometry:1x128", "geometry:128x128", "geometry:1x32",
        "geometry:rowwise", "geometry:tensorwise"},
       {"rows:0"}},
      {draw_gpu_quant, check_gpu_quant, gpu_quant_tags, save_gpu_quant, load_gpu_quant,
       gpu_quant_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
