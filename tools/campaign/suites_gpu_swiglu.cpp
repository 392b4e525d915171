// gpu.swiglu (docs/fuzz.md "The suites"): gpu::swiglu_quantize (gpu/quantize.h) == the oracle
// bitwise: ref::swiglu_merged_bf16 (reference/swiglu.h) of the merged (rows, 2H) bf16 gate/up,
// then reference/quantize of the f32 result over 1x128 blocks (MX: 1x32), codes and scales in
// every layout, over the GPU recipes. Blocks are overwritten with gates at exp(-g)'s edges, zeros,
// products that overflow f32 (h = ±Inf from finite inputs), products near the f32 maximum and
// subnormal products. Inputs holding NaN or Inf are outside the kernel's bitwise contract
// (docs/recipes.md "SwiGLU") and are never drawn. Outputs are poisoned first; a second launch on
// another stream with another grid size gives the same bytes; H % block width != 0 and shapes the
// recipe's library refuses are refused before a launch.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "campaign/gen/values.h"
#include "campaign/gpu_bytes.h"
#include "campaign/gpu_quantize_case.h"
#include "campaign/suite.h"
#include "cases/quantize_case.h"
#include "reference/swiglu.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/quantize.h"
#endif

namespace fp8ref::fuzz {

namespace {

// What a few blocks of h are overwritten with, through their gates and ups.
enum class GateEdit : std::uint8_t { none, zero, exp_edge, overflow, huge, tiny };
constexpr std::array kGateEdits = {GateEdit::none,     GateEdit::zero, GateEdit::exp_edge,
                                   GateEdit::overflow, GateEdit::huge, GateEdit::tiny};
constexpr const char* to_string(GateEdit e) {
  switch (e) {
    case GateEdit::none: return "none";
    case GateEdit::zero: return "zero";
    case GateEdit::exp_edge: return "exp_edge";
    case GateEdit::overflow: return "overflow";
    case GateEdit::huge: return "huge";
    case GateEdit::tiny: return "tiny";
  }
  return "?";
}

// The bf16 pattern of ±2^e·(1 + m/128), m < 128 (e in the normal range).
std::uint32_t bf16_of(bool negative, int e, std::uint32_t m) {
  return (negative ? 0x8000u : 0u) | std::uint32_t(e + 127) << 7 | (m & 0x7F);
}

// A (gate, up) pair of edit e. exp_edge gates: exp(-g) past the f32 maximum (g <= -88.75), in
// its subnormal range, below it, near 1, and ±3.39e38 (bf16 truncations of the f32 values).
// overflow: g >= 2^100 (silu(g) = g) times |up| >= 2^28 exceeds 2^128. huge: |h| in
// [2^120, 2^128) without overflow. tiny: |h| below 2^-120, mostly subnormal or zero.
std::pair<std::uint32_t, std::uint32_t> edit_pair(GateEdit e, std::uint32_t up,
                                                  std::mt19937_64& rng) {
  static constexpr float kExpEdges[] = {-89.0f,  -88.5f, 104.0f, 88.0f, 95.0f,
                                        -1e-30f, 1e-30f, 3e38f,  -3e38f};
  const auto m = [&rng] { return std::uint32_t(rng() & 0x7F); };
  const auto sign = [&rng] { return bool(rng() & 1); };
  switch (e) {
    case GateEdit::zero: return {sign() ? 0x8000u : 0u, up};
    case GateEdit::exp_edge:
      return {std::bit_cast<std::uint32_t>(kExpEdges[rng() % std::size(kExpEdges)]) >> 16, up};
    case GateEdit::overflow:
      return {bf16_of(false, 100 + int(rng() % 28), m()),
              bf16_of(sign(), 28 + int(rng() % 100), m())};
    case GateEdit::huge:
      return {bf16_of(false, 60 + int(rng() % 4), m()), bf16_of(sign(), 60 + int(rng() % 4), m())};
    case GateEdit::tiny:
      return {bf16_of(sign(), -70 + int(rng() % 11), m()),
              bf16_of(sign(), -75 + int(rng() % 11), m())};
    case GateEdit::none: break;
  }
  return {0, up};
}

struct GpuSwigluCase {
  Recipe recipe{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  std::int64_t rows = 0, H = 128;
  gen::ValueClass values = gen::ValueClass::normal;
  GateEdit edit = GateEdit::none;
  int layout = 0;                      // ScaleLayoutF32 (non-MX) or ScaleLayoutE8m0 (MX)
  int max_blocks = 0;                  // the first launch's grid cap
  std::vector<std::uint32_t> gate_up;  // (rows, 2H) bf16 patterns in the low 16 bits
};

std::int64_t block_width(const Recipe& r) { return is_mx(r.kind) ? 32 : 128; }
BlockGeometry geometry(const Recipe& r) {
  return is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
}

// Overwrites 1..3 blocks of h (a row, a block of columns: its gates and its ups) with edit e.
void apply_edit(GpuSwigluCase& c, std::uint64_t seed) {
  const std::int64_t w = block_width(c.recipe);
  if (c.edit == GateEdit::none || c.rows == 0 || c.H < w) return;
  std::mt19937_64 rng(seed);
  for (int n = 1 + int(rng() % 3); n > 0; --n) {
    const std::int64_t r = std::int64_t(rng() % std::uint64_t(c.rows));
    const std::int64_t b = std::int64_t(rng() % std::uint64_t(c.H / w));
    for (std::int64_t k = b * w; k < b * w + w; ++k) {
      const std::size_t g = std::size_t(r * 2 * c.H + k), u = g + std::size_t(c.H);
      std::tie(c.gate_up[g], c.gate_up[u]) = edit_pair(c.edit, c.gate_up[u], rng);
    }
  }
}

bool h_refused(const GpuSwigluCase& c) {
  return c.H % block_width(c.recipe) != 0 ||
         library_shape_check(c.recipe, geometry(c.recipe), c.rows, c.H).rule != ShapeRule::accepted;
}

GpuSwigluCase draw_gpu_swiglu() {
  GpuSwigluCase c;
  c.recipe = *rc::gen::elementOf(gpu_recipes());
  const std::int64_t w = block_width(c.recipe);
  c.H = *rc::gen::weightedOneOf<std::int64_t>(
      {{6,
        rc::gen::map(rc::gen::inRange<std::int64_t>(1, 5), [w](std::int64_t k) { return k * w; })},
       {2, rc::gen::just<std::int64_t>(1024)},
       {1, rc::gen::inRange<std::int64_t>(1, 300)}});
  c.rows = *rc::gen::weightedOneOf<std::int64_t>(
      {{3,
        rc::gen::map(rc::gen::inRange<std::int64_t>(1, 4), [](std::int64_t k) { return 32 * k; })},
       {2, rc::gen::inRange<std::int64_t>(0, 300)},
       {1, rc::gen::element<std::int64_t>(1, 127, 129, 257)}});
  c.values = *gen::value_class(false);  // finite inputs: the bitwise contract
  c.edit = *rc::gen::weightedElement<GateEdit>({{2, GateEdit::none},
                                                {1, GateEdit::zero},
                                                {1, GateEdit::exp_edge},
                                                {1, GateEdit::overflow},
                                                {1, GateEdit::huge},
                                                {1, GateEdit::tiny}});
  c.layout = *rc::gen::inRange(0, is_mx(c.recipe.kind) ? 3 : 5);
  c.max_blocks = *rc::gen::element(0, 1, 5, 64);
  c.gate_up = gen::fill_f32(c.values, c.rows * 2 * c.H, *rc::gen::inRange(-8, 9),
                            *rc::gen::arbitrary<std::uint64_t>());
  for (auto& v : c.gate_up) v >>= 16;
  apply_edit(c, *rc::gen::arbitrary<std::uint64_t>());
  return c;
}

std::vector<std::string> gpu_swiglu_tags(const GpuSwigluCase& c) {
  std::vector<std::string> t = {std::string("recipe:") + std::string(to_string(c.recipe.kind)),
                                c.recipe.elem == Format::e4m3 ? "elem:e4m3" : "elem:e5m2",
                                std::string("values:") + gen::to_string(c.values),
                                std::string("block:") + to_string(c.edit)};
  if (c.rows == 0) t.push_back("rows:0");
  if (c.rows % 32) t.push_back("rows:odd");
  if (h_refused(c)) t.push_back("refused");
  return t;
}

[[maybe_unused]] std::string context_of(const GpuSwigluCase& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "gpu.swiglu %s %s%s (%lld, 2 x %lld) block:%s layout %d",
                std::string(to_string(c.recipe.kind)).c_str(),
                c.recipe.elem == Format::e4m3 ? "e4m3" : "e5m2", c.recipe.pow2 ? " pow2" : "",
                (long long)c.rows, (long long)c.H, to_string(c.edit), c.layout);
  return buf;
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
// The codes and the serialised scales of one launch.
std::array<std::vector<std::uint8_t>, 2> launch_swiglu(const GpuSwigluCase& c, const void* dx,
                                                       int max_blocks, cudaStream_t s) {
  gpu::QuantizeOutput o{
      nullptr, std::size_t(c.rows * c.H), nullptr,
      0,       ScaleLayoutF32(c.layout),  ScaleLayoutE8m0(is_mx(c.recipe.kind) ? c.layout : 0)};
  o.scales_bytes = gpu::scale_bytes(c.recipe, geometry(c.recipe), c.rows, c.H, {}, o);
  DeviceBytes codes(o.codes_bytes), scales(o.scales_bytes);
  o.codes = static_cast<std::uint8_t*>(codes.p), o.scales = scales.p;
  FP8REF_CUDA_CHECK(cudaDeviceSynchronize());  // the poison and the input are in place
  gpu::swiglu_quantize({dx, Source::bf16, c.rows, 2 * c.H}, c.recipe, o, s, {max_blocks});
  FP8REF_CUDA_CHECK(cudaStreamSynchronize(s));
  return {codes.host(), scales.host()};
}
#endif

void check_gpu_swiglu(const GpuSwigluCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::vector<std::uint16_t> gu(c.gate_up.begin(), c.gate_up.end());
  const DeviceBytes dx(gu);
  const std::string context = context_of(c);
  if (h_refused(c)) {
    try {
      launch_swiglu(c, dx.p, 0, nullptr);
    } catch (const std::invalid_argument&) {
      return;
    }
    throw Violation(context + ": a shape the launcher must refuse was not refused");
  }
  const auto a = launch_swiglu(c, dx.p, c.max_blocks, nullptr);
  const Stream other;
  const auto b = launch_swiglu(c, dx.p, c.max_blocks == 0 ? 2 : 0, other.s);
  fp.fold(a[0].data(), a[0].size());
  fp.fold(a[1].data(), a[1].size());
  const std::vector<float> h = ref::swiglu_merged_bf16(gu, c.rows, c.H);
  const ExpectedQuantize want = expected_quantize(
      h.data(), Source::f32, c.rows, c.H, c.recipe, geometry(c.recipe), {},
      ScaleLayoutF32(c.layout), ScaleLayoutE8m0(is_mx(c.recipe.kind) ? c.layout : 0));
  require_same_bytes(context, "codes", a[0], want.q.codes);
  require_same_bytes(context, "scales", a[1], want.scales);
  require_same_bytes(context + " (second launch, other stream and grid)", "codes", b[0], a[0]);
  require_same_bytes(context + " (second launch, other stream and grid)", "scales", b[1], a[1]);
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.swiglu: built without CUDA");
#endif
}

TensorFile save_gpu_swiglu(const GpuSwigluCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"gate_up_bits", u32_tensor(c.gate_up, {c.rows, 2 * c.H})});
  cases::save_recipe(c.recipe, geometry(c.recipe), tf);
  cases::MetaWriter m{tf};
  m["rows"] = std::to_string(c.rows);
  m["H"] = std::to_string(c.H);
  m["values"] = gen::to_string(c.values);
  m["block"] = to_string(c.edit);
  m["layout"] = std::to_string(c.layout);
  m["max_blocks"] = std::to_string(c.max_blocks);
  return tf;
}

GpuSwigluCase load_gpu_swiglu(const TensorFile& tf) {
  GpuSwigluCase c;
  c.recipe = cases::load_recipe(tf).recipe;
  validate(c.recipe);
  c.rows = get_meta_int(tf, "rows");
  c.H = get_meta_int(tf, "H");
  const auto values = cases::from_token(gen::kValueClasses, get_meta(tf, "values"));
  const auto edit = cases::from_token(kGateEdits, get_meta(tf, "block"));
  if (!values || !edit) throw std::invalid_argument("case file: unknown value class or block");
  c.values = *values, c.edit = *edit;
  c.layout = int(get_meta_int(tf, "layout"));
  c.max_blocks = int(get_meta_int(tf, "max_blocks"));
  c.gate_up = get_u32(tf, "gate_up_bits");
  if (c.rows < 0 || c.H < 1 || std::int64_t(c.gate_up.size()) != c.rows * 2 * c.H)
    throw std::invalid_argument("case file: gate_up does not match rows x 2H");
  for (const std::uint32_t b : c.gate_up)
    if (b > 0xFFFF || (b & 0x7F80) == 0x7F80)
      throw std::invalid_argument(
          "case file: gate_up holds a non-bf16 or non-finite value (outside the SwiGLU contract)");
  if (c.layout < 0 || c.layout >= (is_mx(c.recipe.kind) ? 3 : 5) || c.max_blocks < 0)
    throw std::invalid_argument("case file: layout or max_blocks out of range");
  return c;
}

std::string gpu_swiglu_diff(const GpuSwigluCase& x, const GpuSwigluCase& y) {
  return first_difference(
      {{"recipe", same_recipe(x.recipe, y.recipe)},
       {"value class", x.values == y.values},
       {"block edit", x.edit == y.edit},
       {"layout", x.layout == y.layout},
       {"grid cap", x.max_blocks == y.max_blocks},
       {"gate/up tensor", x.rows == y.rows && x.H == y.H && x.gate_up == y.gate_up}});
}

}  // namespace

void add_gpu_swiglu_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes = {"recipe:te", "recipe:mx_rceil", "elem:e4m3",
                                      "elem:e5m2", "rows:odd",        "refused"};
  for (auto e : kGateEdits) classes.push_back(std::string("block:") + to_string(e));
  for (auto v :
       {gen::ValueClass::normal, gen::ValueClass::outliers, gen::ValueClass::subnormal_heavy,
        gen::ValueClass::near_max, gen::ValueClass::integer})
    classes.push_back(std::string("values:") + gen::to_string(v));
  out.push_back(make_suite<GpuSwigluCase>(
      {"gpu.swiglu",
       "GPU SwiGLU-then-quantize == reference/swiglu then reference/quantize bitwise",
       "gpu",
       200,
       classes,
       {"rows:0"}},
      {draw_gpu_swiglu, check_gpu_swiglu, gpu_swiglu_tags, save_gpu_swiglu, load_gpu_swiglu,
       gpu_swiglu_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
