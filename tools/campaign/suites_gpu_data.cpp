// gpu.pad and gpu.permute (docs/fuzz.md "The suites"): the GPU data-movement kernels
// (gpu/pad_permute.h) == reference/pad_permute bitwise on the campaign's tokens-per-group and
// routing draws. gpu.pad: pad, then unpad from a copy whose padding rows are poisoned (0xFF), at
// two grid sizes. gpu.permute: FP8 rows, their compact scale rows, and the weighted combine in both
// rounding orders, with NaN probabilities on dropped slots (never read).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "campaign/gen/group_sizes.h"
#include "campaign/gpu_bytes.h"
#include "campaign/suite.h"
#include "reference/pad_permute.h"

#ifdef FP8REF_CAMPAIGN_HAVE_GPU
#include "gpu/pad_permute.h"
#endif

namespace fp8ref::fuzz {

namespace {

// --- gpu.pad -------------------------------------------------------------------------------------
struct GpuPadCase {
  gen::GroupSizes gs;
  std::int64_t align = 16;
  bool one_block = false;
  std::int64_t row_bytes = 1;
  std::uint64_t seed = 0;
  int max_blocks = 0;
};

GpuPadCase draw_gpu_pad() {
  GpuPadCase c;
  gen::SizeLimits lim;
  lim.aligns = {16, 32, 128};
  lim.max_total = 600;
  c.gs = *gen::group_sizes(lim);
  c.gs.tail = 0;
  c.align = *rc::gen::element<std::int64_t>(16, 32, 128);
  c.one_block = *rc::gen::arbitrary<bool>();
  c.row_bytes = *rc::gen::element<std::int64_t>(1, 4, 16, 33, 112, 7168);
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.max_blocks = *rc::gen::element(0, 1, 7);
  return c;
}

void check_gpu_pad(const GpuPadCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const auto policy =
      c.one_block ? ref::EmptyGroupPolicy::one_block : ref::EmptyGroupPolicy::keep_empty;
  const ref::PadPlan plan = ref::plan_padding(c.gs.sizes, c.align, policy);
  const std::int64_t W = c.row_bytes;
  std::mt19937_64 rng(c.seed);
  std::vector<std::uint8_t> in(std::size_t(plan.rows_in * W));
  for (auto& b : in) b = std::uint8_t(rng() | 1);
  std::vector<std::uint8_t> want(std::size_t(plan.capacity * W));
  ref::pad_rows(plan, {in, plan.rows_in, W}, {want, plan.capacity, W});
  const auto empty = c.one_block ? gpu::EmptyGroups::one_block : gpu::EmptyGroups::keep_empty;
  for (int blocks : {c.max_blocks, 0}) {
    DeviceBytes din(in), dout(want.size());
    gpu::pad_rows({din.p, plan.rows_in, W}, c.gs.sizes, c.align, empty, {dout.p, plan.capacity, W},
                  nullptr, blocks);
    const auto got = dout.host();
    fp.fold(got.data(), got.size());
    if (got != want) throw Violation("gpu.pad: padded rows differ from reference/pad_permute");
  }
  std::vector<std::uint8_t> poisoned = want;
  std::vector<char> valid(std::size_t(plan.capacity), 0);
  for (std::size_t g = 0; g < c.gs.sizes.size(); ++g)
    for (std::int64_t i = 0; i < c.gs.sizes[g]; ++i) valid[std::size_t(plan.starts[g] + i)] = 1;
  for (std::int64_t r = 0; r < plan.capacity; ++r)
    if (!valid[std::size_t(r)]) std::memset(poisoned.data() + r * W, 0xFF, std::size_t(W));
  DeviceBytes dpad(poisoned), dback(in.size());
  gpu::unpad_rows({dpad.p, plan.capacity, W}, c.gs.sizes, c.align, empty,
                  {dback.p, plan.rows_in, W}, nullptr, c.max_blocks);
  if (dback.host() != in)
    throw Violation("gpu.pad: unpad of a buffer with poisoned padding is not the input");
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.pad: built without CUDA");
#endif
}

TensorFile save_gpu_pad(const GpuPadCase& c) {
  TensorFile tf;
  save_group_sizes(c.gs, tf);
  cases::put_meta(tf, "pad_align", std::to_string(c.align));
  cases::put_meta(tf, "one_block", c.one_block ? "1" : "0");
  cases::put_meta(tf, "row_bytes", std::to_string(c.row_bytes));
  cases::put_meta(tf, "seed", std::to_string(c.seed));
  cases::put_meta(tf, "max_blocks", std::to_string(c.max_blocks));
  return tf;
}

GpuPadCase load_gpu_pad(const TensorFile& tf) {
  GpuPadCase c;
  c.gs = load_group_sizes(tf);
  c.align = get_meta_int(tf, "pad_align");
  c.one_block = get_meta(tf, "one_block") == "1";
  c.row_bytes = get_meta_int(tf, "row_bytes");
  c.seed = std::stoull(get_meta(tf, "seed"));
  c.max_blocks = int(get_meta_int(tf, "max_blocks"));
  if (c.align < 1 || c.row_bytes < 1 || c.max_blocks < 0)
    throw std::invalid_argument("case file: align, row_bytes or max_blocks out of range");
  return c;
}

std::string gpu_pad_diff(const GpuPadCase& x, const GpuPadCase& y) {
  return first_difference({{"group sizes", x.gs.sizes == y.gs.sizes},
                           {"align", x.align == y.align && x.one_block == y.one_block},
                           {"rows", x.row_bytes == y.row_bytes && x.seed == y.seed},
                           {"max_blocks", x.max_blocks == y.max_blocks}});
}

// --- gpu.permute ---------------------------------------------------------------------------------
struct GpuPermuteCase {
  std::int64_t tokens = 0, k = 1, experts = 1, hidden = 1;
  int mode = 0;  // 0 random top-k with drops, 1 every token's first slot to expert 0, 2 all dropped
  std::uint64_t seed = 0;
  int max_blocks = 0;
};

GpuPermuteCase draw_gpu_permute() {
  GpuPermuteCase c;
  c.tokens = *rc::gen::weightedOneOf<std::int64_t>(
      {{1, rc::gen::just<std::int64_t>(0)}, {6, rc::gen::inRange<std::int64_t>(1, 300)}});
  c.experts = *rc::gen::inRange<std::int64_t>(1, 65);
  c.k = *rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(c.experts, 8) + 1);
  c.hidden = *rc::gen::element<std::int64_t>(16, 128, 384);
  c.mode = *rc::gen::inRange(0, 3);
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.max_blocks = *rc::gen::element(0, 1, 5);
  return c;
}

struct DrawnRouting {
  std::vector<std::int32_t> expert;
  std::vector<float> prob;
};
[[maybe_unused]] DrawnRouting routing_of(const GpuPermuteCase& c) {
  std::mt19937_64 rng(c.seed);
  DrawnRouting r;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(c.experts));
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    for (std::int64_t e = 0; e < c.experts; ++e) perm[std::size_t(e)] = std::int32_t(e);
    std::shuffle(perm.begin(), perm.end(), rng);
    if (c.mode == 1) std::swap(perm[0], *std::find(perm.begin(), perm.end(), 0));
    for (std::int64_t j = 0; j < c.k; ++j) {
      const bool drop = c.mode == 2 || (c.mode == 0 && rng() % 8 == 0);
      r.expert.push_back(drop ? -1 : perm[std::size_t(j)]);
      r.prob.push_back(drop ? std::bit_cast<float>(0x7FC00001u)
                            : std::ldexp(float(rng() % 1000 + 1), -10));
    }
  }
  return r;
}

void check_gpu_permute(const GpuPermuteCase& c, Fingerprint& fp) {
#ifdef FP8REF_CAMPAIGN_HAVE_GPU
  const DrawnRouting dr = routing_of(c);
  const std::int64_t T = c.tokens, k = c.k, E = c.experts, H = c.hidden;
  const ref::Routing rr{T, k, E, dr.expert, dr.prob};
  const gpu::HostRouting gr{T, k, E, dr.expert};
  const ref::PermutePlan plan = ref::plan_permute(rr);
  const std::int64_t P = std::int64_t(plan.source_token.size()), SC = (H + 127) / 128;
  std::mt19937_64 rng(c.seed ^ 0x5EED);
  std::vector<std::uint8_t> codes(std::size_t(T * H)), scales(std::size_t(T * SC * 4));
  for (auto& b : codes) b = std::uint8_t(rng());
  for (auto& b : scales) b = std::uint8_t(rng());
  std::vector<std::uint8_t> want(std::size_t(P * H)), storage;
  ref::permute_rows(plan, {codes, T, H}, {want, P, H});
  const ref::RowsView ws =
      ref::permuted_scale_rows(plan, BlockGeometry::b1x128, {scales, T, SC * 4}, storage);
  DeviceBytes dc(codes), dout(want.size()), ds(scales), dsout(std::size_t(P * SC * 4));
  gpu::permute_rows({dc.p, T, H}, gr, {dout.p, P, H}, nullptr, c.max_blocks);
  gpu::permute_rows({ds.p, T, SC * 4}, gr, {dsout.p, P, SC * 4}, nullptr, c.max_blocks);
  const auto got = dout.host();
  fp.fold(got.data(), got.size());
  if (got != want) throw Violation("gpu.permute: permuted FP8 rows differ");
  if (dsout.host() != std::vector<std::uint8_t>(ws.bytes.begin(), ws.bytes.end()))
    throw Violation("gpu.permute: permuted scale rows differ");
  std::vector<float> y(std::size_t(P * H));
  for (auto& v : y) v = std::ldexp(float(std::int64_t(rng() % 20001) - 10000), -7);
  DeviceBytes dy(y), dp(dr.prob);
  for (auto rounding : {ref::CombineRounding::mul_then_add, ref::CombineRounding::fma}) {
    std::vector<float> want_out(std::size_t(T * H));
    ref::unpermute_combine(plan, rr, y, H, rounding, want_out);
    DeviceBytes dres(want_out.size() * 4);
    gpu::unpermute_combine(
        static_cast<const float*>(dy.p), H, gr, static_cast<const float*>(dp.p),
        rounding == ref::CombineRounding::fma ? gpu::Combine::fma : gpu::Combine::mul_then_add,
        static_cast<float*>(dres.p), want_out.size(), nullptr, c.max_blocks);
    if (dres.host() != bytes_of(want_out)) throw Violation("gpu.permute: combine differs");
  }
#else
  (void)c, (void)fp;
  throw std::runtime_error("gpu.permute: built without CUDA");
#endif
}

TensorFile save_gpu_permute(const GpuPermuteCase& c) {
  TensorFile tf;
  cases::MetaWriter m{tf};
  m["tokens"] = std::to_string(c.tokens);
  m["k"] = std::to_string(c.k);
  m["experts"] = std::to_string(c.experts);
  m["hidden"] = std::to_string(c.hidden);
  m["mode"] = std::to_string(c.mode);
  m["seed"] = std::to_string(c.seed);
  m["max_blocks"] = std::to_string(c.max_blocks);
  return tf;
}

GpuPermuteCase load_gpu_permute(const TensorFile& tf) {
  GpuPermuteCase c;
  c.tokens = get_meta_int(tf, "tokens");
  c.k = get_meta_int(tf, "k");
  c.experts = get_meta_int(tf, "experts");
  c.hidden = get_meta_int(tf, "hidden");
  c.mode = int(get_meta_int(tf, "mode"));
  c.seed = std::stoull(get_meta(tf, "seed"));
  c.max_blocks = int(get_meta_int(tf, "max_blocks"));
  if (c.tokens < 0 || c.experts < 1 || c.k < 1 || c.k > c.experts || c.hidden < 1 || c.mode < 0 ||
      c.mode > 2 || c.max_blocks < 0)
    throw std::invalid_argument("case file: routing shape out of range");
  return c;
}

std::string gpu_permute_diff(const GpuPermuteCase& x, const GpuPermuteCase& y) {
  return first_difference({{"shape", x.tokens == y.tokens && x.k == y.k && x.experts == y.experts &&
                                         x.hidden == y.hidden},
                           {"routing", x.mode == y.mode && x.seed == y.seed},
                           {"max_blocks", x.max_blocks == y.max_blocks}});
}

}  // namespace

void add_gpu_data_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (auto d : gen::kSizeDists) classes.push_back(std::string("dist:") + to_string(d));
  out.push_back(make_suite<GpuPadCase>(
      {"gpu.pad",
       "GPU pad / unpad == reference/pad_permute; poisoned padding never read",
       "gpu",
       300,
       classes,
       {}},
      {draw_gpu_pad, check_gpu_pad, [](const GpuPadCase& c) { return gen::size_tags(c.gs); },
       save_gpu_pad, load_gpu_pad, gpu_pad_diff},
      gpu_unavailable));
  out.push_back(make_suite<GpuPermuteCase>(
      {"gpu.permute",
       "GPU permute (rows + scale rows) and fixed-order combine == reference/pad_permute",
       "gpu",
       300,
       {"mode:0", "mode:1", "mode:2"},
       {}},
      {draw_gpu_permute, check_gpu_permute,
       [](const GpuPermuteCase& c) {
         return std::vector<std::string>{"mode:" + std::to_string(c.mode)};
       },
       save_gpu_permute, load_gpu_permute, gpu_permute_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
