// Batch evaluator of the single-step tensor-core model `hopper_wgmma_step` (DESIGN §3.5,
// numerics/accumulate.h) for the cross-check against mmasim (issue 4 item 7a,
// proptests/device/mmasim_step_xcheck.py). Reads fixed-size binary cases, writes one f32 per case.
//
//   step_driver IN OUT
// IN:  records of 70 bytes: fa, fb (0 = e4m3, 1 = e5m2), a[32], b[32] (FP8 codes), c (f32 bits, LE).
// OUT: one u32 (LE) per record: the bits of hopper_wgmma_step(a, b, 32, fa, fb, c).
// Exit 0 on success, 2 on bad input (message on stderr). Also prints, on stderr, the time of the
// model alone on one thread (the cases re-evaluated until >= 0.5 s have passed):
//   STEP_TIMING steps=N seconds=S
// for the speed comparison with mmasim on the same cases (issue 4 item 5).
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "numerics/accumulate.h"

namespace {

constexpr std::size_t kRecord = 2 + 2 * fp8ref::kHopperWgmmaK + 4;

bool format_of(std::uint8_t id, fp8ref::Format* f) {
  if (id > 1) return false;
  *f = id == 0 ? fp8ref::Format::e4m3 : fp8ref::Format::e5m2;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: step_driver IN OUT\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "step_driver: cannot open %s\n", argv[1]);
    return 2;
  }
  const std::vector<std::uint8_t> buf((std::istreambuf_iterator<char>(in)), {});
  if (buf.size() % kRecord != 0) {
    std::fprintf(stderr, "step_driver: %s has %zu bytes, not a multiple of the %zu-byte record\n",
                 argv[1], buf.size(), kRecord);
    return 2;
  }
  const std::size_t n = buf.size() / kRecord;
  std::vector<std::uint32_t> z(n);
  std::uint64_t steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double seconds = 0;
  for (int rep = 0;; ++rep) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* r = buf.data() + i * kRecord;
    fp8ref::Format fa, fb;
    if (!format_of(r[0], &fa) || !format_of(r[1], &fb)) {
      std::fprintf(stderr, "step_driver: record %zu has format ids %u %u (want 0 or 1)\n", i,
                   unsigned(r[0]), unsigned(r[1]));
      return 2;
    }
    const std::uint8_t* a = r + 2;
    const std::uint8_t* b = a + fp8ref::kHopperWgmmaK;
    const std::uint8_t* cb = b + fp8ref::kHopperWgmmaK;
    const std::uint32_t cbits = std::uint32_t(cb[0]) | std::uint32_t(cb[1]) << 8 |
                                std::uint32_t(cb[2]) << 16 | std::uint32_t(cb[3]) << 24;
    const float c = std::bit_cast<float>(cbits);
    z[i] = std::bit_cast<std::uint32_t>(
        fp8ref::hopper_wgmma_step(a, b, fp8ref::kHopperWgmmaK, fa, fb, c));
  }
  steps += n;
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (seconds >= 0.5 || n == 0) break;
  }
  std::fprintf(stderr, "STEP_TIMING steps=%llu seconds=%.6f\n", static_cast<unsigned long long>(steps), seconds);
  std::ofstream out(argv[2], std::ios::binary);
  for (std::uint32_t v : z) {
    const unsigned char le[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                 static_cast<unsigned char>(v >> 16),
                                 static_cast<unsigned char>(v >> 24)};
    out.write(reinterpret_cast<const char*>(le), 4);
  }
  if (!out) {
    std::fprintf(stderr, "step_driver: cannot write %s\n", argv[2]);
    return 2;
  }
  return 0;
}
