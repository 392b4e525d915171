// RapidCheck generators of the class-weighted encode inputs (tools/cases/input_classes.h): the
// class of a batch, weighted toward the hazards, and the seed its inputs are expanded from.
#pragma once

#include <rapidcheck.h>

#include <ostream>

#include "cases/input_classes.h"
#include "cases/split_mix64.h"

namespace fp8ref::test {

using cases::bits_of;
using cases::draw_input;
using cases::draw_magnitude;
using cases::InputClass;
using cases::kAllInputClasses;
using cases::SplitMix64;
using cases::to_string;
using cases::ulp_step;
namespace input_detail = cases::input_detail;

// RapidCheck prints counterexamples through showValue (found by argument-dependent lookup).
inline void showValue(InputClass c, std::ostream& os) { os << to_string(c); }

// The class of a batch: weighted toward the hazards.
inline rc::Gen<InputClass> gen_input_class() {
  return rc::gen::weightedElement<InputClass>({{10, InputClass::exact_code},
                                               {15, InputClass::tie},
                                               {15, InputClass::tie_ulp},
                                               {5, InputClass::max_ulp},
                                               {8, InputClass::overflow_boundary},
                                               {5, InputClass::min_subnormal_half},
                                               {5, InputClass::subnormal_normal},
                                               {2, InputClass::signed_zero},
                                               {3, InputClass::nan},
                                               {2, InputClass::inf},
                                               {4, InputClass::huge},
                                               {4, InputClass::tiny},
                                               {22, InputClass::random}});
}

// A seed for SplitMix64 (not shrunk: a batch is replayed from its seed, failures print values).
inline rc::Gen<std::uint64_t> gen_batch_seed() {
  return rc::gen::noShrink(rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<std::uint64_t>()));
}

}  // namespace fp8ref::test

namespace fp8ref {
inline void showValue(Format f, std::ostream& os) { os << to_string(f); }
inline void showValue(Overflow o, std::ostream& os) { os << to_string(o); }
}  // namespace fp8ref
