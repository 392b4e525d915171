// Buffered line I/O for the TestFloat-style `encode` / `decode` pipes: millions of short hex
// lines go through here, so stdin is read and stdout written in 1 MiB blocks, and hex is
// parsed by hand (no iostreams, no locale).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace fp8ref::cli {

// Splits a stream into lines (LF or CRLF); the last line needs no newline.
class LineReader {
 public:
  explicit LineReader(std::FILE* in);
  // Next line without its terminator; false at end of input. line_number() is 1-based.
  bool next(std::string_view& line);
  std::uint64_t line_number() const { return line_number_; }

 private:
  bool refill();

  std::FILE* in_;
  std::vector<char> buf_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::uint64_t line_number_ = 0;
};

// Splits `line` at ASCII whitespace: up to `max` tokens into `out`; returns how many there were
// (which may exceed `max`).
int split_tokens(std::string_view line, std::string_view* out, int max);

// One hex number: optional 0x / 0X prefix, then 1..max_digits hex digits (either case).
// Throws UsageError naming `what`, the line number and the token when malformed or too wide.
std::uint64_t parse_hex_token(std::string_view token, int max_digits, std::string_view what,
                              std::uint64_t line_number);

// Accumulates output and writes it in large blocks.
class BlockWriter {
 public:
  explicit BlockWriter(std::FILE* out) : out_(out) { buf_.reserve(kBlock + 64); }
  ~BlockWriter();  // best-effort flush; call flush() to see write errors
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  // `digits` lowercase hex digits (no prefix) and a newline.
  void hex_line(std::uint64_t bits, int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; --i) buf_.push_back(kHex[(bits >> (4 * i)) & 0xF]);
    buf_.push_back('\n');
    if (buf_.size() >= kBlock) flush();
  }
  void flush();

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  std::FILE* out_;
  std::string buf_;
};

}  // namespace fp8ref::cli
