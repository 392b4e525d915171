// Adversarial classes of the grouped-GEMM cases (docs/fuzz.md "Generators"): data that users'
// kernels got wrong and random data rarely produces. Drawn after every other parameter of a case
// (so the cases of the class `none` are the ones drawn before these classes existed) and applied by
// draw_gemm (tools/campaign/gemm_case.cpp) to the drawn shape, then to the filled operands. The
// classes, what each one does and their tokens: tools/cases/adversarial.h.
#pragma once

#include <rapidcheck.h>

#include "cases/adversarial.h"

namespace fp8ref::gen {

using cases::Adversarial;  // its home is tools/cases/adversarial.h

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
