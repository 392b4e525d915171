// The fused transpose-and-repack of row-major wgrad operands (gpu/grouped_wgrad_transpose.h, the
// code gpu/grouped_wgrad_transpose.cu runs) emulated on the host, CTA by CTA and thread by thread,
// == a naive copy: over random group layouts (groups at any token, empty groups, a tail of tokens
// of no group, M not a multiple of 16 / 64 / 128), output column j of group g's span holds input
// token from[g] + j - to[g], every other column zero, and the index mapping names exactly the
// tokens of groups (docs/gpu_gemm.md §1, §5). Label cpu: runs in CI without a GPU; the device
// suites check the kernel's launch.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/grouped_wgrad_transpose.h"
#include "proptests/common/test_level.h"

namespace fp8ref::test {
namespace {

using gpu::detail::kWgradTransposePitch;
using gpu::detail::kWgradTransposeThreads;
using gpu::detail::kWgradTransposeTile;
using gpu::detail::WgradTransposeArgs;

constexpr std::int64_t kAlign = 128;  // the launcher's (gpu/grouped_gemm.cpp kRepackAlign)

struct Layout {
  std::vector<std::int64_t> sizes;  // tokens of each group, contiguous from token 0
  std::int64_t tail = 0;            // tokens of no group after the last group
  std::int64_t N = 128, K = 128;
};

// The arguments the launcher builds: group g from token sum(sizes[< g]) to column to[g], to[g + 1]
// - to[g] its tokens rounded up to 128.
WgradTransposeArgs args_of(const Layout& l) {
  WgradTransposeArgs p{};
  p.N = l.N, p.K = l.K, p.groups = int(l.sizes.size());
  std::int64_t from = 0;
  p.to[0] = 0;
  for (std::size_t g = 0; g < l.sizes.size(); ++g) {
    p.from[g] = std::int32_t(from), p.count[g] = std::int32_t(l.sizes[g]);
    p.to[g + 1] = std::int32_t(p.to[g] + (l.sizes[g] + kAlign - 1) / kAlign * kAlign);
    from += l.sizes[g];
  }
  p.m_out = p.to[p.groups];
  return p;
}

// Every CTA of the kernel's grid, its 256 threads' loads, the barrier, then their stores.
void emulate(const WgradTransposeArgs& p) {
  const std::int64_t col_tiles = p.m_out / kWgradTransposeTile;
  const std::int64_t row_tiles = (p.N + p.K) / kWgradTransposeTile;
  std::vector<std::uint8_t> shared(kWgradTransposeTile * kWgradTransposePitch);
  auto* tile = reinterpret_cast<std::uint8_t(*)[kWgradTransposePitch]>(shared.data());
  for (std::int64_t tj = 0; tj < col_tiles; ++tj)
    for (std::int64_t tf = 0; tf < row_tiles; ++tf) {
      std::fill(shared.begin(), shared.end(), std::uint8_t(0xC3));  // stale shared memory
      for (int t = 0; t < kWgradTransposeThreads; ++t)
        gpu::detail::wgrad_transpose_load(p, tj, tf, t, tile);
      for (int t = 0; t < kWgradTransposeThreads; ++t)
        gpu::detail::wgrad_transpose_store(p, tj, tf, t, tile);
    }
}

// The naive copy the emulation must equal, from the definition.
std::vector<std::uint8_t> naive(const Layout& l, const std::vector<std::uint8_t>& dy,
                                const std::vector<std::uint8_t>& x, std::int64_t m_out) {
  std::vector<std::uint8_t> out(std::size_t((l.N + l.K) * m_out), 0);
  std::int64_t from = 0, to = 0;
  for (std::int64_t m : l.sizes) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t n = 0; n < l.N; ++n)
        out[std::size_t(n * m_out + to + i)] = dy[std::size_t((from + i) * l.N + n)];
      for (std::int64_t k = 0; k < l.K; ++k)
        out[std::size_t((l.N + k) * m_out + to + i)] = x[std::size_t((from + i) * l.K + k)];
    }
    from += m, to += (m + kAlign - 1) / kAlign * kAlign;
  }
  return out;
}

std::string first_difference(const std::vector<std::uint8_t>& got,
                             const std::vector<std::uint8_t>& want, std::int64_t m_out) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return "row " + std::to_string(std::int64_t(i) / m_out) + " column " +
             std::to_string(std::int64_t(i) % m_out) + ": " + std::to_string(got[i]) + " vs " +
             std::to_string(want[i]);
  return "";
}

// "" when the emulated output of layout l over codes drawn from `seed` is the naive copy and the
// mapping names exactly the tokens of groups, each once, in order (the tail is never read); else
// the first problem.
std::string check_layout(const Layout& l, std::uint64_t seed) {
  std::int64_t total = 0;
  for (std::int64_t m : l.sizes) total += m;
  const std::int64_t M = total + l.tail;
  std::vector<std::uint8_t> dy(std::size_t(M * l.N)), x(std::size_t(M * l.K));
  for (auto* v : {&dy, &x})
    for (auto& b : *v) b = std::uint8_t((seed = seed * 6364136223846793005ull + 1) >> 56);
  WgradTransposeArgs p = args_of(l);
  p.dy = dy.data(), p.x = x.data();
  std::vector<std::uint8_t> out(std::size_t((l.N + l.K) * p.m_out), 0xA5);  // poisoned scratch
  p.out = out.data();
  emulate(p);
  if (std::string d = first_difference(out, naive(l, dy, x, p.m_out), p.m_out); !d.empty())
    return d;
  std::int64_t next = 0;
  for (std::int64_t j = 0; j < p.m_out; ++j)
    if (const std::int64_t src = gpu::detail::wgrad_transpose_source(p, j); src >= 0)
      if (src != next++)
        return "column " + std::to_string(j) + " maps to token " + std::to_string(src);
  return next == total
             ? ""
             : "the mapping names " + std::to_string(next) + " tokens of " + std::to_string(total);
}

FP8REF_RC_PROP(WgradTransposeEmulated, EqualsANaiveCopyOverRandomLayouts, 150, ()) {
  Layout l;
  const auto size = rc::gen::oneOf(
      rc::gen::element<std::int64_t>(0, 0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 257),
      rc::gen::inRange<std::int64_t>(0, 400));
  l.sizes =
      *rc::gen::container<std::vector<std::int64_t>>(*rc::gen::inRange<std::size_t>(1, 10), size);
  l.tail = *rc::gen::inRange<std::int64_t>(0, 140);
  l.N = 128 * *rc::gen::inRange<std::int64_t>(1, 3);
  l.K = 128 * *rc::gen::inRange<std::int64_t>(1, 4);
  for (std::int64_t m : l.sizes) RC_CLASSIFY(m > 0 && m % 16 != 0, "a size off 16");
  RC_CLASSIFY(std::count(l.sizes.begin(), l.sizes.end(), 0) > 0, "an empty group");
  RC_ASSERT(check_layout(l, *rc::gen::arbitrary<std::uint64_t>()) == "");
}

// Fixed layouts: a single token; every group empty (no output columns); groups of 128 exactly
// (no padding); starts at 1, 17, 31 mod 128; M = 203, 192 (a tail of 28), 1.
TEST(WgradTransposeEmulated, FixedLayoutsEqualANaiveCopy) {
  const std::vector<Layout> layouts = {
      {{1}, 0, 128, 128},        {{0, 0}, 9, 128, 256},
      {{128, 128}, 0, 256, 128}, {{1, 16, 14, 0, 127, 96, 130}, 7, 128, 384},
      {{200, 3}, 0, 384, 128},   {{64, 100}, 28, 128, 128}};
  for (const Layout& l : layouts) EXPECT_EQ(check_layout(l, 12345), "");
}

}  // namespace
}  // namespace fp8ref::test
