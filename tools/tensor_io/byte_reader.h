// Bounds-checked little-endian cursor over an in-memory byte span, used by every parser so that
// no read can leave the input (docs/design.md §16: bad input gets a clear error, never a crash).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "tensor.h"

namespace fp8ref::tensor_io {

using Bytes = std::span<const std::uint8_t>;

class ByteReader {
 public:
  ByteReader(Bytes bytes, std::string_view file, std::string_view what)
      : bytes_(bytes), file_(file), what_(what) {}

  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }

  Bytes take(std::uint64_t n) {
    if (n > remaining()) {
      fail(file_, std::string(what_) + " truncated at byte " + std::to_string(pos_) + " (need " +
                      std::to_string(n) + ", have " + std::to_string(remaining()) + ")");
    }
    Bytes out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  template <typename T>
  T le() {
    Bytes b = take(sizeof(T));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= std::uint64_t{b[i]} << (8 * i);
    T out;
    std::memcpy(&out, &v, sizeof(T));  // little-endian host (x86-64, aarch64)
    return out;
  }
  std::uint8_t u8() { return take(1)[0]; }
  std::string_view str(std::uint64_t n) {
    Bytes b = take(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

 private:
  Bytes bytes_;
  std::string_view file_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

inline std::uint64_t load_le(Bytes b, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{b[i]} << (8 * i);
  return v;
}

}  // namespace fp8ref::tensor_io
