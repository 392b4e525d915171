// Adversarial classes of the grouped-GEMM cases (docs/fuzz.md "Generators"): data that users'
// kernels got wrong and random data rarely produces. Drawn after every other parameter of a case
// (so the cases of the class `none` are the ones drawn before these classes existed) and applied by
// draw_gemm (tools/campaign/gemm_case.cpp) to the drawn shape, then to the filled operands:
//   exact_128        one group of exactly 128 tokens (a whole 128-row tile: nondeterminism at
//                    exactly 128 tokens was a real bug);
//   pow2_bands       rows of A in at least two 128-row bands and N in 2-4 128-column tiles, with a
//                    distinct power of two 2^k as the scale of each band and of each N tile (times
//                    a power of two per K block): a scale read from the wrong band or tile is off
//                    by an exact power of two, never hidden by rounding;
//   zero_channel     one K channel of A and one N channel of B all zero (exact-zero sums, the sign
//                    of zero, 0 × Inf with NaN / Inf codes elsewhere);
//   poison_past_end  rows past the last group's end (offs[-1]) and every other row of no group hold
//                    NaN codes and NaN scales, which no implementation may read;
//   separating       data that tells configurations apart (aims for test strength 1, docs/fuzz.md
//                    "Test strength"): K of 4 blocks whose codes' exponents depend on the block,
//                    f32 output, full-significand scales (MX: powers of two); at MoE-like shapes
//                    K = 7168 (56 blocks) over at most 8 tokens and 8 groups, else K >= 4 blocks.
// Every class is also drawn at MoE-like shapes, cut back to their work bound.
#pragma once

#include <rapidcheck.h>

#include <array>
#include <cstdint>

namespace fp8ref::gen {

enum class Adversarial : std::uint8_t {
  none,
  exact_128,
  pow2_bands,
  zero_channel,
  poison_past_end,
  separating
};
inline constexpr std::array kAdversarialClasses = {
    Adversarial::exact_128, Adversarial::pow2_bands, Adversarial::zero_channel,
    Adversarial::poison_past_end, Adversarial::separating};

constexpr const char* to_string(Adversarial a) {
  switch (a) {
    case Adversarial::none: return "";
    case Adversarial::exact_128: return "exact_128";
    case Adversarial::pow2_bands: return "pow2_bands";
    case Adversarial::zero_channel: return "zero_channel";
    case Adversarial::poison_past_end: return "poison_past_end";
    case Adversarial::separating: return "separating";
  }
  return "";
}

// Weights out of 43: none 24, exact_128 2, pow2_bands 4 (which fewer cases can take),
// zero_channel 2, poison_past_end 2, separating 9 (raises the share of strength-1 cases,
// docs/fuzz.md "Test strength"); a case that cannot take the drawn class (draw_gemm says which)
// keeps none.
inline rc::Gen<Adversarial> adversarial() {
  return rc::gen::weightedOneOf<Adversarial>({{24, rc::gen::just(Adversarial::none)},
                                              {2, rc::gen::just(Adversarial::exact_128)},
                                              {4, rc::gen::just(Adversarial::pow2_bands)},
                                              {2, rc::gen::just(Adversarial::zero_channel)},
                                              {2, rc::gen::just(Adversarial::poison_past_end)},
                                              {3, rc::gen::just(Adversarial::separating)}});
}

}  // namespace fp8ref::gen
