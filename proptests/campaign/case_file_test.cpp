// Case files of the fuzz campaign (docs/fuzz.md): a drawn case written as
// safetensors and read back is the same case, field by field, for every suite (a dropped field
// replays another case than the one that failed, as wgrad's epilogue once did); and the
// align_edges distribution keeps its edge sizes (align 128: 127..129 and 255..257).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "campaign/gemm_case.h"
#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/gpu_gemm_case.h"
#include "campaign/suite.h"
#include "campaign/wgrad_case.h"
#include "proptests/common/test_level.h"
#include "tensor_io/safetensors.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::fuzz {
namespace {

FP8REF_RC_PROP(CaseFiles, EverySuitesCaseReadsBackAsTheSameCase, 300, ()) {
  const std::vector<Suite>& suites = all_suites();
  const Suite& s = suites[*rc::gen::inRange<std::size_t>(0, suites.size())];
  RC_TAG(s.info.name);
  try {
    s.roundtrip();
  } catch (const Violation& e) {
    RC_FAIL(s.info.name + ": " + e.what());
  }
}

// A wgrad case whose epilogue changes dW: hopper_promoted_rowwise with tensorwise scales of
// arbitrary significands, scales applied A-then-B instead of the model's own order.
WgradCase epilogue_case(std::uint64_t seed) {
  WgradCase w;
  w.gs.dist = gen::SizeDist::uniform;
  w.gs.sizes = {37, 0, 90};
  w.gs.tail = 2;
  w.G = 3, w.M = 37 + 90 + 2, w.N = 5, w.K = 7;
  w.v = gen::ValueClass::normal;
  w.scaling = ref::Scaling::tensorwise;
  w.model = {AccumulationModel::hopper_promoted_rowwise, 1, 0, Epilogue::a_then_b};
  std::mt19937_64 rng(seed);
  w.dy = gen::fill_codes(w.fdy, w.v, w.M * w.N, rng());
  w.x = gen::fill_codes(w.fx, w.v, w.M * w.K, rng());
  w.s_dy = {std::bit_cast<float>(std::uint32_t(0x3E99999Au))};  // 0.3
  w.s_x = {std::bit_cast<float>(std::uint32_t(0x3FD9999Au))};   // 1.7
  w.c.assign(std::size_t(w.G * w.N * w.K), 0.0f);
  return w;
}

std::vector<std::uint32_t> dw_bits(const WgradCase& w) {
  std::vector<float> dw(w.c.size());
  ref::grouped_gemm_wgrad(w.operands(), w.gs.ends(), w.model, dw, {});
  std::vector<std::uint32_t> bits(dw.size());
  if (!dw.empty()) std::memcpy(bits.data(), dw.data(), dw.size() * 4);
  return bits;
}

TEST(WgradCaseFile, NonDefaultEpilogueReadsBackAndReplaysTheSameModel) {
  const WgradCase w = epilogue_case(20261122);
  WgradCase model_order = w;
  model_order.model.epilogue = Epilogue::model;
  // The epilogue matters for this case: the model's own order gives other bits.
  ASSERT_NE(dw_bits(w), dw_bits(model_order));

  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("fp8ref_wgrad_epilogue_" + std::to_string(::getpid()) + ".safetensors");
  tensor_io::write_safetensors(file.string(), save_wgrad(w));
  const WgradCase back = load_wgrad(tensor_io::read_tensor_file(file.string(), {}));
  std::filesystem::remove(file);
  EXPECT_EQ(back.model.epilogue, Epilogue::a_then_b);
  EXPECT_EQ(wgrad_case_diff(w, back), "");
  EXPECT_EQ(dw_bits(back), dw_bits(w));
}

TEST(WgradCaseFile, FileWithoutEpilogueKeyReadsAsTheModelsOrder) {
  TensorFile tf = save_wgrad(epilogue_case(7));
  ASSERT_EQ(tf.metadata.erase("fp8ref.epilogue"), 1u);
  EXPECT_EQ(load_wgrad(through_safetensors(tf)).model.epilogue, Epilogue::model);
  tf.metadata["fp8ref.epilogue"] = "sideways";
  EXPECT_THROW(load_wgrad(tf), std::invalid_argument);
}

// The file with every "fp8ref.<name>" key renamed to the bare "<name>" (the schema before the
// prefix, which golden/regressions/ still holds).
TensorFile with_bare_keys(TensorFile tf) {
  std::map<std::string, std::string> bare;
  for (const auto& [k, v] : tf.metadata) bare[k.rfind("fp8ref.", 0) == 0 ? k.substr(7) : k] = v;
  tf.metadata = std::move(bare);
  return tf;
}

// One metadata schema (docs/fuzz.md "Case files"): a GEMM or wgrad case file carries its
// parameters under fp8ref.* keys only, and the same file with bare keys reads back as the same
// case.
FP8REF_RC_PROP(CaseFiles, ParametersUseFp8refKeysAndBareKeysStillRead, 100, ()) {
  const GemmCase c = draw_gemm({});
  const TensorFile tf = save_gemm(c);
  for (const auto& [k, v] : tf.metadata) RC_ASSERT(k.rfind("fp8ref.", 0) == 0);
  RC_ASSERT(tf.metadata.at("fp8ref.op") == "forward");
  RC_ASSERT(tf.metadata.count("fp8ref.model") == 1u && tf.metadata.count("fp8ref.split_k") == 1u);
  RC_ASSERT(gemm_case_diff(c, load_gemm(through_safetensors(with_bare_keys(tf)))) == "");
  const WgradCase w = epilogue_case(*rc::gen::arbitrary<std::uint64_t>());
  const TensorFile tw = save_wgrad(w);
  for (const auto& [k, v] : tw.metadata) RC_ASSERT(k.rfind("fp8ref.", 0) == 0);
  RC_ASSERT(wgrad_case_diff(w, load_wgrad(through_safetensors(with_bare_keys(tw)))) == "");
}

// Where a file holds both spellings of a key, the fp8ref.* one is the case's.
TEST(CaseFiles, PrefixedKeyWinsOverTheBareOne) {
  TensorFile tf = save_wgrad(epilogue_case(3));
  tf.metadata["epilogue"] = "sideways";
  EXPECT_EQ(load_wgrad(tf).model.epilogue, Epilogue::a_then_b);
  tf.metadata.erase("fp8ref.epilogue");
  EXPECT_THROW(load_wgrad(tf), std::invalid_argument);
}

// The protocol of gpu.grouped_gemm's optional case-file keys (docs/fuzz.md "Case files"): `set`,
// a case in the key's non-default form, writes key = value and reads back as itself; `unset`, the
// same case in the default form, writes no such key; `set`'s file without the key (as written
// before the form existed) reads as `unset`, and with `bad` as the key's value is refused. `old`:
// the case read from the file without the key, for the caller's checks of its default form.
void expect_optional_key(const GpuGemmCase& set, const GpuGemmCase& unset, const std::string& key,
                         const std::string& value, const std::string& bad, GpuGemmCase& old) {
  TensorFile tf = save_gpu_gemm(set);
  ASSERT_EQ(tf.metadata.at(key), value);
  EXPECT_EQ(gpu_gemm_diff(set, load_gpu_gemm(through_safetensors(tf))), "");
  EXPECT_EQ(save_gpu_gemm(unset).metadata.count(key), 0u);
  ASSERT_EQ(tf.metadata.erase(key), 1u);
  old = load_gpu_gemm(through_safetensors(tf));
  EXPECT_EQ(gpu_gemm_diff(unset, old), "");
  tf.metadata[key] = bad;
  EXPECT_THROW(load_gpu_gemm(tf), std::invalid_argument);
}

// gpu.grouped_gemm's wgrad operand layout (docs/fuzz.md, docs/gpu_gemm.md §5): a row-major case
// writes fp8ref.wgrad_operands = row_major and reads back as itself (M = 3 + 130 + 5, not a
// multiple of 16); a token-contiguous case writes no such key, and a file without it (every file
// written before row_major) reads as token-contiguous, its tail rounded up to M % 16 == 0 as
// before; any other value is refused.
TEST(GpuGemmCaseFile, WgradOperandsKeyReadsBackAndOldFilesAreTokenContiguous) {
  gen::GroupSizes gs;
  gs.dist = gen::SizeDist::zipf, gs.sizes = {3, 0, 130}, gs.tail = 5;
  const auto make = [&](WgradOperandForm form) {
    return make_gpu_gemm_case(GemmOp::wgrad, gs, 128, 256, Format::e4m3, Format::e5m2,
                              Scaling::blockwise, OutDtype::bf16, gen::ValueClass::normal,
                              gen::ValueClass::normal, 99, ScaleLayoutF32::row_major,
                              WgradOffs::any_token, BLayout::kn, GroupsOn::host, form);
  };
  const GpuGemmCase rm = make(WgradOperandForm::row_major);
  ASSERT_EQ(rm.M, 138);
  GpuGemmCase old;
  ASSERT_NO_FATAL_FAILURE(expect_optional_key(rm, make(WgradOperandForm::token_contiguous),
                                              "fp8ref.wgrad_operands", "row_major", "column_major",
                                              old));
  EXPECT_EQ(old.wgrad_operands, WgradOperandForm::token_contiguous);
  EXPECT_EQ(old.M, 144);
}

// gpu.grouped_gemm's device-side groups (docs/fuzz.md, docs/gpu_gemm.md §5) next to the other
// non-default forms: a masked case and a dgrad case on W stored nk with their groups on the device
// write fp8ref.offs = device (and no fp8ref.wgrad_operands) and read back as themselves; a host
// case writes no such key, and a file without it (every file written before the device-side
// groups) reads as host groups; any other value is refused; a wgrad case cannot take device
// groups, nor a forward case row-major wgrad operands.
TEST(GpuGemmCaseFile, OffsKeyReadsBackAndOldFilesAreHostGroups) {
  gen::GroupSizes gs;
  gs.dist = gen::SizeDist::zipf, gs.sizes = {3, 0, 130}, gs.tail = 5;
  const auto make = [&](GemmOp op, BLayout w, GroupsOn on) {
    return make_gpu_gemm_case(op, gs, 128, 256, Format::e4m3, Format::e5m2, Scaling::blockwise,
                              OutDtype::bf16, gen::ValueClass::normal, gen::ValueClass::normal, 99,
                              ScaleLayoutF32::row_major, WgradOffs::multiple_of_16, w, on);
  };
  for (const auto& [op, w] :
       {std::pair{GemmOp::masked, BLayout::kn}, {GemmOp::dgrad, BLayout::nk}}) {
    const GpuGemmCase dev = make(op, w, GroupsOn::device);
    EXPECT_EQ(save_gpu_gemm(dev).metadata.count("fp8ref.wgrad_operands"), 0u);
    GpuGemmCase old;
    ASSERT_NO_FATAL_FAILURE(expect_optional_key(dev, make(op, w, GroupsOn::host), "fp8ref.offs",
                                                "device", "host", old));
    EXPECT_EQ(old.groups_on, GroupsOn::host);
  }
  EXPECT_THROW(make(GemmOp::wgrad, BLayout::kn, GroupsOn::device), std::invalid_argument);
  EXPECT_THROW(make_gpu_gemm_case(GemmOp::forward, gs, 128, 256, Format::e4m3, Format::e5m2,
                                  Scaling::blockwise, OutDtype::bf16, gen::ValueClass::normal,
                                  gen::ValueClass::normal, 99, ScaleLayoutF32::row_major,
                                  WgradOffs::multiple_of_16, BLayout::kn, GroupsOn::host,
                                  WgradOperandForm::row_major),
               std::invalid_argument);
}

// gpu.grouped_gemm's f32 wgrad dW into C (docs/fuzz.md, docs/gpu_gemm.md §5): such a case writes
// fp8ref.wgrad_dw = into_c and reads back as itself; a case with dW of its own writes no such
// key, and a file without it (every file written before into_c) reads as one; any other value is
// refused, and so is dW into C for a bf16 wgrad case or a forward case.
TEST(GpuGemmCaseFile, WgradDwKeyReadsBackAndOldFilesAreSeparate) {
  gen::GroupSizes gs;
  gs.dist = gen::SizeDist::interleaved_empty, gs.sizes = {0, 130, 0, 48}, gs.tail = 16;
  const auto make = [&](GemmOp op, OutDtype out, WgradDw dw) {
    return make_gpu_gemm_case(
        op, gs, 128, 256, Format::e4m3, Format::e4m3, Scaling::blockwise, out,
        gen::ValueClass::normal, gen::ValueClass::normal, 7, ScaleLayoutF32::row_major,
        op == GemmOp::wgrad ? WgradOffs::any_token : WgradOffs::multiple_of_16, BLayout::kn,
        GroupsOn::host, WgradOperandForm::token_contiguous, dw);
  };
  const GpuGemmCase in_c = make(GemmOp::wgrad, OutDtype::f32, WgradDw::into_c);
  const GpuGemmCase own = make(GemmOp::wgrad, OutDtype::f32, WgradDw::separate);
  EXPECT_NE(gpu_gemm_diff(in_c, own), "");
  GpuGemmCase old;
  ASSERT_NO_FATAL_FAILURE(
      expect_optional_key(in_c, own, "fp8ref.wgrad_dw", "into_c", "separate", old));
  EXPECT_EQ(old.wgrad_dw, WgradDw::separate);
  EXPECT_THROW(make(GemmOp::wgrad, OutDtype::bf16, WgradDw::into_c), std::invalid_argument);
  EXPECT_THROW(make(GemmOp::forward, OutDtype::f32, WgradDw::into_c), std::invalid_argument);
}

// Every align_edges draw at the GEMM suites' token cap (160) is made of edges k·align - 1,
// k·align, k·align + 1 (k = 1, 2), and at align 128 both 127..129 and 255..257 occur.
TEST(GroupSizes, AlignEdgesKeepTheirEdgeSizes) {
  gen::SizeLimits lim;
  lim.max_total = 160;
  const auto g = gen::group_sizes(lim);
  int seen128 = 0, seen256 = 0, drawn = 0;
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) {
    const gen::GroupSizes gs = g(rc::Random(seed), 100).value();
    if (gs.dist != gen::SizeDist::align_edges) continue;
    ++drawn;
    for (std::int64_t x : gs.sizes) {
      const std::int64_t a = gs.align;
      const bool edge = (x >= a - 1 && x <= a + 1) || (x >= 2 * a - 1 && x <= 2 * a + 1);
      ASSERT_TRUE(edge) << "size " << x << " at align " << a << " (seed " << seed << ")";
      if (a == 128) seen128 += x >= 127 && x <= 129, seen256 += x >= 255 && x <= 257;
    }
  }
  EXPECT_GT(drawn, 1000);
  EXPECT_GT(seen128, 0);
  EXPECT_GT(seen256, 0);
}

}  // namespace
}  // namespace fp8ref::fuzz
