// The GPU grouped GEMM case (gpu_gemm_case.h): building, drawing, the oracle's and the kernel's
// output bits, and the first mismatch.
#include "campaign/gpu_gemm_case.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>

#include "gpu/grouped_gemm_tiles.h"  // no CUDA include: the wgrad_tile classes in every build
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/grouped_gemm.h"
#endif

namespace fp8ref::fuzz {
namespace {

constexpr std::uint8_t kNanCode = 0x7F;  // NaN in e4m3 (S.1111.111) and in e5m2 (S.11111.11)

// Scales (1 + j/8)·2^e, e in [-8, 8]: distinct per block and not powers of two, so RN(sa·sb)
// rounds and every promotion order gives other bits.
std::vector<float> spread_scales(std::int64_t n, std::mt19937_64& rng) {
  std::vector<float> s(std::size_t(std::max<std::int64_t>(n, 0)));
  for (auto& x : s) x = std::ldexp(1.0f + float(rng() % 8) / 8.0f, int(rng() % 17) - 8);
  return s;
}

// Row -> group map and the descriptors (offs or masked_m) of c.gs; sets M and m_max.
void set_rows(GpuGemmCase& c) {
  cases::GroupSizes gs = c.gs;
  // Row-major wgrad operands take any M: the tail stays as drawn.
  const bool any_m = c.wgrad_operands == WgradOperandForm::row_major;
  if (c.op == GemmOp::wgrad && c.wgrad_offs == WgradOffs::multiple_of_16) {
    for (auto& m : gs.sizes) m = m / 16 * 16;
    if (!any_m) gs.tail = gs.tail / 16 * 16;
  } else if (c.op == GemmOp::wgrad && !any_m) {  // any token: M = tokens and tail rounded to 16
    gs.tail = (gs.total() + gs.tail + 15) / 16 * 16 - gs.total();
  }
  c.G = gs.groups();
  if (c.op == GemmOp::masked) {
    const std::int64_t biggest = *std::max_element(gs.sizes.begin(), gs.sizes.end());
    c.m_max = biggest + gs.tail;
    c.M = c.G * c.m_max;
    c.group_of.assign(std::size_t(c.M), -1);
    for (std::int64_t g = 0; g < c.G; ++g) {
      c.masked_m.push_back(gs.sizes[std::size_t(g)]);
      std::fill_n(c.group_of.begin() + g * c.m_max, gs.sizes[std::size_t(g)], std::int32_t(g));
    }
    return;
  }
  for (std::int64_t g = 0; g < c.G; ++g)
    c.group_of.insert(c.group_of.end(), std::size_t(gs.sizes[std::size_t(g)]), std::int32_t(g));
  c.offs = gs.ends();
  c.M = gs.total() + gs.tail;
  c.group_of.resize(std::size_t(c.M), -1);
}

std::int64_t out_count(const GpuGemmCase& c) {
  return c.op == GemmOp::wgrad ? c.G * c.N * c.K : c.M * c.N;
}

// wgrad operands: dY (M, N), X (M, K), C; padding tokens NaN codes, their scale rows NaN; block
// scale rows ceil(m_g / 128) per group, then the tail's.
void set_wgrad_operands(GpuGemmCase& c, std::mt19937_64& rng) {
  const float nan = std::bit_cast<float>(0x7FC0DEADu);
  c.a = gen::fill_codes(c.fa, c.va, c.M * c.N, c.seed);
  c.b = gen::fill_codes(c.fb, c.vb, c.M * c.K, c.seed ^ 0x9E3779B97F4A7C15ull);
  const std::int64_t valid = c.offs.empty() ? 0 : c.offs.back();
  std::fill(c.a.begin() + valid * c.N, c.a.end(), kNanCode);
  std::fill(c.b.begin() + valid * c.K, c.b.end(), kNanCode);
  std::int64_t rows = 0, prev = 0;
  for (auto end : c.offs) rows += (end - prev + 127) / 128, prev = end;
  const std::int64_t all = rows + (c.M - valid + 127) / 128;
  const bool bw = c.scaling == Scaling::blockwise;
  c.sa = spread_scales(bw ? all * c.N : 1, rng), c.sb = spread_scales(bw ? all * c.K : 1, rng);
  if (bw) {
    std::fill(c.sa.begin() + rows * c.N, c.sa.end(), nan);
    std::fill(c.sb.begin() + rows * c.K, c.sb.end(), nan);
  }
  c.c.resize(std::size_t(c.G * c.N * c.K));
  for (std::size_t i = 0; i < c.c.size(); ++i)
    c.c[i] = i % 97 == 0 ? -0.0f : std::ldexp(float(rng() % 200) - 100.0f, int(rng() % 9) - 4);
}

// Each of `batches` row-major (rows, cols) byte matrices of `a` as (cols, rows).
std::vector<std::uint8_t> transpose(const std::vector<std::uint8_t>& a, std::int64_t rows,
                                    std::int64_t cols, std::int64_t batches = 1) {
  std::vector<std::uint8_t> t(a.size());
  for (std::int64_t b = 0; b < batches; ++b)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < cols; ++k)
        t[std::size_t((b * cols + k) * rows + r)] = a[std::size_t((b * rows + r) * cols + k)];
  return t;
}

// NaN codes and NaN scales in rows of no group and in experts without rows.
void poison(GpuGemmCase& c) {
  const float nan = std::bit_cast<float>(0x7FC0DEADu);
  const std::int64_t spr = cases::sa_per_row(c), spg = cases::sb_per_group(c);
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (c.group_of[std::size_t(r)] >= 0) continue;
    std::fill_n(c.a.begin() + r * c.K, c.K, kNanCode);
    if (c.scaling != Scaling::tensorwise) std::fill_n(c.sa.begin() + r * spr, spr, nan);
  }
  for (std::int64_t g = 0; g < c.G; ++g) {
    if (std::count(c.group_of.begin(), c.group_of.end(), std::int32_t(g)) > 0) continue;
    std::fill_n(c.b.begin() + g * c.N * c.K, c.N * c.K, kNanCode);
    std::fill_n(c.sb.begin() + g * spg, spg, nan);
  }
}

std::int64_t group_of_row(const GpuGemmCase& c, std::int64_t r) {
  return c.group_of[std::size_t(r)];
}

// Some non-zero code in the rows of groups of A and in B of an expert with rows.
bool operands_nonzero(const GpuGemmCase& c) {
  if (c.op == GemmOp::wgrad) {  // some non-zero code in the tokens of groups, in dY and in X
    const std::int64_t valid = c.offs.back();
    const auto nz = [](auto first, auto last) {
      return std::any_of(first, last, [](std::uint8_t x) { return (x & 0x7F) != 0; });
    };
    return nz(c.a.begin(), c.a.begin() + valid * c.N) && nz(c.b.begin(), c.b.begin() + valid * c.K);
  }
  bool a = false, b = false;
  for (std::int64_t r = 0; r < c.M && !a; ++r)
    if (c.group_of[std::size_t(r)] >= 0)
      for (std::int64_t k = 0; k < c.K && !a; ++k) a = (c.a[std::size_t(r * c.K + k)] & 0x7F) != 0;
  for (std::int64_t g = 0; g < c.G && !b; ++g)
    if (c.gs.sizes[std::size_t(g)] > 0)
      for (std::int64_t i = 0; i < c.N * c.K && !b; ++i)
        b = (c.b[std::size_t(g * c.N * c.K + i)] & 0x7F) != 0;
  return a && b;
}

}  // namespace

const char* to_string(WgradOffs w) {
  return w == WgradOffs::any_token ? "any_token" : "multiple_of_16";
}
const char* to_string(GroupsOn g) { return g == GroupsOn::device ? "device" : "host"; }

const char* to_string(WgradOperandForm w) {
  return w == WgradOperandForm::row_major ? "row_major" : "token_contiguous";
}

const char* to_string(WgradDw w) { return w == WgradDw::into_c ? "into_c" : "separate"; }

GpuGemmCase make_gpu_gemm_case(GemmOp op, const gen::GroupSizes& gs, std::int64_t N, std::int64_t K,
                               Format fa, Format fb, Scaling scaling, OutDtype out,
                               gen::ValueClass va, gen::ValueClass vb, std::uint64_t seed,
                               ScaleLayoutF32 sa_layout, WgradOffs wgrad_offs, BLayout dgrad_w,
                               GroupsOn groups_on, WgradOperandForm wgrad_operands,
                               WgradDw wgrad_dw) {
  const bool forward = op == GemmOp::forward || op == GemmOp::masked;
  if (sa_layout != ScaleLayoutF32::row_major &&
      !(sa_layout == ScaleLayoutF32::tma_mn_major && forward && scaling == Scaling::blockwise))
    throw std::invalid_argument("gpu.grouped_gemm case: A scales " +
                                std::string(to_string(sa_layout)) +
                                " need a blockwise forward or masked case (row_major otherwise)");
  if (wgrad_offs != WgradOffs::multiple_of_16 && op != GemmOp::wgrad)
    throw std::invalid_argument(
        "gpu.grouped_gemm case: wgrad offsets at any token need a wgrad "
        "case");
  if (dgrad_w != BLayout::kn && op != GemmOp::dgrad)
    throw std::invalid_argument("gpu.grouped_gemm case: W stored nk needs a dgrad case");
  if (groups_on != GroupsOn::host && op == GemmOp::wgrad)
    throw std::invalid_argument(
        "gpu.grouped_gemm case: device-side groups need a forward, masked "
        "or dgrad case");
  if (wgrad_operands != WgradOperandForm::token_contiguous && op != GemmOp::wgrad)
    throw std::invalid_argument(
        "gpu.grouped_gemm case: row-major wgrad operands need a wgrad case");
  if (wgrad_dw != WgradDw::separate && (op != GemmOp::wgrad || out != OutDtype::f32))
    throw std::invalid_argument("gpu.grouped_gemm case: dW into C needs an f32 wgrad case");
  GpuGemmCase c;
  c.op = op, c.gs = gs, c.N = N, c.K = K, c.fa = fa, c.fb = fb, c.scaling = scaling, c.out = out;
  c.va = va, c.vb = vb, c.seed = seed, c.sa_layout = sa_layout, c.wgrad_offs = wgrad_offs;
  c.dgrad_w = dgrad_w, c.groups_on = groups_on, c.wgrad_operands = wgrad_operands;
  c.wgrad_dw = wgrad_dw;
  c.desc = op == GemmOp::masked ? cases::Desc::masked : cases::Desc::offs;
  set_rows(c);
  std::mt19937_64 rng(seed + 1);
  if (op == GemmOp::wgrad) {
    set_wgrad_operands(c, rng);
    return c;
  }
  c.a = gen::fill_codes(fa, va, c.M * K, seed);
  c.b = gen::fill_codes(fb, vb, c.G * N * K, seed ^ 0x9E3779B97F4A7C15ull);
  c.sa = spread_scales(cases::sa_count(c), rng);
  c.sb = spread_scales(cases::sb_count(c), rng);
  poison(c);
  // each W[g] (N here, K here) stored transposed: (G, K, N)
  if (c.dgrad_w == BLayout::nk) c.b = transpose(c.b, N, K, c.G);
  return c;
}

GpuGemmCase draw_gpu_gemm_case(std::int64_t max_total) {
  const auto op = *rc::gen::element(GemmOp::forward, GemmOp::masked, GemmOp::dgrad, GemmOp::wgrad);
  gen::SizeLimits lim;
  lim.max_groups = 16;
  lim.max_total = max_total;
  lim.max_tail = 130;
  lim.aligns = {1, 16, 64, 128};
  const gen::GroupSizes gs = *gen::group_sizes(lim);
  const std::int64_t N = 128 * *rc::gen::element<std::int64_t>(1, 2, 3);
  // K = 384: 192-wide tiles of rowwise / tensorwise dgrad and of wgrad (gpu/grouped_gemm.cpp
  // picks them for K % 192 == 0); K = 256, 512: 256-wide wgrad tiles (K % 256 == 0); K = 128,
  // 896: 128-wide ones
  const std::int64_t K = 128 * *rc::gen::element<std::int64_t>(1, 2, 3, 4, 7);
  auto scaling = *rc::gen::element(Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise);
  if (op == GemmOp::wgrad && scaling == Scaling::rowwise) scaling = Scaling::blockwise;
  // Blockwise forward / masked: A's scales row-major or MN-major, half and half.
  const auto sa_layout = (op == GemmOp::forward || op == GemmOp::masked) &&
                                 scaling == Scaling::blockwise && *rc::gen::arbitrary<bool>()
                             ? ScaleLayoutF32::tma_mn_major
                             : ScaleLayoutF32::row_major;
  const auto fa = *rc::gen::element(Format::e4m3, Format::e5m2);
  const auto fb = *rc::gen::element(Format::e4m3, Format::e5m2);
  const auto out = *rc::gen::element(OutDtype::bf16, OutDtype::f32);
  const auto value = rc::gen::element(gen::ValueClass::normal, gen::ValueClass::outliers,
                                      gen::ValueClass::subnormal_heavy, gen::ValueClass::near_max,
                                      gen::ValueClass::integer);
  const auto va = *value, vb = *value;
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
  // wgrad: offsets at any token (the launcher's aligned copy, docs/gpu_gemm.md §1) or multiples
  // of 16 (the kernel reads the operands in place), half and half.
  const auto wgrad_offs = op == GemmOp::wgrad && *rc::gen::arbitrary<bool>()
                              ? WgradOffs::any_token
                              : WgradOffs::multiple_of_16;
  // dgrad: W as the kernel reads it (kn) or stored nk, transposed by the launcher, half and half.
  const auto dgrad_w =
      op == GemmOp::dgrad && *rc::gen::arbitrary<bool>() ? BLayout::nk : BLayout::kn;
  // forward, masked, dgrad: the groups as host arrays or on the device, half and half.
  const auto groups_on =
      op != GemmOp::wgrad && *rc::gen::arbitrary<bool>() ? GroupsOn::device : GroupsOn::host;
  // wgrad: dY and X handed token-contiguous or row-major (the launcher's fused transpose,
  // docs/gpu_gemm.md §1), half and half.
  const auto wgrad_operands = op == GemmOp::wgrad && *rc::gen::arbitrary<bool>()
                                  ? WgradOperandForm::row_major
                                  : WgradOperandForm::token_contiguous;
  // f32 wgrad: dW into a buffer of its own or into C itself (in place), half and half.
  const auto wgrad_dw = op == GemmOp::wgrad && out == OutDtype::f32 && *rc::gen::arbitrary<bool>()
                            ? WgradDw::into_c
                            : WgradDw::separate;
  GpuGemmCase c = make_gpu_gemm_case(op, gs, N, K, fa, fb, scaling, out, va, vb, seed, sa_layout,
                                     wgrad_offs, dgrad_w, groups_on, wgrad_operands, wgrad_dw);
  std::int64_t rows = 0;
  for (std::int32_t g : c.group_of) rows += g >= 0;
  RC_PRE(rows == 0 || operands_nonzero(c));  // a vacuous case proves nothing
  return c;
}

std::vector<float> mn_major_scales_a(const GpuGemmCase& c) {
  const std::int64_t nkb = c.K / 128;
  std::vector<float> mn = serialize_f32(ScaleLayoutF32::tma_mn_major, 1, c.M, nkb, c.sa);
  const std::int64_t ld = std::int64_t(mn.size()) / nkb;  // M rounded up to 4
  for (std::int64_t k = 0; k < nkb; ++k)                  // the layout's zero padding poisoned
    std::fill(mn.begin() + k * ld + c.M, mn.begin() + (k + 1) * ld,
              std::numeric_limits<float>::quiet_NaN());
  return mn;
}

ModelChoice declared_gemm_model(Scaling s) {
  if (s == Scaling::blockwise) return {AccumulationModel::hopper_promoted_blockwise, 1};
  if (s == Scaling::rowwise)
    return {AccumulationModel::hopper_promoted_rowwise, 1, 0, Epilogue::a_then_b};
  return {AccumulationModel::hopper_promoted_tensorwise, 1};
}

std::vector<std::uint32_t> oracle_gemm_bits(const GpuGemmCase& c) {
  return oracle_gemm_bits(c, declared_gemm_model(c.scaling));
}

std::vector<std::uint32_t> oracle_gemm_bits(const GpuGemmCase& c, const ModelChoice& m) {
  const std::size_t n = std::size_t(out_count(c));
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0, std::bit_cast<float>(kOutPoisonF32));
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n, kOutPoisonBf16);
  const GemmOutput y{c.out, f, h, {}};
  if (c.op == GemmOp::wgrad) {
    const ref::WgradOperands w{c.M, c.N, c.K,       c.G,  c.fa, c.fb,
                               c.a, c.b, c.scaling, c.sa, c.sb, c.c};
    ref::grouped_gemm_wgrad(w, c.offs, m, y);
  } else if (c.op == GemmOp::dgrad) {
    const DgradOperands d{c.M, c.K, c.N,       c.G,       c.fa, c.fb,
                          c.a, c.b, c.dgrad_w, c.scaling, c.sa, c.sb};
    ref::grouped_gemm_dgrad(d, c.group_of, m, RowPolicy::untouched, y);
  } else {
    const GroupedGemmOperands op = c.operands();  // B stored nk
    ref::grouped_gemm_forward(op, c.group_of, m, RowPolicy::untouched, y);
  }
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
namespace {
// wgrad through the kernel: dY (M, N) and X (M, K) as drawn (row_major, the launcher transposes
// them), or their transposes dYᵀ (N, M) and Xᵀ (K, M) (token_contiguous), docs/gpu_gemm.md §1;
// dW into its own buffer or into (the device copy of) C itself (into_c: the poisoned output is
// then never the launch's).
void kernel_wgrad(const GpuGemmCase& c, const GemmOutput& y) {
  const bool row_major = c.wgrad_operands == WgradOperandForm::row_major;
  const auto dy = row_major ? c.a : transpose(c.a, c.M, c.N);
  const auto x = row_major ? c.b : transpose(c.b, c.M, c.K);
  gpu::HostWgradOperands w{c.M, c.N, c.K, c.G, c.fa, c.fb, dy, x, c.scaling, c.sa, c.sb, c.c};
  if (row_major) w.layout = gpu::WgradOperandLayout::row_major;
  w.dw_into_c = c.wgrad_dw == WgradDw::into_c;
  gpu::grouped_gemm_wgrad_host(w, c.offs, y);
}
}  // namespace
#endif

std::vector<std::uint32_t> kernel_gemm_bits(const GpuGemmCase& c, bool table_only_workspace) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const std::size_t n = std::size_t(out_count(c));
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0, std::bit_cast<float>(kOutPoisonF32));
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n, kOutPoisonBf16);
  const GemmOutput y{c.out, f, h, {}};
  // The device-side groups' entries: int32, as torch's `offs` tensor (values < 2^31: M < 2^31).
  const bool device = c.groups_on == GroupsOn::device;
  const auto i32 = [](const std::vector<std::int64_t>& v) {
    return std::vector<std::int32_t>(v.begin(), v.end());
  };
  if (c.op == GemmOp::wgrad) {
    kernel_wgrad(c, y);
  } else if (c.op == GemmOp::dgrad) {
    const DgradOperands d{c.M, c.K, c.N,       c.G,       c.fa, c.fb,
                          c.a, c.b, c.dgrad_w, c.scaling, c.sa, c.sb};
    if (device)
      gpu::grouped_gemm_dgrad_host_device_groups(d, i32(c.offs), y);
    else
      gpu::grouped_gemm_dgrad_host(d, c.offs, y);
  } else {
    GroupedGemmOperands op = c.operands();  // B stored nk
    std::vector<float> mn;
    if (c.sa_layout == ScaleLayoutF32::tma_mn_major) op.scale_a = mn = mn_major_scales_a(c);
    if (c.op == GemmOp::masked && device)
      gpu::grouped_gemm_forward_masked_host_device_groups(op, c.m_max, i32(c.masked_m), y,
                                                          c.sa_layout, table_only_workspace);
    else if (c.op == GemmOp::masked)
      gpu::grouped_gemm_forward_masked_host(op, c.m_max, c.masked_m, y, c.sa_layout);
    else if (device)
      gpu::grouped_gemm_forward_host_device_groups(op, i32(c.offs), y, c.sa_layout,
                                                   table_only_workspace);
    else
      gpu::grouped_gemm_forward_host(op, c.offs, y, c.sa_layout);
  }
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
#else
  (void)c, (void)table_only_workspace;
  throw std::runtime_error("gpu.grouped_gemm: built without CUDA");
#endif
}

std::string describe(const GpuGemmCase& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "[%s M=%lld N=%lld K=%lld G=%lld %s %s·%s %s %s/%s %s seed=%llu]",
                to_string(c.op), (long long)c.M, (long long)c.N, (long long)c.K, (long long)c.G,
                to_string(c.scaling), to_string(c.fa).data(), to_string(c.fb).data(),
                to_string(c.out), gen::to_string(c.va), gen::to_string(c.vb),
                gen::to_string(c.gs.dist), (unsigned long long)c.seed);
  std::string d = buf;
  if (c.sa_layout != ScaleLayoutF32::row_major)
    d.insert(d.size() - 1, " scales_a=" + std::string(to_string(c.sa_layout)));
  if (c.wgrad_offs != WgradOffs::multiple_of_16)
    d.insert(d.size() - 1, " offs=" + std::string(to_string(c.wgrad_offs)));
  if (c.dgrad_w != BLayout::kn) d.insert(d.size() - 1, " W=" + std::string(to_string(c.dgrad_w)));
  if (c.groups_on != GroupsOn::host)
    d.insert(d.size() - 1, " groups=" + std::string(to_string(c.groups_on)));
  if (c.wgrad_operands != WgradOperandForm::token_contiguous)
    d.insert(d.size() - 1, " operands=" + std::string(to_string(c.wgrad_operands)));
  if (c.wgrad_dw != WgradDw::separate)
    d.insert(d.size() - 1, " dW=" + std::string(to_string(c.wgrad_dw)));
  return d;
}

std::string first_gemm_mismatch(const GpuGemmCase& c, const std::vector<std::uint32_t>& got,
                                const std::vector<std::uint32_t>& want) {
  if (got.size() != want.size()) return "output sizes differ " + describe(c);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (c.op == GemmOp::wgrad) {
      char buf[160];
      const std::int64_t e = std::int64_t(i);
      std::snprintf(buf, sizeof buf, "dW[%lld] n %lld k %lld: kernel 0x%08x, model 0x%08x ",
                    (long long)(e / (c.N * c.K)), (long long)(e / c.K % c.N), (long long)(e % c.K),
                    got[i], want[i]);
      return buf + describe(c);
    }
    const std::int64_t r = std::int64_t(i) / c.N, n = std::int64_t(i) % c.N;
    char buf[160];
    std::snprintf(buf, sizeof buf, "row %lld (group %lld) col %lld: kernel 0x%08x, model 0x%08x ",
                  (long long)r, (long long)group_of_row(c, r), (long long)n, got[i], want[i]);
    return buf + describe(c);
  }
  return "";
}

bool has_nonzero_output(const GpuGemmCase& c, const std::vector<std::uint32_t>& bits) {
  const std::uint32_t mag = c.out == OutDtype::f32 ? 0x7FFFFFFFu : 0x7FFFu;
  if (c.op == GemmOp::wgrad)
    return std::any_of(bits.begin(), bits.end(), [&](std::uint32_t b) { return (b & mag) != 0; });
  for (std::int64_t r = 0; r < c.M; ++r) {
    if (group_of_row(c, r) < 0) continue;
    for (std::int64_t n = 0; n < c.N; ++n)
      if ((bits[std::size_t(r * c.N + n)] & mag) != 0) return true;
  }
  return false;
}

std::vector<std::string> gpu_gemm_tags(const GpuGemmCase& c) {
  std::vector<std::string> t = gen::size_tags(c.gs);
  t.push_back(std::string("op:") + to_string(c.op));
  t.push_back(std::string("scaling:") + to_string(c.scaling));
  t.push_back(std::string("out:") + to_string(c.out));
  t.push_back("formats:" + std::string(to_string(c.fa)) + "x" + std::string(to_string(c.fb)));
  if (c.K > 128) t.push_back("promotions:2+");
  if (c.sa_layout != ScaleLayoutF32::row_major)
    t.push_back("scales_a:" + std::string(to_string(c.sa_layout)));
  if (c.dgrad_w != BLayout::kn) t.push_back("dgrad_w:" + std::string(to_string(c.dgrad_w)));
  if (c.groups_on != GroupsOn::host) t.push_back("offs:" + std::string(to_string(c.groups_on)));
  if (c.wgrad_operands != WgradOperandForm::token_contiguous)
    t.push_back("wgrad_operands:" + std::string(to_string(c.wgrad_operands)));
  if (c.wgrad_dw != WgradDw::separate) t.push_back("wgrad_dw:" + std::string(to_string(c.wgrad_dw)));
  if (c.op == GemmOp::wgrad) {  // offsets off multiples of 16; a non-empty group starting off one
    bool off16 = false, start_off16 = false;
    for (std::size_t g = 0; g < c.offs.size(); ++g) {
      const std::int64_t start = g ? c.offs[g - 1] : 0;
      off16 = off16 || c.offs[g] % 16 != 0;
      start_off16 = start_off16 || (c.offs[g] > start && start % 16 != 0);
    }
    if (off16) t.push_back("wgrad_offs:any_token");
    if (start_off16) t.push_back("wgrad_offs:start_off_16");
    t.push_back("wgrad_tile:" + std::to_string(gpu::grouped_gemm_wgrad_block_k(c.K)));
  }
  return t;
}

}  // namespace fp8ref::fuzz
