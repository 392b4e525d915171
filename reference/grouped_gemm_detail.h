// Internal to the reference library: what the grouped GEMM ops (grouped_gemm.cpp) and the
// K-grouped wgrad (grouped_wgrad.cpp) share (docs/design.md §9-10): argument checks with clear
// messages, the model / scaling compatibility check, the wgmma planes of a run of codes, and the
// stores of an exact value or of a model's f32 result into a GemmOutput with its bound.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/models.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::ref::detail {

[[noreturn]] inline void fail(const std::string& what) {
  throw std::invalid_argument("fp8ref: " + what);
}
inline std::string str(std::int64_t x) { return std::to_string(x); }

inline void expect_size(const char* name, std::size_t got, std::int64_t want) {
  if (std::int64_t(got) != want)
    fail(std::string(name) + " has " + str(std::int64_t(got)) + " elements, expected " + str(want));
}

// The scale s[i] is finite, and a power of two when pow2 (an MX scale).
inline void expect_scale(const char* name, std::span<const float> s, std::int64_t i, bool pow2) {
  const float v = s[std::size_t(i)];
  if (!std::isfinite(v))
    fail(std::string(name) + "[" + str(i) + "] = " + std::to_string(v) + " is not finite");
  if (pow2 && (v <= 0.0f || f32_parts_odd(v).sig != 1))
    fail(std::string(name) + "[" + str(i) + "] = " + std::to_string(v) +
         " is not a power of two (mx scales are E8M0 values)");
}

// A scale the Blackwell tensor core takes as a code: ue8m0 (mx) or ue4m3 (nvfp4).
inline void expect_scale_code(const char* name, std::span<const float> s, std::int64_t i,
                              Scaling scaling) {
  try {
    const float v = s[std::size_t(i)];
    scaling == Scaling::nvfp4 ? fp8ref::detail::ue4m3_code_of(v) : fp8ref::detail::e8m0_code_of(v);
  } catch (const std::invalid_argument& e) {
    fail(std::string(name) + "[" + str(i) + "]: " + (e.what() + 8));  // drop "fp8ref: "
  }
}

// The scalings and operand formats a Blackwell model takes (docs/models.md "Blackwell models").
inline void check_blackwell_model(AccumulationModel m, Scaling s) {
  const BlackwellKind k = blackwell_kind(m);
  const bool ok = k == BlackwellKind::f8f6f4
                      ? s == Scaling::none || s == Scaling::tensorwise || s == Scaling::rowwise
                  : k == BlackwellKind::mxf4nvf4
                      ? s == Scaling::mx || s == Scaling::nvfp4 || s == Scaling::mx16
                      : s == Scaling::mx;
  if (!ok)
    fail(std::string("model ") + to_string(m) + " takes " +
         (k == BlackwellKind::f8f6f4     ? "none, tensorwise or rowwise"
          : k == BlackwellKind::mxf4nvf4 ? "mx, mx16 or nvfp4"
                                         : "mx") +
         " scaling, not " + to_string(s));
}

inline void check_model(ModelChoice m, Scaling s) {
  if (is_blackwell_model(m.model)) check_blackwell_model(m.model, s);
  if ((s == Scaling::nvfp4 || s == Scaling::mx16) && !is_blackwell_model(m.model) &&
      m.model != AccumulationModel::exact)
    fail(
        std::string(to_string(s)) +
        " scaling needs blackwell_mxf4nvf4, rtx_blackwell_mxf4nvf4 or exact (e2m1 operands), not " +
        to_string(m.model));
  if (m.split_k < 1) fail("split_k = " + str(m.split_k) + " must be >= 1");
  if (m.split_blocks < 0) fail("split_blocks = " + str(m.split_blocks) + " must be >= 0");
  if (m.split_blocks > 0 && m.split_k != 1)
    fail("split_k = " + str(m.split_k) + " and split_blocks = " + str(m.split_blocks) +
         ": give a slice count or a slice length, not both");
  if (!accepts_split_k(m.model) && !m.split().is_single())
    fail(std::string("split-K applies to the hopper models only, not ") + to_string(m.model));
  if (m.epilogue != Epilogue::model) {
    if (!accepts_epilogue(m.model))
      fail(std::string("epilogue ") + to_string(m.epilogue) + " does not apply to model " +
           to_string(m.model));
    if (s == Scaling::blockwise || s == Scaling::mx)
      fail(std::string("epilogue ") + to_string(m.epilogue) +
           " needs tensorwise, rowwise or no scaling, not " + to_string(s));
  }
  if ((s == Scaling::blockwise || s == Scaling::mx) && needs_constant_scales(m.model))
    fail(std::string("model ") + to_string(m.model) + " needs scales constant over K; " +
         to_string(s) +
         " scaling needs hopper_promoted_blockwise, hopper_mma_sync, "
         "fp32_sequential or exact");
}

inline void check_output(const GemmOutput& y, std::int64_t count) {
  if (y.dtype == OutDtype::f32)
    expect_size("output (f32)", y.f32.size(), count);
  else
    expect_size(y.dtype == OutDtype::bf16 ? "output (bf16)" : "output (f16)", y.u16.size(), count);
  if (!y.bound.empty()) expect_size("bound", y.bound.size(), count);
}

inline constexpr float kOne = 1.0f;

// Bound on |z - exact| for z the exact value rounded once to d: half an ulp of z.
inline double exact_rounding_bound(double z, OutDtype d) {
  if (!std::isfinite(z)) return std::isnan(z) ? z : INFINITY;
  const double half_min_subnormal = d == OutDtype::f32    ? 0x1p-150
                                    : d == OutDtype::bf16 ? 0x1p-134
                                                          : 0x1p-25;
  return std::ldexp(std::fabs(z), -out_precision(d)) + half_min_subnormal;
}

inline void put_bits(const GemmOutput& y, std::size_t i, std::uint32_t bits) {
  if (y.dtype == OutDtype::f32)
    y.f32[i] = std::bit_cast<float>(bits);
  else
    y.u16[i] = std::uint16_t(bits);
}

// `exact`: z holds the exact value rounded once to y.dtype.
inline void store_exact(const GemmOutput& y, std::size_t i, double z) {
  put_bits(y, i, out_bits(z, y.dtype));
  if (!y.bound.empty()) y.bound[i] = exact_rounding_bound(z, y.dtype);
}

// A model's f32 result, converted to the output type.
inline void store_model(const GemmOutput& y, std::size_t i, Bounded m) {
  const std::uint32_t bits = f32_to_out_bits(m.z, y.dtype);
  put_bits(y, i, bits);
  if (y.bound.empty()) return;
  const double out = out_value(bits, y.dtype);
  // A non-finite result has no finite distance to the exact value: +Inf, or NaN for NaN (as
  // exact_rounding_bound), never the NaN of Inf - Inf.
  y.bound[i] = std::isfinite(out) ? m.bound + std::fabs(out - double(m.z))
               : std::isnan(out)  ? out
                                  : INFINITY;
}

// The wgmma models step on planes (decode_wgmma_planes) decoded once per row of A and per column
// of B, instead of looking every code up at every step: the same bits, several times faster.
inline bool steps_on_planes(AccumulationModel m) {
  return m == AccumulationModel::hopper_unpromoted ||
         m == AccumulationModel::hopper_promoted_blockwise ||
         m == AccumulationModel::hopper_promoted_tensorwise ||
         m == AccumulationModel::hopper_promoted_rowwise;
}

struct Planes {
  std::vector<float> value;
  std::vector<std::int16_t> exp;
  void decode(Format f, const std::uint8_t* codes, std::int64_t n) {
    value.resize(std::size_t(n));
    exp.resize(std::size_t(n));
    decode_wgmma_planes(f, codes, n, value.data(), exp.data());
  }
  WgmmaPlanes at(std::int64_t k) const { return {value.data() + k, exp.data() + k}; }
};

}  // namespace fp8ref::ref::detail
