// `fp8-check quantize` (tools/cli/quantize.h) run as a program on a safetensors file written by
// tools/tensor_io: its codes and scale bytes equal fp8ref::quantize + serialize called directly,
// for every scale-layout family, f32 / bf16, 2-D and (G, N, K), and of SwiGLU's h (--swiglu);
// bad input exits 2 with one line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "numerics/scale_layout.h"
#include "reference/quantize.h"
#include "reference/swiglu.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::ref {
namespace {

namespace fs = std::filesystem;
using tensor_io::DType;
using tensor_io::Tensor;

// Class-weighted f32 values around 2^e: ordinary, powers of two, near-power mantissas, tiny,
// zero; NaN / Inf only where asked.
std::vector<float> values(std::size_t n, std::uint64_t seed, bool nonfinite) {
  std::vector<float> v(n);
  std::uint64_t s = seed;
  const auto next = [&s] {
    return std::uint32_t((s = s * 6364136223846793005ULL + 1442695040888963407ULL) >> 33);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const float scale = std::ldexp(1.0f, int(i / 97 % 30) - 15), sign = next() & 1 ? -1.0f : 1.0f;
    const std::uint32_t c = next() % 100;
    if (c < 60)
      v[i] = sign * float(next() % (1u << 23)) / float(1u << 23) * scale;
    else if (c < 75)
      v[i] = sign * std::ldexp(scale, int(next() % 8) - 4);
    else if (c < 85)
      v[i] = sign * std::bit_cast<float>((std::bit_cast<std::uint32_t>(scale) & 0xFF800000u) |
                                         (0x7FFFFFu - next() % 4));
    else if (c < 92)
      v[i] = sign * std::bit_cast<float>(next() % (1u << 23));
    else if (c < 97 || !nonfinite)
      v[i] = 0.0f * sign;
    else
      v[i] = sign * (c < 99 ? std::numeric_limits<float>::quiet_NaN()
                            : std::numeric_limits<float>::infinity());
  }
  return v;
}

Tensor f32_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  Tensor t{DType::F32, std::move(shape), std::vector<std::uint8_t>(v.size() * 4)};
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}
Tensor bf16_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  Tensor t{DType::BF16, std::move(shape), std::vector<std::uint8_t>(v.size() * 2)};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint16_t h = std::uint16_t(std::bit_cast<std::uint32_t>(v[i]) >> 16);
    std::memcpy(t.data.data() + 2 * i, &h, 2);
  }
  return t;
}

class QuantizeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("fp8ref_quantize_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    tensor_io::TensorFile in;
    in.tensors.push_back({"x32", f32_tensor(values(7 * 300, 1, true), {7, 300})});
    in.tensors.push_back({"xb", bf16_tensor(values(256 * 256, 2, true), {256, 256})});
    in.tensors.push_back({"w3", f32_tensor(values(2 * 130 * 256, 3, false), {2, 130, 256})});
    in.tensors.push_back({"x1d", f32_tensor(values(64, 4, false), {64})});
    tensor_io::write_safetensors((dir_ / "in.safetensors").string(), in);
    input_ = in;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  struct Result {
    int code;
    std::string err;
  };
  // Runs fp8-check quantize with `args`, writing dir/out.safetensors.
  static Result run(const std::string& args) {
    const std::string err = (dir_ / "stderr.txt").string();
    const std::string cmd = std::string(FP8REF_CHECK_EXE) + " quantize --in " +
                            (dir_ / "in.safetensors").string() + args + " --out " +
                            (dir_ / "out.safetensors").string() + " > /dev/null 2> " + err;
    const int status = std::system(cmd.c_str());
    std::ifstream f(err);
    std::stringstream ss;
    ss << f.rdbuf();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
  }
  static tensor_io::TensorFile output() {
    return tensor_io::read_safetensors((dir_ / "out.safetensors").string(), {});
  }

  // The CLI's output for `tensor` equals the library's quantize + serialize, byte for byte.
  static void expect_matches_library(const std::string& tensor, const Recipe& r, BlockGeometry g,
                                     const std::string& layout,
                                     std::vector<std::int64_t> scale_shape, DType scale_dtype) {
    const Tensor& x = *input_.find(tensor);
    const bool bf16 = x.dtype == DType::BF16;
    const std::int64_t groups = x.shape.size() == 3 ? x.shape[0] : 1;
    const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    std::vector<std::uint32_t> b32(bf16 ? 0 : x.data.size() / 4);
    std::vector<std::uint16_t> b16(bf16 ? x.data.size() / 2 : 0);
    if (bf16)
      std::memcpy(b16.data(), x.data.data(), x.data.size());
    else
      std::memcpy(b32.data(), x.data.data(), x.data.size());
    std::vector<std::uint8_t> codes;
    ScaleGridF32 f{groups, 0, 0, {}};
    ScaleGridE8m0 e{groups, 0, 0, {}};
    for (std::int64_t i = 0; i < groups; ++i) {
      const void* p = bf16 ? static_cast<const void*>(b16.data() + i * rows * cols)
                           : b32.data() + i * rows * cols;
      const Quantized q =
          quantize({p, bf16 ? Source::bf16 : Source::f32, rows, cols, cols, 1}, r, g);
      codes.insert(codes.end(), q.codes.begin(), q.codes.end());
      f.rows = e.rows = q.scale_rows, f.cols = e.cols = q.scale_cols;
      for (const float s : q.scale) f.bits.push_back(std::bit_cast<std::uint32_t>(s));
      e.codes.insert(e.codes.end(), q.e8m0.begin(), q.e8m0.end());
    }
    std::vector<std::uint8_t> scales;
    if (layout == "row_major") scales = serialize(ScaleLayoutF32::row_major, f);
    if (layout == "col_major") scales = serialize(ScaleLayoutF32::col_major, f);
    if (layout == "tma_mn_major") scales = serialize(ScaleLayoutF32::tma_mn_major, f);
    if (layout == "cublas_k_major_pad4") scales = serialize(ScaleLayoutF32::cublas_k_major_pad4, f);
    if (layout == "e8m0_row_major") scales = serialize(ScaleLayoutE8m0::row_major, e);
    if (layout == "e8m0_blocked_128x4") scales = serialize(ScaleLayoutE8m0::blocked_128x4, e);
    if (layout == "deepgemm_packed_ue8m0")
      scales = serialize(ScaleLayoutE8m0::deepgemm_packed, ue8m0_from_f32(f));
    ASSERT_FALSE(scales.empty()) << layout;
    const tensor_io::TensorFile out = output();
    const Tensor* c = out.find("codes");
    const Tensor* s = out.find("scales");
    ASSERT_TRUE(c != nullptr && s != nullptr);
    EXPECT_EQ(c->dtype, r.elem == Format::e4m3 ? DType::F8_E4M3 : DType::F8_E5M2);
    EXPECT_EQ(c->shape, x.shape);
    EXPECT_TRUE(c->data == codes) << "codes differ from fp8ref::quantize";
    EXPECT_EQ(s->dtype, scale_dtype);
    EXPECT_EQ(s->shape, scale_shape);
    EXPECT_TRUE(s->data == scales) << "scale bytes differ from fp8ref::serialize";
    EXPECT_EQ(out.metadata.at("fp8ref.recipe"), std::string(to_string(r.kind)));
    EXPECT_EQ(out.metadata.at("fp8ref.block"), std::string(to_string(g)));
  }

  // Bad input: exit 2 and one "fp8-check: error:" line mentioning `needle`.
  static void expect_usage_error(const std::string& args, const std::string& needle) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("fp8-check: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "'" << needle << "' not in: " << r.err;
  }

  static inline fs::path dir_;
  static inline tensor_io::TensorFile input_;
};

constexpr Runtime kCuda = Runtime::torch_cuda;

TEST_F(QuantizeCli, DeepGemmPerTokenRowMajorWithPartialBlockMatchesLibrary) {
  ASSERT_EQ(run(":x32 --recipe deepgemm --block 1x128 --layout row_major").code, 0);
  expect_matches_library("x32", {RecipeKind::deepgemm, Format::e4m3, kCuda, false, 0.0f},
                         BlockGeometry::b1x128, "row_major", {7, 3}, DType::F32);
}

TEST_F(QuantizeCli, DeepGemmUe8m0PackedIntoInt32MatchesLibrary) {
  ASSERT_EQ(run(":x32 --recipe deepgemm --pow2 --block 1x128 --layout deepgemm_packed_ue8m0").code,
            0);
  expect_matches_library("x32", {RecipeKind::deepgemm, Format::e4m3, kCuda, true, 0.0f},
                         BlockGeometry::b1x128, "deepgemm_packed_ue8m0", {1, 8}, DType::I32);
}

TEST_F(QuantizeCli, TorchaoRowwiseE5m2ColumnMajorOnCpuMatchesLibrary) {
  ASSERT_EQ(run(":x32 --recipe torchao --format e5m2 --runtime torch_cpu --block rowwise --layout "
                "col_major")
                .code,
            0);
  expect_matches_library("x32",
                         {RecipeKind::torchao, Format::e5m2, Runtime::torch_cpu, false, 0.0f},
                         BlockGeometry::rowwise, "col_major", {1, 7}, DType::F32);
}

TEST_F(QuantizeCli, Te128x128CublasPaddedOnBf16MatchesLibrary) {
  ASSERT_EQ(run(":xb --recipe te --block 128x128 --layout cublas_k_major_pad4").code, 0);
  expect_matches_library("xb", {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f},
                         BlockGeometry::b128x128, "cublas_k_major_pad4", {2, 4}, DType::F32);
}

TEST_F(QuantizeCli, MxFloorBlockedSwizzleOnBf16MatchesLibrary) {
  ASSERT_EQ(run(":xb --recipe mx_floor --block 1x32 --layout e8m0_blocked_128x4").code, 0);
  expect_matches_library("xb", {RecipeKind::mx_floor, Format::e4m3, kCuda, false, 0.0f},
                         BlockGeometry::b1x32, "e8m0_blocked_128x4", {256, 8}, DType::U8);
}

TEST_F(QuantizeCli, MxRceilTeKernelRowMajorE8m0MatchesLibrary) {
  ASSERT_EQ(run(":xb --recipe mx_rceil --block 1x32 --layout e8m0_row_major").code, 0);
  expect_matches_library("xb",
                         {RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0.0f},
                         BlockGeometry::b1x32, "e8m0_row_major", {256, 8}, DType::F8_E8M0);
}

TEST_F(QuantizeCli, PerExpertWeightsTmaAlignedMatchLibrary) {
  ASSERT_EQ(
      run(":w3 --recipe torchao --block 128x128 --layout tma_mn_major --allow-partial-blocks").code,
      0);
  expect_matches_library("w3", {RecipeKind::torchao, Format::e4m3, kCuda, false, 0.0f},
                         BlockGeometry::b128x128, "tma_mn_major", {2, 2, 4}, DType::F32);
}

// --swiglu: the codes and scales of h = ref::swiglu_merged_bf16 of the (256, 2·128) BF16 tensor
// (NaN and Inf inputs included: the CPU reference defines them), quantized by the library.
TEST_F(QuantizeCli, SwigluOfMergedGateUpMatchesLibrary) {
  ASSERT_EQ(run(":xb --swiglu --recipe te --block 1x128 --layout row_major").code, 0);
  const Tensor& x = *input_.find("xb");
  std::vector<std::uint16_t> gate_up(x.data.size() / 2);
  std::memcpy(gate_up.data(), x.data.data(), x.data.size());
  const std::vector<float> h = swiglu_merged_bf16(gate_up, 256, 128);
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0.0f};
  const Quantized q =
      quantize({h.data(), Source::f32, 256, 128, 128, 1}, te, BlockGeometry::b1x128);
  ScaleGridF32 f{1, q.scale_rows, q.scale_cols, {}};
  for (const float s : q.scale) f.bits.push_back(std::bit_cast<std::uint32_t>(s));
  const tensor_io::TensorFile out = output();
  const Tensor* c = out.find("codes");
  const Tensor* s = out.find("scales");
  ASSERT_TRUE(c != nullptr && s != nullptr);
  EXPECT_EQ(c->shape, (std::vector<std::int64_t>{256, 128}));
  EXPECT_TRUE(c->data == q.codes) << "codes differ from swiglu_merged_bf16 + quantize";
  EXPECT_TRUE(s->data == serialize(ScaleLayoutF32::row_major, f)) << "scale bytes differ";
  EXPECT_EQ(out.metadata.count("fp8ref.swiglu"), 1u);
}

TEST_F(QuantizeCli, SwigluNeedsBf16MergedInputExit2) {
  expect_usage_error(":x32 --swiglu --recipe te --block 1x128 --layout row_major", "BF16 (M, 2H)");
  expect_usage_error(":x32 --swiglu --device cuda --recipe te --block 1x128 --layout row_major",
                     "BF16 (M, 2H)");
}

// --swiglu --device cuda runs the fused GPU kernel (fp8ref_gpu_cli_swiglu_test compares it with
// the CPU path on a device): without a device (or without CUDA in the build) it is one line, exit
// 2; where a device answers, the file holds h's (256, 128) codes.
TEST_F(QuantizeCli, SwigluOnCudaWithoutDeviceExit2OneLine) {
  const std::string args =
      ":xb --swiglu --device cuda --recipe te --block 1x128 --layout row_major";
  const Result r = run(args);
  if (r.code == 0) {
    const tensor_io::TensorFile out = output();
    ASSERT_NE(out.find("codes"), nullptr);
    EXPECT_EQ(out.find("codes")->shape, (std::vector<std::int64_t>{256, 128}));
    EXPECT_EQ(out.metadata.count("fp8ref.swiglu"), 1u);
    return;
  }
  expect_usage_error(args, "--device cuda");
}

TEST_F(QuantizeCli, UnknownRecipeLayoutBlockExit2) {
  expect_usage_error(":x32 --recipe deepseek --block 1x128 --layout row_major",
                     "unknown recipe 'deepseek'");
  expect_usage_error(":x32 --recipe deepgemm --block 1x128 --layout k_major",
                     "unknown scale layout 'k_major'");
  expect_usage_error(":x32 --recipe deepgemm --block 1x64 --layout row_major",
                     "unknown block '1x64'");
  expect_usage_error(":x32 --recipe deepgemm --format e5m2 --block 1x128 --layout row_major",
                     "e4m3 only");
}

TEST_F(QuantizeCli, ShapeNotDivisibleWhereTheLibraryRequiresItExit2) {
  expect_usage_error(":x32 --recipe torchao --block 1x128 --layout row_major", "divide");
  expect_usage_error(":x32 --recipe mx_floor --block 1x32 --layout e8m0_row_major", "divide");
  expect_usage_error(":w3 --recipe mx_rceil --block 1x32 --layout e8m0_row_major",
                     "divisible by 32");
  expect_usage_error(":x1d --recipe deepgemm --block 1x128 --layout row_major", "not 2-D");
}

TEST_F(QuantizeCli, NanPolicyRejectExit2) {
  expect_usage_error(":x32 --recipe deepgemm --block 1x128 --layout row_major --nan reject",
                     "NaN at (");
  EXPECT_EQ(run(":w3 --recipe deepgemm --block 1x128 --layout row_major --nan reject").code, 0);
}

TEST_F(QuantizeCli, E8m0LayoutNeedsPowerOfTwoScalesExit2) {
  expect_usage_error(":x32 --recipe deepgemm --block 1x128 --layout e8m0_row_major", "--pow2");
  // torchao pow2: rows with an Inf or NaN amax get an Inf or NaN scale, which has no E8M0 code.
  expect_usage_error(":x32 --recipe torchao --pow2 --block rowwise --layout e8m0_row_major",
                     "power of two");
}

TEST_F(QuantizeCli, MissingTensorExit2) {
  expect_usage_error(":nope --recipe deepgemm --block 1x128 --layout row_major",
                     "no tensor 'nope'");
  expect_usage_error(" --recipe deepgemm --block 1x128 --layout row_major",
                     "name one as FILE:tensor");
}

}  // namespace
}  // namespace fp8ref::ref
