// The group table of the device-side `offs` / `masked_m` path (build_group_table,
// gpu/grouped_gemm_groups.h: what the prologue kernel runs, here compiled for the host) == the host
// launcher's (detail::host_group_table_offs / _masked, gpu/grouped_gemm.cpp) byte for byte on
// random descriptors; on a bad one, the empty table and a status whose message is the host
// launcher's own (docs/gpu_gemm.md §4, §5). Label cpu: runs in CI without a GPU.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/grouped_gemm.h"
#include "gpu/grouped_gemm_groups.h"
#include "gpu/grouped_gemm_kernels.h"

namespace fp8ref::gpu::detail {
namespace {

// Row counts of every size class the kernel's tiles meet: empty, 1, 127, 128, 129, up to 4
// tiles, and (rarely) large ones near the 32-bit row limit.
rc::Gen<std::int64_t> rows() {
  return rc::gen::weightedOneOf<std::int64_t>(
      {{4, rc::gen::just<std::int64_t>(0)},
       {2, rc::gen::element<std::int64_t>(1, 127, 128, 129, 255, 256, 257)},
       {6, rc::gen::inRange<std::int64_t>(0, 520)},
       {1, rc::gen::inRange<std::int64_t>(0, std::int64_t(1) << 23)}});
}

// G: 1, the most (256), or any.
rc::Gen<int> groups() {
  return rc::gen::weightedOneOf<int>(
      {{1, rc::gen::element(1, kGemmMaxGroups)}, {4, rc::gen::inRange(1, kGemmMaxGroups + 1)}});
}

// The host launcher's table, or its one-line message.
struct HostResult {
  GemmGroupTable table{};
  std::string error;
};
template <class Build>
HostResult host(Build build) {
  HostResult r;
  try {
    r.table = build();
  } catch (const std::invalid_argument& e) {
    r.error = e.what();
  }
  return r;
}

// Both builders on the same descriptor: the same table, or the same message and the empty table.
void check_same(const std::vector<std::int64_t>& d, bool masked, std::int64_t limit) {
  const HostResult want = host(
      [&] { return masked ? host_group_table_masked(limit, d) : host_group_table_offs(limit, d); });
  const std::vector<std::int32_t> d32(d.begin(), d.end());
  GemmGroupTable got{};
  const std::int32_t status = build_group_table(got, d32.data(), int(d32.size()), masked, limit);
  RC_CLASSIFY(status != 0, "bad entry");
  RC_ASSERT(grouped_gemm_status_message(status) == want.error);
  if (status == 0) {
    RC_ASSERT(std::memcmp(&got, &want.table, sizeof got) == 0);
  } else {
    RC_ASSERT(got.count == 0);
    RC_ASSERT(got.tile_prefix[0] == 0);
  }
}

RC_GTEST_PROP(GpuGroupTable, ContiguousOffsetsGiveTheHostLaunchersTable, ()) {
  const int G = *groups();
  std::vector<std::int64_t> offs;
  std::int64_t end = 0;
  for (int g = 0; g < G; ++g) offs.push_back(end += *rows());
  const std::int64_t M = end + *rc::gen::element<std::int64_t>(0, 1, 5, 130);
  RC_PRE(M < (std::int64_t(1) << 31));
  RC_CLASSIFY(G == 1, "G = 1");
  RC_CLASSIFY(G == kGemmMaxGroups, "G = 256");
  check_same(offs, false, M);
}

RC_GTEST_PROP(GpuGroupTable, MaskedRowCountsGiveTheHostLaunchersTable, ()) {
  const int G = *groups();
  std::vector<std::int64_t> masked_m;
  for (int g = 0; g < G; ++g) masked_m.push_back(*rows() % 600);
  const std::int64_t m_max =
      *std::max_element(masked_m.begin(), masked_m.end()) + *rc::gen::inRange<std::int64_t>(0, 200);
  check_same(masked_m, true, m_max);
}

// One entry made bad (or several: the first bad one is reported): out of order, past M, negative,
// masked past m_max.
RC_GTEST_PROP(GpuGroupTable, BadEntriesGiveTheHostLaunchersMessageAndNoTiles, ()) {
  const int G = *rc::gen::inRange(1, 40);
  const bool masked = *rc::gen::arbitrary<bool>();
  std::vector<std::int64_t> d;
  std::int64_t end = 0;
  for (int g = 0; g < G; ++g) d.push_back(masked ? *rows() % 300 : (end += *rows() % 300));
  const std::int64_t limit = masked ? 300 : end + 3;
  const int bad = *rc::gen::inRange(1, 4);
  for (int i = 0; i < bad; ++i) {
    const std::size_t g = *rc::gen::inRange<std::size_t>(0, d.size());
    d[g] = *rc::gen::element<std::int64_t>(-1, -1000, limit + 1, limit + 500, d[g] / 2 - 1);
  }
  check_same(d, masked, limit);
}

// Fixed descriptors: each kind of bad entry with its status word and the host launcher's message.
TEST(GpuGroupTable, StatusWordsNameTheKindAndTheGroup) {
  const auto status = [](std::vector<std::int32_t> d, bool masked, std::int64_t limit) {
    GemmGroupTable t{};
    return build_group_table(t, d.data(), int(d.size()), masked, limit);
  };
  EXPECT_EQ(status({100, 256}, false, 256), 0);
  EXPECT_EQ(status({-1, 256}, false, 256), kGroupsOutOfOrder);
  EXPECT_EQ(status({100, 50, 300}, false, 256), kGroupsOutOfOrder | (1 << 4));
  EXPECT_EQ(status({100, 256, 300}, false, 256), kGroupsPastM | (2 << 4));
  EXPECT_EQ(status({3, -2}, true, 10), kGroupsMaskedRange | (1 << 4));
  EXPECT_EQ(status({3, 10, 11}, true, 10), kGroupsMaskedRange | (2 << 4));
  EXPECT_EQ(grouped_gemm_status_message(kGroupsPastM | (2 << 4)),
            "fp8ref gpu grouped GEMM: offs[2] exceeds M");
  EXPECT_EQ(grouped_gemm_status_message(0), "");
  EXPECT_NE(grouped_gemm_status_message(-1).find("no status the prologue writes"),
            std::string::npos);
}

}  // namespace
}  // namespace fp8ref::gpu::detail
