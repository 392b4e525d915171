// Read-only memory map of an input file (safetensors payloads can be tens of GB), and a whole-
// file writer that replaces the target atomically: a unique temporary file beside the target
// (mkstemp: O_CREAT|O_EXCL, so a planted file or symlink is never written through), renamed into
// place, removed on every failure (docs/security.md "Outputs").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fp8ref::tensor_io {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::string& path, std::string_view bytes);

// Lets the kernel drop the resident pages of a read-only mapping (a viewed tensor that has been
// processed): they are read again from the file if touched later. Keeps inspect's RSS to about
// one tensor instead of the whole file.
void release_pages(std::span<const std::uint8_t> mapped);

// Whether a and b name the same existing file (st_dev and st_ino, symlinks followed).
bool same_file(const std::string& a, const std::string& b);

}  // namespace fp8ref::tensor_io
