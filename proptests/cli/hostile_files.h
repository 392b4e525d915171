// Generators of hostile tensor files for the hostile-input tests (docs/security.md): safetensors
// headers, zip archives (stored or deflated members), torch.save data.pkl pickles written opcode
// by opcode, and a runner that executes fp8-check with a wall-clock limit and reports its peak
// RSS, so that a hang or a memory blow-up is a failed law rather than a stuck CI job.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fp8ref::test {

using Blob = std::string;

inline void put_le(Blob& b, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(i < 8 ? static_cast<char>(v >> (8 * i)) : 0);
}

// safetensors: u64 LE header length, the JSON header, the payload.
inline Blob safetensors_blob(const std::string& header_json, const Blob& payload = {}) {
  Blob b;
  put_le(b, header_json.size(), 8);
  return b + header_json + payload;
}

struct ZipMemberSpec {
  std::string name;
  Blob data;
  bool deflate = false;
  std::uint64_t claimed_size = 0;  // 0: the real size; else the directory's uncompressed size
};

inline Blob raw_deflate(const Blob& in) {
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  Blob out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A zip archive (APPNOTE 6.3, no zip64) holding the members in order.
inline Blob zip_blob(const std::vector<ZipMemberSpec>& members) {
  Blob out, cd;
  for (const ZipMemberSpec& m : members) {
    const Blob body = m.deflate ? raw_deflate(m.data) : m.data;
    const auto crc = static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), static_cast<uInt>(m.data.size())));
    const std::uint64_t usize = m.claimed_size ? m.claimed_size : m.data.size();
    const std::uint64_t local = out.size();
    for (Blob* v : {&out, &cd}) {
      const bool central = v == &cd;
      put_le(*v, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) put_le(*v, 20, 2);
      put_le(*v, 20, 2);
      put_le(*v, 0, 2);
      put_le(*v, m.deflate ? 8 : 0, 2);
      put_le(*v, 0, 4);
      put_le(*v, crc, 4);
      put_le(*v, body.size(), 4);
      put_le(*v, usize, 4);
      put_le(*v, m.name.size(), 2);
      put_le(*v, 0, 2);
      if (central) put_le(*v, 0, 10), put_le(*v, local, 4);
      *v += m.name;
    }
    out += body;
  }
  const std::uint64_t cd_offset = out.size();
  out += cd;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 4);
  put_le(out, members.size(), 2);
  put_le(out, members.size(), 2);
  put_le(out, cd.size(), 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

// A version-1 .npy image of `n` bytes of `fill` (dtype |u1, shape (n,)).
inline Blob npy_u8(std::size_t n, char fill) {
  Blob b("\x93NUMPY\x01\x00", 8);
  std::string dict =
      "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  dict.append(117 - dict.size(), ' ');
  dict += '\n';
  put_le(b, dict.size(), 2);
  return b + dict + Blob(n, fill);
}

// Pickle opcodes (CPython Lib/pickletools.py), enough for torch.save's data.pkl.
namespace pkl {
inline Blob str(const std::string& s) {
  Blob b = "X";
  put_le(b, s.size(), 4);
  return b + s;
}
inline Blob int1(std::uint8_t v) { return Blob("K") + static_cast<char>(v); }
inline Blob int4(std::int32_t v) {
  Blob b = "J";
  put_le(b, static_cast<std::uint32_t>(v), 4);
  return b;
}
inline Blob global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
// _rebuild_tensor_v2(storage(type, key, numel), offset, (size,), (stride,), False, {}).
inline Blob tensor_1d(const std::string& storage_type, const std::string& key, std::int32_t numel,
                      std::int32_t size, std::int32_t stride = 1) {
  return global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
         global("torch", storage_type) + str(key) + str("cpu") + int4(numel) + "tQ" + int1(0) +
         int4(size) + "\x85" + int4(stride) + "\x85" + "\x89}tR";
}
inline Blob dict_of(const std::vector<std::pair<std::string, Blob>>& items) {
  Blob b = "\x80\x02}(";
  for (const auto& [k, v] : items) b += str(k) + v;
  return b + "u.";
}
}  // namespace pkl

// torch.save zip: archive/data.pkl, archive/byteorder, archive/data/<key> per storage.
inline Blob torch_zip_blob(const Blob& data_pkl,
                           const std::vector<std::pair<std::string, Blob>>& storages,
                           bool deflate_pickle = false) {
  std::vector<ZipMemberSpec> m{{"archive/data.pkl", data_pkl, deflate_pickle, 0},
                               {"archive/byteorder", "little", false, 0}};
  for (const auto& [key, bytes] : storages) m.push_back({"archive/data/" + key, bytes, false, 0});
  return zip_blob(m);
}

inline void write_blob(const std::filesystem::path& p, const Blob& b) {
  std::ofstream(p, std::ios::binary) << b;
}

struct LimitedRun {
  int status = -1;  // exit status; 128 + signal when killed; -1 killed at the time limit
  bool timed_out = false;
  long max_rss_kib = 0;
  std::string out, err;
};

// Runs `exe args...` with stdin from /dev/null, stdout to `out_path` (default: a capture file),
// killing it after `limit`; reports the child's peak RSS (wait4).
// `address_space`, when non-zero, is the child's RLIMIT_AS in bytes; `file_size`, its RLIMIT_FSIZE
// (a write past it fails with EFBIG, as on a full disk; SIGXFSZ is ignored).
inline LimitedRun run_limited(const std::string& exe, const std::vector<std::string>& args,
                              std::chrono::milliseconds limit, const std::string& out_path = "",
                              std::uint64_t address_space = 0, std::uint64_t file_size = 0) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fp8ref_hostile_run_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = out_path.empty() ? (dir / "out").string() : out_path;
  const std::string err = (dir / "err").string();
  std::vector<std::string> argv_s{exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in_fd = open("/dev/null", O_RDONLY);
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in_fd, 0), dup2(out_fd, 1), dup2(err_fd, 2);
    if (address_space != 0) {
      const struct rlimit rl { address_space, address_space };
      setrlimit(RLIMIT_AS, &rl);
    }
    if (file_size != 0) {
      signal(SIGXFSZ, SIG_IGN);
      const struct rlimit rl { file_size, file_size };
      setrlimit(RLIMIT_FSIZE, &rl);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  LimitedRun r;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int st = 0;
  struct rusage ru {};
  while (wait4(pid, &st, WNOHANG, &ru) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      wait4(pid, &st, 0, &ru);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.status = r.timed_out ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.max_rss_kib = ru.ru_maxrss;
  auto slurp_file = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  if (out_path.empty()) r.out = slurp_file(out);
  r.err = slurp_file(err);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace fp8ref::test
