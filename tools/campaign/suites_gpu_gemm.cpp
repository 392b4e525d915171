// gpu.grouped_gemm (docs/fuzz.md "The suites", docs/gpu_gemm.md §5): the FP8 grouped GEMM kernel
// (gpu/grouped_gemm.h) == the CPU oracle under the kernel's declared model, bitwise, over forward,
// masked forward, dgrad and K-grouped wgrad, every scaling, e4m3 / e5m2 pairs, bf16 / f32 output
// and the generators' group distributions (wgrad offsets at any token in half of the wgrad
// cases, row-major wgrad operands in half, f32 dW into C itself in half of the f32 wgrad cases,
// W stored nk in half of the dgrad cases, the groups (offs / masked_m) on the device in half of
// the forward, masked and dgrad cases), with poisoned padding rows, scales, empty experts and
// output; a second launch gives the same bits. The
// generator rejects all-zero operands; an all-zero output is a failure (a vacuous case).
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "campaign/gpu_gemm_case.h"
#include "campaign/suite.h"
#include "cases/enum_tokens.h"

namespace fp8ref::fuzz {
namespace {

void check_gpu_gemm(const GpuGemmCase& c, Fingerprint& fp) {
  const auto want = oracle_gemm_bits(c);
  if (c.gs.total() > 0 && !has_nonzero_output(c, want))
    throw Violation("gpu.grouped_gemm: vacuous case, every output of a group row is zero " +
                    describe(c));
  const auto got = kernel_gemm_bits(c);
  fp.fold(got.data(), got.size() * sizeof got[0]);
  if (const std::string m = first_gemm_mismatch(c, got, want); !m.empty())
    throw Violation("gpu.grouped_gemm: " + m);
  if (const std::string m = first_gemm_mismatch(c, kernel_gemm_bits(c), got); !m.empty())
    throw Violation("gpu.grouped_gemm second launch: " + m);
}

// A case-file key of a two-form field (fp8ref.<key>): absent, `absent` (the default form, which
// every file written before the key has); the token of `present`, that form; anything else is
// refused.
template <class Form>
Form optional_form(const TensorFile& tf, const char* key, Form absent, Form present) {
  const std::string* v = cases::find_meta(tf, key);
  if (v == nullptr) return absent;
  const std::string want(to_string(present));
  if (*v != want)
    throw std::invalid_argument("case file: gpu.grouped_gemm " + std::string(key) + " '" + *v +
                                "' is not " + want);
  return present;
}

}  // namespace

TensorFile save_gpu_gemm(const GpuGemmCase& c) {
  TensorFile tf;
  save_group_sizes(c.gs, tf);
  cases::MetaWriter m{tf};
  m["op"] = to_string(c.op);
  m["N"] = std::to_string(c.N);
  m["K"] = std::to_string(c.K);
  m["fa"] = std::to_string(int(c.fa));
  m["fb"] = std::to_string(int(c.fb));
  m["scaling"] = to_string(c.scaling);
  m["out"] = to_string(c.out);
  m["va"] = gen::to_string(c.va);
  m["vb"] = gen::to_string(c.vb);
  m["seed"] = std::to_string(c.seed);
  if (c.sa_layout != ScaleLayoutF32::row_major) m["scales_a"] = std::string(to_string(c.sa_layout));
  if (c.wgrad_offs != WgradOffs::multiple_of_16)
    m["wgrad_offs"] = std::string(to_string(c.wgrad_offs));
  if (c.dgrad_w != BLayout::kn) m["dgrad_w"] = std::string(to_string(c.dgrad_w));
  if (c.groups_on != GroupsOn::host) m["offs"] = std::string(to_string(c.groups_on));
  if (c.wgrad_operands != WgradOperandForm::token_contiguous)
    m["wgrad_operands"] = std::string(to_string(c.wgrad_operands));
  if (c.wgrad_dw != WgradDw::separate) m["wgrad_dw"] = std::string(to_string(c.wgrad_dw));
  return tf;
}

GpuGemmCase load_gpu_gemm(const TensorFile& tf) {
  // fp8ref.op is the op's token; files written before the one schema hold its index.
  const auto op_token = cases::from_token(cases::kAllGemmOps, get_meta(tf, "op"));
  const std::int64_t op = op_token ? std::int64_t(*op_token) : get_meta_int(tf, "op");
  const auto fa = get_meta_int(tf, "fa"), fb = get_meta_int(tf, "fb");
  const auto N = get_meta_int(tf, "N"), K = get_meta_int(tf, "K");
  const auto scaling = parse_scaling(get_meta(tf, "scaling"));
  const auto out = parse_out_dtype(get_meta(tf, "out"));
  const auto va = cases::from_token(gen::kValueClasses, get_meta(tf, "va"));
  const auto vb = cases::from_token(gen::kValueClasses, get_meta(tf, "vb"));
  if (op < 0 || op > 3 || fa < 0 || fa > 1 || fb < 0 || fb > 1 || !scaling || !out ||
      N % 128 != 0 || K % 128 != 0 || N <= 0 || K <= 0 || !va || !vb)
    throw std::invalid_argument("case file: a gpu.grouped_gemm parameter is out of range");
  const gen::GroupSizes gs = load_group_sizes(tf);
  if (gs.sizes.empty() || gs.sizes.size() > 256)
    throw std::invalid_argument("case file: gpu.grouped_gemm needs 1..256 groups");
  // The keys of a non-default form: absent in files of default cases (and in those written before
  // the form existed).
  const auto sa_layout =
      optional_form(tf, "scales_a", ScaleLayoutF32::row_major, ScaleLayoutF32::tma_mn_major);
  const auto wgrad_offs =
      optional_form(tf, "wgrad_offs", WgradOffs::multiple_of_16, WgradOffs::any_token);
  const auto dgrad_w = optional_form(tf, "dgrad_w", BLayout::kn, BLayout::nk);
  const auto groups_on = optional_form(tf, "offs", GroupsOn::host, GroupsOn::device);
  const auto wgrad_operands = optional_form(tf, "wgrad_operands",
                                            WgradOperandForm::token_contiguous,
                                            WgradOperandForm::row_major);
  const auto wgrad_dw = optional_form(tf, "wgrad_dw", WgradDw::separate, WgradDw::into_c);
  return make_gpu_gemm_case(GemmOp(op), gs, N, K, Format(fa), Format(fb), *scaling, *out, *va, *vb,
                            std::stoull(get_meta(tf, "seed")), sa_layout, wgrad_offs, dgrad_w,
                            groups_on, wgrad_operands, wgrad_dw);
}

std::string gpu_gemm_diff(const GpuGemmCase& x, const GpuGemmCase& y) {
  return first_difference({{"op", x.op == y.op},
                           {"group sizes", x.gs == y.gs},
                           {"shape", x.N == y.N && x.K == y.K},
                           {"formats", x.fa == y.fa && x.fb == y.fb},
                           {"scaling", x.scaling == y.scaling},
                           {"output dtype", x.out == y.out},
                           {"value classes", x.va == y.va && x.vb == y.vb},
                           {"seed", x.seed == y.seed},
                           {"A scale layout", x.sa_layout == y.sa_layout},
                           {"wgrad offsets", x.wgrad_offs == y.wgrad_offs},
                           {"dgrad W layout", x.dgrad_w == y.dgrad_w},
                           {"groups on", x.groups_on == y.groups_on},
                           {"wgrad operand layout", x.wgrad_operands == y.wgrad_operands},
                           {"wgrad dW", x.wgrad_dw == y.wgrad_dw}});
}

void add_gpu_gemm_suites(std::vector<Suite>& out) {
  out.push_back(make_suite<GpuGemmCase>(
      {"gpu.grouped_gemm",
       "FP8 grouped GEMM kernel (wgmma) == CPU oracle under its declared model, bitwise",
       "gpu",
       100,
       {"op:forward", "op:masked", "op:dgrad", "op:wgrad", "scaling:blockwise", "scaling:rowwise",
        "scaling:tensorwise", "out:bf16", "out:f32", "dist:zipf", "dist:interleaved_empty",
        "scales_a:tma_mn_major", "wgrad_offs:any_token", "wgrad_offs:start_off_16", "dgrad_w:nk",
        "offs:device", "wgrad_operands:row_major", "wgrad_dw:into_c", "wgrad_tile:128",
        "wgrad_tile:192", "wgrad_tile:256"},
       {}},
      {[] { return draw_gpu_gemm_case(); }, check_gpu_gemm, gpu_gemm_tags, save_gpu_gemm,
       load_gpu_gemm, gpu_gemm_diff},
      gpu_unavailable));
}

}  // namespace fp8ref::fuzz
