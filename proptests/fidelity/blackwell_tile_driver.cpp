// Evaluates instruction tiles with fp8ref's batch step models
// (numerics/models/blackwell_step_tile.h) for proptests/fidelity/mmasim_blackwell_bench.py, and
// times them on one thread (thread CPU time):
//   blackwell_tile_driver IN OUT [--repeat R] [--isa baseline|avx2|avx512]
// (--isa: the copy of the tile models to run, numerics/models/blackwell_step_tile.h; default the
// best this processor has)
// A tile: a 20-byte header (kind u8: 0 f8f6f4 f32, 1 f8f6f4 f16, 2 mxf8f6f4 block32 ue8m0, 3 mxf4
// k64; fa, fb, scale format, block u8; 3 pad bytes; m, n, k u32), then A (m×k codes), B^T (n×k),
// sa (m·ns), sb (n·ns) with ns = 64 / block for kind 3, 1 for kind 2, 0 otherwise, and C (m×n u32;
// kind 1: f16 bits in the low half). Output: D, m×n u32 per tile in order (kind 1: the f16 bits).
// stderr: "TILE_TIMING kind=K steps=N seconds=S" per kind (R passes over that kind's tiles).
#include <time.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "numerics/models/blackwell_step_tile.h"

namespace {

using namespace fp8ref;

struct Tile {
  std::uint8_t kind, fa, fb, sf, block;
  BlackwellTileShape shape;
  std::vector<std::uint8_t> a, bt, sa, sb;
  std::vector<std::uint32_t> c;
  std::vector<std::uint16_t> c16;  // kind 1: C's f16 bits
};

std::size_t scale_count(const Tile& t) {
  return t.kind == 3 ? std::size_t(64 / t.block) : t.kind == 2 ? 1 : 0;
}

std::vector<Tile> read_tiles(const std::vector<char>& bytes) {
  std::vector<Tile> tiles;
  std::size_t at = 0;
  const auto take = [&](void* dst, std::size_t n) {
    if (at + n > bytes.size()) throw std::invalid_argument("truncated tile file");
    if (n != 0) std::memcpy(dst, bytes.data() + at, n);
    at += n;
  };
  while (at < bytes.size()) {
    Tile t;
    std::uint8_t head[8];
    std::uint32_t mnk[3];
    take(head, 8);
    take(mnk, 12);
    t.kind = head[0], t.fa = head[1], t.fb = head[2], t.sf = head[3], t.block = head[4];
    if (t.kind > 3 || (t.kind == 3 && t.block != 16 && t.block != 32) || mnk[0] > 4096 ||
        mnk[1] > 4096 || mnk[2] > 64)
      throw std::invalid_argument("bad tile header");
    t.shape = {int(mnk[0]), int(mnk[1]), int(mnk[2])};
    const std::size_t m = mnk[0], n = mnk[1], k = mnk[2], ns = scale_count(t);
    t.a.resize(m * k), t.bt.resize(n * k), t.sa.resize(m * ns), t.sb.resize(n * ns);
    t.c.resize(m * n);
    take(t.a.data(), t.a.size()), take(t.bt.data(), t.bt.size());
    take(t.sa.data(), t.sa.size()), take(t.sb.data(), t.sb.size());
    take(t.c.data(), t.c.size() * 4);
    if (t.kind == 1) t.c16.assign(t.c.begin(), t.c.end());  // the low halves
    tiles.push_back(std::move(t));
  }
  return tiles;
}

void eval(const Tile& t, std::uint32_t* d, StepIsa isa) {
  const Format fa = Format(t.fa), fb = Format(t.fb);
  if (t.kind == 1) {  // f16 C and D (D widened when the output is written, outside the timing)
    blackwell_f8f6f4_tile_f16(t.a.data(), t.bt.data(), t.shape, fa, fb, t.c16.data(),
                              reinterpret_cast<std::uint16_t*>(d), isa);
    return;
  }
  const float* c = reinterpret_cast<const float*>(t.c.data());
  float* z = reinterpret_cast<float*>(d);
  if (t.kind == 0) blackwell_f8f6f4_tile(t.a.data(), t.bt.data(), t.shape, fa, fb, c, z, isa);
  if (t.kind == 2)
    blackwell_mxf8f6f4_tile(t.a.data(), t.bt.data(), t.shape, fa, fb, t.sa.data(), t.sb.data(), c,
                            z, isa);
  if (t.kind == 3)
    blackwell_mxf4_tile(t.a.data(), t.bt.data(), t.shape, t.sa.data(), t.sb.data(), Format(t.sf),
                        t.block, c, z, isa);
}

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3 || argc % 2 == 0)
      throw std::invalid_argument(
          "usage: blackwell_tile_driver IN OUT [--repeat R] [--isa baseline|avx2|avx512]");
    int repeat = 1;
    StepIsa isa = best_step_isa();
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string opt = argv[i], val = argv[i + 1];
      if (opt == "--repeat") {
        repeat = std::stoi(val);
      } else if (opt == "--isa" && (val == "baseline" || val == "avx2" || val == "avx512")) {
        isa = val == "avx512" ? StepIsa::avx512 : val == "avx2" ? StepIsa::avx2 : StepIsa::baseline;
      } else {
        throw std::invalid_argument("unknown option " + opt + " " + val);
      }
    }
    std::cerr << "TILE_ISA " << to_string(isa) << std::endl;
    std::ifstream in(argv[1], std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
    const std::vector<Tile> tiles = read_tiles(bytes);
    std::vector<std::vector<std::uint32_t>> d(tiles.size());
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      d[i].resize(tiles[i].c.size());
      eval(tiles[i], d[i].data(), isa);
    }
    std::ofstream out(argv[2], std::ios::binary);
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      std::vector<std::uint32_t> z = d[i];
      const auto* z16 = reinterpret_cast<const std::uint16_t*>(d[i].data());
      for (std::size_t e = 0; e < z.size() && tiles[i].kind == 1; ++e) z[e] = z16[e];
      out.write(reinterpret_cast<const char*>(z.data()), std::streamsize(z.size() * 4));
    }
    for (int kind = 0; kind < 4; ++kind) {
      std::size_t steps = 0;
      std::uint32_t sink = 0;
      const double t0 = thread_seconds();
      for (int p = 0; p < repeat; ++p)
        for (std::size_t i = 0; i < tiles.size(); ++i)
          if (tiles[i].kind == kind) {
            eval(tiles[i], d[i].data(), isa);
            sink ^= d[i][0];
            steps += d[i].size();
          }
      if (steps == 0) continue;
      std::cerr << "TILE_TIMING kind=" << kind << " steps=" << steps
                << " seconds=" << thread_seconds() - t0 << " sink=" << sink << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "blackwell_tile_driver: error: " << e.what() << std::endl;
    return 2;
  }
}
