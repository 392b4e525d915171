// The hopper_wgmma step as the library computes it (f32 products scaled and truncated by
// conversion, on codes or on decoded planes) against wgmma_step_integer.h, the model written on
// integer significands and shifts: same bits and same bound on every product pair, on
// class-weighted steps with specials, short steps and C across the f32 range; and the grouped
// GEMM, which steps on planes, against the per-element model on codes.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "numerics/models.h"
#include "proptests/common/test_level.h"
#include "proptests/numerics/models/wgmma_step_integer.h"
#include "proptests/reference/gemm_problem.h"

namespace fp8ref {
namespace {

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

struct Planes {
  std::vector<float> v;
  std::vector<std::int16_t> e;
  Planes(Format f, const std::vector<std::uint8_t>& codes) : v(codes.size()), e(codes.size()) {
    decode_wgmma_planes(f, codes.data(), std::int64_t(codes.size()), v.data(), e.data());
  }
  WgmmaPlanes at(std::size_t k) const { return {v.data() + k, e.data() + k}; }
};

// Both instruction-set copies of the planes paths where the processor has them (the baseline
// always; the test log says whether AVX2 ran).
std::vector<StepIsa> available_isas() {
  std::vector<StepIsa> v{StepIsa::baseline};
  for (StepIsa isa : {StepIsa::avx2, StepIsa::avx512})
    if (step_isa_available(isa)) v.push_back(isa);
  return v;
}

TEST(WgmmaStepImplementations, ReportsTheInstructionSets) {
  std::string names;
  for (StepIsa isa : available_isas())
    names += std::string(names.empty() ? "" : ", ") + to_string(isa);
  std::printf("wgmma planes paths checked on: %s (best: %s)\n", names.c_str(),
              to_string(best_step_isa()));
  EXPECT_TRUE(step_isa_available(best_step_isa()));
  EXPECT_TRUE(step_isa_available(StepIsa::baseline));
}

// The library on codes and on planes, and the integer oracle, agree in bits and bound.
void expect_same(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, int n,
                 Format fa, Format fb, float c) {
  const Bounded ref_z = test::wgmma_step_integer(a.data(), b.data(), n, fa, fb, c);
  const Bounded got_codes = hopper_wgmma_step_bounded(a.data(), b.data(), n, fa, fb, c);
  const Planes pa(fa, a), pb(fb, b);
  const Bounded got_planes = hopper_wgmma_step_bounded(pa.at(0), pb.at(0), n, c);
  RC_ASSERT(bits(got_codes.z) == bits(ref_z.z));
  RC_ASSERT(bits(got_planes.z) == bits(ref_z.z));
  RC_ASSERT(bits(got_codes.bound) == bits(ref_z.bound));
  RC_ASSERT(bits(got_planes.bound) == bits(ref_z.bound));
}

// Any code, NaN and Inf included, rarely.
std::uint8_t draw_code(Format f, std::mt19937_64& rng) {
  if (rng() % 64 == 0) return std::uint8_t(rng());
  return test::draw_finite_code(f, rng);
}

// C by class: zeros, f32 subnormals, far below / near / above the products, near f32 max, specials.
rc::Gen<float> gen_c() {
  auto pow2 = [](int lo, int hi) {
    return rc::gen::apply(
        [](int e, std::uint32_t m, bool s) {
          const float x = std::ldexp(1.0f + float(m & 0x7FFFFF) * 0x1p-23f, e);
          return s ? -x : x;
        },
        rc::gen::inRange(lo, hi), rc::gen::arbitrary<std::uint32_t>(), rc::gen::arbitrary<bool>());
  };
  return rc::gen::weightedOneOf<float>({
      {2, rc::gen::element(0.0f, -0.0f)},
      {1, rc::gen::map(rc::gen::inRange<std::uint32_t>(1, 0x800000),
                       [](std::uint32_t u) { return std::bit_cast<float>(u); })},
      {1, pow2(-126, -40)},
      {6, pow2(-40, 40)},
      {1, pow2(100, 128)},
      {1, rc::gen::element(INFINITY, -INFINITY, NAN, -NAN, 0x1.fffffep127f)},
  });
}

FP8REF_RC_PROP(WgmmaStepImplementations, CodesPlanesAndIntegerModelAgree, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const int n = *rc::gen::weightedOneOf<int>(
      {{6, rc::gen::just(kHopperWgmmaK)}, {1, rc::gen::inRange(0, kHopperWgmmaK)}});
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  std::vector<std::uint8_t> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k)
    a[std::size_t(k)] = draw_code(fa, rng), b[std::size_t(k)] = draw_code(fb, rng);
  const float c = *gen_c();
  RC_CLASSIFY(n < kHopperWgmmaK, "short step");
  RC_CLASSIFY(!std::isfinite(c), "special C");
  expect_same(a, b, n, fa, fb, c);
}

// Every pair of codes as the only product, with C from a fixed set: the classification of each
// product (zero, NaN / Inf, raw exponent) and its truncation, 4 × 65536 × 6 steps.
TEST(WgmmaStepImplementations, EveryCodePairAgrees) {
  const float cs[] = {0.0f, -0.0f, 1.0f, -0x1.8p-20f, 0x1p-130f, 0x1.fffffep127f};
  for (Format fa : {Format::e4m3, Format::e5m2})
    for (Format fb : {Format::e4m3, Format::e5m2})
      for (int x = 0; x < 256; ++x)
        for (int y = 0; y < 256; ++y)
          for (float c : cs) {
            std::vector<std::uint8_t> a(32, 0), b(32, 0);
            a[7] = std::uint8_t(x), b[7] = std::uint8_t(y);
            a[8] = 0x01, b[8] = std::uint8_t(x ^ y);  // a second, small term
            const Bounded ref_z = test::wgmma_step_integer(a.data(), b.data(), 32, fa, fb, c);
            const Bounded got = hopper_wgmma_step_bounded(a.data(), b.data(), 32, fa, fb, c);
            ASSERT_EQ(bits(got.z), bits(ref_z.z)) << x << " " << y << " c=" << c;
            ASSERT_EQ(bits(got.bound), bits(ref_z.bound)) << x << " " << y << " c=" << c;
          }
}

TEST(WgmmaStepImplementations, RejectsMoreThan32Products) {
  const std::vector<std::uint8_t> a(33, 0x38);
  EXPECT_THROW(hopper_wgmma_step(a.data(), a.data(), 33, Format::e4m3, Format::e4m3, 0.0f),
               std::invalid_argument);
}

FP8REF_RC_PROP(WgmmaStepImplementations, ChainOnPlanesEqualsChainOnCodes, 100, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const std::int64_t len = *rc::gen::inRange<std::int64_t>(0, 300);
  const auto a = *test::gen_codes(fa, len);
  const auto b = *test::gen_codes(fb, len);
  const float c = *gen_c();
  const Planes pa(fa, a), pb(fb, b);
  const Bounded on_codes = hopper_wgmma_chain(a.data(), b.data(), len, fa, fb, {c, 0.0});
  for (StepIsa isa : available_isas()) {
    const Bounded on_planes = hopper_wgmma_chain(pa.at(0), pb.at(0), len, {c, 0.0}, isa);
    RC_ASSERT(bits(on_codes.z) == bits(on_planes.z));
    RC_ASSERT(bits(on_codes.bound) == bits(on_planes.bound));
  }
}

// One wgmma instruction: every output of hopper_wgmma_tile is the integer model's step on its row
// of A, its column of B and its C.
FP8REF_RC_PROP(WgmmaStepImplementations, TileIsOneStepPerOutput, 30, ()) {
  const Format fa = *test::gen_format(), fb = *test::gen_format();
  const int M = *rc::gen::inRange(1, 65), N = *rc::gen::inRange(1, 260);
  // Finite operands and C for the column lanes' main path; with specials for their fallback
  // (nearly every lane group then falls back); or finite with a few rows of A holding a NaN / Inf
  // code and a few C entries NaN / Inf, so that the blocks of rows the lanes share mix rows on the
  // lane path with rows on the fallback.
  const int mode = *rc::gen::element(0, 1, 2);
  RC_CLASSIFY(mode == 0, "finite operands and C");
  RC_CLASSIFY(mode == 1, "specials anywhere");
  RC_CLASSIFY(mode == 2, "finite, a few poisoned rows and C");
  const bool finite = mode != 1;
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  std::vector<std::uint8_t> a(std::size_t(M) * 32), b(std::size_t(N) * 32);
  for (auto& x : a) x = finite ? test::draw_finite_code(fa, rng) : draw_code(fa, rng);
  for (auto& x : b) x = finite ? test::draw_finite_code(fb, rng) : draw_code(fb, rng);
  auto c = *rc::gen::container<std::vector<float>>(std::size_t(M) * std::size_t(N), gen_c());
  if (finite)
    for (float& x : c) x = std::isfinite(x) ? x : 1.5f;
  if (mode == 2) {
    // NaN in both formats; Inf only in e5m2 (e4m3 has none).
    const std::uint8_t special = fa == Format::e5m2 && rng() % 2 ? 0x7C : 0x7F;
    for (int i = 0; i < M; ++i)
      if (rng() % 5 == 0) a[std::size_t(i) * 32 + rng() % 32] = special | (rng() % 2 ? 0x80 : 0);
    const float c_special[] = {std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
    for (int n = int(rng() % 4); n > 0; --n) c[rng() % c.size()] = c_special[rng() % 3];
  }
  std::vector<float> d(c.size());
  for (StepIsa isa : available_isas()) {
    hopper_wgmma_tile(fa, fb, M, N, a.data(), b.data(), c.data(), d.data(), isa);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const std::size_t o = std::size_t(i) * std::size_t(N) + std::size_t(j);
        const Bounded want =
            test::wgmma_step_integer(a.data() + 32 * i, b.data() + 32 * j, 32, fa, fb, c[o]);
        RC_ASSERT(bits(d[o]) == bits(want.z));
      }
  }
}

// The forward steps on planes for the wgmma models: every element equals model_dot on the codes.
FP8REF_RC_PROP(WgmmaStepImplementations, GroupedForwardOnPlanesEqualsModelOnCodes, 100, ()) {
  const std::int64_t G = *rc::gen::inRange<std::int64_t>(1, 5);
  const auto map = test::gen_map(G, 12);
  const test::Problem p = test::gen_problem(map, G, 40, 400);
  const AccumulationModel m = *rc::gen::element(
      AccumulationModel::hopper_unpromoted, AccumulationModel::hopper_promoted_blockwise,
      AccumulationModel::hopper_promoted_tensorwise, AccumulationModel::hopper_promoted_rowwise);
  RC_PRE(!(needs_constant_scales(m) &&
           (p.scaling == test::Scaling::blockwise || p.scaling == test::Scaling::mx)));
  const test::ModelChoice choice{m, *rc::gen::inRange(1, 4)};
  std::vector<double> bound;
  const auto got = test::run_bits(p, choice, test::RowPolicy::zero, OutDtype::f32, &bound);
  for (std::int64_t r = 0; r < p.M; ++r) {
    const std::int64_t g = p.group_of[std::size_t(r)];
    if (g < 0) continue;
    for (std::int64_t n = 0; n < p.N; ++n) {
      const test::OracleScales os = test::oracle_scales(p, r, g, n);
      const ElementScales sc{os.sa.data(), os.sb.data(), os.sa.size() > 1, os.block};
      const Bounded want = model_dot(m, p.a.data() + r * p.K, p.b.data() + (g * p.N + n) * p.K, p.K,
                                     p.fa, p.fb, sc, SplitK(choice.split_k));
      const std::size_t i = std::size_t(r * p.N + n);
      RC_ASSERT(got[i] == bits(want.z));
      RC_ASSERT(bits(bound[i]) == bits(want.bound));
    }
  }
}

}  // namespace
}  // namespace fp8ref
