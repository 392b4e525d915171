// Exhaustive sweeps (label `exhaustive`): an index range split into blocks that std::threads take
// in turn (hardware_concurrency threads, FP8REF_TEST_THREADS overrides), each thread counting its
// mismatches and keeping its lowest ones; the logs merge in input order.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "proptests/common/failure_dump.h"

namespace fp8ref::test {

inline int sweep_threads() {
  if (const char* env = std::getenv("FP8REF_TEST_THREADS"); env && *env) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

struct SweepLog {
  static constexpr std::size_t kKeep = 64;
  std::uint64_t count = 0;
  std::vector<Mismatch> first;  // the lowest inputs that mismatched, at most kKeep

  void add(std::uint64_t input, int config, std::uint8_t ref_z, std::uint8_t got_z) {
    ++count;
    if (first.size() < kKeep) first.push_back({input, std::uint8_t(config), ref_z, got_z});
  }
};

// Calls body(begin, end, log) over blocks covering [0, n) from sweep_threads() threads and
// returns the merged log (count over all inputs; the kKeep lowest mismatches, sorted).
template <class Body>
SweepLog parallel_sweep(std::uint64_t n, const Body& body, std::uint64_t block = 1u << 20) {
  const int threads = sweep_threads();
  std::atomic<std::uint64_t> next{0};
  std::vector<SweepLog> logs(static_cast<std::size_t>(threads));
  auto work = [&](int t) {
    for (;;) {
      const std::uint64_t begin = next.fetch_add(block);
      if (begin >= n) return;
      body(begin, std::min(n, begin + block), logs[std::size_t(t)]);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  SweepLog all;
  for (SweepLog& l : logs) {
    all.count += l.count;
    all.first.insert(all.first.end(), l.first.begin(), l.first.end());
  }
  std::sort(all.first.begin(), all.first.end(), [](const Mismatch& a, const Mismatch& b) {
    return a.input != b.input ? a.input < b.input : a.config < b.config;
  });
  if (all.first.size() > SweepLog::kKeep) all.first.resize(SweepLog::kKeep);
  return all;
}

}  // namespace fp8ref::test
