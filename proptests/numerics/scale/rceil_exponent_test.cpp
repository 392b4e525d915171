// torchao RCEIL under torch (docs/recipes.md, mx_rceil torch_*): quantize takes the E8M0 code by
// one threshold compare per binade (numerics/torch_rceil_exponent.h) instead of torchao's
// ceil(log2(descale)). The oracle here is torchao's formula written out again with an f32 log2,
// never the code under test: the code is equal on all 2^32 descale patterns, and the whole block
// scale is equal per runtime and element format (level 3: every amax pattern).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cases/compare.h"
#include "numerics/scale_recipe.h"
#include "proptests/common/sweep_report.h"
#include "proptests/common/test_level.h"

namespace fp8ref {
namespace {

// torchao 0.18 _to_mx_rceil: e = NaN ? 0xFF : Inf ? 0xFE : clamp(ceil(log2(d)), -127, 127) + 127,
// with torch.log2 of an f32 as the f64 log2 rounded to f32 (+-0: log2 = -Inf, clamp to -127).
std::uint8_t rceil_code_oracle(float d) {
  if (std::isnan(d)) return 0xFF;
  if (std::isinf(d)) return 0xFE;
  const float c = std::ceil(static_cast<float>(std::log2(static_cast<double>(d))));
  return static_cast<std::uint8_t>(std::fmin(std::fmax(c, -127.0f), 127.0f) + 127.0f);
}

// torchao 0.18 _to_mx_rceil's block scale: descale = f32 max_abs / max_pos as torch divides by a
// python scalar (CUDA: times f32(1 / max_pos)); factor = e == 0xFF ? descale : e == 0 ? 1 :
// 2^(127 - e); decode scale s = 2^(e - 127) (NaN for 0xFF).
BlockScale rceil_scale_oracle(Runtime rt, Format elem, float amax) {
  const float max_pos = elem == Format::e4m3 ? 448.0f : 57344.0f;
  const float descale = rt == Runtime::torch_cuda
                            ? amax * static_cast<float>(1.0 / static_cast<double>(max_pos))
                            : amax / max_pos;
  const std::uint8_t e = rceil_code_oracle(descale);
  const float factor = e == 0xFF ? descale
                       : e == 0  ? 1.0f
                                 : static_cast<float>(std::ldexp(1.0, 127 - int(e)));
  const float s = e == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                            : static_cast<float>(std::ldexp(1.0, int(e) - 127));
  return {s, factor, false, e};
}

bool same_scale(const BlockScale& a, const BlockScale& b) {
  return cases::same_bits(a.s, b.s) && cases::same_bits(a.factor, b.factor) &&
         a.divide == b.divide && a.e8m0 == b.e8m0;
}

// Negative finite non-zero descales have no code (their log2 is NaN); a descale is |amax| /
// max_pos.
bool in_domain(std::uint32_t b) { return b <= 0x80000000u || b >= 0xFF800000u; }

// mx_rceil cuda_kernel reads its E8M0 code off the f32 fields (e8m0_ceil_satfinite_f32); the
// generic codec's ceil + saturating E8M0 encode is the reference, on every f32 exponent field and
// top mantissa bits with the low bits that decide a ceil (zero, one, half, all).
TEST(RceilKernelScale, CeilSatfiniteOnF32FieldsEqualsGenericEncode) {
  const E8m0Spec ceil_sat{E8m0Rounding::ceil, true, false, false};
  std::uint64_t checked = 0;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x3FFFu, 0x4000u, 0x7FFFu, 0x8000u, 0xFFFFu}) {
      const std::uint32_t u = hi << 16 | lo;
      const double x = double(std::bit_cast<float>(u));
      ASSERT_EQ(detail::e8m0_ceil_satfinite_f32(u),
                encode_e8m0_bits(std::bit_cast<std::uint64_t>(x), ceil_sat))
          << std::hex << "f32 0x" << u;
      ++checked;
    }
  EXPECT_EQ(checked, 0x10000u * 7);
}

TEST(RceilKernelScale, E8m0ValueEqualsDecodeOnEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const float got = detail::e8m0_value_f32(std::uint8_t(c));
    const double want = decode_f64(Format::e8m0, std::uint8_t(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(double(got), want) << c;
    }
  }
}

TEST(TorchRceilScale, ThresholdCodeEqualsCeilLog2OnEveryF32Descale) {
  const std::uint64_t n = std::uint64_t{1} << 32;
  const test::SweepLog log =
      test::parallel_sweep(n, [](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t i = b; i < e; ++i) {
          const auto x = std::uint32_t(i);
          if (!in_domain(x)) continue;
          const float d = std::bit_cast<float>(x);
          const std::uint8_t ref_z = rceil_code_oracle(d);
          const std::uint8_t got_z = detail::torch_rceil_e8m0_threshold(d);
          if (got_z != ref_z) l.add(x, 0, ref_z, got_z);
        }
      });
  test::report_sweep("torch_rceil_e8m0_threshold", n, log, {"descale"}, 8);
}

// The amax patterns of one sweep index: level 3 every non-negative pattern; below, every 251st
// pattern plus the 2^13 patterns on each side of 2^j and of 1.75 * 2^j (max_pos * 2^k: where
// descale crosses a power of two and the code steps) for every exponent field j.
constexpr std::uint64_t kWindow = 1u << 13, kAnchors = 256 * 2, kStride = 251;
std::uint64_t sampled_inputs() {
  return kAnchors * 2 * kWindow + (std::uint64_t{1} << 31) / kStride;
}
std::uint32_t sampled_amax(std::uint64_t i) {
  if (i >= kAnchors * 2 * kWindow) return std::uint32_t((i - kAnchors * 2 * kWindow) * kStride);
  const std::uint64_t anchor = i / (2 * kWindow), off = i % (2 * kWindow);
  const std::uint64_t base = (anchor / 2) << 23 | (anchor % 2 ? 0x600000u : 0u);
  const std::uint64_t b = base + off - kWindow;  // wraps below 0 / runs past NaN: clamp
  return b > 0x7FFFFFFFu ? (off < kWindow ? 0u : 0x7FFFFFFFu) : std::uint32_t(b);
}

TEST(TorchRceilScale, BlockScaleEqualsLog2FormulaForEachRuntimeAndFormat) {
  struct Config {
    Runtime rt;
    Format elem;
    const char* name;
  };
  const std::vector<Config> configs = {{Runtime::torch_cpu, Format::e4m3, "torch_cpu e4m3"},
                                       {Runtime::torch_cpu, Format::e5m2, "torch_cpu e5m2"},
                                       {Runtime::torch_cuda, Format::e4m3, "torch_cuda e4m3"},
                                       {Runtime::torch_cuda, Format::e5m2, "torch_cuda e5m2"}};
  const bool all = test::test_level() >= 3;
  const std::uint64_t n = all ? (std::uint64_t{1} << 31) : sampled_inputs();
  const std::uint32_t specials[] = {0x80000000u, 0xFF800000u, 0xFFC00000u, 0xFFFFFFFFu,
                                    0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7F7FFFFFu};
  std::vector<std::string> names;
  for (const Config& c : configs) names.push_back(c.name);
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const Recipe r{RecipeKind::mx_rceil, configs[k].elem, configs[k].rt, false, 0.0f};
    const auto check = [&](std::uint32_t x, test::SweepLog& l) {
      const float amax = std::bit_cast<float>(x);
      const BlockScale ref_z = rceil_scale_oracle(r.runtime, r.elem, amax);
      const BlockScale got_z = block_scale(r, amax, Source::f32);
      // Equal codes in a logged mismatch mean s or the factor differ.
      if (!same_scale(ref_z, got_z)) l.add(x, int(k), ref_z.e8m0, got_z.e8m0);
    };
    test::SweepLog log =
        test::parallel_sweep(n, [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
          for (std::uint64_t i = b; i < e; ++i) check(all ? std::uint32_t(i) : sampled_amax(i), l);
        });
    for (const std::uint32_t x : specials) check(x, log);
    test::report_sweep("mx_rceil_torch_block_scale", n + std::size(specials), log, names, 8);
  }
}

}  // namespace
}  // namespace fp8ref
