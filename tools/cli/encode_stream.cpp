// Buffered hex line I/O (encode_stream.h).
#include "cli/encode_stream.h"

#include <cstring>

#include "cli/errors.h"

namespace fp8ref::cli {
namespace {

constexpr std::size_t kReadBlock = std::size_t{1} << 20;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Printable excerpt of a bad token for the error message.
std::string excerpt(std::string_view token) {
  std::string out;
  for (char c : token.substr(0, 40)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (token.size() > 40) out += "...";
  return out;
}

}  // namespace

LineReader::LineReader(std::FILE* in) : in_(in), buf_(kReadBlock) {}

bool LineReader::refill() {
  if (eof_) return false;
  // Keep the unfinished line, grow when one line fills the whole buffer.
  const std::size_t keep = end_ - begin_;
  if (begin_ > 0) std::memmove(buf_.data(), buf_.data() + begin_, keep);
  begin_ = 0;
  end_ = keep;
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  const std::size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, in_);
  if (got == 0) {
    if (std::ferror(in_)) throw UsageError("cannot read standard input");
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
      line = std::string_view(start, len);
      begin_ += len + 1;
      ++line_number_;
      return true;
    }
    if (!refill()) {
      if (begin_ == end_) return false;
      line = std::string_view(buf_.data() + begin_, end_ - begin_);
      begin_ = end_;
      ++line_number_;
      return true;
    }
  }
}

int split_tokens(std::string_view line, std::string_view* out, int max) {
  int n = 0;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (n < max) out[n] = line.substr(start, i - start);
    ++n;
  }
  return n;
}

std::uint64_t parse_hex_token(std::string_view token, int max_digits, std::string_view what,
                              std::uint64_t line_number) {
  std::string_view digits = token;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    digits.remove_prefix(2);
  const auto fail = [&](const char* why) -> UsageError {
    return UsageError("stdin line " + std::to_string(line_number) + ": " + why + " '" +
                      excerpt(token) + "' (" + std::string(what) + ")");
  };
  if (digits.empty()) throw fail("malformed hex");
  std::uint64_t v = 0;
  for (char c : digits)
    if (hex_digit(c) < 0) throw fail("malformed hex");
  if (digits.size() > static_cast<std::size_t>(max_digits)) {
    const std::string why =
        "value too wide: more than " + std::to_string(max_digits) + " hex digits";
    throw fail(why.c_str());
  }
  for (char c : digits) v = (v << 4) | static_cast<std::uint64_t>(hex_digit(c));
  return v;
}

BlockWriter::~BlockWriter() {
  try {
    flush();
  } catch (const std::exception&) {  // a destructor must not throw; flush() callers see it
  }
}

void BlockWriter::flush() {
  if (buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), out_) != buf_.size() || std::fflush(out_) != 0)
    throw std::runtime_error("cannot write standard output");
  buf_.clear();
}

}  // namespace fp8ref::cli
