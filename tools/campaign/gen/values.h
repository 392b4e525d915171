// Value-class generator (docs/fuzz.md "Generators"): the class of an operand, drawn by RapidCheck;
// tensors of a class are filled from one drawn seed (tools/cases/value_class.h; per-element
// shrinkables dominated suite run time), so RapidCheck shrinks the class, the seed and the shapes.
#pragma once

#include <rapidcheck.h>

#include "cases/value_class.h"

namespace fp8ref::gen {

using cases::code_fields;
using cases::code_of;
using cases::CodeFields;
using cases::fill_codes;
using cases::fill_f32;
using cases::kValueClasses;
using cases::to_string;
using cases::ValueClass;

inline rc::Gen<ValueClass> value_class(bool allow_nan_inf = true) {
  return allow_nan_inf ? rc::gen::elementOf(kValueClasses)
                       : rc::gen::element(ValueClass::normal, ValueClass::outliers,
                                          ValueClass::subnormal_heavy, ValueClass::near_max,
                                          ValueClass::integer);
}

}  // namespace fp8ref::gen
