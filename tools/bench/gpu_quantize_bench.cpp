// fp8ref_gpu_quantize_bench: the GPU data-path kernels (gpu/quantize.h, gpu/pad_permute.h) on an
// MoE-sized activation (M = 32768 tokens, K = 7168, bf16), each kernel's GB/s (bytes read +
// written) and its ratio to a device-to-device copy measured in the same run
// (docs/recipes.md "GPU kernels"). Optional argument: a CSV file for bench/gpu_quantize_torch.py,
// which adds the torch eager / torch.compile ratios. A program that prints ratios, not a test.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/pad_permute.h"
#include "gpu/quantize.h"

namespace {

using namespace fp8ref;

constexpr std::int64_t kM = 32768, kK = 7168;

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  FP8REF_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

// Mean milliseconds of `fn` over 20 launches after 3 warm-ups.
double time_ms(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  cudaEvent_t a, b;
  FP8REF_CUDA_CHECK(cudaEventCreate(&a));
  FP8REF_CUDA_CHECK(cudaEventCreate(&b));
  FP8REF_CUDA_CHECK(cudaEventRecord(a));
  constexpr int kIters = 20;
  for (int i = 0; i < kIters; ++i) fn();
  FP8REF_CUDA_CHECK(cudaEventRecord(b));
  FP8REF_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  FP8REF_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(ms) / kIters;
}

struct Row {
  std::string name;
  double ms, bytes;
};

struct Buffers {
  void* x;          // bf16 (M, K)
  void* codes;      // (M, K) bytes
  void* scales;     // generous
  void* codes_pad;  // padded codes
  void* y;          // f32 (M, K) expert outputs
  void* out;        // f32 (tokens, K)
  float* prob;
};

void quantize_rows(const Buffers& b, std::vector<Row>& rows) {
  const gpu::DeviceMatrix x{b.x, Source::bf16, kM, kK};
  const double in = double(kM * kK * 2), codes = double(kM * kK);
  struct Q {
    const char* name;
    Recipe r;
    BlockGeometry g;
    double scale_bytes;
  };
  const Q qs[] = {
      {"1x128 te e4m3",
       {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0},
       BlockGeometry::b1x128,
       kM * kK / 128 * 4.0},
      {"1x128 deepgemm ue8m0",
       {RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, true, 0},
       BlockGeometry::b1x128,
       kM * kK / 128 * 4.0},
      {"128x128 te e4m3",
       {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0},
       BlockGeometry::b128x128,
       kM * kK / 16384 * 4.0},
      {"rowwise torchao",
       {RecipeKind::torchao, Format::e4m3, Runtime::torch_cuda, false, 0},
       BlockGeometry::rowwise,
       kM * 4.0},
      {"tensorwise te",
       {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0},
       BlockGeometry::tensorwise,
       4.0},
      {"1x32 mx_rceil (TE)",
       {RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0},
       BlockGeometry::b1x32,
       kM * kK / 32.0},
      {"1x32 mx_floor",
       {RecipeKind::mx_floor, Format::e4m3, Runtime::torch_cuda, false, 0},
       BlockGeometry::b1x32,
       kM * kK / 32.0},
      {"128x1 te (columns)",
       {RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0},
       BlockGeometry::b128x1,
       kM / 128 * kK * 4.0},
  };
  for (const Q& q : qs) {
    const gpu::QuantizeOutput out{static_cast<std::uint8_t*>(b.codes), std::size_t(kM * kK),
                                  b.scales, std::size_t(kM * kK)};
    const double ms = time_ms([&] { gpu::quantize(x, q.r, q.g, {}, out, nullptr); });
    rows.push_back({q.name, ms, in + codes + q.scale_bytes});
    // Tensorwise reads x twice (the amax pass, then the cast pass): the same time counted over
    // the bytes it moves, 2 B + 2 B read and 1 B written an element, against the copy.
    if (q.g == BlockGeometry::tensorwise)
      rows.push_back({"tensorwise te, bytes moved", ms, 2 * in + codes + q.scale_bytes});
  }
}

// The fused calls: the 1x128 kernel with 4 and 8 chunks a lane in flight (default 16), both
// orientations from one read (te, MX RCEIL, deepgemm ue8m0, MX floor), SwiGLU then quantize.
void fused_rows(const Buffers& b, std::vector<Row>& rows) {
  const gpu::DeviceMatrix x{b.x, Source::bf16, kM, kK};
  const double in = double(kM * kK * 2), codes = double(kM * kK);
  const Recipe te{RecipeKind::te, Format::e4m3, Runtime::cuda_kernel, false, 0};
  const gpu::QuantizeOutput row{static_cast<std::uint8_t*>(b.codes), std::size_t(kM * kK), b.scales,
                                std::size_t(kM * kK)};
  for (int chunks : {4, 8}) {
    const double ms = time_ms([&] {
      gpu::quantize(x, te, BlockGeometry::b1x128, {}, row, nullptr, {0, chunks});
    });
    rows.push_back({"1x128 te e4m3 (" + std::to_string(chunks) + " chunks)", ms,
                    in + codes + kM * kK / 128 * 4.0});
  }
  // Both orientations from one read: codes twice, 1x128 and 128x1 scales.
  const gpu::QuantizeOutput col{static_cast<std::uint8_t*>(b.codes_pad), std::size_t(kM * kK),
                                b.out, std::size_t(kM * kK)};
  double ms = time_ms([&] { gpu::quantize_dual(x, te, row, col, nullptr); });
  rows.push_back({"dual 1x128 + 128x1 te", ms, in + 2 * codes + 2 * kM * kK / 128 * 4.0});
  const Recipe mx{RecipeKind::mx_rceil, Format::e4m3, Runtime::cuda_kernel, false, 0};
  ms = time_ms([&] { gpu::quantize_dual(x, mx, row, col, nullptr); });
  rows.push_back({"dual 1x32 + 32x1 mx_rceil", ms, in + 2 * codes + 2 * kM * kK / 32.0});
  // The other dual forms (docs/recipes.md): deepgemm's power-of-two f32 scales (the 1x128 tile
  // form of te, its tiles with a NaN or Inf cast again with the fix) and MX floor scales.
  const Recipe dg{RecipeKind::deepgemm, Format::e4m3, Runtime::torch_cuda, true, 0};
  ms = time_ms([&] { gpu::quantize_dual(x, dg, row, col, nullptr); });
  rows.push_back(
      {"dual 1x128 + 128x1 deepgemm ue8m0", ms, in + 2 * codes + 2 * kM * kK / 128 * 4.0});
  const Recipe mxf{RecipeKind::mx_floor, Format::e4m3, Runtime::torch_cuda, false, 0};
  ms = time_ms([&] { gpu::quantize_dual(x, mxf, row, col, nullptr); });
  rows.push_back({"dual 1x32 + 32x1 mx_floor", ms, in + 2 * codes + 2 * kM * kK / 32.0});
  // SwiGLU of the tensor read as a merged (M, 2H) gate/up, H = K / 2, then 1x128 quantize.
  const gpu::QuantizeOutput h{static_cast<std::uint8_t*>(b.codes), std::size_t(kM * kK), b.scales,
                              std::size_t(kM * kK)};
  ms = time_ms([&] { gpu::swiglu_quantize(x, te, h, nullptr); });
  rows.push_back({"swiglu + 1x128 te (H = K/2)", ms, in + codes / 2 + kM * kK / 256 * 4.0});
}

// Plans (host index maps, uploaded once) are built outside the timed loop: a MoE layer plans once
// per routing and reuses the plan for codes, scales and the combine.
void movement_rows(const Buffers& b, std::vector<Row>& rows) {
  // pad: 256 experts of 128 tokens +- jitter, align 128, FP8 rows of K bytes.
  std::vector<std::int64_t> sizes(256, kM / 256);
  for (std::size_t g = 0; g < sizes.size(); g += 2) sizes[g] += 17, sizes[g + 1] -= 17;
  const gpu::PadPlan pad = gpu::plan_pad(sizes, 128, gpu::EmptyGroups::keep_empty);
  const std::int64_t cap = pad.layout.capacity;
  double ms = time_ms([&] {
    gpu::pad_rows({b.codes, kM, kK}, pad, {b.codes_pad, cap, kK}, nullptr);
  });
  rows.push_back({"pad fp8 rows to 128", ms, double(kM * kK + cap * kK)});
  // permute: 4096 tokens, top-8 of 256 experts, FP8 rows and their TE compact 1x128 scale rows.
  const std::int64_t T = kM / 8, k = 8, E = 256, SB = kK / 128 * 4;
  std::vector<std::int32_t> expert;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t j = 0; j < k; ++j) expert.push_back(std::int32_t((t * 37 + j * 32) % E));
  const gpu::PermutePlan perm = gpu::plan_permute({T, k, E, expert});
  ms = time_ms([&] { gpu::permute_rows({b.x, T, kK}, perm, {b.codes_pad, kM, kK}, nullptr); });
  rows.push_back({"permute fp8 rows top-8", ms, double(2 * kM * kK)});
  ms = time_ms([&] {
    gpu::permute_rows({b.x, T, kK}, perm, {b.codes_pad, kM, kK}, nullptr);
    gpu::permute_rows({b.scales, T, SB}, perm, {b.y, kM, SB}, nullptr);
  });
  rows.push_back({"permute fp8 + 1x128 scales top-8", ms, double(2 * kM * (kK + SB))});
  ms = time_ms([&] {
    gpu::unpermute_combine(static_cast<const float*>(b.y), kK, perm, b.prob,
                           gpu::Combine::mul_then_add, static_cast<float*>(b.out),
                           std::size_t(T * kK), nullptr);
  });
  rows.push_back({"unpermute combine f32 top-8", ms, double(kM * kK * 4 + T * kK * 4)});
}

}  // namespace

int main(int argc, char** argv) {
  if (!gpu::device_available()) {
    std::fprintf(stderr, "fp8ref_gpu_quantize_bench: %s\n", gpu::device_description().c_str());
    return 2;
  }
  std::printf("%s, M = %lld, K = %lld, bf16 input\n", gpu::device_description().c_str(),
              (long long)kM, (long long)kK);
  Buffers b{device_alloc(kM * kK * 2),
            device_alloc(kM * kK),
            device_alloc(kM * kK),
            device_alloc(kM * kK * 2),
            device_alloc(kM * kK * 4),
            device_alloc(kM * kK * 4),
            static_cast<float*>(device_alloc(kM * 4))};
  std::vector<std::uint16_t> host(std::size_t(kM * kK));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (auto& h : host) {
    const float f = nd(rng);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    h = std::uint16_t(u >> 16);
  }
  FP8REF_CUDA_CHECK(cudaMemcpy(b.x, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  FP8REF_CUDA_CHECK(cudaMemset(b.y, 0x3c, kM * kK * 4));
  FP8REF_CUDA_CHECK(cudaMemset(b.prob, 0x3e, kM * 4));
  const double copy_ms = time_ms([&] {
    FP8REF_CUDA_CHECK(cudaMemcpyAsync(b.y, b.out, kM * kK * 2, cudaMemcpyDeviceToDevice));
  });
  const double copy_gbs = 2.0 * kM * kK * 2 / copy_ms / 1e6;
  std::vector<Row> rows;
  quantize_rows(b, rows);
  fused_rows(b, rows);
  movement_rows(b, rows);
  std::printf("%-30s %9s %9s %9s\n", "kernel", "ms", "GB/s", "% copy");
  std::printf("%-30s %9.4f %9.1f %9.1f\n", "D2D copy (same run)", copy_ms, copy_gbs, 100.0);
  FILE* csv = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (csv) std::fprintf(csv, "kernel,ms,gbs,pct_copy\ncopy,%.5f,%.2f,100\n", copy_ms, copy_gbs);
  for (const Row& r : rows) {
    const double gbs = r.bytes / r.ms / 1e6;
    std::printf("%-30s %9.4f %9.1f %9.1f\n", r.name.c_str(), r.ms, gbs, 100.0 * gbs / copy_gbs);
    if (csv)
      std::fprintf(csv, "%s,%.5f,%.2f,%.2f\n", r.name.c_str(), r.ms, gbs, 100 * gbs / copy_gbs);
  }
  if (csv) std::fclose(csv);
  return 0;
}
