// Evaluates fp8ref's Blackwell step models (numerics/models/blackwell_step.h) on binary case
// records for proptests/fidelity/mmasim_blackwell_xcheck.py, and times them on one thread (thread
// CPU time):
//   blackwell_step_driver IN OUT [--repeat R]
// Record (148 bytes, little-endian): kind u8 (0 f8f6f4 f32, 1 f8f6f4 f16, 2 mxf8f6f4 block32
// ue8m0, 3 mxf4 / mxf4nvf4 k64), fa u8, fb u8, scale format u8, block u8, 3 pad bytes, a[64],
// b[64] (codes, FP6 / FP4 in the low bits; e2m1 one per byte, element k = a[k]), sa[4], sb[4],
// c u32 (f32 bits; kind 1: f16 bits). Output: one u32 per record (kind 1: f16 bits).
// stderr: "STEP_TIMING kind=K steps=N seconds=S" per kind (R passes over that kind's records).
#include <time.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "numerics/models/blackwell_step.h"

namespace {

using namespace fp8ref;

struct Record {
  std::uint8_t kind, fa, fb, sf, block, pad[3];
  std::uint8_t a[64], b[64], sa[4], sb[4];
  std::uint32_t c;
};
static_assert(sizeof(Record) == 148);

std::uint32_t eval(const Record& r) {
  const Format fa = Format(r.fa), fb = Format(r.fb);
  float c;
  std::memcpy(&c, &r.c, 4);
  float z = 0;
  switch (r.kind) {
    case 0: z = blackwell_f8f6f4_step(r.a, r.b, 32, fa, fb, c); break;
    case 1: return blackwell_f8f6f4_step_f16(r.a, r.b, 32, fa, fb, std::uint16_t(r.c));
    case 2: z = blackwell_mxf8f6f4_step(r.a, r.b, 32, fa, fb, r.sa[0], r.sb[0], c); break;
    case 3: z = blackwell_mxf4_step(r.a, r.b, 64, r.sa, r.sb, Format(r.sf), r.block, c); break;
    default: throw std::invalid_argument("unknown kind " + std::to_string(r.kind));
  }
  return std::bit_cast<std::uint32_t>(z);
}

// Thread CPU time: the timing does not depend on other load of the machine.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3) throw std::invalid_argument("usage: blackwell_step_driver IN OUT [--repeat R]");
    const int repeat = argc >= 5 && std::string(argv[3]) == "--repeat" ? std::stoi(argv[4]) : 1;
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (bytes.size() % sizeof(Record)) throw std::invalid_argument("truncated record file");
    std::vector<Record> recs(bytes.size() / sizeof(Record));
    std::memcpy(recs.data(), bytes.data(), bytes.size());
    std::vector<std::uint32_t> z(recs.size());
    for (std::size_t i = 0; i < recs.size(); ++i) z[i] = eval(recs[i]);
    std::ofstream out(argv[2], std::ios::binary);
    out.write(reinterpret_cast<const char*>(z.data()), std::streamsize(z.size() * 4));
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<Record> sel;
      for (const Record& r : recs)
        if (r.kind == kind) sel.push_back(r);
      if (sel.empty()) continue;
      std::uint32_t sink = 0;
      const double t0 = thread_seconds();
      for (int p = 0; p < repeat; ++p)
        for (const Record& r : sel) sink ^= eval(r);
      const double s = thread_seconds() - t0;
      std::cerr << "STEP_TIMING kind=" << kind << " steps=" << sel.size() * std::size_t(repeat)
                << " seconds=" << s << " sink=" << sink << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "blackwell_step_driver: error: " << e.what() << std::endl;
    return 2;
  }
}
