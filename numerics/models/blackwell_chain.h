// Chains of the Blackwell tensor-core steps over K (docs/design.md §10; docs/models.md "Blackwell"): the
// accumulator is each step's C, as a tcgen05.mma or sm_120 mma.sync main loop issues its steps
// into one f32 accumulator. The block-scaled kinds apply their scales inside each step, so a chain
// needs no promotion; a short last step is a step whose missing products are zero (kernels pad K
// with zeros). Each chain carries the sum of its steps' bounds against the exact scaled sum.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "numerics/models/blackwell_step.h"

namespace fp8ref {

// kind::f8f6f4: acc = step(a[k..k+32), b[k..k+32), acc) over k in [0, len), from c.
inline Bounded blackwell_f8f6f4_chain(const std::uint8_t* a, const std::uint8_t* b,
                                      std::int64_t len, Format fa, Format fb, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kBlackwellStepK) {
    const int n = int(std::min<std::int64_t>(kBlackwellStepK, len - k));
    const Bounded st = blackwell_f8f6f4_step_bounded(a + k, b + k, n, fa, fb, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

// kind::mxf8f6f4 block32: step j (products [32j, 32j + 32)) takes the ue8m0 scales sa[j], sb[j].
inline Bounded blackwell_mxf8f6f4_chain(const std::uint8_t* a, const std::uint8_t* b,
                                        std::int64_t len, Format fa, Format fb,
                                        const std::uint8_t* sa, const std::uint8_t* sb, Bounded c) {
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kBlackwellStepK) {
    const int n = int(std::min<std::int64_t>(kBlackwellStepK, len - k));
    const std::int64_t j = k / kBlackwellStepK;
    const Bounded st =
        blackwell_mxf8f6f4_step_bounded(a + k, b + k, n, fa, fb, sa[j], sb[j], acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

// kind::mxf4 / mxf4nvf4 (e2m1, k64): scales per `block` (16 or 32) elements, sa[k / block]; a short
// last step reads the scales of its blocks only (missing blocks' scales are taken as 2^0 / 1.0).
inline Bounded blackwell_mxf4_chain(const std::uint8_t* a, const std::uint8_t* b, std::int64_t len,
                                    const std::uint8_t* sa, const std::uint8_t* sb, Format scale,
                                    int block, Bounded c) {
  detail::require_mxf4_scales(scale, block);
  const std::uint8_t one = scale == Format::e8m0 ? 127 : 0x38;  // 2^0 / 1.0
  Bounded acc = c;
  for (std::int64_t k = 0; k < len; k += kBlackwellMxf4StepK) {
    const int n = int(std::min<std::int64_t>(kBlackwellMxf4StepK, len - k));
    std::uint8_t xa[4], xb[4];
    for (int j = 0; j < kBlackwellMxf4StepK / block; ++j) {
      const bool used = j * block < n;
      xa[j] = used ? sa[k / block + j] : one;
      xb[j] = used ? sb[k / block + j] : one;
    }
    const Bounded st = blackwell_mxf4_step_bounded(a + k, b + k, n, xa, xb, scale, block, acc.z);
    acc = {st.z, acc.bound + st.bound};
  }
  return acc;
}

}  // namespace fp8ref
