// `fp8-check quantize --swiglu --device cuda` (tools/cli/quantize.cpp, the fused GPU SwiGLU-then-
// quantize kernel of gpu/quantize.h) writes the same file, byte for byte, as the CPU path
// (reference/swiglu.h then reference/quantize) on a finite merged gate/up, for FP8 recipes of
// both scale types and several layouts; a block the fused kernel does not write is one line,
// exit 2. docs/recipes.md "SwiGLU".
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
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "tensor_io/safetensors.h"

namespace fp8ref {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string err;
};

class GpuCliSwiglu : public ::testing::Test {
 protected:
  // A finite (256, 2 * 256) bf16 gate/up: magnitudes 2^-30 .. 2^9 (the SwiGLU exp's table, its
  // 1 / 0 / Inf ends and the cast's saturation), both signs, zeros.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("fp8ref_gpu_cli_swiglu_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    constexpr std::int64_t kRows = 256, kTwoH = 512;
    tensor_io::Tensor t{
        tensor_io::DType::BF16, {kRows, kTwoH}, std::vector<std::uint8_t>(kRows * kTwoH * 2)};
    std::uint64_t s = 7;
    for (std::int64_t i = 0; i < kRows * kTwoH; ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const std::uint32_t r = std::uint32_t(s >> 33);
      const float mag = std::ldexp(1.0f + float(r % 1024) / 1024.0f, int(r / 1024 % 40) - 30);
      const float v = r % 97 == 0 ? 0.0f : (r & 1u << 30 ? -mag : mag);
      const std::uint16_t h = std::uint16_t(std::bit_cast<std::uint32_t>(v) >> 16);
      std::memcpy(t.data.data() + 2 * i, &h, 2);
    }
    tensor_io::TensorFile in;
    in.tensors.push_back({"gate_up", std::move(t)});
    tensor_io::write_safetensors((dir_ / "in.safetensors").string(), in);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Result run(const std::string& args, const std::string& out) {
    const std::string err = (dir_ / "stderr.txt").string();
    const std::string cmd = std::string(FP8REF_CHECK_EXE) + " quantize --swiglu --in " +
                            (dir_ / "in.safetensors").string() + " " + args + " --out " +
                            (dir_ / out).string() + " > /dev/null 2> " + err;
    const int status = std::system(cmd.c_str());
    std::ifstream f(err);
    std::stringstream ss;
    ss << f.rdbuf();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
  }
  static std::string bytes_of(const std::string& name) {
    std::ifstream f(dir_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  static inline fs::path dir_;
};

TEST_F(GpuCliSwiglu, CudaFileEqualsCpuFile) {
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();
  for (const char* args : {"--recipe te --block 1x128 --layout row_major",
                           "--recipe te --format e5m2 --block 1x128 --layout tma_mn_major",
                           "--recipe deepgemm --pow2 --block 1x128 --layout deepgemm_packed_ue8m0",
                           "--recipe torchao --block 1x128 --layout cublas_k_major_pad4",
                           "--recipe mx_rceil --block 1x32 --layout e8m0_blocked_128x4",
                           "--recipe mx_floor --block 1x32 --layout e8m0_row_major"}) {
    const Result cpu = run(args, "cpu.safetensors");
    const Result cuda = run(std::string(args) + " --device cuda", "cuda.safetensors");
    ASSERT_EQ(cpu.code, 0) << args << "\n" << cpu.err;
    ASSERT_EQ(cuda.code, 0) << args << "\n" << cuda.err;
    const std::string a = bytes_of("cpu.safetensors"), b = bytes_of("cuda.safetensors");
    EXPECT_GT(a.size(), 256u * 256u) << args;
    EXPECT_TRUE(a == b) << args << ": the --device cuda file differs from the CPU file";
  }
}

TEST_F(GpuCliSwiglu, BlockTheFusedKernelDoesNotWriteExit2) {
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();
  const Result r = run("--recipe te --block 128x128 --layout row_major --device cuda", "x.st");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("fp8-check: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("1x128 blocks"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fp8ref
