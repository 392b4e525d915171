// fp8ref_gpu_gemm_bench: the FP8 grouped GEMM kernel (gpu/grouped_gemm.h) on the MoE layer shape
// M = 32768 tokens, E = 8 experts, N = 2048, K = 7168 with balanced, Zipf-skewed and two-empty
// expert loads: forward (blockwise, blockwise_mn = blockwise with A's scales passed MN-major,
// rowwise, tensorwise) and dgrad (blockwise), TFLOP/s each (docs/benchmarks.md). `--csv FILE`
// writes the timings for bench/gpu_gemm_torch.py, which times the torch peers in the same session
// and prints the ratios; `--check` compares every output (wgrad included) with the GPU oracle
// bitwise after the timing; wgrad with f32 C and dW, f32 dW into C itself (in place) and bf16 dW,
// each wgrad row with its ratio to forward blockwise on the same load (the target: 0.75x);
// `--wgrad-only` times forward blockwise (the reference of wgrad's ratio)
// and wgrad alone, wgrad also on `shift16` and `shift32`, balanced loads whose groups start 16 / 32
// tokens past a multiple of 128 (docs/benchmarks.md); `--no-wgrad` leaves the wgrad rows out (an
// A/B of the forward / dgrad kernels in less device time, `--check` too); `--device-groups` runs
// the forward and dgrad rows on the device-side groups (offs as int32 on the device, the prologue
// kernel in every launch, a workspace with room for the forward's transposed row-major blockwise
// A scales, docs/gpu_gemm.md §1), to compare with a run without it; `--layouts`
// times what the launchers' copies cost (docs/gpu_gemm.md §1), each beside the row without the
// copy: dgrad on W stored nk (the W transpose) against kn, wgrad on row-major dY / X (the fused
// transpose) against token-contiguous, and wgrad on `shift8` (groups starting 8 tokens past a
// multiple of 128: the aligned copy) against `shift16` (read in place); `--iters N` times N
// launches a row (10; more to read the clocks and power of long runs). A program that prints
// ratios, not a test.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/grouped_gemm.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "gpu/oracle/grouped_wgrad_oracle.h"
#include "numerics/scale_layout.h"

namespace {

using namespace fp8ref;

constexpr std::int64_t kM = 32768, kE = 8, kN = 2048, kK = 7168;

// --device-groups (set once by main): forward and dgrad take DeviceGroups instead of host offs.
bool g_device_groups = false;

struct DeviceArray {
  void* p = nullptr;
  explicit DeviceArray(std::size_t bytes) { FP8REF_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  template <class T>
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size() * sizeof(T)) {
    FP8REF_CUDA_CHECK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

int g_iters = 10;  // timed launches a row (`--iters`)

// Mean milliseconds of `fn` over g_iters launches after 2 warm-ups.
double time_ms(const std::function<void()>& fn) {
  for (int i = 0; i < 2; ++i) fn();
  cudaEvent_t a, b;
  FP8REF_CUDA_CHECK(cudaEventCreate(&a));
  FP8REF_CUDA_CHECK(cudaEventCreate(&b));
  FP8REF_CUDA_CHECK(cudaEventRecord(a));
  for (int i = 0; i < g_iters; ++i) fn();
  FP8REF_CUDA_CHECK(cudaEventRecord(b));
  FP8REF_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  FP8REF_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a), cudaEventDestroy(b);
  return ms / g_iters;
}

// Cumulative expert ends of a load: balanced, Zipf (size ~ 1/rank), two empty experts, or shift8
// / shift16 / shift32 (balanced, the first expert 8 / 16 / 32 tokens longer and the last as much
// shorter).
std::vector<std::int64_t> expert_offs(const std::string& dist) {
  if (dist == "shift8" || dist == "shift16" || dist == "shift32") {
    const std::int64_t shift = dist == "shift8" ? 8 : dist == "shift16" ? 16 : 32;
    std::vector<std::int64_t> offs;
    for (std::int64_t e = 1; e <= kE; ++e) offs.push_back(e == kE ? kM : e * (kM / kE) + shift);
    return offs;
  }
  std::vector<double> w(kE, 1.0);
  if (dist == "zipf")
    for (int e = 0; e < kE; ++e) w[e] = 1.0 / (e + 1);
  if (dist == "two_empty") w[0] = w[3] = 0.0;
  double sum = 0;
  for (double x : w) sum += x;
  std::vector<std::int64_t> offs;
  double acc = 0;
  for (double x : w) offs.push_back(std::llround((acc += x) / sum * double(kM)));
  offs.back() = kM;
  return offs;
}

std::vector<std::uint8_t> random_codes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> v(n);
  std::uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = std::uint8_t((s >> 56) & 0xF7);  // e4m3 and e5m2 without NaN / Inf: exponent field < max
  }
  return v;
}
std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(1.0f + float(rng() % 8) / 8.0f, int(rng() % 9) - 12);
  return v;
}

struct Config {
  const char* op;  // forward or dgrad
  Scaling scaling;
  bool mn_major = false;  // blockwise forward: A scales passed MN-major (tma_mn_major)
  bool w_nk = false;      // dgrad: W stored nk (G, N, K), transposed by the launcher
  const char* label() const {
    return mn_major ? "blockwise_mn" : w_nk ? "blockwise_wnk" : to_string(scaling);
  }
};

struct Host {
  std::vector<std::uint8_t> a, b;  // A (M, K), B (E, N, K); dgrad: dY (M, N), W (E, K, N) or nk
  std::vector<float> sa, sb;
};

Host make_host(const Config& c) {
  const bool dgrad = std::strcmp(c.op, "dgrad") == 0;
  const std::int64_t red = dgrad ? kN : kK, out = dgrad ? kK : kN;
  Host h{
      random_codes(std::size_t(kM * red), 1), random_codes(std::size_t(kE * kN * kK), 2), {}, {}};
  const std::size_t sa = c.scaling == Scaling::blockwise ? std::size_t(kM * (red / 128))
                         : c.scaling == Scaling::rowwise ? std::size_t(kM)
                                                         : 1;
  const std::size_t sb = c.scaling == Scaling::blockwise ? std::size_t(kE * (kN / 128) * (kK / 128))
                         : c.scaling == Scaling::rowwise ? std::size_t(kE * out)
                                                         : std::size_t(kE);
  h.sa = random_scales(sa, 3), h.sb = random_scales(sb, 4);
  return h;
}

// Row -> expert of contiguous expert ends (for the oracle's dgrad).
std::vector<std::int32_t> row_map_of(const std::vector<std::int64_t>& offs) {
  std::vector<std::int32_t> map(static_cast<std::size_t>(kM), -1);
  std::int64_t r = 0;
  for (std::int64_t g = 0; g < kE; ++g)
    for (; r < offs[std::size_t(g)]; ++r) map[std::size_t(r)] = std::int32_t(g);
  return map;
}

// (rows, cols) row-major -> (cols, rows) row-major.
std::vector<std::uint8_t> transposed(const std::vector<std::uint8_t>& v, std::int64_t rows,
                                     std::int64_t cols) {
  std::vector<std::uint8_t> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[std::size_t(c * rows + r)] = v[std::size_t(r * cols + c)];
  return t;
}

// W stored nk (E, N, K) -> kn (E, K, N), for the oracle.
std::vector<std::uint8_t> w_kn_of(const std::vector<std::uint8_t>& w) {
  std::vector<std::uint8_t> kn;
  kn.reserve(w.size());
  for (std::int64_t e = 0; e < kE; ++e) {
    const auto first = w.begin() + e * kN * kK;
    const auto t = transposed(std::vector<std::uint8_t>(first, first + kN * kK), kN, kK);
    kn.insert(kn.end(), t.begin(), t.end());
  }
  return kn;
}

// The kernel on one config and load; returns milliseconds, and with `check` the mismatch count
// against the GPU oracle (-1 when not checked).
std::pair<double, std::int64_t> run(const Config& c, const Host& h,
                                    const std::vector<std::int64_t>& offs, bool check) {
  const bool dgrad = std::strcmp(c.op, "dgrad") == 0;
  const std::int64_t out_cols = dgrad ? kK : kN;
  const std::vector<float> sa_h =
      c.mn_major ? serialize_f32(ScaleLayoutF32::tma_mn_major, 1, kM, kK / 128, h.sa) : h.sa;
  DeviceArray a(h.a), b(h.b), sa(sa_h), sb(h.sb), y(std::size_t(kM * out_cols) * 2);
  const gpu::DeviceGemmOutput out{OutDtype::bf16, y.p, kM * out_cols};
  // The device-side groups' workspace: with room for the forward's transposed row-major blockwise
  // A scales (grouped_gemm_workspace_bytes(operands)), as a caller would give it.
  gpu::DeviceGemmOperands shape{};
  shape.M = kM, shape.K = kK, shape.scaling = c.scaling;
  shape.scale_a_layout = c.mn_major ? ScaleLayoutF32::tma_mn_major : ScaleLayoutF32::row_major;
  const std::size_t ws =
      dgrad ? gpu::grouped_gemm_workspace_bytes() : gpu::grouped_gemm_workspace_bytes(shape);
  DeviceArray offs32(std::vector<std::int32_t>(offs.begin(), offs.end())), status(4), workspace(ws);
  const gpu::DeviceGroups groups{offs32.as<const std::int32_t>(), status.as<std::int32_t>(),
                                 workspace.p, ws};
  const bool dev = g_device_groups;
  std::function<void()> launch;
  if (dgrad) {
    const gpu::DeviceDgradOperands d{kM,
                                     kN,
                                     kK,
                                     kE,
                                     Format::e4m3,
                                     Format::e4m3,
                                     a.as<std::uint8_t>(),
                                     b.as<std::uint8_t>(),
                                     c.w_nk ? BLayout::nk : BLayout::kn,
                                     c.scaling,
                                     sa.as<float>(),
                                     std::int64_t(h.sa.size()),
                                     sb.as<float>(),
                                     std::int64_t(h.sb.size())};
    launch = [=] {
      dev ? gpu::grouped_gemm_dgrad(d, groups, out, nullptr)
          : gpu::grouped_gemm_dgrad(d, offs, out, nullptr);
    };
  } else {
    const gpu::DeviceGemmOperands f{
        kM,
        kN,
        kK,
        kE,
        Format::e4m3,
        Format::e4m3,
        a.as<std::uint8_t>(),
        b.as<std::uint8_t>(),
        c.scaling,
        sa.as<float>(),
        std::int64_t(sa_h.size()),
        sb.as<float>(),
        std::int64_t(h.sb.size()),
        c.mn_major ? ScaleLayoutF32::tma_mn_major : ScaleLayoutF32::row_major};
    launch = [=] {
      dev ? gpu::grouped_gemm_forward(f, groups, out, nullptr)
          : gpu::grouped_gemm_forward(f, offs, out, nullptr);
    };
  }
  const double ms = time_ms(launch);
  if (dev) {
    std::int32_t st = -1;
    FP8REF_CUDA_CHECK(cudaMemcpy(&st, status.p, 4, cudaMemcpyDeviceToHost));
    if (st != 0) std::fprintf(stderr, "%s\n", gpu::grouped_gemm_status_message(st).c_str());
  }
  if (!check) return {ms, -1};
  std::vector<std::uint16_t> got(std::size_t(kM * out_cols)), want(got.size(), 0);
  FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), y.p, got.size() * 2, cudaMemcpyDeviceToHost));
  const ModelChoice m = gpu::grouped_gemm_declared_model(c.scaling);
  const GemmOutput o{OutDtype::bf16, {}, want, {}};
  if (dgrad)
    gpu::oracle_grouped_gemm_dgrad(
        {kM, kN, kK, kE, Format::e4m3, Format::e4m3, h.a, c.w_nk ? w_kn_of(h.b) : h.b, BLayout::kn,
         c.scaling, h.sa, h.sb},
        row_map_of(offs), m, RowPolicy::untouched, o);
  else
    gpu::oracle_grouped_gemm_forward_offs(
        {kM, kN, kK, kE, Format::e4m3, Format::e4m3, h.a, h.b, BLayout::nk, c.scaling, h.sa, h.sb},
        offs, m, RowPolicy::untouched, o);
  std::int64_t diffs = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diffs += got[i] != want[i];
  return {ms, diffs};
}

// The expert ends of a load rounded down to multiples of 16 tokens (the last stays kM).
std::vector<std::int64_t> rounded16(std::vector<std::int64_t> offs) {
  for (auto& o : offs) o = o / 16 * 16;
  offs.back() = kM;
  return offs;
}

// K-grouped wgrad dW[e] (N, K) = C[e] + dY_eᵀ·X_e (f32 C, f32 dW or `bf16_dw`, blockwise
// 1×128-along-tokens scales) on the expert ends `offs`, dY / X token-contiguous or `row_major`;
// milliseconds, and with `check` the mismatch count against the GPU oracle's wgrad (-1 when not
// checked).
std::pair<double, std::int64_t> run_wgrad(const std::vector<std::int64_t>& offs, bool check,
                                          bool row_major = false, bool bf16_dw = false,
                                          bool in_place = false) {
  std::int64_t rows = 0, prev = 0;
  for (auto o : offs) rows += (o - prev + 127) / 128, prev = o;
  // dY (M, N) and X (M, K) for the oracle; token-contiguous, the kernel reads their transposes
  // (random codes either way, so without `check` they are drawn transposed).
  const auto dy = random_codes(std::size_t(kM * kN), 5), x = random_codes(std::size_t(kM * kK), 6);
  const auto sdy_h = random_scales(std::size_t(rows * kN), 7),
             sx_h = random_scales(std::size_t(rows * kK), 8);
  const bool t = check && !row_major;
  DeviceArray dy_t(t ? transposed(dy, kM, kN) : dy), x_t(t ? transposed(x, kM, kK) : x), sdy(sdy_h),
      sx(sx_h);
  const std::vector<float> c_h(std::size_t(kE * kN * kK), 0.0f);
  DeviceArray c(c_h), dw(std::size_t(kE * kN * kK) * 4);
  const gpu::DeviceWgradOperands op{
      kM,
      kN,
      kK,
      kE,
      Format::e4m3,
      Format::e4m3,
      dy_t.as<std::uint8_t>(),
      x_t.as<std::uint8_t>(),
      Scaling::blockwise,
      sdy.as<float>(),
      rows * kN,
      sx.as<float>(),
      rows * kK,
      c.as<float>(),
      row_major ? gpu::WgradOperandLayout::row_major : gpu::WgradOperandLayout::token_contiguous};
  const gpu::DeviceGemmOutput out{bf16_dw ? OutDtype::bf16 : OutDtype::f32, in_place ? c.p : dw.p,
                                  kE * kN * kK};
  const double ms = time_ms([&] { gpu::grouped_gemm_wgrad(op, offs, out, nullptr); });
  if (!check) return {ms, -1};
  if (in_place) {  // the timed launches accumulated into C: once more from C as drawn
    FP8REF_CUDA_CHECK(cudaMemcpy(c.p, c_h.data(), c_h.size() * 4, cudaMemcpyHostToDevice));
    gpu::grouped_gemm_wgrad(op, offs, out, nullptr);
    FP8REF_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const WgradOperands host{
      kM, kN, kK, kE, Format::e4m3, Format::e4m3, dy, x, Scaling::blockwise, sdy_h, sx_h, c_h};
  const ModelChoice model = gpu::grouped_gemm_declared_model(Scaling::blockwise);
  std::int64_t diffs = 0;
  if (bf16_dw) {
    std::vector<std::uint16_t> got(c_h.size()), want(c_h.size());
    FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), dw.p, got.size() * 2, cudaMemcpyDeviceToHost));
    gpu::oracle_grouped_gemm_wgrad(host, offs, model, {OutDtype::bf16, {}, want, {}});
    for (std::size_t i = 0; i < got.size(); ++i) diffs += got[i] != want[i];
  } else {
    std::vector<float> got(c_h.size()), want(c_h.size());
    FP8REF_CUDA_CHECK(cudaMemcpy(got.data(), out.y, got.size() * 4, cudaMemcpyDeviceToHost));
    gpu::oracle_grouped_gemm_wgrad(host, offs, model, {OutDtype::f32, want, {}, {}});
    for (std::size_t i = 0; i < got.size(); ++i) diffs += std::memcmp(&got[i], &want[i], 4) != 0;
  }
  return {ms, diffs};
}

// The forward and dgrad rows of the table: each scaling and load, timed (and checked); with
// `wgrad_only` forward blockwise alone. Returns forward blockwise's TF/s by load (the reference of
// wgrad's target ratio).
std::map<std::string, double> bench_forward_dgrad(bool check, bool wgrad_only, FILE* csv) {
  std::map<std::string, double> forward_blockwise;
  const double flop = 2.0 * double(kM) * double(kN) * double(kK);
  std::vector<Config> configs = {
      Config{"forward", Scaling::blockwise}, Config{"forward", Scaling::blockwise, true},
      Config{"forward", Scaling::rowwise}, Config{"forward", Scaling::tensorwise},
      Config{"dgrad", Scaling::blockwise}};
  if (wgrad_only) configs.resize(1);
  for (const Config& c : configs) {
    const Host h = make_host(c);
    for (const char* dist : {"balanced", "zipf", "two_empty"}) {
      const auto offs = expert_offs(dist);
      const auto [ms, diffs] = run(c, h, offs, check);
      const double tf = flop / (ms * 1e-3) / 1e12;
      if (std::strcmp(c.op, "forward") == 0 && c.scaling == Scaling::blockwise && !c.mn_major)
        forward_blockwise[dist] = tf;
      std::printf("%-8s %-17s %-10s %9.3f %9.1f %s\n", c.op, c.label(), dist, ms, tf,
                  diffs < 0 ? "" : std::to_string(diffs).c_str());
      if (csv) {
        std::string o;
        for (auto x : offs) {
          if (!o.empty()) o += ' ';
          o += std::to_string(x);
        }
        std::fprintf(csv, "%s,%s,%s,%s,%.4f,%.2f\n", c.op, c.label(), dist, o.c_str(), ms, tf);
      }
    }
  }
  return forward_blockwise;
}

// The wgrad rows: blockwise, each load (groups rounded to 16 rows), f32 C and dW (gradient
// accumulation in f32, the rows the target ratio is read on), then f32 dW into C itself
// (`blockwise_inplace`: accumulation in place, DeepGEMM's k-grouped wgrad form), then f32 C and
// bf16 dW (`blockwise_bf16dw`); with `shift16` the f32 rows of the loads shift16 and shift32 too
// (group starts 16 and 32 tokens past a multiple of 128). Each row of a load that forward
// blockwise ran in this run ends with the ratio of their TF/s (the target is read on it; three
// decimals, since it is compared with 0.75).
void bench_wgrad(bool check, bool shift16, FILE* csv,
                 const std::map<std::string, double>& forward_blockwise) {
  const double flop = 2.0 * double(kM) * double(kN) * double(kK);
  enum Kind { f32, in_place, bf16 };
  constexpr struct {
    const char *label, *note;
  } kKinds[] = {{"blockwise", " (f32 C and dW)"},
                {"blockwise_inplace", " (f32 dW into C)"},
                {"blockwise_bf16dw", " (f32 C, bf16 dW)"}};
  std::vector<std::pair<const char*, Kind>> rows;
  for (const char* dist : {"balanced", "zipf", "two_empty"}) rows.emplace_back(dist, f32);
  if (shift16) rows.emplace_back("shift16", f32), rows.emplace_back("shift32", f32);
  for (const char* dist : {"balanced", "zipf", "two_empty"}) rows.emplace_back(dist, in_place);
  for (const char* dist : {"balanced", "zipf", "two_empty"}) rows.emplace_back(dist, bf16);
  for (const auto& [dist, kind] : rows) {
    const char* label = kKinds[kind].label;
    const std::vector<std::int64_t> offs = rounded16(expert_offs(dist));
    const auto [ms, diffs] = run_wgrad(offs, check, false, kind == bf16, kind == in_place);
    const double tf = flop / (ms * 1e-3) / 1e12;
    std::string note = diffs < 0 ? "" : std::to_string(diffs) + kKinds[kind].note;
    if (const auto f = forward_blockwise.find(dist); f != forward_blockwise.end()) {
      char ratio[48];
      std::snprintf(ratio, sizeof ratio, "%s%.3fx forward", note.empty() ? "" : ", ",
                    tf / f->second);
      note += ratio;
    }
    std::printf("%-8s %-17s %-10s %9.3f %9.1f %s\n", "wgrad", label, dist, ms, tf, note.c_str());
    if (csv) {
      std::string o;
      for (auto x : offs) {
        if (!o.empty()) o += ' ';
        o += std::to_string(x);
      }
      std::fprintf(csv, "wgrad,%s,%s,%s,%.4f,%.2f\n", label, dist, o.c_str(), ms, tf);
    }
  }
}

// `--layouts`: each launcher copy's row beside the same product without the copy, balanced and
// Zipf loads (wgrad's loads rounded to 16 tokens, as in bench_wgrad), with the ratio copy / none.
void bench_layouts(bool check, FILE* csv) {
  const double flop = 2.0 * double(kM) * double(kN) * double(kK);
  const auto row = [&](const char* op, const char* label, const char* dist, double ms,
                       std::int64_t diffs, double base_ms) {
    const double tf = flop / (ms * 1e-3) / 1e12;
    char ratio[48] = "";
    if (base_ms > 0) std::snprintf(ratio, sizeof ratio, "(time %.3fx the row above)", ms / base_ms);
    std::printf("%-8s %-14s %-10s %9.3f %9.1f %s%s\n", op, label, dist, ms, tf,
                diffs < 0 ? "" : (std::to_string(diffs) + " ").c_str(), ratio);
    if (csv) std::fprintf(csv, "%s,%s,%s,,%.4f,%.2f\n", op, label, dist, ms, tf);
  };
  const Config kn{"dgrad", Scaling::blockwise}, nk{"dgrad", Scaling::blockwise, false, true};
  const Host h = make_host(kn);  // random codes: the same bytes read as (E, K, N) or (E, N, K)
  for (const char* dist : {"balanced", "zipf"}) {
    const auto offs = expert_offs(dist);
    const auto [ms0, d0] = run(kn, h, offs, check);
    row("dgrad", kn.label(), dist, ms0, d0, 0);
    const auto [ms1, d1] = run(nk, h, offs, check);
    row("dgrad", nk.label(), dist, ms1, d1, ms0);
  }
  for (const char* dist : {"balanced", "zipf"}) {
    const auto offs = rounded16(expert_offs(dist));
    const auto [ms0, d0] = run_wgrad(offs, check);
    row("wgrad", "blockwise", dist, ms0, d0, 0);
    const auto [ms1, d1] = run_wgrad(offs, check, true);
    row("wgrad", "row_major", dist, ms1, d1, ms0);
  }
  const auto [ms16, d16] = run_wgrad(expert_offs("shift16"), check);
  row("wgrad", "blockwise", "shift16", ms16, d16, 0);
  const auto [ms8, d8] = run_wgrad(expert_offs("shift8"), check);
  row("wgrad", "blockwise", "shift8", ms8, d8, ms16);
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv_path;
  bool check = false, wgrad_only = false, no_wgrad = false, layouts = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      check = true;
    } else if (std::strcmp(argv[i], "--wgrad-only") == 0) {
      wgrad_only = true;
    } else if (std::strcmp(argv[i], "--no-wgrad") == 0) {
      no_wgrad = true;
    } else if (std::strcmp(argv[i], "--layouts") == 0) {
      layouts = true;
    } else if (std::strcmp(argv[i], "--device-groups") == 0) {
      g_device_groups = true;
    } else if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc &&
               std::sscanf(argv[i + 1], "%d", &g_iters) == 1 && g_iters >= 1 && g_iters <= 100000) {
      ++i;
    } else {
      std::fprintf(
          stderr,
          "usage: fp8ref_gpu_gemm_bench [--check] [--wgrad-only | --no-wgrad] [--device-groups] "
          "[--layouts] [--csv FILE] [--iters N]\n");
      return 2;
    }
  }
  if (wgrad_only && no_wgrad) {
    std::fprintf(stderr, "fp8ref_gpu_gemm_bench: --wgrad-only and --no-wgrad exclude each other\n");
    return 2;
  }
  if (!gpu::device_available()) {
    std::printf("SKIPPED: %s\n", gpu::device_description().c_str());
    return 0;
  }
  std::printf("%s; M=%lld E=%lld N=%lld K=%lld, e4m3, bf16 output\n",
              gpu::device_description().c_str(), (long long)kM, (long long)kE, (long long)kN,
              (long long)kK);
  std::printf("%-8s %-17s %-10s %9s %9s %s\n", "op", "scaling", "load", "ms", "TFLOP/s",
              check ? "mismatches vs GPU oracle" : "");
  FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
  if (csv) std::fprintf(csv, "op,scaling,load,offs,ms,tflops\n");
  if (layouts) {
    bench_layouts(check, csv);
  } else {
    const auto forward_blockwise = bench_forward_dgrad(check, wgrad_only, csv);
    if (!no_wgrad) bench_wgrad(check, wgrad_only, csv, forward_blockwise);
  }
  if (csv) std::fclose(csv);
  return 0;
}
