// Named profiles: each pins the cast behaviour of one implementation, bit for bit (docs/design.md §5).
// A profile covers the formats and source types its implementation has (e4m3, e5m2, e8m0; FP6 /
// FP4 for ocp_* and ml_dtypes_0_6; ue4m3 for ocp_* and cuda_*); the sources of each rule are in
// docs/numerics.md. A ProfileCodec is the resolved, explicit policy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "numerics/codec.h"
#include "numerics/source.h"

namespace fp8ref {

enum class Profile : std::uint8_t {
  ocp_sat,         // OCP FP8 v1.0 / MX v1.0 conversion, saturating; any rounding, single rounding
  ocp_nosat,       // same, non-saturating (e4m3 -> NaN, e5m2 -> Inf, e8m0 -> NaN)
  cuda_satfinite,  // CUDA 13 cuda_fp8.h host/device, __NV_SATFINITE
  cuda_nosat,      // CUDA 13 cuda_fp8.h, __NV_NOSAT
  torch_2_11,      // torch <= 2.12 Tensor.to(float8_*) (CPU = GPU)
  ml_dtypes_0_6,   // ml_dtypes 0.6 numpy astype
};

inline constexpr std::array<Profile, 6> kAllProfiles = {
    Profile::ocp_sat,    Profile::ocp_nosat,  Profile::cuda_satfinite,
    Profile::cuda_nosat, Profile::torch_2_11, Profile::ml_dtypes_0_6};

constexpr std::string_view to_string(Profile p) {
  switch (p) {
    case Profile::ocp_sat: return "ocp_sat";
    case Profile::ocp_nosat: return "ocp_nosat";
    case Profile::cuda_satfinite: return "cuda_satfinite";
    case Profile::cuda_nosat: return "cuda_nosat";
    case Profile::torch_2_11: return "torch_2_11";
    case Profile::ml_dtypes_0_6: return "ml_dtypes_0_6";
  }
  return "?";
}

constexpr std::optional<Profile> parse_profile(std::string_view s) {
  for (Profile p : kAllProfiles)
    if (to_string(p) == s) return p;
  return std::nullopt;
}

// A fully resolved cast: source type, whether the source is first rounded to f32 (the double
// rounding torch and ml_dtypes perform on f64 input), and the explicit policy.
struct ProfileCodec {
  Profile profile;
  Format format;
  Source source;
  Rounding rounding;
  bool via_f32;
  EncodeSpec fp8;  // used for e4m3 / e5m2
  E8m0Spec e8m0;   // used for e8m0

  // Encode one source bit pattern. `rand` feeds Rounding::sr only.
  constexpr std::uint8_t encode(std::uint64_t source_bits, std::uint32_t rand = 0) const {
    std::uint64_t d = source_to_f64_bits(source, source_bits);
    if (via_f32) d = f32_to_f64_bits(f64_to_f32_bits_rne(d));
    if (format == Format::e8m0) return encode_e8m0_bits(d, e8m0);
    return encode_minifloat_bits(format, d, fp8, rand);
  }
};

namespace detail {

constexpr bool is_cuda(Profile p) {
  return p == Profile::cuda_satfinite || p == Profile::cuda_nosat;
}
constexpr bool is_library(Profile p) {
  return p == Profile::torch_2_11 || p == Profile::ml_dtypes_0_6;
}

inline EncodeSpec fp8_spec(Profile p, Source src, Rounding r) {
  const bool sat = p == Profile::ocp_sat || p == Profile::cuda_satfinite;
  NanEncoding nan = NanEncoding::quiet_signed;
  if (p == Profile::ml_dtypes_0_6) nan = NanEncoding::ml_dtypes;
  if (is_cuda(p))
    nan = src == Source::f64 ? NanEncoding::double_payload : NanEncoding::positive_all_ones;
  // torch 2.11 on an H100: every f16 NaN becomes 0x7f, sign dropped (bf16 / f32 keep it).
  if (p == Profile::torch_2_11 && src == Source::f16) nan = NanEncoding::positive_all_ones;
  return EncodeSpec{r, sat ? Overflow::sat : Overflow::nonsat, nan, InfEncoding::saturate, 32};
}

inline E8m0Spec e8m0_spec(Profile p, Rounding r) {
  E8m0Rounding mode = E8m0Rounding::floor;
  if (r == Rounding::rup) mode = E8m0Rounding::ceil;
  if (r == Rounding::rne)
    mode = is_library(p) ? E8m0Rounding::nearest_f32_field : E8m0Rounding::nearest_ties_even;
  const bool sat = p == Profile::ocp_sat || p == Profile::cuda_satfinite;
  const bool ocp = p == Profile::ocp_sat || p == Profile::ocp_nosat;
  const bool ml = p == Profile::ml_dtypes_0_6;
  return E8m0Spec{mode, sat, ml || p == Profile::ocp_nosat, ml || ocp};
}

inline std::string unsupported(Profile p, Format f, Source s, Rounding r) {
  return "profile " + std::string(to_string(p)) + " has no " + std::string(to_string(r)) +
         " cast from " + std::string(to_string(s)) + " to " + std::string(to_string(f));
}

}  // namespace detail

// The rounding each profile's own cast uses when none is named: rne for e4m3 / e5m2; for e8m0
// the library's nearest (torch, ml_dtypes), rtz (CUDA, which has only rz and rp) or the OCP MX
// floor (ocp_*).
constexpr Rounding natural_rounding(Profile p, Format f) {
  if (f != Format::e8m0 || p == Profile::torch_2_11 || p == Profile::ml_dtypes_0_6)
    return Rounding::rne;
  return Rounding::rtz;
}

// Whether profile p has a cast to format f at all (any source, any rounding): FP6 / FP4 exist in
// ocp_* and ml_dtypes_0_6 (float4_e2m1fn, float6_e2m3fn, float6_e3m2fn); torch 2.11 has no cast
// to them (float4_e2m1fn_x2 is a storage type), cuda_fp6.h / cuda_fp4.h are not modelled; ue4m3
// is E4M3 on |x| in ocp_* and cuda_* (the NVFP4 scale cast of cuBLAS / TE kernels).
constexpr bool profile_has_format(Profile p, Format f) {
  if (is_mx_element_format(f))
    return p == Profile::ocp_sat || p == Profile::ocp_nosat || p == Profile::ml_dtypes_0_6;
  if (f == Format::ue4m3) return !detail::is_library(p);
  return true;
}

// Resolve (profile, format, source, rounding) into an explicit codec. Throws
// std::invalid_argument for combinations the profile's implementation does not have.
inline ProfileCodec make_codec(Profile p, Format f, Source s, Rounding r) {
  if (!profile_has_format(p, f))
    throw std::invalid_argument("profile " + std::string(to_string(p)) + " has no cast to " +
                                std::string(to_string(f)));
  bool ok = true;
  if (detail::is_library(p)) ok = r == Rounding::rne;
  if (detail::is_cuda(p)) {
    ok = f == Format::e8m0 ? (r == Rounding::rtz || r == Rounding::rup) : r == Rounding::rne;
    if (f == Format::e8m0 && s == Source::f16) ok = false;  // cuda_fp8.h has no f16 -> e8m0 cast
  }
  if (!detail::is_library(p) && !detail::is_cuda(p) && f == Format::e8m0)
    ok = r == Rounding::rtz || r == Rounding::rup || r == Rounding::rne;
  if (!ok) throw std::invalid_argument(detail::unsupported(p, f, s, r));
  const bool via_f32 = detail::is_library(p) && s == Source::f64;
  return ProfileCodec{p, f, s, r, via_f32, detail::fp8_spec(p, s, r), detail::e8m0_spec(p, r)};
}

}  // namespace fp8ref
