// The cuda_* profiles against CUDA's double-precision host conversions (docs/numerics.md
// "Verification": >= 10^7 sampled f64): __nv_cvt_double_to_fp8 (satfinite / nosat x e4m3 / e5m2) on
// class-weighted f64, 10^7 inputs at level 1, each under all four; and the CUDA e8m0 policies (rz /
// rp x satfinite / nosat) against __nv_cvt_double_to_e8m0 on the same classes, 2.5 * 10^6 inputs.
#include <cuda_fp8.h>
#include <rapidcheck.h>

#include <bit>
#include <string>
#include <vector>

#include "numerics/codec.h"
#include "numerics/profile.h"
#include "proptests/numerics/codec/codec_checks.h"
#include "proptests/numerics/codec/input_classes.h"

namespace {

using namespace fp8ref;

constexpr int kBatch = 20000;

std::vector<std::uint64_t> draw_batch(Format f) {
  const test::InputClass cls = *test::gen_input_class();
  RC_CLASSIFY(true, std::string(to_string(f)) + " " + std::string(test::to_string(cls)));
  test::SplitMix64 r{*test::gen_batch_seed()};
  std::vector<std::uint64_t> inputs(kBatch);
  for (std::uint64_t& x : inputs) x = test::draw_input(f, cls, r);
  return inputs;
}

FP8REF_RC_PROP(CudaHostF64, CudaProfilesMatchNvCvtDoubleToFp8OnClassWeightedF64, 500, ()) {
  struct Cast {
    ProfileCodec codec;
    __nv_saturation_t sat;
    __nv_fp8_interpretation_t interp;
  };
  static const std::vector<Cast> casts = [] {
    std::vector<Cast> v;
    for (Format f : {Format::e4m3, Format::e5m2})
      for (Profile p : {Profile::cuda_satfinite, Profile::cuda_nosat})
        v.push_back({make_codec(p, f, Source::f64, Rounding::rne),
                     p == Profile::cuda_satfinite ? __NV_SATFINITE : __NV_NOSAT,
                     f == Format::e4m3 ? __NV_E4M3 : __NV_E5M2});
    return v;
  }();
  std::vector<std::string> names;
  for (const Cast& c : casts)
    names.push_back(test::config_name("codec", c.codec.profile, c.codec.format, Rounding::rne));
  // half the batches aim at e4m3's hazards, half at e5m2's; every input goes through all four
  const std::vector<std::uint64_t> inputs =
      draw_batch(*rc::gen::element(Format::e4m3, Format::e5m2));
  test::SweepLog log;
  for (std::uint64_t bits : inputs)
    for (std::size_t k = 0; k < casts.size(); ++k) {
      const std::uint8_t ref_z =
          __nv_cvt_double_to_fp8(std::bit_cast<double>(bits), casts[k].sat, casts[k].interp);
      const std::uint8_t got_z = casts[k].codec.encode(bits);
      if (got_z != ref_z) log.add(bits, int(k), ref_z, got_z);
    }
  test::rc_assert_batch_clean("f64_vs_nv_cvt_double_to_fp8", inputs.size(), log, names);
}

// The cuda_* e8m0 profile casts from f64 (one rounding, the policy also checked against
// __nv_cvt_float_to_e8m0 on every f32).
FP8REF_RC_PROP(CudaHostF64, CudaE8m0PoliciesMatchNvCvtDoubleToE8m0OnClassWeightedF64, 125, ()) {
  struct Cast {
    ProfileCodec codec;
    __nv_saturation_t sat;
    cudaRoundMode mode;
  };
  static const std::vector<Cast> casts = [] {
    std::vector<Cast> v;
    for (Rounding r : {Rounding::rtz, Rounding::rup})
      for (Profile p : {Profile::cuda_satfinite, Profile::cuda_nosat})
        v.push_back({make_codec(p, Format::e8m0, Source::f64, r),
                     p == Profile::cuda_satfinite ? __NV_SATFINITE : __NV_NOSAT,
                     r == Rounding::rtz ? cudaRoundZero : cudaRoundPosInf});
    return v;
  }();
  std::vector<std::string> names;
  for (const Cast& c : casts)
    names.push_back(test::config_name("codec", c.codec.profile, Format::e8m0, c.codec.rounding));
  const std::vector<std::uint64_t> inputs = draw_batch(Format::e8m0);
  test::SweepLog log;
  for (std::uint64_t bits : inputs)
    for (std::size_t k = 0; k < casts.size(); ++k) {
      const std::uint8_t ref_z =
          __nv_cvt_double_to_e8m0(std::bit_cast<double>(bits), casts[k].sat, casts[k].mode);
      const std::uint8_t got_z = casts[k].codec.encode(bits);
      if (got_z != ref_z) log.add(bits, int(k), ref_z, got_z);
    }
  test::rc_assert_batch_clean("f64_vs_nv_cvt_double_to_e8m0", inputs.size(), log, names);
}

}  // namespace
