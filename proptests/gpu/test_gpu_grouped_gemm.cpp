// The FP8 grouped GEMM kernel (gpu/grouped_gemm.h) == its declared accumulation model bitwise
// (docs/gpu_gemm.md §5): drawn cases of every op, scaling, format pair and output over the
// generators' group distributions with poisoned padding; operands on which the neighbouring models
// give other bits; 192-wide tiles past N; repeated and reordered launches; many waves of tiles
// against the GPU oracle; merged gate/up equal to two forwards; an empty wgrad group gives C; bad
// input refused before any launch. The drawn and fixed cases include K-grouped wgrad. The
// device-side groups (`offs` / masked_m on the device, docs/gpu_gemm.md §1): the bits of the host
// arrays' path, the prologue's table equal to the host launcher's, bad entries reported in the
// status word with the output untouched, a CUDA graph capture replayed with new offsets.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "campaign/gpu_gemm_case.h"
#include "gpu/device.h"
#include "gpu/grouped_gemm.h"
#include "gpu/grouped_gemm_groups.h"
#include "gpu/grouped_gemm_kernels.h"
#include "gpu/oracle/grouped_gemm_oracle.h"
#include "proptests/common/test_level.h"

namespace fp8ref {
namespace {

using fuzz::GemmOp;
using fuzz::GpuGemmCase;

#define FP8REF_REQUIRE_DEVICE() \
  if (!gpu::device_available()) GTEST_SKIP() << gpu::device_description();

gen::GroupSizes sizes(std::vector<std::int64_t> s, std::int64_t tail = 5) {
  gen::GroupSizes gs;
  gs.dist = gen::SizeDist::zipf, gs.sizes = std::move(s), gs.tail = tail;
  return gs;
}

GpuGemmCase make_case(GemmOp op, Scaling s, Format fa, Format fb, OutDtype out,
                      const gen::GroupSizes& gs, std::int64_t N = 256, std::int64_t K = 512,
                      std::uint64_t seed = 7,
                      fuzz::WgradOffs wgrad_offs = fuzz::WgradOffs::multiple_of_16) {
  return fuzz::make_gpu_gemm_case(op, gs, N, K, fa, fb, s, out, gen::ValueClass::normal,
                                  gen::ValueClass::outliers, seed, ScaleLayoutF32::row_major,
                                  wgrad_offs);
}

TEST(GpuGroupedGemm, DeclaredModelsAreTheOnesTheOracleUses) {
  for (Scaling s : {Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise}) {
    const ModelChoice k = gpu::grouped_gemm_declared_model(s), o = fuzz::declared_gemm_model(s);
    EXPECT_EQ(k.model, o.model);
    EXPECT_EQ(k.epilogue, o.epilogue);
    EXPECT_EQ(k.split_k, 1);
  }
}

TEST(GpuGroupedGemm, DrawnCasesEqualTheDeclaredModelBitwise) {
  FP8REF_REQUIRE_DEVICE();
  test::check_property(
      [] {
        const GpuGemmCase c = fuzz::draw_gpu_gemm_case();
        for (const auto& t : fuzz::gpu_gemm_tags(c)) RC_CLASSIFY(true, t);
        const auto want = fuzz::oracle_gemm_bits(c);
        if (c.gs.total() > 0) RC_PRE(fuzz::has_nonzero_output(c, want));
        const std::string m = fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want);
        RC_ASSERT(m == "");
      },
      60);
}

// Every op × scaling × format pair × output on one Zipf-like draw with empty experts, sizes of
// 1, 128, 129 and 300 rows, and padding rows at the end (wgrad: rounded to multiples of 16).
TEST(GpuGroupedGemm, EveryOpScalingFormatAndOutputEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({0, 300, 1, 128, 0, 77, 129, 0});
  for (GemmOp op : {GemmOp::forward, GemmOp::masked, GemmOp::dgrad, GemmOp::wgrad})
    for (Scaling s : {Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise})
      if (op != GemmOp::wgrad || s != Scaling::rowwise)  // wgrad has no rowwise scaling
        for (auto [fa, fb] : {std::pair{Format::e4m3, Format::e4m3},
                              {Format::e5m2, Format::e4m3},
                              {Format::e4m3, Format::e5m2}})
          for (OutDtype out : {OutDtype::bf16, OutDtype::f32}) {
            const GpuGemmCase c = make_case(op, s, fa, fb, out, gs);
            const auto want = fuzz::oracle_gemm_bits(c);
            ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
            EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
          }
}

// Rowwise / tensorwise forward and dgrad tiles, and blockwise forward tiles, are 256 columns wide
// for N >= 2048 or N % 256 == 0, else (rowwise / tensorwise) 192 for N % 192 == 0, else 128
// (docs/gpu_gemm.md §2): N = 2176 gives a last 256-wide tile of 128 columns, whose columns past N
// come from the next group's rows of B (or zeros) and are never stored (bf16 and f32 output; for
// blockwise the second half's B scale is past N too and is not read); N = 1152, 192-wide tiles
// (blockwise 128); blockwise dgrad 128-wide at both; the first tile's rows past a group's end come
// from the next group's rows of A; over three K blocks.
TEST(GpuGroupedGemm, WideTilesPastNEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({0, 130, 1, 0, 64});
  for (std::int64_t N : {2176, 1152})
    for (GemmOp op : {GemmOp::forward, GemmOp::masked, GemmOp::dgrad})
      for (Scaling s : {Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise})
        for (OutDtype out : {OutDtype::bf16, OutDtype::f32}) {
          if (N == 1152 && out == OutDtype::f32) continue;  // the f32 stores: past N, at 2176
          const GpuGemmCase c = make_case(op, s, Format::e4m3, Format::e4m3, out, gs, N, 384);
          const auto want = fuzz::oracle_gemm_bits(c);
          ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
          EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
        }
  // wgrad: 128 × 192 tiles of dW for K = 384 (two whole tiles) and K = 2176 (the last tile has 64
  // columns in dW; its columns past K read zeros and are not stored), 128 × 256 tiles (two
  // 128-column halves each) for K = 768, f32 and bf16 dW.
  for (std::int64_t K : {384, 2176, 768})
    for (Scaling s : {Scaling::blockwise, Scaling::tensorwise})
      for (OutDtype out : {OutDtype::f32, OutDtype::bf16}) {
        const GpuGemmCase c = make_case(GemmOp::wgrad, s, Format::e4m3, Format::e5m2, out,
                                        sizes({0, 300, 16, 0, 77}), 256, K);
        const auto want = fuzz::oracle_gemm_bits(c);
        ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
        EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
      }
}

// wgrad on group starts off 128-token alignment (docs/gpu_gemm.md §2, §7): starts 16 mod 32 (48,
// 400, 592: every k32 step of a block straddles a 32-byte sector), 0 mod 32 but not mod 128 (320,
// 576, 992), at 0, and empty groups; 1 to 4 blocks, last blocks of 16 to 80 tokens; 192-wide
// (K = 384), 256-wide (K = 512) and 128-wide (K = 640) tiles. The second draw's last group (16
// tokens from 16) ends at M = 32, past which a 128-token box reads zeros.
TEST(GpuGroupedGemm, WgradGroupStartsOffAlignmentEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  for (const gen::GroupSizes& gs :
       {sizes({48, 0, 272, 80, 0, 176, 16, 400, 32}, 16), sizes({16, 16}, 0)})
    for (std::int64_t K : {384, 512, 640})
      for (Scaling s : {Scaling::blockwise, Scaling::tensorwise})
        for (OutDtype out : {OutDtype::f32, OutDtype::bf16}) {
          const GpuGemmCase c =
              make_case(GemmOp::wgrad, s, Format::e5m2, Format::e4m3, out, gs, 256, K);
          const auto want = fuzz::oracle_gemm_bits(c);
          ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
          EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
        }
}

// wgrad's 2-CTA pairs walking several pair tiles per cluster (docs/gpu_gemm.md §2): N = 512 and
// K = 1024 (256-wide tiles, two n pairs × four K tiles a group), ten groups (two empty) with 848
// of their 1136 tokens in groups starting 16 mod 32, so the launcher takes the pairs, and 80 pair
// tiles, more than the clusters an H200 holds at once (66): each cluster runs more than one pair
// tile, through both CTAs' rings, the C chunks and the group pairs' alternation included.
TEST(GpuGroupedGemm, WgradPairsWalkingSeveralTilesEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({48, 0, 272, 80, 0, 176, 16, 400, 32, 112}, 16);
  for (const auto& [s, out] : {std::pair{Scaling::blockwise, OutDtype::f32},
                               std::pair{Scaling::tensorwise, OutDtype::bf16}}) {
    const GpuGemmCase c =
        make_case(GemmOp::wgrad, s, Format::e4m3, Format::e4m3, out, gs, 512, 1024);
    std::int64_t odd16 = 0;
    for (std::size_t g = 0; g < c.offs.size(); ++g) {
      const std::int64_t start = g == 0 ? 0 : c.offs[g - 1];
      if (start % 32 == 16) odd16 += c.offs[g] - start;
    }
    ASSERT_GE(4 * odd16, c.M) << fuzz::describe(c);  // the pairs' condition (cluster_pays)
    const auto want = fuzz::oracle_gemm_bits(c);
    ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
  }
}

// wgrad on token offsets at any token (docs/gpu_gemm.md §1, §5). First draw: ends 1, 17, 31, 32,
// 159, 255, 255, 385, 400, 529, 657 (1, 15 and 0 mod 16; 31, 127, 129 and 17 mod 128): groups of
// 1 token (at 0 and at 31), 14 from 17, 127 (a last chunk of 15 tokens), 130 from 255 (a last
// block of 2), an empty group, 129 (a last block of 1), a whole block from 529; the groups that
// start off multiples of 16 go through the launcher's aligned copy, where a group's last chunk
// holds the next group's tokens (NaN codes past the last group). Second: one group of 1 token, the
// box reading 15 NaN codes and zeros past M = 16. Third: only the last offset (335) off a
// multiple of 16: the kernel reads the operands in place and zeroes the last 1 token of their
// chunk. 192-wide (K = 384), 256-wide (K = 512) and 128-wide (K = 640) tiles, blockwise and
// tensorwise, f32 and bf16.
TEST(GpuGroupedGemm, WgradOffsetsAnyTokenEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  for (const gen::GroupSizes& gs : {sizes({1, 16, 14, 1, 127, 96, 0, 130, 15, 129, 128}, 7),
                                    sizes({1}, 0), sizes({256, 0, 48, 31}, 1)})
    for (std::int64_t K : {384, 512, 640})
      for (Scaling s : {Scaling::blockwise, Scaling::tensorwise})
        for (OutDtype out : {OutDtype::f32, OutDtype::bf16}) {
          const GpuGemmCase c = make_case(GemmOp::wgrad, s, Format::e4m3, Format::e5m2, out, gs,
                                          256, K, 11, fuzz::WgradOffs::any_token);
          ASSERT_EQ(c.M % 16, 0) << fuzz::describe(c);
          ASSERT_EQ(c.offs, std::vector<std::int64_t>(gs.ends())) << fuzz::describe(c);
          const auto want = fuzz::oracle_gemm_bits(c);
          ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
          EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
        }
}

// The same wgrad case handed token-contiguous (dYᵀ, Xᵀ): M rounded up to 16 with tokens of no group
// (NaN codes; a NaN scale row where the tail gains a 128-token block), the operands and scales of
// c's tokens as they are.
GpuGemmCase token_contiguous_twin(const GpuGemmCase& c) {
  GpuGemmCase t = c;
  t.wgrad_operands = fuzz::WgradOperandForm::token_contiguous;
  t.M = (c.M + 15) / 16 * 16;
  constexpr std::uint8_t kNanCode = 0x7F;  // e4m3 and e5m2
  t.a.resize(std::size_t(t.M * c.N), kNanCode), t.b.resize(std::size_t(t.M * c.K), kNanCode);
  t.group_of.resize(std::size_t(t.M), -1);
  const std::int64_t last = c.offs.empty() ? 0 : c.offs.back();
  if (c.scaling == Scaling::blockwise && (t.M - last + 127) / 128 > (c.M - last + 127) / 128) {
    t.sa.resize(t.sa.size() + std::size_t(c.N), std::numeric_limits<float>::quiet_NaN());
    t.sb.resize(t.sb.size() + std::size_t(c.K), std::numeric_limits<float>::quiet_NaN());
  }
  return t;
}

// Row-major wgrad layouts: the any-token offsets of the test above with M = 664 (8 mod 16); one
// token, M = 1; empty groups at 0 and between, a group from 300, M = 377; starts 0, 256, 304,
// M = 336 (0 mod 16, not mod 64); M = 192 (0 mod 64, not mod 128) with a group from 64; M = 203,
// the last group ending at M; offsets at multiples of 16 (sizes 32, 0, 288) with a tail of 23
// tokens, M = 343.
std::vector<std::pair<gen::GroupSizes, fuzz::WgradOffs>> row_major_layouts() {
  return {{sizes({1, 16, 14, 1, 127, 96, 0, 130, 15, 129, 128}, 7), fuzz::WgradOffs::any_token},
          {sizes({1}, 0), fuzz::WgradOffs::any_token},
          {sizes({0, 300, 0, 77}, 0), fuzz::WgradOffs::any_token},
          {sizes({256, 0, 48, 31}, 1), fuzz::WgradOffs::any_token},
          {sizes({64, 100}, 28), fuzz::WgradOffs::any_token},
          {sizes({200, 3}, 0), fuzz::WgradOffs::any_token},
          {sizes({40, 0, 300}, 23), fuzz::WgradOffs::multiple_of_16}};
}

// Each row-major layout × K = 384 (192-wide tiles), 512 (256-wide) and 640 (128-wide) ×
// blockwise / tensorwise × f32 / bf16 dW: `check(case)`.
template <class Check>
void for_row_major_cases(Check check) {
  for (const auto& [gs, offs] : row_major_layouts())
    for (std::int64_t K : {384, 512, 640})
      for (Scaling s : {Scaling::blockwise, Scaling::tensorwise})
        for (OutDtype out : {OutDtype::f32, OutDtype::bf16})
          check(fuzz::make_gpu_gemm_case(GemmOp::wgrad, gs, 256, K, Format::e4m3, Format::e5m2, s,
                                         out, gen::ValueClass::normal, gen::ValueClass::outliers,
                                         13, ScaleLayoutF32::row_major, offs, BLayout::kn,
                                         fuzz::GroupsOn::host, fuzz::WgradOperandForm::row_major),
                gs.total() + gs.tail);
}

// The row-major cases and their token-contiguous twins are the same case to the model (the twin's
// added tokens belong to no group; its scale rows past them are never read): the same bits, not
// all zero; a row-major case keeps M as drawn. Needs no device (runs in CI).
TEST(GpuGroupedGemm, WgradRowMajorCasesAndTheirTwinsAreOneCaseToTheModel) {
  for_row_major_cases([](const GpuGemmCase& c, std::int64_t drawn_m) {
    if (c.wgrad_offs == fuzz::WgradOffs::any_token) {
      ASSERT_EQ(c.M, drawn_m);
    }
    const auto want = fuzz::oracle_gemm_bits(c);
    ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
    const GpuGemmCase twin = token_contiguous_twin(c);
    ASSERT_EQ(twin.M % 16, 0);
    EXPECT_EQ(fuzz::first_gemm_mismatch(twin, fuzz::oracle_gemm_bits(twin), want), "");
  });
}

// wgrad on row-major dY (M, N) and X (M, K) (WgradOperandLayout::row_major, docs/gpu_gemm.md §1):
// the launcher's fused transpose into the aligned layout gives the bits of the declared model and
// of the same case handed token-contiguous, over the layouts above.
TEST(GpuGroupedGemm, WgradRowMajorOperandsEqualTokenContiguousAndTheModel) {
  FP8REF_REQUIRE_DEVICE();
  for_row_major_cases([](const GpuGemmCase& c, std::int64_t) {
    const auto want = fuzz::oracle_gemm_bits(c);
    ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
    const auto got = fuzz::kernel_gemm_bits(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, got, want), "");
    const GpuGemmCase twin = token_contiguous_twin(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(twin, fuzz::kernel_gemm_bits(twin), got), "");
  });
}

// The operands separate the declared model from its neighbours: each neighbour differs from the
// kernel somewhere, so a kernel implementing a neighbour would fail the bitwise tests.
TEST(GpuGroupedGemm, NeighbouringModelsDisagreeWithTheKernel) {
  FP8REF_REQUIRE_DEVICE();
  using AM = AccumulationModel;
  const std::vector<std::pair<Scaling, std::vector<ModelChoice>>> plan = {
      {Scaling::blockwise,
       {{AM::exact, 1},
        {AM::fp32_sequential, 1},
        {AM::hopper_mma_sync, 1},
        {AM::hopper_promoted_blockwise, 2}}},
      {Scaling::rowwise,
       {{AM::exact, 1},
        {AM::hopper_promoted_rowwise, 1, 0, Epilogue::b_then_a},
        {AM::hopper_unpromoted, 1, 0, Epilogue::a_then_b},
        {AM::hopper_promoted_rowwise, 2, 0, Epilogue::a_then_b}}},
      {Scaling::tensorwise,
       {{AM::exact, 1}, {AM::hopper_unpromoted, 1}, {AM::hopper_promoted_tensorwise, 2}}}};
  for (const auto& [s, neighbours] : plan) {
    const GpuGemmCase c = make_case(GemmOp::forward, s, Format::e4m3, Format::e4m3, OutDtype::f32,
                                    sizes({200, 0, 190}), 256, 896, 11);
    const auto got = fuzz::kernel_gemm_bits(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, got, fuzz::oracle_gemm_bits(c)), "");
    for (const ModelChoice& m : neighbours)
      EXPECT_NE(fuzz::first_gemm_mismatch(c, got, fuzz::oracle_gemm_bits(c, m)), "")
          << to_string(s) << ": " << to_string(m.model) << " split " << m.split_k << " "
          << to_string(m.epilogue) << " gives the kernel's bits";
  }
}

// dgrad with W stored nk (G, N, K), the forward's layout, which the launcher transposes before the
// kernel (docs/gpu_gemm.md §1): equal to the declared model bitwise, and to the same case with W
// stored kn (the same values: the case draws W once and stores it in the layout asked for), for
// every scaling, e4m3 / e5m2 weights, bf16 / f32 output, 128-, 192- and 256-wide tiles (K = 256,
// 384, 512 output columns), groups of 1, 129 and 300 rows, empty groups and padding rows.
TEST(GpuGroupedGemm, DgradWithWStoredNkEqualsTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({0, 300, 1, 0, 129}, 9);
  for (Scaling s : {Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise})
    for (std::int64_t k_out : {256, 384, 512})
      for (Format fw : {Format::e4m3, Format::e5m2})
        for (OutDtype out : {OutDtype::bf16, OutDtype::f32}) {
          const auto at = [&](BLayout w) {  // the case's N is dgrad's K (output columns)
            return fuzz::make_gpu_gemm_case(GemmOp::dgrad, gs, k_out, 384, Format::e4m3, fw, s, out,
                                            gen::ValueClass::normal, gen::ValueClass::outliers, 21,
                                            ScaleLayoutF32::row_major,
                                            fuzz::WgradOffs::multiple_of_16, w);
          };
          const GpuGemmCase nk = at(BLayout::nk), kn = at(BLayout::kn);
          ASSERT_NE(nk.b, kn.b);  // stored differently
          const auto got = fuzz::kernel_gemm_bits(nk), want = fuzz::oracle_gemm_bits(nk);
          ASSERT_TRUE(fuzz::has_nonzero_output(nk, want));
          EXPECT_EQ(fuzz::first_gemm_mismatch(nk, got, want), "");
          EXPECT_EQ(fuzz::first_gemm_mismatch(nk, got, fuzz::kernel_gemm_bits(kn)), "");
        }
}

TEST(GpuGroupedGemm, RepeatedAndReorderedLaunchesGiveTheSameBits) {
  FP8REF_REQUIRE_DEVICE();
  const GpuGemmCase x = make_case(GemmOp::forward, Scaling::blockwise, Format::e4m3, Format::e4m3,
                                  OutDtype::bf16, sizes({129, 0, 3, 256}));
  const GpuGemmCase y = make_case(GemmOp::dgrad, Scaling::rowwise, Format::e5m2, Format::e4m3,
                                  OutDtype::f32, sizes({5, 400}), 384, 256, 3);
  const auto x1 = fuzz::kernel_gemm_bits(x), y1 = fuzz::kernel_gemm_bits(y);
  const auto x2 = fuzz::kernel_gemm_bits(x), y2 = fuzz::kernel_gemm_bits(y);
  EXPECT_EQ(fuzz::first_gemm_mismatch(x, x2, x1), "");
  EXPECT_EQ(fuzz::first_gemm_mismatch(y, y2, y1), "");
}

// More tiles than the GPU runs at once (about 1300 CTAs for 132 SMs), checked against the GPU
// oracle (gpu/oracle/, an emulation on CUDA cores sharing no code with the kernel).
TEST(GpuGroupedGemm, ManyWavesEqualTheGpuOracle) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({7000, 0, 4100, 2500, 1200, 0, 3000, 2713}, 40);
  for (Scaling s : {Scaling::blockwise, Scaling::rowwise}) {
    const GpuGemmCase c = make_case(GemmOp::forward, s, Format::e4m3, Format::e4m3, OutDtype::bf16,
                                    gs, 1024, 1024, 5);
    const std::size_t n = std::size_t(c.M * c.N);
    std::vector<std::uint16_t> h(n, fuzz::kOutPoisonBf16);
    const GroupedGemmOperands op{c.M, c.N, c.K,         c.G, c.fa, c.fb,
                                 c.a, c.b, BLayout::nk, s,   c.sa, c.sb};
    gpu::oracle_grouped_gemm_forward_offs(op, c.offs, fuzz::declared_gemm_model(s),
                                          RowPolicy::untouched, {OutDtype::bf16, {}, h, {}});
    const std::vector<std::uint32_t> want(h.begin(), h.end());
    ASSERT_TRUE(fuzz::has_nonzero_output(c, want));
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "");
  }
}

// Blockwise A scales passed MN-major (DeviceGemmOperands::scale_a_layout = tma_mn_major,
// docs/gpu_gemm.md §2) equal the declared model bitwise: 256-wide tiles that stage them (N = 256;
// N = 2176, whose last tile's second half is past N), 128-wide tiles that index them (N = 1152),
// forward and masked, groups of 1, 77, 128, 129 and 300 rows (group ends inside a 128-row tile),
// empty groups, padding rows, M not a multiple of 4, e4m3 and e5m2, bf16 and f32.
TEST(GpuGroupedGemm, MnMajorScalesEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({0, 300, 1, 128, 0, 77, 129, 0}, 6);
  for (std::int64_t N : {256, 2176, 1152})
    for (GemmOp op : {GemmOp::forward, GemmOp::masked})
      for (auto [fa, fb] : {std::pair{Format::e4m3, Format::e4m3}, {Format::e5m2, Format::e4m3}})
        for (OutDtype out : {OutDtype::bf16, OutDtype::f32}) {
          GpuGemmCase c = make_case(op, Scaling::blockwise, fa, fb, out, gs, N, 384);
          c.sa_layout = ScaleLayoutF32::tma_mn_major;  // fuzz::mn_major_scales_a, padding NaN
          const auto want = fuzz::oracle_gemm_bits(c);
          ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
          EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(c), want), "")
              << fuzz::describe(c);
        }
}

// Merged gate/up: B = concat(W1, W3) along N (N = 2H, H % 128 == 0) gives, column half by column
// half, the bits of the two separate forwards.
TEST(GpuGroupedGemm, MergedGateUpEqualsTwoForwards) {
  FP8REF_REQUIRE_DEVICE();
  const std::int64_t H = 256, K = 384;
  const GpuGemmCase merged = make_case(GemmOp::forward, Scaling::blockwise, Format::e4m3,
                                       Format::e4m3, OutDtype::bf16, sizes({70, 0, 130}), 2 * H, K);
  const auto both = fuzz::kernel_gemm_bits(merged);
  for (int half = 0; half < 2; ++half) {
    GpuGemmCase c = merged;
    c.N = H;
    c.b.clear(), c.sb.clear();
    for (std::int64_t g = 0; g < c.G; ++g) {
      const auto b0 = merged.b.begin() + (g * 2 * H + half * H) * K;
      c.b.insert(c.b.end(), b0, b0 + H * K);
      const std::int64_t per = (2 * H / 128) * (K / 128), half_per = per / 2;
      const auto s0 = merged.sb.begin() + g * per + half * half_per;
      c.sb.insert(c.sb.end(), s0, s0 + half_per);
    }
    const auto one = fuzz::kernel_gemm_bits(c);
    for (std::int64_t r = 0; r < c.M; ++r)
      for (std::int64_t n = 0; n < H; ++n)
        ASSERT_EQ(one[std::size_t(r * H + n)], both[std::size_t(r * 2 * H + half * H + n)])
            << "row " << r << " col " << n << " half " << half;
  }
}

// Every bad argument is refused with std::invalid_argument before any launch (no device needed:
// the pointers are never dereferenced).
TEST(GpuGroupedGemm, BadInputIsRefusedBeforeAnyLaunch) {
  const auto* p8 = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(1) << 20);
  const auto* pf = reinterpret_cast<const float*>(std::uintptr_t(1) << 21);
  void* py = reinterpret_cast<void*>(std::uintptr_t(1) << 22);
  const gpu::DeviceGemmOperands ok{
      256, 256,     512, 2,        Format::e4m3, Format::e4m3, p8, p8, Scaling::blockwise,
      pf,  256 * 4, pf,  2 * 2 * 4};
  const gpu::DeviceGemmOutput y{OutDtype::bf16, py, 256 * 256};
  const std::vector<std::int64_t> offs = {100, 256};
  const auto refused = [&](gpu::DeviceGemmOperands op, std::vector<std::int64_t> o,
                           gpu::DeviceGemmOutput out, const char* what) {
    try {
      gpu::grouped_gemm_forward(op, o, out, nullptr);
      ADD_FAILURE() << what << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("fp8ref gpu grouped GEMM"), std::string::npos);
    }
  };
  auto op = ok;
  op.K = 500, refused(op, offs, y, "K not a multiple of 128");
  op = ok, op.N = 200, refused(op, offs, y, "N not a multiple of 128");
  op = ok, op.G = 256, op.N = std::int64_t(1) << 23;
  refused(op, offs, y, "G * N rows of B past the 32-bit TMA coordinates");
  op = ok, op.scale_a_size = 256 * 3, refused(op, offs, y, "scale_a of the wrong shape");
  op = ok, op.scale_b_size = 7, refused(op, offs, y, "scale_b of the wrong shape");
  op = ok, op.a = p8 + 8, refused(op, offs, y, "misaligned A");
  op = ok, op.fa = Format::e8m0, refused(op, offs, y, "e8m0 operand");
  op = ok, op.scaling = Scaling::mx, refused(op, offs, y, "mx scaling");
  refused(ok, {200, 100}, y, "offsets out of order");
  refused(ok, {100, 300}, y, "offsets past M");
  refused(ok, {256}, y, "offsets of the wrong length");
  refused(ok, offs, {OutDtype::f16, py, 256 * 256}, "f16 output");
  refused(ok, offs, {OutDtype::bf16, py, 100}, "output of the wrong size");
  // The output over what the launch reads: A (and B, at the same address here), the scales.
  refused(ok, offs, {OutDtype::bf16, const_cast<std::uint8_t*>(p8) + 64 * 1024, 256 * 256},
          "output over A");
  refused(ok, offs, {OutDtype::f32, const_cast<float*>(pf) - 1024, 256 * 256},
          "output over the scales");
  // Device-side groups (docs/gpu_gemm.md §1): the workspace and the status word written by the
  // prologue overlap nothing else the launch touches.
  const auto* pe = reinterpret_cast<const std::int32_t*>(std::uintptr_t(1) << 23);
  auto* ps = reinterpret_cast<std::int32_t*>((std::uintptr_t(1) << 23) + 4096);
  void* pw = reinterpret_cast<void*>(std::uintptr_t(1) << 24);
  const auto groups_refused = [&](gpu::DeviceGroups g, const char* what) {
    EXPECT_THROW(gpu::grouped_gemm_forward(ok, g, y, nullptr), std::invalid_argument) << what;
  };
  groups_refused({pe, ps, py}, "workspace over the output");
  groups_refused({pe, ps, const_cast<std::uint8_t*>(p8)}, "workspace over A");
  groups_refused({pe, static_cast<std::int32_t*>(pw) + 16, pw}, "status inside the workspace");
  groups_refused({pe, const_cast<std::int32_t*>(pe), pw}, "status over the entries");
  groups_refused({reinterpret_cast<const std::int32_t*>(pw), ps, pw}, "entries in the workspace");
  // A's scales MN-major (docs/gpu_gemm.md §1): blockwise only, of K/128 · align(M, 4) entries,
  // 16-byte aligned; no other layout.
  op = ok, op.scale_a_layout = ScaleLayoutF32::col_major,
  refused(op, offs, y, "col_major A scales");
  op = ok, op.scaling = Scaling::rowwise, op.scale_a_size = 256, op.scale_b_size = 2 * 256;
  op.scale_a_layout = ScaleLayoutF32::tma_mn_major, refused(op, offs, y, "rowwise MN-major scales");
  op = ok, op.M = 254, op.scale_a_size = 254 * 4, op.scale_a_layout = ScaleLayoutF32::tma_mn_major;
  refused(op, {100, 254}, {OutDtype::bf16, py, 254 * 256}, "MN-major scales without padding");
  op = ok, op.scale_a_layout = ScaleLayoutF32::tma_mn_major, op.scale_a = pf + 1;
  refused(op, offs, y, "misaligned MN-major scales");
  gpu::DeviceDgradOperands d{256,          256, 512, 2,           Format::e4m3,
                             Format::e4m3, p8,  p8,  BLayout::nk, Scaling::rowwise,
                             pf,           256, pf,  2 * 512};
  d.w_layout = BLayout(7);  // neither kn nor nk
  EXPECT_THROW(gpu::grouped_gemm_dgrad(d, offs, {OutDtype::bf16, py, 256 * 512}, nullptr),
               std::invalid_argument);
  d.w_layout = BLayout::nk, d.w = p8 + 8;  // the transpose's 16-byte loads
  EXPECT_THROW(gpu::grouped_gemm_dgrad(d, offs, {OutDtype::bf16, py, 256 * 512}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(
      gpu::grouped_gemm_forward_masked(ok, 100, std::vector<std::int64_t>{10, 20}, y, nullptr),
      std::invalid_argument);  // M != G · m_max
  d.w = p8;                    // dA over W (and dY)
  EXPECT_THROW(gpu::grouped_gemm_dgrad(
                   d, offs, {OutDtype::bf16, const_cast<std::uint8_t*>(p8), 256 * 512}, nullptr),
               std::invalid_argument);
}

// K-grouped wgrad: an empty group's dW is C, every bit (-0 included), under f32 output.
// K = 128: the register epilogue; K = 512: 256-wide tiles, C through the stage ring (ring_epilogue
// in gpu/grouped_wgrad_kernels.cu), copied back by TMA.
TEST(GpuGroupedGemm, WgradEmptyGroupGivesCExactly) {
  FP8REF_REQUIRE_DEVICE();
  for (std::int64_t K : {128, 512}) {
    const GpuGemmCase c = make_case(GemmOp::wgrad, Scaling::blockwise, Format::e4m3, Format::e4m3,
                                    OutDtype::f32, sizes({0, 64, 0}, 0), 128, K);
    const auto got = fuzz::kernel_gemm_bits(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, got, fuzz::oracle_gemm_bits(c)), "");
    for (std::int64_t g : {0, 2})
      for (std::int64_t i = g * c.N * c.K; i < (g + 1) * c.N * c.K; ++i)
        ASSERT_EQ(got[std::size_t(i)], std::bit_cast<std::uint32_t>(c.c[std::size_t(i)]))
            << "K = " << K << ", element " << i;
  }
}

TEST(GpuGroupedGemm, WgradBadInputIsRefusedBeforeAnyLaunch) {
  const auto* p8 = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(1) << 20);
  const auto* pf = reinterpret_cast<const float*>(std::uintptr_t(1) << 21);
  void* py = reinterpret_cast<void*>(std::uintptr_t(1) << 22);
  // M = 256 tokens in groups of 128 and 128: 2 block-scale rows.
  const gpu::DeviceWgradOperands ok{
      256,     128, 256,     2, Format::e4m3, Format::e4m3, p8, p8, Scaling::blockwise, pf,
      2 * 128, pf,  2 * 256, pf};
  const gpu::DeviceGemmOutput dw{OutDtype::f32, py, 2 * 128 * 256};
  const std::vector<std::int64_t> offs = {128, 256};
  const auto refused = [&](gpu::DeviceWgradOperands op, std::vector<std::int64_t> o,
                           gpu::DeviceGemmOutput out, const char* what) {
    EXPECT_THROW(gpu::grouped_gemm_wgrad(op, o, out, nullptr), std::invalid_argument) << what;
  };
  auto op = ok;
  refused(op, {128, 272}, dw, "an offset past M");
  refused(op, {200, 128}, dw, "offsets out of order");
  op.scale_x_size = 7, refused(op, offs, dw, "scale_x of the wrong shape");
  op = ok, op.K = 200, refused(op, offs, dw, "K not a multiple of 128");
  op = ok, op.M = 250, refused(op, offs, dw, "M not a multiple of 16");
  op = ok, op.scaling = Scaling::rowwise, refused(op, offs, dw, "rowwise wgrad");
  refused(ok, offs, {OutDtype::f32, py, 5}, "dW of the wrong size");
  // Operand layouts (docs/gpu_gemm.md §4): token_contiguous or row_major only; row-major dY and X
  // are read with 16-byte loads (16-byte aligned), take any M below 2^31 but no offset past it.
  op = ok, op.layout = gpu::WgradOperandLayout(2), refused(op, offs, dw, "a third layout");
  op = ok, op.layout = gpu::WgradOperandLayout::row_major;
  op.dy = p8 + 8, refused(op, offs, dw, "misaligned row-major dY");
  op.dy = p8, op.x = p8 + 1, refused(op, offs, dw, "misaligned row-major X");
  op.x = p8, refused(op, {128, 257}, dw, "a row-major offset past M");
  op.M = std::int64_t(1) << 31, refused(op, offs, dw, "row-major M of 2^31 tokens");
  op.M = 250, op.layout = gpu::WgradOperandLayout::token_contiguous;
  refused(op, {128, 250}, dw, "token-contiguous M = 250 (row-major takes it)");
  // dW over C is f32 accumulation in place only; dW over an operand or a scale tensor never.
  void* const pc = const_cast<float*>(pf);
  refused(ok, offs, {OutDtype::bf16, pc, 2 * 128 * 256}, "bf16 dW over C");
  refused(ok, offs, {OutDtype::f32, static_cast<float*>(pc) + 4, 2 * 128 * 256},
          "f32 dW over C, 16 bytes off its start");
  refused(ok, offs, {OutDtype::f32, const_cast<std::uint8_t*>(p8), 2 * 128 * 256}, "dW over dY^T");
  op = ok;
  op.c = static_cast<const float*>(py) + 2 * 128 * 256;  // C apart from dW: only the scales
  refused(op, offs, {OutDtype::f32, pc, 2 * 128 * 256}, "dW over the scale tensors");
}

// ---- Device-side groups (docs/gpu_gemm.md §1, §4, §5) ----

std::vector<std::int32_t> to_i32(const std::vector<std::int64_t>& v) {
  return {v.begin(), v.end()};
}

// The output bits of a forward, masked or dgrad case through the device-side groups' path (the
// host-memory wrappers: the int32 entries uploaded unchecked, the prologue's status read back),
// or through the host arrays'.
std::vector<std::uint32_t> bits_with_groups_on(GpuGemmCase c, fuzz::GroupsOn on) {
  c.groups_on = on;
  return fuzz::kernel_gemm_bits(c);
}
std::vector<std::uint32_t> device_groups_bits(const GpuGemmCase& c) {
  return bits_with_groups_on(c, fuzz::GroupsOn::device);
}

// Drawn forward, masked and dgrad cases (every scaling, format pair, output, A-scale layout, W
// layout and group distribution of gpu.grouped_gemm): the device-side groups give the host
// arrays' bits.
TEST(GpuGroupedGemm, DeviceGroupsGiveTheHostGroupsBits) {
  FP8REF_REQUIRE_DEVICE();
  test::check_property(
      [] {
        const GpuGemmCase c = fuzz::draw_gpu_gemm_case();
        RC_PRE(c.op != GemmOp::wgrad);
        for (const auto& t : fuzz::gpu_gemm_tags(c)) RC_CLASSIFY(true, t);
        const std::string m = fuzz::first_gemm_mismatch(
            c, device_groups_bits(c), bits_with_groups_on(c, fuzz::GroupsOn::host));
        RC_ASSERT(m == "");
      },
      40);
}

// More groups than a warp's lanes: the consumers look a tile's group up 32 groups a round
// (tile_coord_warp, gpu/grouped_gemm_kernels.cu), so with 70 groups the answer lies in the first,
// second or third round, at a round's last lane (31, 63) or first (32, 64), past a run of empty
// groups that crosses a round (34 .. 62) and with empty groups after the last non-empty one; the
// forward (256-wide tiles) and dgrad (128-wide) through the device-side groups equal the model.
TEST(GpuGroupedGemm, DeviceGroupsPastOneWarpOfGroupsEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  std::vector<std::int64_t> rows(70, 0);
  for (const auto& [g, n] : std::vector<std::pair<int, std::int64_t>>{
           {0, 5}, {30, 130}, {31, 1}, {32, 128}, {33, 17}, {63, 129}, {64, 2}, {65, 40}, {67, 3}})
    rows[std::size_t(g)] = n;
  const gen::GroupSizes gs = sizes(rows, 3);
  for (GemmOp op : {GemmOp::forward, GemmOp::dgrad})
    for (Scaling s : {Scaling::blockwise, Scaling::rowwise}) {
      const GpuGemmCase c =
          make_case(op, s, Format::e4m3, Format::e4m3, OutDtype::bf16, gs, 256, 384);
      const auto want = fuzz::oracle_gemm_bits(c);
      ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
      EXPECT_EQ(fuzz::first_gemm_mismatch(c, device_groups_bits(c), want), "");
    }
}

// Every scaling and output of forward, masked and dgrad through the device-side groups equal the
// declared model (the CPU oracle): 256-wide tiles (N = 256, and N = 2176 with a last half past N)
// include blockwise forward tiles on row-major A scales, transposed into the workspace (the
// wrappers' default, grouped_gemm_workspace_bytes(op)) and, with a workspace of the table alone,
// loaded row-major by the consumers (docs/gpu_gemm.md §1); 128-wide ones (N = 1152 blockwise).
TEST(GpuGroupedGemm, DeviceGroupsEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({0, 300, 1, 128, 0, 77, 129, 0});
  for (std::int64_t N : {256, 2176, 1152})
    for (GemmOp op : {GemmOp::forward, GemmOp::masked, GemmOp::dgrad})
      for (Scaling s : {Scaling::blockwise, Scaling::rowwise, Scaling::tensorwise})
        for (OutDtype out : {OutDtype::bf16, OutDtype::f32}) {
          const GpuGemmCase c = make_case(op, s, Format::e4m3, Format::e5m2, out, gs, N, 384);
          const auto want = fuzz::oracle_gemm_bits(c);
          ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
          EXPECT_EQ(fuzz::first_gemm_mismatch(c, device_groups_bits(c), want), "");
          if (op != GemmOp::dgrad && s == Scaling::blockwise) {
            GpuGemmCase t = c;
            t.groups_on = fuzz::GroupsOn::device;
            EXPECT_EQ(fuzz::first_gemm_mismatch(c, fuzz::kernel_gemm_bits(t, true), want), "")
                << "table-only workspace";
          }
        }
}

// Device memory of a test, freed at scope exit.
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<std::size_t>(bytes, 16)), cudaSuccess);
  }
  template <class T>
  explicit DeviceMemory(const std::vector<T>& host) : DeviceMemory(host.size() * sizeof(T)) {
    put(host);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { cudaFree(p_); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  template <class T>
  void put(const std::vector<T>& host, cudaStream_t stream = nullptr) const {
    EXPECT_EQ(
        cudaMemcpyAsync(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
        cudaSuccess);
  }
  template <class T>
  std::vector<T> get(std::size_t n) const {
    std::vector<T> host(n);
    EXPECT_EQ(cudaMemcpy(host.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  void* p_ = nullptr;
};

// A forward case's device operands: its A, B and scales in device memory a, b, sa, sb (row-major
// A scales).
gpu::DeviceGemmOperands device_operands(const GpuGemmCase& c, const DeviceMemory& a,
                                        const DeviceMemory& b, const DeviceMemory& sa,
                                        const DeviceMemory& sb) {
  return {c.M,
          c.N,
          c.K,
          c.G,
          c.fa,
          c.fb,
          a.as<const std::uint8_t>(),
          b.as<const std::uint8_t>(),
          c.scaling,
          sa.as<const float>(),
          std::int64_t(c.sa.size()),
          sb.as<const float>(),
          std::int64_t(c.sb.size())};
}

// A wgrad case's device operands, row-major dY and X (the case's A and B) in dy and x, its scales
// at sdy and sx (pointers: a test may place them off alignment) and C at c.
gpu::DeviceWgradOperands wgrad_device_operands(const GpuGemmCase& c, const DeviceMemory& dy,
                                               const DeviceMemory& x, const float* sdy,
                                               const float* sx, const float* cp) {
  return {c.M,
          c.N,
          c.K,
          c.G,
          c.fa,
          c.fb,
          dy.as<const std::uint8_t>(),
          x.as<const std::uint8_t>(),
          c.scaling,
          sdy,
          std::int64_t(c.sa.size()),
          sx,
          std::int64_t(c.sb.size()),
          cp,
          gpu::WgradOperandLayout::row_major};
}

// wgrad's scale tensors need no alignment (docs/gpu_gemm.md §4): where either is not 16-byte
// aligned (a slice of a larger buffer), the producer's lanes copy each block's scales 4 bytes at a
// time by cp.async instead of two bulk copies, and a stage's `full` phase counts 33 arrivals (the
// lanes' and lane 0's expect_tx), the ring epilogue's chunks of C too. Both scale tensors at +4
// bytes and at +4 / +0: the model's bits at 192-wide (K = 384, columns past K on the last tile:
// K = 2176) and 256-wide tiles (K = 512, through the ring), bf16 and f32, an empty group among
// the groups and a group ending inside a block.
TEST(GpuGroupedGemm, WgradUnalignedScalesEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  for (std::int64_t K : {384, 2176, 512})
    for (OutDtype out : {OutDtype::f32, OutDtype::bf16})
      for (auto [dy_off, x_off] : {std::pair{4, 4}, {4, 0}}) {
        const GpuGemmCase c = make_case(GemmOp::wgrad, Scaling::blockwise, Format::e4m3,
                                        Format::e5m2, out, sizes({300, 0, 77}), 256, K);
        const auto want = fuzz::oracle_gemm_bits(c);
        ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
        const std::size_t n = std::size_t(c.G * c.N * c.K), esize = out == OutDtype::f32 ? 4 : 2;
        const DeviceMemory dy(c.a), x(c.b), cm(c.c), dw(n * esize), sdy(c.sa.size() * 4 + 16),
            sx(c.sb.size() * 4 + 16);
        auto* sdy_p = reinterpret_cast<float*>(sdy.as<std::uint8_t>() + dy_off);
        auto* sx_p = reinterpret_cast<float*>(sx.as<std::uint8_t>() + x_off);
        ASSERT_EQ(cudaMemcpy(sdy_p, c.sa.data(), c.sa.size() * 4, cudaMemcpyHostToDevice),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(sx_p, c.sb.data(), c.sb.size() * 4, cudaMemcpyHostToDevice),
                  cudaSuccess);
        const gpu::DeviceWgradOperands w =
            wgrad_device_operands(c, dy, x, sdy_p, sx_p, cm.as<const float>());
        gpu::grouped_gemm_wgrad(w, c.offs, {out, dw.as<void>(), std::int64_t(n)}, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<std::uint32_t> got(n);
        if (out == OutDtype::f32) {
          const auto f = dw.get<std::uint32_t>(n);
          got.assign(f.begin(), f.end());
        } else {
          const auto h = dw.get<std::uint16_t>(n);
          got.assign(h.begin(), h.end());
        }
        EXPECT_EQ(fuzz::first_gemm_mismatch(c, got, want), "")
            << "scale_dy at +" << dy_off << " bytes, scale_x at +" << x_off << ", K = " << K;
      }
}

// The f32 case's dW written into C itself (accumulation in place): the bits of C afterwards, dY and
// X handed row-major (the case's A and B as drawn).
std::vector<std::uint32_t> wgrad_in_place_bits(GpuGemmCase c) {
  c.wgrad_operands = fuzz::WgradOperandForm::row_major, c.wgrad_dw = fuzz::WgradDw::into_c;
  return fuzz::kernel_gemm_bits(c);
}

// f32 dW may be C itself (gradient accumulation in place, docs/gpu_gemm.md §1): each tile reads its
// block of C before it writes that block of dW (the register epilogue loads all of a thread's C
// before its first store; the ring loads the tile's C into shared memory before its TMA stores),
// and no tile reads another's. The model's bits at 192-wide (K = 384) and 256-wide (K = 512)
// tiles, with an empty group (its dW = C: the bits stay).
TEST(GpuGroupedGemm, WgradIntoCInPlaceEqualsTheModel) {
  FP8REF_REQUIRE_DEVICE();
  for (std::int64_t K : {384, 512}) {
    const GpuGemmCase c = make_case(GemmOp::wgrad, Scaling::blockwise, Format::e4m3, Format::e4m3,
                                    OutDtype::f32, sizes({300, 0, 77}), 256, K);
    const auto want = fuzz::oracle_gemm_bits(c);
    ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, wgrad_in_place_bits(c), want), "") << "K = " << K;
  }
}

// Empty groups among more tiles of the groups with tokens than the device has SMs (the walk's
// empty-group tiles copy C through the ring, docs/gpu_gemm.md §2), through the one-CTA kernel
// (group sizes multiples of 32) and the 2-CTA pairs with their schedule (sizes 16 mod 32: half the
// tokens in groups starting 16 mod 32); the empty groups' C holds infinities, subnormals, -0, bf16
// ties and (f32 dW) NaN payloads, checked bit for bit against C; f32 and bf16 dW, blockwise and
// tensorwise, and f32 dW into C in place.
TEST(GpuGroupedGemm, WgradEmptyGroupsAmongManyTilesEqualTheModel) {
  FP8REF_REQUIRE_DEVICE();
  const std::int64_t N = 512, K = 1024;  // 16 tiles of 128 x 256 a group
  const int busy = gpu::current_device_sm_count() / 16 + 1;
  for (const std::int64_t unit : {32, 16}) {
    std::vector<std::int64_t> s;
    for (int g = 0; g < busy; ++g) {
      if (g % 3 == 0) s.push_back(0);
      s.push_back(unit == 32 ? 32 * (1 + g % 4) : 16 + 32 * (g % 4));
    }
    s.push_back(0);
    for (const auto& [sc, out] : {std::pair{Scaling::blockwise, OutDtype::f32},
                                  std::pair{Scaling::tensorwise, OutDtype::bf16}}) {
      GpuGemmCase c = make_case(GemmOp::wgrad, sc, Format::e4m3, Format::e4m3, out, sizes(s, 0), N,
                                K, 11 + std::uint64_t(unit));
      // NaNs last: with bf16 dW the kernel's conversion gives 0x7FFF where the model keeps the
      // payload's top bits (docs/gpu_gemm.md §3), so the bf16 case draws none.
      const std::uint32_t specials[] = {0x7F800000u, 0xFF800000u, 0x00000001u, 0x807FFFFFu,
                                        0x80000000u, 0x3F808000u, 0x3F818000u, 0xC0FF8000u,
                                        0x7FA00001u, 0xFFC12345u};
      const std::size_t n_specials = out == OutDtype::f32 ? 10 : 8;
      std::int64_t prev = 0;
      for (std::size_t g = 0; g < c.offs.size(); prev = c.offs[g++]) {
        if (c.offs[g] != prev) continue;
        for (std::int64_t i = 0; i < c.N * c.K; i += 7)
          c.c[std::size_t(std::int64_t(g) * c.N * c.K + i)] =
              std::bit_cast<float>(specials[std::size_t(i / 7) % n_specials]);
      }
      const auto want = fuzz::oracle_gemm_bits(c);
      ASSERT_TRUE(fuzz::has_nonzero_output(c, want)) << fuzz::describe(c);
      const auto got = fuzz::kernel_gemm_bits(c);
      EXPECT_EQ(fuzz::first_gemm_mismatch(c, got, want), "") << "unit " << unit;
      if (out != OutDtype::f32) continue;
      prev = 0;
      for (std::size_t g = 0; g < c.offs.size(); prev = c.offs[g++]) {
        if (c.offs[g] != prev) continue;
        for (std::int64_t i = std::int64_t(g) * c.N * c.K; i < std::int64_t(g + 1) * c.N * c.K; ++i)
          ASSERT_EQ(got[std::size_t(i)], std::bit_cast<std::uint32_t>(c.c[std::size_t(i)]))
              << "unit " << unit << ", element " << i;
      }
      // In place: the empty groups' dW is their C, untouched.
      EXPECT_EQ(fuzz::first_gemm_mismatch(c, wgrad_in_place_bits(c), want), "")
          << "in place, unit " << unit;
    }
  }
}

// A wgrad launch on a stream of the caller's is ordered after that stream's earlier work and
// before its later work, empty groups' copies of C included: a long memset, then C set to a
// pattern, the wgrad (f32 dW out of place), then dW read back on the same stream and only that
// stream synchronised; each empty group's dW must hold the pattern (a copy that ran before the
// pattern, or a read before the copy, would not: 32 MiB a group), and the group with tokens the
// model's bits; three launches in a row.
TEST(GpuGroupedGemm, WgradEmptyGroupCopiesAreOrderedOnTheCallersStream) {
  FP8REF_REQUIRE_DEVICE();
  const std::int64_t N = 1024, K = 8192;
  const GpuGemmCase c = make_case(GemmOp::wgrad, Scaling::blockwise, Format::e4m3, Format::e4m3,
                                  OutDtype::f32, sizes({0, 32, 0, 0}, 0), N, K, 23);
  const std::size_t n = std::size_t(c.G * N * K);
  const DeviceMemory dy(c.a), x(c.b), sdy(c.sa), sx(c.sb), cm(n * 4), dw(n * 4),
      slow(std::size_t(1) << 30);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // C: the drawn values for the group with tokens (the model's input), 0x3C3C3C3C elsewhere.
  GpuGemmCase want_case = c;
  std::fill(want_case.c.begin(), want_case.c.end(), std::bit_cast<float>(0x3C3C3C3Cu));
  std::copy(c.c.begin() + N * K, c.c.begin() + 2 * N * K, want_case.c.begin() + N * K);
  const auto want = fuzz::oracle_gemm_bits(want_case);
  ASSERT_TRUE(fuzz::has_nonzero_output(want_case, want)) << fuzz::describe(want_case);
  const gpu::DeviceWgradOperands w = wgrad_device_operands(
      c, dy, x, sdy.as<const float>(), sx.as<const float>(), cm.as<const float>());
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_EQ(cudaMemsetAsync(dw.as<void>(), 0xA5 + rep, n * 4, s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(cm.as<void>(), 0x11 * rep, n * 4, s), cudaSuccess);  // stale C
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(slow.as<void>(), rep, std::size_t(1) << 30, s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(cm.as<void>(), 0x3C, n * 4, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(cm.as<float>() + N * K, c.c.data() + N * K, std::size_t(N * K) * 4,
                              cudaMemcpyHostToDevice, s),
              cudaSuccess);
    gpu::grouped_gemm_wgrad(w, c.offs, {OutDtype::f32, dw.as<void>(), std::int64_t(n)}, s);
    std::vector<std::uint32_t> got(n);
    ASSERT_EQ(cudaMemcpyAsync(got.data(), dw.as<void>(), n * 4, cudaMemcpyDeviceToHost, s),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(fuzz::first_gemm_mismatch(want_case, got, want), "") << "launch " << rep;
  }
  cudaStreamDestroy(s);
}

// The prologue's table (detail::launch_group_table) == the host launcher's byte for byte
// (detail::host_group_table_offs / _masked, both zero past the groups): offsets with empty groups,
// groups of 1, 127, 128, 129 and 300 rows, G = 1 and G = 256, masked counts; on a bad entry the
// empty table (count 0, tile_prefix[0] = 0) and the entry's status.
TEST(GpuGroupedGemm, DeviceGroupTableEqualsTheHostTable) {
  FP8REF_REQUIRE_DEVICE();
  using gpu::detail::GemmGroupTable;
  const DeviceMemory table(sizeof(GemmGroupTable)), status(sizeof(std::int32_t));
  const auto device_table = [&](const std::vector<std::int64_t>& d, bool masked, std::int64_t limit,
                                std::int32_t& st) {
    const DeviceMemory entries(to_i32(d));
    gpu::detail::launch_group_table(entries.as<const std::int32_t>(), int(d.size()), masked, limit,
                                    table.as<GemmGroupTable>(), status.as<std::int32_t>(), nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    st = status.get<std::int32_t>(1)[0];
    GemmGroupTable t;
    EXPECT_EQ(cudaMemcpy(&t, table.as<void>(), sizeof t, cudaMemcpyDeviceToHost), cudaSuccess);
    return t;
  };
  std::vector<std::int64_t> many(256);
  for (std::size_t g = 0; g < many.size(); ++g) many[g] = std::int64_t(g * g) % 700 + 1000 * g;
  for (std::size_t g = 1; g < many.size(); ++g) many[g] = std::max(many[g], many[g - 1]);
  for (const auto& offs : {std::vector<std::int64_t>{129, 129, 132, 388},
                           {0},
                           {300},
                           {0, 1, 128, 256, 385, 385, 685},
                           many}) {
    const std::int64_t M = offs.back() + 5;
    std::int32_t st = -1;
    const GemmGroupTable got = device_table(offs, false, M, st),
                         want = gpu::detail::host_group_table_offs(M, offs);
    EXPECT_EQ(st, 0);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "G = " << offs.size();
  }
  const std::vector<std::int64_t> masked_m = {0, 300, 1, 128, 0, 77, 129, 0};
  std::int32_t st = -1;
  GemmGroupTable got = device_table(masked_m, true, 310, st);
  const GemmGroupTable want = gpu::detail::host_group_table_masked(310, masked_m);
  EXPECT_EQ(st, 0);
  EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0);
  got = device_table({100, 50, 300}, false, 400, st);
  EXPECT_EQ(st, gpu::detail::kGroupsOutOfOrder | (1 << 4));
  EXPECT_EQ(got.count, 0);
  EXPECT_EQ(got.tile_prefix[0], 0);
  got = device_table({3, 311}, true, 310, st);
  EXPECT_EQ(st, gpu::detail::kGroupsMaskedRange | (1 << 4));
  EXPECT_EQ(got.count, 0);
}

// Bad device entries: the status word reports them and the host wrappers throw the host arrays'
// own message (docs/gpu_gemm.md §4); the GEMM writes nothing, so the poisoned output keeps every
// bit.
TEST(GpuGroupedGemm, BadDeviceGroupsSetTheStatusAndLeaveTheOutput) {
  FP8REF_REQUIRE_DEVICE();
  const gen::GroupSizes gs = sizes({129, 0, 3, 256});
  for (GemmOp op : {GemmOp::forward, GemmOp::masked, GemmOp::dgrad}) {
    const GpuGemmCase good =
        make_case(op, Scaling::blockwise, Format::e4m3, Format::e4m3, OutDtype::bf16, gs, 256, 256);
    const std::vector<std::vector<std::int64_t>> bad =
        op == GemmOp::masked
            ? std::vector<std::vector<std::int64_t>>{{129, -1, 3, 256}, {129, 0, 3, good.m_max + 1}}
            : std::vector<std::vector<std::int64_t>>{
                  {129, 128, 132, 388}, {-1, 129, 132, 388}, {129, 129, 132, good.M + 1}};
    for (const auto& d : bad) {
      GpuGemmCase c = good;
      (op == GemmOp::masked ? c.masked_m : c.offs) = d;
      std::string host_message, device_message;
      try {
        (void)bits_with_groups_on(c, fuzz::GroupsOn::host);  // refused before any launch
      } catch (const std::invalid_argument& e) {
        host_message = e.what();
      }
      std::vector<std::uint32_t> got;
      try {
        got = device_groups_bits(c);
      } catch (const std::invalid_argument& e) {
        device_message = e.what();
      }
      EXPECT_NE(host_message, "") << fuzz::describe(c);
      EXPECT_EQ(device_message, host_message) << fuzz::describe(c);
    }
  }
  // The output is untouched: the direct entry point with a poisoned output and a bad offs.
  const GpuGemmCase c = make_case(GemmOp::forward, Scaling::rowwise, Format::e4m3, Format::e4m3,
                                  OutDtype::bf16, gs, 256, 256);
  const DeviceMemory a(c.a), b(c.b), sa(c.sa), sb(c.sb), offs(to_i32({129, 129, 132, 400})),
      status(sizeof(std::int32_t)), workspace(gpu::grouped_gemm_workspace_bytes());
  const std::vector<std::uint16_t> poison(std::size_t(c.M * c.N), fuzz::kOutPoisonBf16);
  const DeviceMemory y(poison);
  const gpu::DeviceGemmOperands d = device_operands(c, a, b, sa, sb);
  gpu::grouped_gemm_forward(
      d, {offs.as<const std::int32_t>(), status.as<std::int32_t>(), workspace.as<void>()},
      {OutDtype::bf16, y.as<void>(), c.M * c.N}, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(status.get<std::int32_t>(1)[0], gpu::detail::kGroupsPastM | (3 << 4));
  EXPECT_EQ(y.get<std::uint16_t>(poison.size()), poison);
  // A workspace_size below the table's bytes: refused on the host, before any launch.
  EXPECT_THROW(
      gpu::grouped_gemm_forward(
          d, {offs.as<const std::int32_t>(), status.as<std::int32_t>(), workspace.as<void>(), 16},
          {OutDtype::bf16, y.as<void>(), c.M * c.N}, nullptr),
      std::invalid_argument);
}

// The device-side groups' forward captured once in a CUDA graph (global capture mode, on a
// non-blocking stream) and replayed with other offsets written into the same device array: each
// replay gives the host arrays' bits for its offsets, a bad one sets the status and leaves the
// poisoned output, and the first offsets again give their bits (docs/gpu_gemm.md §1).
TEST(GpuGroupedGemm, CapturedDeviceGroupsForwardReplaysWithNewOffsets) {
  FP8REF_REQUIRE_DEVICE();
  const GpuGemmCase c = make_case(GemmOp::forward, Scaling::blockwise, Format::e4m3, Format::e4m3,
                                  OutDtype::bf16, sizes({129, 0, 3, 256}));  // offs 129 129 132 388
  const std::size_t n = std::size_t(c.M * c.N);
  const DeviceMemory a(c.a), b(c.b), sa(c.sa), sb(c.sb), offs(c.G * sizeof(std::int32_t)),
      status(sizeof(std::int32_t)), y(n * sizeof(std::uint16_t));
  const gpu::DeviceGemmOperands d = device_operands(c, a, b, sa, sb);
  // A workspace of the table alone (the consumers load the row-major A scales), then one with room
  // for their transposed copy (a second kernel captured before the GEMM).
  for (const std::size_t ws :
       {gpu::grouped_gemm_workspace_bytes(), gpu::grouped_gemm_workspace_bytes(d)}) {
    SCOPED_TRACE("workspace of " + std::to_string(ws) + " bytes");
    const DeviceMemory workspace(ws);
    const gpu::DeviceGroups groups{offs.as<const std::int32_t>(), status.as<std::int32_t>(),
                                   workspace.as<void>(), ws};
    const gpu::DeviceGemmOutput out{OutDtype::bf16, y.as<void>(), c.M * c.N};
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const std::vector<std::uint16_t> poison(n, fuzz::kOutPoisonBf16);
    // A run on `stream` outside the graph first (kernels loaded before the capture).
    offs.put(to_i32(c.offs), stream), y.put(poison, stream);
    gpu::grouped_gemm_forward(d, groups, out, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto bits = [&] {
      const auto h = y.get<std::uint16_t>(n);
      return std::vector<std::uint32_t>(h.begin(), h.end());
    };
    EXPECT_EQ(fuzz::first_gemm_mismatch(c, bits(), fuzz::kernel_gemm_bits(c)), "");
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    try {
      gpu::grouped_gemm_forward(d, groups, out, stream);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "capture: " << e.what();
    }
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    const auto replay = [&](const std::vector<std::int64_t>& o) {
      offs.put(to_i32(o), stream), y.put(poison, stream);
      EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      return status.get<std::int32_t>(1)[0];
    };
    GpuGemmCase other = c;
    other.offs = {3, 259, 388, 388};  // the same rows in other groups
    for (const GpuGemmCase* k : std::vector<const GpuGemmCase*>{&c, &other, &c}) {
      EXPECT_EQ(replay(k->offs), 0);
      EXPECT_EQ(fuzz::first_gemm_mismatch(*k, bits(), fuzz::kernel_gemm_bits(*k)), "");
    }
    EXPECT_EQ(replay({3, 2, 388, 388}), gpu::detail::kGroupsOutOfOrder | (1 << 4));
    EXPECT_EQ(y.get<std::uint16_t>(n), poison);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

}  // namespace
}  // namespace fp8ref
