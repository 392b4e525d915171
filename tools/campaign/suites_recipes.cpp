// quantize.recipes (docs/fuzz.md "Oracle suites"): each scale recipe of docs/recipes.md
// (DeepGEMM, torchao tensorwise / rowwise, Transformer Engine, the MX FLOOR / CEIL / EVEN of
// torchao and RCEIL of the CUDA kernels) against its formula written out here with plain
// arithmetic: the block scale (decode scale, factor, E8M0 code) of tiny (1e-6 .. 1e-4), zero,
// ordinary, spike and max·2^k amaxes, and the codes of a quantized row (several blocks, the last
// one partial, a spike per block) from the table oracle (numerics/oracle/table_oracle.h) on x
// scaled by the formula's factor. Neither expectation calls numerics/scale_recipe.h or codec.h.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/suite.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/scale_recipe.h"
#include "reference/quantize.h"

namespace fp8ref::fuzz {
namespace {

struct RecipeVariant {
  const char* name;
  Recipe recipe;
};

// Every RecipeKind; torchao's power-of-two scales and torch's RCEIL are left out: they round
// through torch's f32 log2, which has no plain-arithmetic formula (docs/recipes.md).
const std::vector<RecipeVariant>& recipe_variants() {
  using K = RecipeKind;
  using R = Runtime;
  static const std::vector<RecipeVariant> v = {
      {"deepgemm", {K::deepgemm, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"deepgemm_cuda", {K::deepgemm, Format::e4m3, R::torch_cuda, false, 0.0f}},
      {"deepgemm_ue8m0", {K::deepgemm, Format::e4m3, R::torch_cpu, true, 0.0f}},
      {"torchao_e4m3", {K::torchao, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"torchao_e5m2", {K::torchao, Format::e5m2, R::torch_cuda, false, 0.0f}},
      {"te", {K::te, Format::e4m3, R::cuda_kernel, false, 0.0f}},
      {"te_eps", {K::te, Format::e4m3, R::cuda_kernel, false, 1e-5f}},
      {"te_eps_pow2", {K::te, Format::e5m2, R::cuda_kernel, true, 1e-5f}},
      {"mx_floor_e4m3", {K::mx_floor, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"mx_floor_e5m2", {K::mx_floor, Format::e5m2, R::torch_cuda, false, 0.0f}},
      {"mx_ceil", {K::mx_ceil, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"mx_even_e4m3", {K::mx_even, Format::e4m3, R::torch_cpu, false, 0.0f}},
      {"mx_even_e5m2", {K::mx_even, Format::e5m2, R::torch_cuda, false, 0.0f}},
      {"mx_rceil_e4m3", {K::mx_rceil, Format::e4m3, R::cuda_kernel, false, 0.0f}},
      {"mx_rceil_e5m2", {K::mx_rceil, Format::e5m2, R::cuda_kernel, false, 0.0f}},
  };
  return v;
}

float pow2f(int k) { return std::ldexp(1.0f, k); }
// floor(log2 x) and the significand x / 2^floor(log2 x) in [1, 2), for a positive normal f32.
int floor_log2(float x) {
  int e = 0;
  (void)std::frexp(x, &e);
  return e - 1;
}
double significand(float x) { return std::ldexp(double(x), -floor_log2(x)); }

// DeepGEMM sf = clamp(amax, 1e-4) / 448 (torch_cuda: times f32(1/448)), ue8m0: sf rounded up to
// a power of two (exponent field 1 .. 254); the elements are scaled by 1 / sf.
BlockScale deepgemm_formula(const Recipe& r, float amax) {
  const float a = amax < 1e-4f ? 1e-4f : amax;
  float sf = r.runtime == Runtime::torch_cuda ? a * float(1.0 / 448.0) : a / 448.0f;
  if (r.pow2) {
    const int k = floor_log2(sf) + (significand(sf) > 1.0 ? 1 : 0);
    sf = pow2f(std::clamp(k, -126, 127));
  }
  return {sf, 1.0f / sf, false, 0};
}

// torchao: scale = f32(f64(1 / max(amax, 1e-12)) · max); s = 1 / scale in f32.
BlockScale torchao_formula(float amax, double max) {
  const double a = amax < 1e-12 ? 1e-12 : double(amax);
  const float scale = float((1.0 / a) * max);
  return {1.0f / scale, scale, false, 0};
}

// TE: scale = max / max(amax, eps) (1 for a zero amax), pow2: rounded down; s = 1 / scale.
BlockScale te_formula(const Recipe& r, float amax, float max) {
  const float a = amax < r.epsilon ? r.epsilon : amax;
  float scale = a == 0.0f ? 1.0f : max / a;
  if (r.pow2 && a != 0.0f) scale = pow2f(floor_log2(scale));
  return {float(1.0 / double(scale)), scale, false, 0};
}

// torchao to_mx: p = floor(log2 amax) (a zero amax counts as 2^-126), CEIL: up unless amax is a
// power of two, EVEN: up when the significand rounds (half up) to 2 on the element's mantissa
// bits; e8m0 = clamp(p - emax, -127, 128) + 127; elements divided by max(2^(e8m0-127), 2^-126).
BlockScale mx_torchao_formula(const Recipe& r, float amax) {
  const int mbits = r.elem == Format::e4m3 ? 3 : 2, emax = r.elem == Format::e4m3 ? 8 : 15;
  int p = -126;
  if (amax != 0.0f) {
    p = floor_log2(amax);
    const double sig = significand(amax);
    if (r.kind == RecipeKind::mx_ceil && sig > 1.0) ++p;
    if (r.kind == RecipeKind::mx_even && sig >= 2.0 - std::ldexp(1.0, -(mbits + 1))) ++p;
  }
  const int biased = std::clamp(p - emax, -127, 128) + 127;
  return {float(std::ldexp(1.0, biased - 127)), std::max(pow2f(biased - 127), pow2f(-126)), true,
          std::uint8_t(biased)};
}

// RCEIL (CUDA kernels): e = ceil(log2(amax · f32(1/max))) + 127, clamped to [0, 254]; the
// elements are multiplied by 2^(127-e) (1 for e = 0).
BlockScale mx_rceil_formula(float amax, float max) {
  const float d = amax * float(1.0 / double(max));
  int e = d == 0.0f ? 0 : floor_log2(d) + (significand(d) > 1.0 ? 1 : 0) + 127;
  e = std::clamp(e, 0, 254);
  return {std::ldexp(1.0f, e - 127), e == 0 ? 1.0f : std::ldexp(1.0f, 127 - e), false,
          std::uint8_t(e)};
}

BlockScale recipe_formula(const Recipe& r, float amax) {
  const float max = r.elem == Format::e4m3 ? 448.0f : 57344.0f;
  switch (r.kind) {
    case RecipeKind::deepgemm: return deepgemm_formula(r, amax);
    case RecipeKind::torchao: return torchao_formula(amax, max);
    case RecipeKind::te: return te_formula(r, amax, max);
    case RecipeKind::mx_rceil: return mx_rceil_formula(amax, max);
    default: return mx_torchao_formula(r, amax);
  }
}

// Tiny (1e-6 .. 1e-4), zero, ordinary, spike, and max·2^k (an exact power-of-two descale).
float draw_amax(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  switch (rng() % 6) {
    case 0:
    case 1: return float(std::pow(10.0, -6 + 2 * u(rng)));
    case 2: return 0.0f;
    case 3: return float(std::pow(10.0, -3 + 6 * u(rng)));
    case 4: return float(1e4 * (1 + u(rng)));
    default: return std::ldexp(rng() & 1 ? 448.0f : 57344.0f, int(rng() % 40) - 30);
  }
}

std::string bits_text(float x) { return hex(std::bit_cast<std::uint32_t>(x)); }
bool same(float x, float y) {
  return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}

void check_scales(const RecipeVariant& v, std::mt19937_64& rng, Fingerprint& fp) {
  for (int i = 0; i < 16; ++i) {
    const float amax = draw_amax(rng);
    const BlockScale got = block_scale(v.recipe, amax, Source::bf16);
    const BlockScale want = recipe_formula(v.recipe, amax);
    fp.fold(&got.s, sizeof got.s);
    if (!same(got.s, want.s) || !same(got.factor, want.factor) || got.divide != want.divide ||
        got.e8m0 != want.e8m0)
      throw Violation(std::string("recipe ") + v.name + ": amax " + std::to_string(amax) + " (" +
                      bits_text(amax) + ") gives s " + bits_text(got.s) + " factor " +
                      bits_text(got.factor) + " e8m0 " + hex(got.e8m0) + ", the formula " +
                      bits_text(want.s) + " / " + bits_text(want.factor) + " / " + hex(want.e8m0));
  }
}

// One row of 1..3 blocks (the last one partial at times), bf16-exact; per block a spike at
// +-amax and the rest multiples of amax / 2^12; quantized by the reference, each block's scale
// and every code compared with the formula and the table oracle.
void check_codes(const RecipeVariant& v, std::mt19937_64& rng, Fingerprint& fp) {
  const Recipe& r = v.recipe;
  const std::int64_t blk = is_mx(r.kind) ? 32 : 128, n = 1 + std::int64_t(rng() % (3 * blk));
  std::vector<std::uint16_t> row(static_cast<std::size_t>(n));
  std::vector<float> x(row.size()), amax;
  for (std::int64_t b0 = 0; b0 < n; b0 += blk) {
    const std::int64_t b1 = std::min(n, b0 + blk), spike = b0 + std::int64_t(rng() % (b1 - b0));
    const float a = draw_amax(rng);
    float m = 0.0f;
    for (std::int64_t j = b0; j < b1; ++j) {
      const double frac = j == spike ? 1.0 : std::ldexp(double(rng() % 4096), -12);
      const float xj = float(a * frac) * (rng() & 1 ? -1.0f : 1.0f);
      row[std::size_t(j)] = std::uint16_t(std::bit_cast<std::uint32_t>(xj) >> 16);
      x[std::size_t(j)] = std::bit_cast<float>(std::uint32_t(row[std::size_t(j)]) << 16);
      m = std::max(m, std::fabs(x[std::size_t(j)]));
    }
    amax.push_back(m);
  }
  const ref::Quantized q =
      ref::quantize({row.data(), Source::bf16, 1, n, n, 1}, r,
                    is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128);
  fp.fold(q.codes.data(), q.codes.size());
  const EncodeSpec spec{Rounding::rne,
                        r.kind == RecipeKind::deepgemm ? Overflow::nonsat : Overflow::sat,
                        NanEncoding::quiet_signed, InfEncoding::saturate, 32};
  for (std::int64_t j = 0; j < n; ++j) {
    const BlockScale want = recipe_formula(r, amax[std::size_t(j / blk)]);
    if (j % blk == 0 && !same(q.scale[std::size_t(j / blk)], want.s))
      throw Violation(std::string("recipe ") + v.name + ": block " + std::to_string(j / blk) +
                      " of amax " + bits_text(amax[std::size_t(j / blk)]) + " has s " +
                      bits_text(q.scale[std::size_t(j / blk)]) + ", the formula " +
                      bits_text(want.s));
    const float xj = x[std::size_t(j)];
    const float y = want.divide ? xj / want.factor : xj * want.factor;
    const std::uint8_t code =
        oracle::table_oracle_encode(r.elem, std::bit_cast<std::uint64_t>(double(y)), spec);
    if (q.codes[std::size_t(j)] != code)
      throw Violation(std::string("recipe ") + v.name + ": element " + bits_text(xj) +
                      " scaled to " + bits_text(y) + " has code " + hex(q.codes[std::size_t(j)]) +
                      ", the table oracle says " + hex(code));
  }
}

void check_recipe(std::int64_t variant, std::uint64_t seed, Fingerprint& fp) {
  const RecipeVariant& v = recipe_variants()[std::size_t(variant)];
  std::mt19937_64 rng(seed);
  check_scales(v, rng, fp);
  check_codes(v, rng, fp);
}

}  // namespace

void add_recipe_suite(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (const auto& v : recipe_variants()) classes.push_back(std::string("recipe:") + v.name);
  out.push_back(seed_suite(
      {"quantize.recipes",
       "each recipe's block scales and codes == the docs/recipes.md formula + the table oracle",
       "cpu",
       300,
       classes,
       {}},
      std::int64_t(recipe_variants().size()),
      [](std::int64_t v) {
        return std::string("recipe:") + recipe_variants()[std::size_t(v)].name;
      },
      check_recipe));
}

}  // namespace fp8ref::fuzz
