// Exceptions shared by fp8-check subcommand callbacks and main (exit codes: docs/design.md §16):
// UsageError -> exit 2 (bad input or usage, one line on stderr); ExitCode{n} -> exit n.
#pragma once

#include <stdexcept>
#include <string>

namespace fp8ref::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ExitCode {
  int code;
};

}  // namespace fp8ref::cli
