// gemm.model_laws (docs/fuzz.md "Oracle suites"): laws of the Hopper accumulation models
// (docs/models.md) checked with the model as its own oracle on sub-problems, so the expected bits
// never come from a second implementation of the step: a wgmma step keeps 14 significant bits
// (13 fraction bits), promotion happens exactly at each 128 of K (the whole run equals the f32
// sum of its 128-blocks run alone), split-K slices are added in slice order (the run equals the
// f32 sum of its slices run alone, first slice first), the rowwise epilogue is RN(sa·RN(sb·acc))
// and the blockwise promotion is fmaf(RN(sa·sb), T, acc); mma.sync adds its C last in f32 RN.
// gemm.model_bits checks the same models against a second implementation; the two suites share
// no code.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/laws/law_suites.h"
#include "numerics/models.h"

namespace fp8ref::fuzz {
namespace {

constexpr float kUnit = 1.0f;
const ElementScales kUnitScales{&kUnit, &kUnit, false};

// A code of magnitude about 2^m with a random sign (finite: never S.1111.111 / exponent 31).
std::uint8_t near_pow2(Format f, int m, std::mt19937_64& rng) {
  const std::uint8_t s = std::uint8_t((rng() & 1) << 7);
  if (f == Format::e4m3) {
    const int e = std::clamp(7 + m, 1, 15), man = int(rng() % (e == 15 ? 7 : 8));
    return std::uint8_t(s | (e << 3) | man);
  }
  return std::uint8_t(s | (std::clamp(15 + m, 1, 30) << 2) | int(rng() % 4));
}

struct LawCase {
  std::vector<std::uint8_t> a, b;
  Format fb = Format::e4m3;
  std::int64_t K = 0;
};

// `nb` 128-blocks (the last one ragged at times), each of its own magnitude 2^(-8..8); a block
// is at times the negation of the block before it (cancellation), so order and grouping matter.
LawCase draw_blocks(std::mt19937_64& rng, std::int64_t nb) {
  LawCase c;
  c.fb = rng() % 3 == 0 ? Format::e5m2 : Format::e4m3;
  c.K = nb * 128 - (rng() % 4 == 0 ? std::int64_t(rng() % 127) : 0);
  c.a.resize(std::size_t(c.K));
  c.b.resize(std::size_t(c.K));
  for (std::int64_t blk = 0; blk < nb; ++blk) {
    const std::int64_t k0 = blk * 128, k1 = std::min(c.K, k0 + 128);
    const bool negate = blk > 0 && rng() % 3 == 0;
    const int mag = int(rng() % 9) - 4;
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::size_t i = std::size_t(k);
      if (negate) {
        c.a[i] = std::uint8_t(c.a[i - 128] ^ 0x80);
        c.b[i] = c.b[i - 128];
      } else {
        c.a[i] = near_pow2(Format::e4m3, mag + int(rng() % 3) - 1, rng);
        c.b[i] = near_pow2(c.fb, mag + int(rng() % 3) - 1, rng);
      }
    }
  }
  return c;
}

float run(AccumulationModel m, const LawCase& c, std::int64_t k0, std::int64_t k1,
          ElementScales sc = kUnitScales, SplitK split = SplitK(1)) {
  return model_dot(m, &c.a[std::size_t(k0)], &c.b[std::size_t(k0)], k1 - k0, Format::e4m3, c.fb, sc,
                   split)
      .z;
}

// A scale with a full 24-bit significand near 1.
float full_scale(std::mt19937_64& rng) {
  const std::uint32_t e = 127 + std::uint32_t(rng() % 9) - 4;
  return std::bit_cast<float>((e << 23) | std::uint32_t(rng() & 0x7FFFFF) | 1u);
}

constexpr const char* kLaws[] = {"fourteen_bits",    "promotion_at_128", "slices_in_order",
                                 "rowwise_epilogue", "blockwise_fma",    "mma_sync_c_last"};
constexpr std::int64_t kNumLaws = 6;

void broken(std::int64_t law, const LawCase& c, const std::string& what, float got, float want) {
  throw Violation(std::string("law ") + kLaws[law] + " (K=" + std::to_string(c.K) + "): " + what +
                  " gives " + hex(std::bit_cast<std::uint32_t>(got)) + ", the law " +
                  hex(std::bit_cast<std::uint32_t>(want)));
}

// Unscaled hopper_unpromoted over one slice is one chain of wgmma steps: every step result, the
// last one included, is normalised and truncated to 14 significant bits, so a normal result has
// its 10 low mantissa bits clear (docs/models.md, wgmma step).
void law_fourteen_bits(const LawCase& c, Fingerprint& fp) {
  const float z = run(AccumulationModel::hopper_unpromoted, c, 0, c.K);
  fp.fold(&z, sizeof z);
  const std::uint32_t u = std::bit_cast<std::uint32_t>(z);
  if (std::isnormal(z) && (u & 0x3FFu) != 0)
    broken(0, c, "hopper_unpromoted", z, std::bit_cast<float>(u & ~0x3FFu));
}

// The promoted f32 sum starts a chain from +0 at every 128 of K: the whole run equals the f32
// left fold of each 128-block run alone.
void law_promotion(const LawCase& c, Fingerprint& fp) {
  const AccumulationModel m = AccumulationModel::hopper_promoted_tensorwise;
  float want = 0.0f;
  for (std::int64_t k = 0; k < c.K; k += 128) {
    const float t = run(m, c, k, std::min(c.K, k + 128));
    want = k == 0 ? t : want + t;
  }
  const float got = run(m, c, 0, c.K);
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    broken(1, c, "hopper_promoted_tensorwise", got, want);
}

// Split-K: slice s covers 128-blocks [s·L, (s+1)·L); the run equals the f32 left fold, in slice
// order, of each slice run alone. The second slice cancels the first, so order matters.
void law_slices(const LawCase& c0, std::mt19937_64& rng, Fingerprint& fp) {
  const std::int64_t L = 1 + std::int64_t(rng() % 2), S = 3 + std::int64_t(rng() % 3);
  LawCase c = c0;
  c.K = std::min(c0.K, L * S * 128);
  c.a.resize(std::size_t(c.K));
  c.b.resize(std::size_t(c.K));
  // Slice 0 large (products near 2^6), slices 2.. small (near 2^-6): the small slices survive
  // only when added after slice 1 has cancelled slice 0.
  for (std::int64_t k = 0; k < c.K; ++k) {
    if (k >= L * 128 && k < 2 * L * 128) continue;
    const int mag = k < L * 128 ? 3 : -3;
    c.a[std::size_t(k)] = near_pow2(Format::e4m3, mag + int(rng() % 3) - 1, rng);
    c.b[std::size_t(k)] = near_pow2(c.fb, mag + int(rng() % 3) - 1, rng);
  }
  for (std::int64_t k = L * 128; k < std::min(c.K, 2 * L * 128); ++k)  // slice 1 = -slice 0
    c.a[std::size_t(k)] = std::uint8_t(c.a[std::size_t(k - L * 128)] ^ 0x80),
    c.b[std::size_t(k)] = c.b[std::size_t(k - L * 128)];
  const bool by_length = rng() & 1;
  const SplitK split = by_length ? SplitK::of_length(L) : SplitK(int(ceil_div(c.K, L * 128)));
  const AccumulationModel m = rng() & 1 ? AccumulationModel::hopper_unpromoted
                                        : AccumulationModel::hopper_promoted_tensorwise;
  float want = 0.0f;
  for (std::int64_t k = 0; k < c.K; k += L * 128) {
    const float t = run(m, c, k, std::min(c.K, k + L * 128));
    want = k == 0 ? t : want + t;
  }
  const float got = run(m, c, 0, c.K, kUnitScales, split);
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    broken(2, c, std::string(to_string(m)) + " " + split.str(), got, want);
}

// Rowwise epilogue: out = RN(sa·RN(sb·acc)), acc the unscaled run.
void law_rowwise(const LawCase& c, std::mt19937_64& rng, Fingerprint& fp) {
  const AccumulationModel m = AccumulationModel::hopper_promoted_rowwise;
  const float sa = full_scale(rng), sb = full_scale(rng);
  const float acc = run(m, c, 0, c.K);
  const float want = sa * (sb * acc);
  const float got = run(m, c, 0, c.K, ElementScales{&sa, &sb, false});
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    broken(3, c, "hopper_promoted_rowwise", got, want);
}

// Blockwise: acc = fmaf(RN(sa_b·sb_b), T_b, acc) from +0, T_b the unscaled run of block b alone.
void law_blockwise(const LawCase& c, std::mt19937_64& rng, Fingerprint& fp) {
  const std::int64_t nb = ceil_div(c.K, 128);
  std::vector<float> sa(static_cast<std::size_t>(nb)), sb(static_cast<std::size_t>(nb));
  for (std::int64_t b = 0; b < nb; ++b)
    sa[std::size_t(b)] = full_scale(rng), sb[std::size_t(b)] = full_scale(rng);
  float want = 0.0f;
  for (std::int64_t b = 0; b < nb; ++b) {
    const float t = run(AccumulationModel::hopper_promoted_tensorwise, c, b * 128,
                        std::min(c.K, b * 128 + 128));
    want = std::fmaf(sa[std::size_t(b)] * sb[std::size_t(b)], t, want);
  }
  const float got = run(AccumulationModel::hopper_promoted_blockwise, c, 0, c.K,
                        ElementScales{sa.data(), sb.data(), true, kScaleBlockK});
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    broken(4, c, "hopper_promoted_blockwise", got, want);
}

// mma.sync adds its C last, in f32 RN: step(a, b, c) = RN(c + step(a, b, +0)).
void law_mma_sync(const LawCase& c, std::mt19937_64& rng, Fingerprint& fp) {
  const int n = 1 + int(rng() % 32);
  const float acc = std::ldexp(full_scale(rng), int(rng() % 16) - 8) * (rng() & 1 ? 1.0f : -1.0f);
  const float got = hopper_mma_sync_step(c.a.data(), c.b.data(), n, Format::e4m3, c.fb, acc);
  const float want =
      acc + hopper_mma_sync_step(c.a.data(), c.b.data(), n, Format::e4m3, c.fb, 0.0f);
  fp.fold(&got, sizeof got);
  if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
    broken(5, c, "hopper_mma_sync_step", got, want);
}

void check_law(std::int64_t law, std::uint64_t seed, Fingerprint& fp) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 4; ++i) {
    const LawCase c = draw_blocks(rng, 2 + std::int64_t(rng() % 7));
    switch (law) {
      case 0: law_fourteen_bits(c, fp); break;
      case 1: law_promotion(c, fp); break;
      case 2: law_slices(c, rng, fp); break;
      case 3: law_rowwise(c, rng, fp); break;
      case 4: law_blockwise(c, rng, fp); break;
      default: law_mma_sync(c, rng, fp); break;
    }
  }
}

}  // namespace

void add_model_law_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"gemm.model_laws",
       "Hopper model laws: 14-bit steps, promotion at 128, slice order, epilogue, fma promotion",
       "cpu",
       200,
       {std::begin(kLaws), std::end(kLaws)},
       {}},
      kNumLaws, [](std::int64_t v) { return std::string(kLaws[v]); }, check_law));
}

}  // namespace fp8ref::fuzz
