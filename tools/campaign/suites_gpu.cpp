// GPU fuzz suites: the harness the GPU kernels plug into (docs/fuzz.md "Adding a GPU suite"). A GPU
// suite is a Suite with label "gpu" whose unavailable_reason() names what is missing (no CUDA
// build, no device); the campaign reports it as skipped, never as passed. Kernels under test are
// the project's CUDA kernels (gpu/); expected values come from numerics/ and reference/, never from
// code shared with the kernel.
//
// gpu.cast: the hardware satfinite conversions (gpu/cast_kernels.h) == the cuda_satfinite codec
// profile on f32 tensors of every value class.
// gpu.oracle: the GPU oracle (gpu/oracle/) == the CPU oracle (reference/) bit for bit on the GEMM
// suites' cases: every model, scaling, dtype, descriptor and group distribution, NaN / Inf too.
#include <bit>
#include <random>

#include "campaign/gemm_case.h"
#include "campaign/gen/values.h"
#include "campaign/suite.h"
#include "numerics/profile.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include <cuda_runtime_api.h>

#include "gpu/cast_kernels.h"
#include "gpu/device.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#endif

namespace fp8ref::fuzz {

namespace {

struct CastCase {
  Format format = Format::e4m3;
  gen::ValueClass values = gen::ValueClass::normal;
  int scale_exp = 0;
  std::vector<std::uint32_t> x;
};

}  // namespace

std::string gpu_unavailable() {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  return gpu::device_available() ? std::string() : std::string("no CUDA device");
#else
  return "built without CUDA (FP8REF_ENABLE_CUDA=OFF or no nvcc)";
#endif
}

namespace {

void check_cast(const CastCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::size_t n = c.x.size();
  float* din = nullptr;
  std::uint8_t* dout = nullptr;
  std::vector<std::uint8_t> got(n);
  if (n) {
    if (cudaMalloc(reinterpret_cast<void**>(&din), n * 4) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&dout), n) != cudaSuccess)
      throw std::runtime_error("gpu.cast: cudaMalloc failed");
    cudaMemcpy(din, c.x.data(), n * 4, cudaMemcpyHostToDevice);
    gpu::cast_f32_to_fp8_satfinite(c.format, din, dout, n, nullptr);
    const cudaError_t err = cudaMemcpy(got.data(), dout, n, cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(dout);
    if (err != cudaSuccess)
      throw std::runtime_error(std::string("gpu.cast: ") + cudaGetErrorString(err));
  }
  fp.fold(got.data(), got.size());
  const ProfileCodec codec =
      make_codec(Profile::cuda_satfinite, c.format, Source::f32, Rounding::rne);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t want = codec.encode(c.x[i]);
    if (got[i] != want) {
      char buf[160];
      std::snprintf(
          buf, sizeof buf,
          "gpu.cast %s: input 0x%08x -> kernel 0x%02x, cuda_satfinite 0x%02x (element %zu)",
          std::string(to_string(c.format)).c_str(), c.x[i], got[i], want, i);
      throw Violation(buf);
    }
  }
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.cast: built without CUDA");
#endif
}

// The forward's output bits under the row map of the case, rows of no group +0.
[[maybe_unused]] std::vector<std::uint32_t> forward_bits(const GemmCase& c,
                                                         [[maybe_unused]] bool on_gpu) {
  const std::size_t n = std::size_t(c.M * c.N);
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n);
  const ref::GroupedGemmOperands op = c.operands();
  const ref::GemmOutput y{c.out, f, h, {}};
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  if (on_gpu)
    gpu::oracle_grouped_gemm_forward(op, c.group_of, c.model, ref::RowPolicy::zero, y);
  else
#endif
    ref::grouped_gemm_forward(op, c.group_of, c.model, ref::RowPolicy::zero, y);
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

void check_oracle(const GemmCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::vector<std::uint32_t> want = forward_bits(c, false), got = forward_bits(c, true);
  fp.fold(got.data(), got.size() * 4);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "gpu.oracle %s: row %zu col %zu: GPU 0x%08x, CPU 0x%08x",
                    to_string(c.model.model), i / std::size_t(c.N), i % std::size_t(c.N), got[i],
                    want[i]);
      throw Violation(buf);
    }
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.oracle: built without CUDA");
#endif
}

// --- gpu.cast: the case's draw, classes and case file ----------------------------------------

CastCase draw_cast() {
  CastCase c;
  c.format = *rc::gen::element(Format::e4m3, Format::e5m2);
  c.values = *gen::value_class(true);
  c.scale_exp = *rc::gen::inRange(-20, 21);
  const auto n = *rc::gen::inRange<std::int64_t>(0, 5000);
  c.x = gen::fill_f32(c.values, n, c.scale_exp, *rc::gen::arbitrary<std::uint64_t>());
  return c;
}

std::vector<std::string> cast_tags(const CastCase& c) {
  return {std::string("values:") + gen::to_string(c.values)};
}

TensorFile save_cast(const CastCase& c) {
  TensorFile tf;
  tf.tensors.push_back({"x_bits", u32_tensor(c.x, {std::int64_t(c.x.size())})});
  cases::put_meta(tf, "format", std::string(to_string(c.format)));
  cases::put_meta(tf, "values", gen::to_string(c.values));
  cases::put_meta(tf, "scale_exp", std::to_string(c.scale_exp));
  return tf;
}

CastCase load_cast(const TensorFile& tf) {
  CastCase c;
  const std::string f = get_meta(tf, "format");
  if (f != "e4m3" && f != "e5m2")
    throw std::invalid_argument("case file: format must be e4m3 or e5m2");
  c.format = f == "e4m3" ? Format::e4m3 : Format::e5m2;
  if (cases::has_meta(tf, "values")) {
    const auto v = cases::from_token(gen::kValueClasses, get_meta(tf, "values"));
    if (!v) throw std::invalid_argument("case file: unknown value class");
    c.values = *v;
  }
  if (cases::has_meta(tf, "scale_exp")) c.scale_exp = int(get_meta_int(tf, "scale_exp"));
  c.x = get_u32(tf, "x_bits");
  return c;
}

std::string cast_diff(const CastCase& x, const CastCase& y) {
  return x.format != y.format         ? "format"
         : x.values != y.values       ? "value class"
         : x.scale_exp != y.scale_exp ? "scale exponent"
         : x.x != y.x                 ? "source tensor"
                                      : "";
}

}  // namespace

void add_gpu_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (auto v : gen::kValueClasses) classes.push_back(std::string("values:") + gen::to_string(v));
  out.push_back(make_suite<CastCase>(
      {"gpu.cast",
       "hardware cvt.rn.satfinite f32 -> e4m3/e5m2 == the cuda_satfinite profile",
       "gpu",
       200,
       classes,
       {}},
      {draw_cast, check_cast, cast_tags, save_cast, load_cast, cast_diff}, gpu_unavailable));
  const DrawOptions o{true, false, false, true};
  out.push_back(make_suite<GemmCase>(
      {"gpu.oracle",
       "GPU oracle == CPU oracle bitwise: every model, scaling, dtype, descriptor, NaN/Inf",
       "gpu",
       300,
       gemm_classes(o),
       {"sizes:edge_256"}},
      {[o] { return draw_gemm(o); }, check_oracle, gemm_tags, save_gemm, load_gemm, gemm_case_diff},
      gpu_unavailable));
  add_gpu_quantize_suites(out);
  add_gpu_gemm_suites(out);
  add_gpu_data_suites(out);
  add_gpu_oracle_suites(out);
  add_gpu_quantize_dual_suites(out);
  add_gpu_swiglu_suites(out);
}

}  // namespace fp8ref::fuzz
