// quantize.laws (docs/fuzz.md "Oracle suites"): laws every scale recipe of docs/recipes.md obeys,
// checked on the library's results without its formula: each code of a quantized row is a
// nearest code (ties to even, saturating where the recipe clamps) of x scaled by its block's
// factor, found by a search over every decoded code; decode scales are monotone in amax; the
// amax clamp (DeepGEMM 1e-4) and TE's amax_epsilon hold the scale constant below them; RCEIL is
// the least power of two not below amax / max (so no element overflows); MX floor / ceil bracket
// amax by 2^emax·s. quantize.recipes checks the same recipes against their formulas.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/laws/law_suites.h"
#include "numerics/codec.h"
#include "numerics/scale_recipe.h"
#include "reference/quantize.h"

namespace fp8ref::fuzz {
namespace {

struct LawRecipe {
  const char* name;
  Recipe recipe;
};

const std::vector<LawRecipe>& law_recipes() {
  using K = RecipeKind;
  using R = Runtime;
  static const std::vector<LawRecipe> v = {
      {"deepgemm", {K::deepgemm, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"deepgemm_cuda", {K::deepgemm, Format::e4m3, R::torch_cuda, false, 0.0f}},
      {"deepgemm_ue8m0", {K::deepgemm, Format::e4m3, R::torch_cpu, true, 0.0f}},
      {"torchao_e4m3", {K::torchao, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"torchao_e5m2_pow2", {K::torchao, Format::e5m2, R::torch_cuda, true, 0.0f}},
      {"te", {K::te, Format::e4m3, R::cuda_kernel, false, 0.0f}},
      {"te_eps", {K::te, Format::e4m3, R::cuda_kernel, false, 1e-5f}},
      {"te_eps_pow2_e5m2", {K::te, Format::e5m2, R::cuda_kernel, true, 3e-5f}},
      {"mx_floor", {K::mx_floor, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"mx_ceil_e5m2", {K::mx_ceil, Format::e5m2, R::torch_cpu, false, 0.0f}},
      {"mx_even", {K::mx_even, Format::e4m3, R::torch_cuda, false, 0.0f}},
      {"mx_rceil", {K::mx_rceil, Format::e4m3, R::cuda_kernel, false, 0.0f}},
      {"mx_rceil_e5m2", {K::mx_rceil, Format::e5m2, R::cuda_kernel, false, 0.0f}},
      {"mx_rceil_torch", {K::mx_rceil, Format::e4m3, R::torch_cpu, false, 0.0f}},
  };
  return v;
}

[[noreturn]] void law_broken(const LawRecipe& v, const std::string& what) {
  throw Violation(std::string("recipe ") + v.name + ": " + what);
}
std::string f32_text(float x) {
  return std::to_string(x) + " (" + hex(std::bit_cast<std::uint32_t>(x)) + ")";
}

// The nearest code to y by a search over every code's decoded value: ties to the even code,
// |y| past max finite -> max (saturating) or the overflow code; the sign is y's.
std::uint8_t nearest_code(Format f, double y, bool sat) {
  const bool neg = std::signbit(y);
  const double a = std::fabs(y);
  const std::uint8_t max_code = f == Format::e4m3 ? 0x7E : 0x7B;
  int best = 0;
  for (int c = 1; c <= max_code; ++c) {
    const double dc = std::fabs(decode_f64(f, std::uint8_t(c)) - a);
    const double db = std::fabs(decode_f64(f, std::uint8_t(best)) - a);
    if (dc < db || (dc == db && (c & 1) == 0)) best = c;
  }
  const double top = decode_f64(f, max_code), ulp = top - decode_f64(f, max_code - 1);
  if (best == max_code && a >= top + ulp / 2 && !sat) best = f == Format::e4m3 ? 0x7F : 0x7C;
  return std::uint8_t(best | (neg ? 0x80 : 0));
}

// A block's elements: one spike at +-amax, the rest random fractions of it, bf16-exact when the
// source is bf16; amax tiny (1e-7 .. 1e-3), zero, ordinary, or max·2^k.
float draw_block_amax(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  switch (rng() % 5) {
    case 0: return float(std::pow(10.0, -7 + 4 * u(rng)));
    case 1: return 0.0f;
    case 2: return float(std::pow(10.0, -2 + 5 * u(rng)));
    case 3: return std::ldexp(448.0f, int(rng() % 30) - 20);
    default: return float(1 + u(rng));
  }
}
float to_source(float x, Source src) {
  if (src != Source::bf16) return x;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xFFFF0000u);
}

// Law 1: each code is the nearest code of RN(x·factor) (or x / factor) of its block, the
// factor and scale being the library's own block_scale of the block's amax.
void law_codes(const LawRecipe& v, std::mt19937_64& rng, Fingerprint& fp) {
  const Recipe& r = v.recipe;
  const Source src = rng() & 1 ? Source::bf16 : Source::f32;
  const std::int64_t blk = is_mx(r.kind) ? 32 : 128, n = 1 + std::int64_t(rng() % (3 * blk));
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t b0 = 0; b0 < n; b0 += blk) {
    const float amax = draw_block_amax(rng);
    const std::int64_t b1 = std::min(n, b0 + blk),
                       spike = b0 + std::int64_t(rng() % std::uint64_t(b1 - b0));
    for (std::int64_t j = b0; j < b1; ++j) {
      const float frac = j == spike ? 1.0f : float(std::ldexp(double(rng() % 4096), -12));
      x[std::size_t(j)] = to_source(amax * frac * (rng() & 1 ? -1.0f : 1.0f), src);
    }
  }
  std::vector<std::uint32_t> f32(x.size());
  std::vector<std::uint16_t> b16(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    f32[i] = std::bit_cast<std::uint32_t>(x[i]), b16[i] = std::uint16_t(f32[i] >> 16);
  const ref::SourceView2d view{src == Source::bf16 ? static_cast<const void*>(b16.data())
                                                   : static_cast<const void*>(f32.data()),
                               src,
                               1,
                               n,
                               n,
                               1};
  const ref::Quantized q =
      ref::quantize(view, r, is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128);
  fp.fold(q.codes.data(), q.codes.size());
  for (std::int64_t b0 = 0; b0 < n; b0 += blk) {
    float amax = 0.0f;
    for (std::int64_t j = b0; j < std::min(n, b0 + blk); ++j)
      amax = std::max(amax, std::fabs(x[std::size_t(j)]));
    const BlockScale bs = block_scale(r, amax, src);
    if (std::bit_cast<std::uint32_t>(q.scale[std::size_t(b0 / blk)]) !=
        std::bit_cast<std::uint32_t>(bs.s))
      law_broken(v, "quantize's block scale differs from block_scale of amax " + f32_text(amax));
    for (std::int64_t j = b0; j < std::min(n, b0 + blk); ++j) {
      const float xj = x[std::size_t(j)];
      const float y = bs.divide ? xj / bs.factor : xj * bs.factor;
      const std::uint8_t want = nearest_code(r.elem, y, r.kind != RecipeKind::deepgemm);
      if (q.codes[std::size_t(j)] != want)
        law_broken(v, "element " + f32_text(xj) + " scaled to " + f32_text(y) + " has code " +
                          hex(q.codes[std::size_t(j)]) + ", the nearest code is " + hex(want));
    }
  }
}

// Law 2: scale laws on drawn amax pairs (monotone; clamp and epsilon; RCEIL; MX floor / ceil).
void law_scales(const LawRecipe& v, std::mt19937_64& rng, Fingerprint& fp) {
  const Recipe& r = v.recipe;
  const Source src = Source::bf16;
  const float clamp = r.kind == RecipeKind::deepgemm ? 1e-4f : r.epsilon;
  const float a1 = draw_block_amax(rng), a2 = rng() % 3 == 0 ? clamp : draw_block_amax(rng);
  const BlockScale s1 = block_scale(r, a1, src), s2 = block_scale(r, a2, src);
  fp.fold(&s1.s, sizeof s1.s);
  if (a1 > 0 && a2 > 0 && (a1 < a2) != (a2 < a1) && ((a1 < a2) ? s1.s > s2.s : s2.s > s1.s))
    law_broken(v, "scale not monotone: amax " + f32_text(a1) + " -> s " + f32_text(s1.s) +
                      ", amax " + f32_text(a2) + " -> s " + f32_text(s2.s));
  if (clamp > 0 && a1 < clamp) {
    const BlockScale sc = block_scale(r, clamp, src);
    if (std::bit_cast<std::uint32_t>(s1.s) != std::bit_cast<std::uint32_t>(sc.s))
      law_broken(v, "amax " + f32_text(a1) + " below the clamp " + f32_text(clamp) + " gives s " +
                        f32_text(s1.s) + ", the clamp itself " + f32_text(sc.s));
  }
  const double emax_pow = r.elem == Format::e4m3 ? 256.0 : 32768.0;
  const double max = r.elem == Format::e4m3 ? 448.0 : 57344.0;
  const bool inner = s1.e8m0 > 1 && s1.e8m0 < 0xFD && a1 > 0;
  if (r.kind == RecipeKind::mx_rceil && r.runtime == Runtime::cuda_kernel && inner) {
    const double d = double(a1 * float(1.0 / max));  // the kernel's f32 descale
    if (!(double(s1.s) >= d && double(s1.s) / 2 < d))
      law_broken(v, "RCEIL scale " + f32_text(s1.s) +
                        " is not the least power of two >= " + "amax / max = " + std::to_string(d));
  }
  if ((r.kind == RecipeKind::mx_floor || r.kind == RecipeKind::mx_ceil) && inner) {
    const double lo = emax_pow * s1.s, a = a1;
    const bool ok = r.kind == RecipeKind::mx_floor ? lo <= a && a < 2 * lo : lo >= a && a > lo / 2;
    if (!ok)
      law_broken(v,
                 "amax " + f32_text(a1) + " is not bracketed by 2^emax·s = " + std::to_string(lo));
  }
}

void check_quantize_law(std::int64_t variant, std::uint64_t seed, Fingerprint& fp) {
  const LawRecipe& v = law_recipes()[std::size_t(variant)];
  std::mt19937_64 rng(seed);
  law_codes(v, rng, fp);
  for (int i = 0; i < 16; ++i) law_scales(v, rng, fp);
}

}  // namespace

void add_quantize_law_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (const auto& v : law_recipes()) classes.push_back(std::string("recipe:") + v.name);
  out.push_back(seed_suite(
      {"quantize.laws",
       "recipe laws: nearest codes, monotone scales, clamp / epsilon, RCEIL, MX brackets",
       "cpu",
       300,
       classes,
       {}},
      std::int64_t(law_recipes().size()),
      [](std::int64_t v) { return std::string("recipe:") + law_recipes()[std::size_t(v)].name; },
      check_quantize_law));
}

}  // namespace fp8ref::fuzz
