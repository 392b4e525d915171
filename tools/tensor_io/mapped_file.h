// Read-only memory map of an input file (safetensors payloads can be tens of GB), and a whole-
// file writer that replaces the target atomically (write to NAME.tmp, then rename).
#pragma once

#include <cstdint>
#include <span>
#include <string>

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

}  // namespace fp8ref::tensor_io
