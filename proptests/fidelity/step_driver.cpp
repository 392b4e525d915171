// Batch evaluator of the tensor-core step model `hopper_wgmma_step` (docs/design.md §10,
// numerics/models/wgmma_step.h, wgmma_tile.h) for the cross-check against mmasim and the speed
// comparison with it (part 7a of run_fidelity.sh; proptests/fidelity/mmasim_step_xcheck.py).
//
//   step_driver IN OUT              single steps
//     IN:  records of 70 bytes: fa, fb (0 = e4m3, 1 = e5m2), a[32], b[32] (FP8 codes), c (f32, LE)
//     OUT: one u32 (LE) per record, the bits of hopper_wgmma_step(a, b, 32, fa, fb, c)
//     stderr: STEP_TIMING steps=N seconds=S   (the model alone, one thread, >= 0.5 s of repeats)
//   step_driver --tiles IN OUT      whole wgmma instructions m64nNk32
//     IN:  records: fa, fb, N (u16 LE), A (64, 32) codes, B (N, 32) codes (B's columns), C (64, N)
//          f32 LE, row-major
//     OUT: D (64, N) f32 LE per record, from hopper_wgmma_tile
//     stderr: TILE_TIMING tiles=T steps=S seconds_1=.. threads=P seconds_p=.. isa=..  (one thread,
//             then OpenMP over the instructions on P threads; each >= 0.5 s of repeats; the
//             instruction set of the planes paths)
// Exit 0 on success, 2 on bad input (message on stderr).
#include <omp.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "numerics/models.h"

namespace {

using fp8ref::Format;
using fp8ref::kHopperWgmmaK;
constexpr int kTileM = 64;

bool format_of(std::uint8_t id, Format* f) {
  if (id > 1) return false;
  *f = id == 0 ? Format::e4m3 : Format::e5m2;
  return true;
}

std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

// Runs `pass` (one pass over every case) until >= 0.5 s have passed; returns (passes, seconds).
std::pair<std::uint64_t, double> time_passes(const std::function<void()>& pass) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t n = 1;; ++n) {
    pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= 0.5) return {n, s};
  }
}

bool write_u32s(const char* path, const std::vector<std::uint32_t>& z) {
  std::ofstream out(path, std::ios::binary);
  for (std::uint32_t v : z) {
    const unsigned char le[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                 static_cast<unsigned char>(v >> 16),
                                 static_cast<unsigned char>(v >> 24)};
    out.write(reinterpret_cast<const char*>(le), 4);
  }
  if (!out) std::fprintf(stderr, "step_driver: cannot write %s\n", path);
  return bool(out);
}

int run_steps(const std::vector<std::uint8_t>& buf, const char* out_path) {
  constexpr std::size_t kRecord = 2 + 2 * kHopperWgmmaK + 4;
  if (buf.size() % kRecord != 0) {
    std::fprintf(stderr, "step_driver: %zu bytes, not a multiple of the %zu-byte record\n",
                 buf.size(), kRecord);
    return 2;
  }
  const std::size_t n = buf.size() / kRecord;
  std::vector<Format> fa(n), fb(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* r = buf.data() + i * kRecord;
    if (!format_of(r[0], &fa[i]) || !format_of(r[1], &fb[i])) {
      std::fprintf(stderr, "step_driver: record %zu has format ids %u %u (want 0 or 1)\n", i,
                   unsigned(r[0]), unsigned(r[1]));
      return 2;
    }
  }
  std::vector<std::uint32_t> z(n);
  const auto [passes, seconds] = time_passes([&] {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t* a = buf.data() + i * kRecord + 2;
      const std::uint8_t* b = a + kHopperWgmmaK;
      const float c = std::bit_cast<float>(get_u32(b + kHopperWgmmaK));
      z[i] = std::bit_cast<std::uint32_t>(
          fp8ref::hopper_wgmma_step(a, b, kHopperWgmmaK, fa[i], fb[i], c));
    }
  });
  std::fprintf(stderr, "STEP_TIMING steps=%llu seconds=%.6f\n",
               static_cast<unsigned long long>(passes * n), seconds);
  return write_u32s(out_path, z) ? 0 : 2;
}

struct Tile {
  Format fa, fb;
  int n;
  const std::uint8_t *a, *b;
  std::vector<float> c;
  std::size_t out;  // index of D[0][0] in the output
};

int run_tiles(const std::vector<std::uint8_t>& buf, const char* out_path) {
  std::vector<Tile> tiles;
  std::size_t pos = 0, outputs = 0;
  while (pos < buf.size()) {
    Tile t{};
    if (buf.size() - pos < 4 || !format_of(buf[pos], &t.fa) || !format_of(buf[pos + 1], &t.fb)) {
      std::fprintf(stderr, "step_driver: bad tile header at byte %zu\n", pos);
      return 2;
    }
    t.n = buf[pos + 2] | buf[pos + 3] << 8;
    const std::size_t size = 4 + std::size_t(kTileM + t.n) * kHopperWgmmaK + 4u * kTileM * t.n;
    if (t.n < 8 || t.n > 256 || t.n % 8 != 0 || buf.size() - pos < size) {
      std::fprintf(stderr,
                   "step_driver: tile at byte %zu: N = %d (want 8..256, a multiple of 8) "
                   "or truncated\n",
                   pos, t.n);
      return 2;
    }
    t.a = buf.data() + pos + 4;
    t.b = t.a + kTileM * kHopperWgmmaK;
    const std::uint8_t* c = t.b + std::size_t(t.n) * kHopperWgmmaK;
    t.c.resize(std::size_t(kTileM) * t.n);
    for (std::size_t i = 0; i < t.c.size(); ++i) t.c[i] = std::bit_cast<float>(get_u32(c + 4 * i));
    t.out = outputs;
    outputs += t.c.size();
    tiles.push_back(std::move(t));
    pos += size;
  }
  std::vector<float> d(outputs);
  auto run = [&](const Tile& t) {
    fp8ref::hopper_wgmma_tile(t.fa, t.fb, kTileM, t.n, t.a, t.b, t.c.data(), d.data() + t.out);
  };
  const std::int64_t count = std::int64_t(tiles.size());
  const auto [passes_1, seconds_1] = time_passes([&] {
    for (const Tile& t : tiles) run(t);
  });
  const std::vector<float> d1 = d;
  const int threads = omp_get_max_threads();
  const auto [passes_p, seconds_p] = time_passes([&] {
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t i = 0; i < count; ++i) run(tiles[std::size_t(i)]);
  });
  if (std::memcmp(d1.data(), d.data(), d.size() * sizeof(float)) != 0) {
    std::fprintf(stderr, "step_driver: the %d-thread run differs from the 1-thread run\n", threads);
    return 1;
  }
  std::fprintf(stderr,
               "TILE_TIMING tiles=%lld steps=%zu seconds_1=%.6f threads=%d seconds_p=%.6f isa=%s\n",
               static_cast<long long>(count), outputs, seconds_1 / double(passes_1), threads,
               seconds_p / double(passes_p), fp8ref::to_string(fp8ref::best_step_isa()));
  std::vector<std::uint32_t> z(outputs);
  for (std::size_t i = 0; i < outputs; ++i) z[i] = std::bit_cast<std::uint32_t>(d[i]);
  return write_u32s(out_path, z) ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const bool tiles = argc == 4 && std::string(argv[1]) == "--tiles";
  if (argc != 3 && !tiles) {
    std::fprintf(stderr, "usage: step_driver [--tiles] IN OUT\n");
    return 2;
  }
  const char* in_path = argv[tiles ? 2 : 1];
  std::ifstream in(in_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "step_driver: cannot open %s\n", in_path);
    return 2;
  }
  const std::vector<std::uint8_t> buf((std::istreambuf_iterator<char>(in)), {});
  return tiles ? run_tiles(buf, argv[3]) : run_steps(buf, argv[2]);
}
