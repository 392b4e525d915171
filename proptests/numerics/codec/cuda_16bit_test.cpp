// The cuda_* profiles against CUDA's own host conversions from <cuda_fp8.h> (docs/numerics.md
// "Verification") on every bf16 and f16 input: __nv_cvt_bfloat16raw_to_fp8, __nv_cvt_halfraw_to_fp8
// (satfinite / nosat x e4m3 / e5m2) and __nv_cvt_bfloat16raw_to_e8m0 (rz / rp x satfinite / nosat).
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numerics/profile.h"
#include "proptests/common/sweep_report.h"

namespace {

using namespace fp8ref;

struct CudaFp8Cast {
  ProfileCodec codec;
  __nv_saturation_t sat;
  __nv_fp8_interpretation_t interp;
  std::string name;
};

std::vector<CudaFp8Cast> fp8_casts(Source s) {
  std::vector<CudaFp8Cast> v;
  for (Format f : {Format::e4m3, Format::e5m2})
    for (Profile p : {Profile::cuda_satfinite, Profile::cuda_nosat})
      v.push_back({make_codec(p, f, s, Rounding::rne),
                   p == Profile::cuda_satfinite ? __NV_SATFINITE : __NV_NOSAT,
                   f == Format::e4m3 ? __NV_E4M3 : __NV_E5M2,
                   std::string(to_string(f)) + " " + std::string(to_string(p))});
  return v;
}

template <class CudaCast>
void sweep_fp8(Source s, const std::string& case_name, CudaCast cuda) {
  const std::vector<CudaFp8Cast> casts = fp8_casts(s);
  std::vector<std::string> names;
  for (const CudaFp8Cast& c : casts) names.push_back(c.name);
  const test::SweepLog log = test::parallel_sweep(
      std::uint64_t{1} << 16,
      [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t x = b; x < e; ++x)
          for (std::size_t k = 0; k < casts.size(); ++k) {
            const std::uint8_t ref_z = cuda(std::uint16_t(x), casts[k].sat, casts[k].interp);
            const std::uint8_t got_z = casts[k].codec.encode(x);
            if (got_z != ref_z) l.add(x, int(k), ref_z, got_z);
          }
      },
      1 << 12);
  test::report_sweep(case_name, (std::uint64_t{1} << 16) * casts.size(), log, names, 4);
}

TEST(CudaHost16Bit, CudaProfilesMatchNvCvtBfloat16rawToFp8OnEveryBf16) {
  sweep_fp8(Source::bf16, "bf16_vs_nv_cvt_bfloat16raw_to_fp8",
            [](std::uint16_t x, __nv_saturation_t sat, __nv_fp8_interpretation_t interp) {
              __nv_bfloat16_raw raw;
              raw.x = x;
              return std::uint8_t(__nv_cvt_bfloat16raw_to_fp8(raw, sat, interp));
            });
}

TEST(CudaHost16Bit, CudaProfilesMatchNvCvtHalfrawToFp8OnEveryF16) {
  sweep_fp8(Source::f16, "f16_vs_nv_cvt_halfraw_to_fp8",
            [](std::uint16_t x, __nv_saturation_t sat, __nv_fp8_interpretation_t interp) {
              __half_raw raw;
              raw.x = x;
              return std::uint8_t(__nv_cvt_halfraw_to_fp8(raw, sat, interp));
            });
}

TEST(CudaHost16Bit, CudaProfilesMatchNvCvtBfloat16rawToE8m0OnEveryBf16) {
  struct Cast {
    ProfileCodec codec;
    __nv_saturation_t sat;
    cudaRoundMode mode;
  };
  std::vector<Cast> casts;
  std::vector<std::string> names;
  for (Rounding r : {Rounding::rtz, Rounding::rup})
    for (Profile p : {Profile::cuda_satfinite, Profile::cuda_nosat}) {
      casts.push_back({make_codec(p, Format::e8m0, Source::bf16, r),
                       p == Profile::cuda_satfinite ? __NV_SATFINITE : __NV_NOSAT,
                       r == Rounding::rtz ? cudaRoundZero : cudaRoundPosInf});
      names.push_back("e8m0 " + std::string(to_string(p)) + " " + std::string(to_string(r)));
    }
  test::SweepLog log;
  for (std::uint32_t x = 0; x < (1u << 16); ++x)
    for (std::size_t k = 0; k < casts.size(); ++k) {
      __nv_bfloat16_raw raw;
      raw.x = std::uint16_t(x);
      const std::uint8_t ref_z = __nv_cvt_bfloat16raw_to_e8m0(raw, casts[k].sat, casts[k].mode);
      const std::uint8_t got_z = casts[k].codec.encode(x);
      if (got_z != ref_z) log.add(x, int(k), ref_z, got_z);
    }
  test::report_sweep("bf16_vs_nv_cvt_bfloat16raw_to_e8m0", (std::uint64_t{1} << 16) * casts.size(),
                     log, names, 4);
}

}  // namespace
