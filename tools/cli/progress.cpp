// Progress bar / periodic progress lines on stderr (progress.h).
#include "cli/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace fp8ref::cli {

ProgressStyle default_progress_style(bool quiet) {
  if (quiet) return ProgressStyle::none;
  return isatty(STDERR_FILENO) ? ProgressStyle::bar : ProgressStyle::lines;
}

std::string si_count(double x) {
  static constexpr const char* kPrefix[] = {"", " k", " M", " G", " T"};
  int i = 0;
  while (x >= 999.5 && i < 4) {
    x /= 1000;
    ++i;
  }
  char buf[32];
  const int decimals = i == 0 ? 0 : (x < 9.995 ? 2 : (x < 99.95 ? 1 : 0));
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, x, kPrefix[i]);
  return buf;
}

std::string clock_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

Progress::Progress(std::string label, std::uint64_t total, ProgressStyle style)
    : label_(std::move(label)),
      total_(total),
      style_(style),
      start_(std::chrono::steady_clock::now()) {
  if (style_ != ProgressStyle::none) reporter_ = std::thread([this] { run(); });
}

Progress::~Progress() { finish(); }

void Progress::finish() {
  {
    std::lock_guard lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (reporter_.joinable()) reporter_.join();
  if (style_ == ProgressStyle::bar) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

void Progress::run() {
  // A bar redraws 10x a second; plain lines are checked twice a second, printed per 10%.
  const auto period = std::chrono::milliseconds(style_ == ProgressStyle::bar ? 100 : 500);
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) draw(false);
}

void Progress::draw(bool final_line) {
  const std::uint64_t done = done_.load(std::memory_order_relaxed);
  const double frac = total_ ? double(done) / double(total_) : 1.0;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(done) / elapsed : 0;
  const double eta = rate > 0 ? double(total_ - done) / rate : NAN;
  if (style_ == ProgressStyle::lines) {
    const int decile = static_cast<int>(frac * 10);
    if (decile <= last_decile_ && !final_line) return;
    last_decile_ = decile;
    std::fprintf(stderr, "%s: %3.0f%% (%s/s, ETA %s)\n", label_.c_str(), frac * 100,
                 si_count(rate).c_str(), clock_duration(eta).c_str());
    std::fflush(stderr);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%%  %s/s  ETA %s", label_.c_str(), bar.c_str(),
               frac * 100, si_count(rate).c_str(), clock_duration(eta).c_str());
  std::fflush(stderr);
}

}  // namespace fp8ref::cli
