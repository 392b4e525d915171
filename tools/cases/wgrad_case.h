// The K-grouped wgrad case (docs/design.md §9, docs/fuzz.md "Case files"): the struct and its
// safetensors form (save / load, the model's split-K and epilogue included, so a dumped failure
// replays the model that failed), and the first field in which two cases differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cases/group_sizes.h"
#include "cases/tensor_form.h"
#include "cases/value_class.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::cases {

struct WgradCase {
  GroupSizes gs;
  std::int64_t M = 0, N = 0, K = 0, G = 0;
  Format fdy = Format::e4m3, fx = Format::e4m3;
  ValueClass v = ValueClass::normal;
  ref::Scaling scaling = ref::Scaling::none;  // none, tensorwise, blockwise or mx
  ref::ModelChoice model{AccumulationModel::exact, 1};
  OutDtype out = OutDtype::f32;
  std::vector<std::uint8_t> dy, x;  // (M, N), (M, K)
  // tensorwise: one each; blockwise / mx: (R, N) and (R, K), R token blocks of 128 / 32 that
  // restart at each group (reference/grouped_gemm.h); C (G, N, K).
  std::vector<float> s_dy, s_x, c;
  std::int64_t block_rows() const;  // R (0 unless blockwise / mx)
  // The reference's view of the operands (spans into this case: valid while it lives).
  ref::WgradOperands operands() const {
    return {M, N, K, G, fdy, fx, dy, x, scaling, s_dy, s_x, c};
  }
};

TensorFile save_wgrad(const WgradCase& w);
WgradCase load_wgrad(const TensorFile& tf);  // std::invalid_argument on a malformed file
// The first field in which two cases differ ("" when none; floats compared as bits).
std::string wgrad_case_diff(const WgradCase& x, const WgradCase& y);

}  // namespace fp8ref::cases
