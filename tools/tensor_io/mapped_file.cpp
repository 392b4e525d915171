// POSIX mmap wrapper and atomic whole-file writer (mapped_file.h).
#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tensor.h"

namespace fp8ref::tensor_io {

// O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer (forever);
// the descriptor's type is then checked with fstat before a byte is read (docs/security.md).
MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, std::string("not a regular file (") +
                   (S_ISDIR(st.st_mode)    ? "a directory"
                    : S_ISFIFO(st.st_mode) ? "a named pipe"
                    : S_ISCHR(st.st_mode)  ? "a character device"
                    : S_ISBLK(st.st_mode)  ? "a block device"
                    : S_ISSOCK(st.st_mode) ? "a socket"
                                           : "not a plain file") +
                   "): refused");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail(path, std::string("cannot map: ") + std::strerror(errno));
    }
    data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

namespace {

bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Files are created 0666 minus the umask, as fopen would (mkstemp makes them 0600).
mode_t created_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes) {
  // A target that is (or whose symlink leads to) a device, pipe or directory is refused: renaming
  // over it would replace a name such as /dev/stdout. A symlink to a regular file (or a dangling
  // one) is replaced by the rename, never written through.
  struct stat lst {
  }, st{};
  if ((::lstat(path.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode)) ||
      (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)))
    fail(path, "exists and is not a regular file: refused as an output");
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(path, std::string("cannot create a temporary file: ") + std::strerror(errno));
  const bool ok = write_all(fd, bytes.data(), bytes.size()) && ::fchmod(fd, created_mode()) == 0;
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    fail(path, std::string("write failed: ") + std::strerror(ok ? errno : write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot rename into place: ") + std::strerror(e));
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::uint8_t>(
                              reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

void release_pages(std::span<const std::uint8_t> mapped) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(mapped.data()) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(mapped.data()) + mapped.size()) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advisory only
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace fp8ref::tensor_io
