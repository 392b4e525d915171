// The `cuda` sweep peer: CUDA 13's host conversion functions from <cuda_fp8.h>, compiled by the
// host C++ compiler (they are plain C++ outside nvcc). Built with the header only when CMake
// found the CUDA toolkit (FP8REF_CLI_HAVE_CUDA_FP8); otherwise the peer reports itself missing.
#include <bit>
#include <memory>
#include <string>

#include "cli/errors.h"
#include "cli/sweep_peer.h"

#if defined(FP8REF_CLI_HAVE_CUDA_FP8)
#include <cuda.h>
#include <cuda_fp8.h>
#endif

namespace fp8ref::cli {

#if defined(FP8REF_CLI_HAVE_CUDA_FP8)
namespace {

class CudaPeer final : public InProcessPeer {
 public:
  explicit CudaPeer(const ProfileCodec& c)
      : format_(c.format),
        source_(c.source),
        sat_(c.profile == Profile::cuda_satfinite ? __NV_SATFINITE : __NV_NOSAT),
        interp_(c.format == Format::e4m3 ? __NV_E4M3 : __NV_E5M2),
        round_(c.rounding == Rounding::rup ? cudaRoundPosInf : cudaRoundZero) {}

  std::string description() const override {
    return "CUDA " + std::to_string(CUDA_VERSION / 1000) + "." +
           std::to_string(CUDA_VERSION % 1000 / 10) + " cuda_fp8.h host functions";
  }

  void encode_block(const std::uint64_t* in, std::size_t n, std::uint8_t* out) const override {
    if (format_ == Format::e8m0) {
      for (std::size_t k = 0; k < n; ++k) out[k] = e8m0(in[k]);
    } else {
      for (std::size_t k = 0; k < n; ++k) out[k] = fp8(in[k]);
    }
  }

 private:
  std::uint8_t fp8(std::uint64_t bits) const {
    switch (source_) {
      case Source::f32:
        return __nv_cvt_float_to_fp8(std::bit_cast<float>(std::uint32_t(bits)), sat_, interp_);
      case Source::f64: return __nv_cvt_double_to_fp8(std::bit_cast<double>(bits), sat_, interp_);
      case Source::bf16: {
        __nv_bfloat16_raw r;
        r.x = static_cast<unsigned short>(bits);
        return __nv_cvt_bfloat16raw_to_fp8(r, sat_, interp_);
      }
      case Source::f16: {
        __half_raw r;
        r.x = static_cast<unsigned short>(bits);
        return __nv_cvt_halfraw_to_fp8(r, sat_, interp_);
      }
    }
    return 0;
  }

  std::uint8_t e8m0(std::uint64_t bits) const {
    if (source_ == Source::f64)
      return __nv_cvt_double_to_e8m0(std::bit_cast<double>(bits), sat_, round_);
    if (source_ == Source::bf16) {
      __nv_bfloat16_raw r;
      r.x = static_cast<unsigned short>(bits);
      return __nv_cvt_bfloat16raw_to_e8m0(r, sat_, round_);
    }
    return __nv_cvt_float_to_e8m0(std::bit_cast<float>(std::uint32_t(bits)), sat_, round_);
  }

  Format format_;
  Source source_;
  __nv_saturation_t sat_;
  __nv_fp8_interpretation_t interp_;
  cudaRoundMode round_;
};

}  // namespace

bool cuda_peer_available() { return true; }
#else
bool cuda_peer_available() { return false; }
#endif

std::unique_ptr<InProcessPeer> make_cuda_peer(const ProfileCodec& c) {
  if (c.profile != Profile::cuda_satfinite && c.profile != Profile::cuda_nosat)
    throw UsageError("--against cuda checks the cuda_satfinite and cuda_nosat profiles only, not " +
                     std::string(to_string(c.profile)));
    // make_codec already rejected what cuda_fp8.h has no host function for (e8m0 from f16).
#if defined(FP8REF_CLI_HAVE_CUDA_FP8)
  return std::make_unique<CudaPeer>(c);
#else
  throw UsageError(
      "--against cuda is unavailable: fp8-check was built without the CUDA toolkit (cuda_fp8.h)");
#endif
}

}  // namespace fp8ref::cli
