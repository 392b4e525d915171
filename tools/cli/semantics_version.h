// The semantics version of fp8ref's golden files (golden/README.md). Bump it
// in the same change that is meant to alter any golden payload (a codec fix, a new profile rule),
// then run `fp8-check golden regen`; a payload that changes at an unchanged version fails verify.
#pragma once

namespace fp8ref::cli {

// 1: the first golden set (codec encode/decode tables and f32 cast cases of the six profiles).
inline constexpr int kSemanticsVersion = 1;

}  // namespace fp8ref::cli
