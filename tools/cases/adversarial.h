// The adversarial classes of the grouped-GEMM cases (docs/fuzz.md "Generators"): the enum, its
// tokens (a case file's "fp8ref.adversarial"; none has no token and no key) and their parser. The
// campaign draws them (tools/campaign/gen/adversarial.h) and applies them (draw_gemm in
// tools/campaign/gemm_case.cpp):
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

#include <array>
#include <cstdint>
#include <string_view>

#include "cases/enum_tokens.h"

namespace fp8ref::cases {

enum class Adversarial : std::uint8_t {
  none,
  exact_128,
  pow2_bands,
  zero_channel,
  poison_past_end,
  separating
};
// The classes with a token (none is the absence of one).
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

// The class a token names (std::invalid_argument "unknown adversarial class ..." otherwise).
inline Adversarial parse_adversarial(std::string_view token) {
  return parse_token("adversarial class", token, kAdversarialClasses);
}

}  // namespace fp8ref::cases
