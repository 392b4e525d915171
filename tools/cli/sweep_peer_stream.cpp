// The `ml_dtypes` / `torch` sweep peers: a child process running tools/python/cast_stream.py,
// which writes the library's code for every input, in order, as raw bytes on its stdout. For
// sampled f64 sweeps the inputs go the other way first: chunk k of little-endian f64 patterns is
// written to the child's stdin, then chunk k of codes is read back (lock-step, so no deadlock).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/errors.h"
#include "cli/sweep_peer.h"

extern char** environ;

namespace fp8ref::cli {
namespace {

namespace fs = std::filesystem;

std::string library_name(PeerKind k) { return k == PeerKind::torch ? "torch" : "ml_dtypes"; }

std::string python_path(const StreamOptions& o) {
  if (!o.python.empty()) return o.python;
  if (const char* env = std::getenv("FP8REF_PYTHON"); env != nullptr && *env != '\0') return env;
  return "python3";
}

std::string script_path(const StreamOptions& o) {
  if (!o.script.empty()) {
    if (!fs::exists(o.script)) throw UsageError("--script " + o.script + ": no such file");
    return o.script;
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "../share/fp8ref/python/cast_stream.py");
#if defined(FP8REF_SOURCE_DIR)
  candidates.push_back(fs::path(FP8REF_SOURCE_DIR) / "tools/python/cast_stream.py");
#endif
  for (const auto& p : candidates)
    if (fs::exists(p)) return fs::weakly_canonical(p).string();
  throw UsageError("cannot find tools/python/cast_stream.py; pass --script PATH");
}

// A child process with pipes to its stdout (always) and stdin (optional).
class Child {
 public:
  // merge_stderr: the child's stderr goes into the stdout pipe too (for probes).
  Child(const std::vector<std::string>& argv, bool with_stdin, bool merge_stderr) {
    int out[2], in[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || (with_stdin && pipe2(in, O_CLOEXEC) != 0))
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    if (merge_stderr) posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
    if (with_stdin)
      posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    else
      posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (with_stdin) close(in[0]);
    out_fd_ = out[0];
    in_fd_ = in[1];
    if (rc != 0) {
      close_fds();
      pid_ = -1;
      throw UsageError("cannot run '" + argv[0] + "': " + std::strerror(rc));
    }
  }
  ~Child() {
    close_fds();
    if (pid_ > 0) {
      kill(pid_, SIGTERM);  // still running only when the sweep stopped early
      wait_status();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Reads up to n bytes (fewer only at end of stream).
  std::size_t read_full(std::uint8_t* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = read(out_fd_, dst + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw std::runtime_error(std::string("read from peer: ") + std::strerror(errno));
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }
  void write_full(const void* src, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(src);
    while (n > 0) {
      const ssize_t w = write(in_fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw std::runtime_error(std::string("write to peer: ") + std::strerror(errno));
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  void close_stdin() {
    if (in_fd_ >= 0) close(in_fd_);
    in_fd_ = -1;
  }
  // Waits for the child; returns its exit status (128 + signal when killed).
  int wait_status() {
    if (pid_ <= 0) return exit_status_;  // already reaped (never waitpid(-1): any child)
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

 private:
  void close_fds() {
    if (out_fd_ >= 0) close(out_fd_);
    close_stdin();
    out_fd_ = -1;
  }
  pid_t pid_ = -1;
  int exit_status_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
};

class CastStreamPeer final : public StreamPeer {
 public:
  CastStreamPeer(PeerKind kind, const ProfileCodec& codec, const SweepDomain& domain,
                 std::size_t chunk, const StreamOptions& opts, std::string version)
      : kind_(kind), domain_(domain), description_(std::move(version)) {
    std::vector<std::string> argv = {python_path(opts), script_path(opts),
                                     "--lib",           library_name(kind),
                                     "--format",        std::string(to_string(codec.format)),
                                     "--from",          std::string(to_string(codec.source)),
                                     "--count",         std::to_string(domain.count),
                                     "--chunk",         std::to_string(chunk)};
    if (kind == PeerKind::torch) argv.insert(argv.end(), {"--device", opts.device});
    if (domain.sampled) {
      argv.push_back("--stdin");
      signal(SIGPIPE, SIG_IGN);  // a dead child shows up as EPIPE on write, reported below
    }
    child_ = std::make_unique<Child>(argv, domain.sampled, false);
  }

  std::string description() const override { return description_; }

  void read_chunk(std::uint64_t lo, std::size_t n, std::uint8_t* out) override {
    if (domain_.sampled) {
      inputs_.resize(n);
      for (std::size_t k = 0; k < n; ++k) inputs_[k] = domain_.input(lo + k);  // little-endian host
      write_or_fail(lo);
      if (lo + n == domain_.count) child_->close_stdin();
    }
    const std::size_t got = child_->read_full(out, n);
    if (got != n) fail(lo + got);
    if (lo + n == domain_.count) {
      std::uint8_t extra;
      if (child_->read_full(&extra, 1) != 0)
        throw std::runtime_error(library_name(kind_) + " stream wrote more than " +
                                 std::to_string(domain_.count) + " codes");
      if (const int st = child_->wait_status(); st != 0)
        throw std::runtime_error(library_name(kind_) + " stream exited with status " +
                                 std::to_string(st) + " after writing every code");
    }
  }

 private:
  void write_or_fail(std::uint64_t lo) {
    try {
      child_->write_full(inputs_.data(), inputs_.size() * sizeof(std::uint64_t));
    } catch (const std::runtime_error&) {
      fail(lo);
    }
  }
  [[noreturn]] void fail(std::uint64_t at) {
    const int st = child_->wait_status();
    throw std::runtime_error(library_name(kind_) + " stream ended after " + std::to_string(at) +
                             " of " + std::to_string(domain_.count) +
                             " codes (cast_stream.py exited with status " + std::to_string(st) +
                             "; its messages are above)");
  }

  PeerKind kind_;
  SweepDomain domain_;
  std::string description_;
  std::unique_ptr<Child> child_;
  std::vector<std::uint64_t> inputs_;
};

}  // namespace

PeerKind parse_peer_option(std::string_view s) {
  for (PeerKind k : {PeerKind::cuda, PeerKind::oracle, PeerKind::ml_dtypes, PeerKind::torch})
    if (to_string(k) == s) return k;
  throw UsageError("unknown peer '" + std::string(s) + "' (expected cuda|ml_dtypes|torch|oracle)");
}

std::string_view to_string(PeerKind p) {
  switch (p) {
    case PeerKind::cuda: return "cuda";
    case PeerKind::oracle: return "oracle";
    case PeerKind::ml_dtypes: return "ml_dtypes";
    case PeerKind::torch: return "torch";
  }
  return "?";
}

std::string probe_stream_library(PeerKind kind, const StreamOptions& opts, std::string* why) {
  const std::string python = python_path(opts);
  std::string script;
  try {
    script = script_path(opts);
  } catch (const UsageError& e) {
    if (why) *why = e.what();
    return "";
  }
  std::string text;
  int status = 0;
  try {
    Child child({python, script, "--lib", library_name(kind), "--probe"}, false, true);
    std::uint8_t buf[4096];
    for (std::size_t n; (n = child.read_full(buf, sizeof buf)) > 0;)
      text.append(reinterpret_cast<const char*>(buf), n);
    status = child.wait_status();
  } catch (const UsageError& e) {
    if (why) *why = e.what();
    return "";
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (status != 0) {
    if (why) {
      const std::size_t nl = text.rfind('\n');
      *why = python + ": " + (nl == std::string::npos ? text : text.substr(nl + 1));
    }
    return "";
  }
  return text + " via " + python;
}

std::unique_ptr<StreamPeer> make_stream_peer(PeerKind kind, const ProfileCodec& codec,
                                             const SweepDomain& domain, std::size_t chunk,
                                             const StreamOptions& opts) {
  std::string why;
  std::string version = probe_stream_library(kind, opts, &why);
  if (version.empty())
    throw UsageError("--against " + library_name(kind) + " is unavailable: " + why +
                     " (set FP8REF_PYTHON or --python to an interpreter that has it)");
  return std::make_unique<CastStreamPeer>(kind, codec, domain, chunk, opts, std::move(version));
}

}  // namespace fp8ref::cli
