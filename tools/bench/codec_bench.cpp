// Codec benchmark (docs/benchmarks.md): encode/decode throughput per format on a realistic
// f32 array (normal x 2^U(-8,8)), single thread and all threads, as ratios to ml_dtypes' numpy
// astype measured in the same run; and the wall time of an exhaustive 2^32 encode sweep of one
// profile. A program that prints numbers, not a test. Usage: fp8ref_codec_bench [--log2n 26]
// [--threads N] [--python PATH] [--repeat 3] [--astype-script tools/python/astype_bench.py]
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "numerics/encode_table.h"
#include "numerics/profile.h"

namespace {

using fp8ref::Format;
using fp8ref::Profile;
using fp8ref::Rounding;
using fp8ref::Source;
using Clock = std::chrono::steady_clock;

struct Options {
  int log2n = 26;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string python;
  std::string astype_script = FP8REF_SOURCE_DIR "/tools/python/astype_bench.py";
  int repeat = 3;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// fn(lo, hi) over [0, n) split into `threads` contiguous parts; best time of `repeat` runs.
// One thread: its CPU time (per-core cost, robust on a loaded machine); more: wall time.
double best_parallel(std::size_t n, unsigned threads, int repeat,
                     const std::function<void(std::size_t, std::size_t)>& fn) {
  double best = INFINITY;
  for (int r = 0; r < repeat; ++r) {
    if (threads == 1) {
      const double c0 = thread_cpu_seconds();
      fn(0, n);
      best = std::min(best, thread_cpu_seconds() - c0);
      continue;
    }
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
      pool.emplace_back(fn, n * t / threads, n * (t + 1) / threads);
    fn(0, n / threads);
    for (auto& th : pool) th.join();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

std::vector<float> realistic_data(std::size_t n) {
  std::mt19937_64 rng(20240607);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> expo(-8.0f, 8.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng) * std::exp2(expo(rng));
  return x;
}

// ml_dtypes timings per format: {encode ns/elem, decode ns/elem}; empty when unavailable.
std::map<std::string, std::pair<double, double>> ml_dtypes_timings(const std::vector<float>& x,
                                                                   const Options& o,
                                                                   std::string& version) {
  std::map<std::string, std::pair<double, double>> out;
  char path[] = "/tmp/fp8ref_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return out;
  const auto bytes = static_cast<ssize_t>(x.size() * sizeof(float));
  const bool written = write(fd, x.data(), static_cast<std::size_t>(bytes)) == bytes;
  close(fd);
  if (written) {
    const std::string cmd = "'" + o.python + "' '" + o.astype_script + "' --input '" + path +
                            "' --repeat " + std::to_string(o.repeat) + " 2>&1";
    if (std::FILE* p = popen(cmd.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, p)) {
        char name[16];
        double enc = 0, dec = 0;
        if (std::strncmp(line, "ml_dtypes ", 10) == 0) {
          version = line;
          version.erase(version.find_last_not_of("\r\n") + 1);
        } else if (std::sscanf(line, "%15s %lf %lf", name, &enc, &dec) == 3) {
          out[name] = {enc, dec};
        } else {
          std::fprintf(stderr, "ml_dtypes timing: %s", line);
        }
      }
      pclose(p);
    }
  }
  unlink(path);
  return out;
}

struct FormatTimes {
  double enc_1t, enc_nt, table_1t, table_nt, dec_1t, dec_nt, dec_table_1t, dec_table_nt;
  std::uint64_t table_disagreements;
};

FormatTimes time_format(Format f, const std::vector<float>& x, const Options& o) {
  const fp8ref::ProfileCodec codec = fp8ref::make_codec(
      Profile::ml_dtypes_0_6, f, Source::f32, fp8ref::natural_rounding(Profile::ml_dtypes_0_6, f));
  const fp8ref::EncodeTable table(codec);
  const std::size_t n = x.size();
  std::vector<std::uint8_t> codes(n), table_codes(n);
  std::vector<float> back(n);
  const auto* bits = reinterpret_cast<const std::uint32_t*>(x.data());
  auto enc = [&](std::size_t lo, std::size_t hi) {
    const fp8ref::ProfileCodec c = codec;
    for (std::size_t i = lo; i < hi; ++i) codes[i] = c.encode(bits[i]);
  };
  auto enc_table = [&](std::size_t lo, std::size_t hi) {
    table.encode_f32(std::span(bits + lo, hi - lo), std::span(table_codes.data() + lo, hi - lo));
  };
  auto dec = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) back[i] = fp8ref::decode_f32(f, codes[i]);
  };
  float decode_table[256];  // built from decode_f32, as EncodeTable is from encode
  for (int c = 0; c < 256; ++c)
    decode_table[c] = fp8ref::decode_f32(f, static_cast<std::uint8_t>(c));
  std::vector<float> back_table(n);
  auto dec_table = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) back_table[i] = decode_table[codes[i]];
  };
  FormatTimes t{};
  t.enc_1t = best_parallel(n, 1, o.repeat, enc) / double(n) * 1e9;
  t.enc_nt = best_parallel(n, o.threads, o.repeat, enc) / double(n) * 1e9;
  t.table_1t = best_parallel(n, 1, o.repeat, enc_table) / double(n) * 1e9;
  t.table_nt = best_parallel(n, o.threads, o.repeat, enc_table) / double(n) * 1e9;
  t.dec_1t = best_parallel(n, 1, o.repeat, dec) / double(n) * 1e9;
  t.dec_nt = best_parallel(n, o.threads, o.repeat, dec) / double(n) * 1e9;
  t.dec_table_1t = best_parallel(n, 1, o.repeat, dec_table) / double(n) * 1e9;
  t.dec_table_nt = best_parallel(n, o.threads, o.repeat, dec_table) / double(n) * 1e9;
  for (std::size_t i = 0; i < n; ++i) {
    t.table_disagreements += codes[i] != table_codes[i];
    t.table_disagreements +=
        std::bit_cast<std::uint32_t>(back[i]) != std::bit_cast<std::uint32_t>(back_table[i]);
  }
  return t;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Exhaustive 2^32 encode (no peer) on all threads, as the sweep engine splits it: 2^20 blocks
// from an atomic counter. Returns wall seconds and the CPU seconds of all threads in `cpu`;
// `checksum` keeps the work observable.
double sweep_seconds(bool use_table, unsigned threads, std::uint64_t& checksum, double& cpu) {
  const fp8ref::ProfileCodec codec =
      fp8ref::make_codec(Profile::cuda_satfinite, Format::e4m3, Source::f32, Rounding::rne);
  const fp8ref::EncodeTable table(codec);
  constexpr std::uint64_t kBlock = 1u << 20, kBlocks = (std::uint64_t{1} << 32) / kBlock;
  std::atomic<std::uint64_t> next{0}, sum{0};
  auto work = [&] {
    const fp8ref::ProfileCodec c = codec;
    std::uint64_t local = 0;
    for (std::uint64_t b; (b = next.fetch_add(1)) < kBlocks;) {
      const auto lo = static_cast<std::uint32_t>(b * kBlock);
      if (use_table)
        for (std::uint32_t k = 0; k < kBlock; ++k) local += table.encode(lo + k);
      else
        for (std::uint32_t k = 0; k < kBlock; ++k) local += c.encode(lo + k);
    }
    sum += local;
  };
  const double c0 = process_cpu_seconds();
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  const double s = seconds_since(t0);
  cpu = process_cpu_seconds() - c0;
  checksum = sum;
  return s;
}

Options parse(int argc, char** argv) {
  Options o;
  const char* env = std::getenv("FP8REF_PYTHON");
  o.python = env && *env ? env : (*FP8REF_DEFAULT_PYTHON ? FP8REF_DEFAULT_PYTHON : "python3");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n")
      o.log2n = std::atoi(argv[i + 1]);
    else if (a == "--threads")
      o.threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--python")
      o.python = argv[i + 1];
    else if (a == "--repeat")
      o.repeat = std::atoi(argv[i + 1]);
    else if (a == "--astype-script")
      o.astype_script = argv[i + 1];
    else
      std::fprintf(stderr, "fp8ref_codec_bench: ignoring unknown option %s\n", a.c_str());
  }
  o.log2n = std::clamp(o.log2n, 10, 30);
  o.threads = std::max(1u, o.threads);
  o.repeat = std::max(1, o.repeat);
  return o;
}

std::string ratio(double ml_ns, double ours_ns) {
  if (ml_ns <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", ml_ns / ours_ns);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t n = std::size_t{1} << o.log2n;
  std::printf(
      "fp8ref codec benchmark: 2^%d f32 values, normal x 2^U(-8,8); %u threads; best of %d\n",
      o.log2n, o.threads, o.repeat);
  const std::vector<float> x = realistic_data(n);
  std::string ml_version;
  const auto ml = ml_dtypes_timings(x, o, ml_version);
  std::printf("peer: %s\n", ml.empty() ? ("ml_dtypes n/a (python: " + o.python + ")").c_str()
                                       : (ml_version + " via " + o.python).c_str());
  std::printf(
      "\nns per element; 1T = CPU time of one thread, NT = wall time on all threads\n"
      "(profile ml_dtypes_0_6, f32 source; 'table': numerics/encode_table.h batch\n"
      "encode_f32, and a 256-entry decode table; ml_dtypes: numpy astype, one thread, CPU time)\n");
  std::printf("%-5s %-6s %10s %10s %10s %10s %10s %12s %12s\n", "fmt", "op", "fp8ref 1T",
              "fp8ref NT", "table 1T", "table NT", "ml_dtypes", "ml/fp8ref 1T", "ml/table 1T");
  for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0}) {
    const FormatTimes t = time_format(f, x, o);
    const std::string name(fp8ref::to_string(f));
    const auto it = ml.find(name);
    const double ml_enc = it == ml.end() ? 0 : it->second.first;
    const double ml_dec = it == ml.end() ? 0 : it->second.second;
    std::printf("%-5s %-6s %10.3f %10.3f %10.3f %10.3f %10s %12s %12s\n", name.c_str(), "encode",
                t.enc_1t, t.enc_nt, t.table_1t, t.table_nt,
                ml_enc > 0 ? std::to_string(ml_enc).substr(0, 6).c_str() : "n/a",
                ratio(ml_enc, t.enc_1t).c_str(), ratio(ml_enc, t.table_1t).c_str());
    std::printf("%-5s %-6s %10.3f %10.3f %10.3f %10.3f %10s %12s %12s\n", name.c_str(), "decode",
                t.dec_1t, t.dec_nt, t.dec_table_1t, t.dec_table_nt,
                ml_dec > 0 ? std::to_string(ml_dec).substr(0, 6).c_str() : "n/a",
                ratio(ml_dec, t.dec_1t).c_str(), ratio(ml_dec, t.dec_table_1t).c_str());
    if (t.table_disagreements != 0)
      std::printf("ERROR: table and generic codec disagree on %llu of %zu inputs\n",
                  static_cast<unsigned long long>(t.table_disagreements), n);
  }
  std::printf("\nexhaustive 2^32 sweep, cuda_satfinite e4m3 from f32, encode only, %u threads:\n",
              o.threads);
  std::uint64_t sum_generic = 0, sum_table = 0;
  double cpu_generic = 0, cpu_table = 0;
  const double s_generic = sweep_seconds(false, o.threads, sum_generic, cpu_generic);
  std::printf(
      "  generic codec  %7.2f s wall, %7.2f s CPU = %.2f ns/input (%.2f s on %u idle cores)\n",
      s_generic, cpu_generic, cpu_generic / 4294967296.0 * 1e9, cpu_generic / o.threads, o.threads);
  const double s_table = sweep_seconds(true, o.threads, sum_table, cpu_table);
  std::printf(
      "  table          %7.2f s wall, %7.2f s CPU = %.2f ns/input (%.2f s on %u idle cores)\n",
      s_table, cpu_table, cpu_table / 4294967296.0 * 1e9, cpu_table / o.threads, o.threads);
  std::printf("  checksums %s\n", sum_generic == sum_table ? "agree" : "DIFFER");
  return 0;
}
