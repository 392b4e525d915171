// The cuda_* profiles against CUDA's own host conversions from <cuda_fp8.h> on all 2^32 f32
// inputs (label exhaustive): __nv_cvt_float_to_fp8 (satfinite / nosat x e4m3 /
// e5m2) and __nv_cvt_float_to_e8m0 (rz / rp x satfinite / nosat). One pass per format.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <chrono>
#include <string>
#include <vector>

#include "numerics/profile.h"
#include "proptests/common/sweep_report.h"

namespace {

using namespace fp8ref;

constexpr std::uint64_t kAllF32 = std::uint64_t{1} << 32;

// Sweeps every f32 through N codecs and the matching N CUDA conversions; `cuda(v)` returns the
// N CUDA codes with the saturation / interpretation / rounding arguments as constants, so the
// compiler specialises the host functions (a quarter of the sweep time).
template <std::size_t N, class Cuda>
void sweep(const std::string& case_name, const std::array<ProfileCodec, N>& codecs, Cuda cuda) {
  std::vector<std::string> names;
  for (const ProfileCodec& c : codecs)
    names.push_back(std::string(to_string(c.format)) + " " + std::string(to_string(c.profile)) +
                    " " + std::string(to_string(c.rounding)));
  const auto t0 = std::chrono::steady_clock::now();
  const test::SweepLog log =
      test::parallel_sweep(kAllF32, [&](std::uint64_t b, std::uint64_t e, test::SweepLog& l) {
        for (std::uint64_t x = b; x < e; ++x) {
          const std::array<std::uint8_t, N> ref_z = cuda(std::bit_cast<float>(std::uint32_t(x)));
          for (std::size_t k = 0; k < N; ++k) {
            const std::uint8_t got_z = codecs[k].encode(x);
            if (got_z != ref_z[k]) l.add(x, int(k), ref_z[k], got_z);
          }
        }
      });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << case_name << ": " << s << " s on " << test::sweep_threads() << " threads"
            << std::endl;
  test::report_sweep(case_name, kAllF32 * N, log, names, 8);
}

std::array<ProfileCodec, 2> fp8_codecs(Format f) {
  return {make_codec(Profile::cuda_satfinite, f, Source::f32, Rounding::rne),
          make_codec(Profile::cuda_nosat, f, Source::f32, Rounding::rne)};
}

TEST(CudaHostF32, E4m3CudaProfilesMatchNvCvtFloatToFp8OnEveryF32) {
  sweep("f32_e4m3_vs_nv_cvt_float_to_fp8", fp8_codecs(Format::e4m3), [](float v) {
    return std::array<std::uint8_t, 2>{__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3),
                                       __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3)};
  });
}

TEST(CudaHostF32, E5m2CudaProfilesMatchNvCvtFloatToFp8OnEveryF32) {
  sweep("f32_e5m2_vs_nv_cvt_float_to_fp8", fp8_codecs(Format::e5m2), [](float v) {
    return std::array<std::uint8_t, 2>{__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2),
                                       __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2)};
  });
}

TEST(CudaHostF32, E8m0CudaProfilesMatchNvCvtFloatToE8m0OnEveryF32) {
  const std::array<ProfileCodec, 4> codecs = {
      make_codec(Profile::cuda_satfinite, Format::e8m0, Source::f32, Rounding::rtz),
      make_codec(Profile::cuda_nosat, Format::e8m0, Source::f32, Rounding::rtz),
      make_codec(Profile::cuda_satfinite, Format::e8m0, Source::f32, Rounding::rup),
      make_codec(Profile::cuda_nosat, Format::e8m0, Source::f32, Rounding::rup)};
  sweep("f32_e8m0_vs_nv_cvt_float_to_e8m0", codecs, [](float v) {
    return std::array<std::uint8_t, 4>{__nv_cvt_float_to_e8m0(v, __NV_SATFINITE, cudaRoundZero),
                                       __nv_cvt_float_to_e8m0(v, __NV_NOSAT, cudaRoundZero),
                                       __nv_cvt_float_to_e8m0(v, __NV_SATFINITE, cudaRoundPosInf),
                                       __nv_cvt_float_to_e8m0(v, __NV_NOSAT, cudaRoundPosInf)};
  });
}

}  // namespace
