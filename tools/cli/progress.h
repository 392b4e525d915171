// Progress reporting for long fp8-check runs (sweep, selfcheck): a live bar with percentage,
// rate and ETA when stderr is a terminal, plain lines every 10% otherwise (CI logs).
// Workers only bump an atomic counter; one reporter thread does all the printing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace fp8ref::cli {

enum class ProgressStyle {
  none,   // print nothing
  bar,    // redraw one line with \r (stderr is a terminal)
  lines,  // one line per 10% step (stderr is a file or pipe)
};

// ProgressStyle::bar when stderr is a terminal, else ProgressStyle::lines; none when `quiet`.
ProgressStyle default_progress_style(bool quiet);

// "1.23 G", "456 M", "7.8 k": three significant digits, SI prefixes.
std::string si_count(double x);
// "0:42", "12:03", "1:02:03".
std::string clock_duration(double seconds);

class Progress {
 public:
  // Starts the reporter thread; `label` prefixes every line (e.g. "[3/17] e4m3 cuda_nosat f32").
  Progress(std::string label, std::uint64_t total, ProgressStyle style);
  ~Progress();  // calls finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(std::uint64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  // Stops the reporter; a bar is cleared so that the caller's next line starts clean.
  void finish();

 private:
  void run();
  void draw(bool final_line);

  std::string label_;
  std::uint64_t total_;
  ProgressStyle style_;
  std::atomic<std::uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_;
  int last_decile_ = 0;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread reporter_;
};

}  // namespace fp8ref::cli
