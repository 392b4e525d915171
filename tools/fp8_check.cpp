// fp8-check: the fp8ref command-line tool (docs/design.md §17). Each subcommand registers itself
// with an add_<name>_command(CLI::App&) function; this file only maps failures to exit codes:
// 0 same / within bound, 1 differs, 2 bad input or usage (one `fp8-check: error:` line); a
// subcommand may add its own (selfcheck: 3, some sweeps skipped; docs/cli.md).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <stdexcept>

#include "cli/diff.h"
#include "cli/encode_command.h"
#include "cli/errors.h"
#include "cli/explain.h"
#include "cli/golden.h"
#include "cli/inspect.h"
#include "cli/layout_detect.h"
#include "cli/oracle_gemm.h"
#include "cli/quantize.h"
#include "cli/selfcheck.h"
#include "cli/sweep.h"
#include "tensor_io/tensor.h"
#if defined(FP8REF_CLI_HAVE_FUZZ)
#include "cli/fuzz.h"
#endif

#ifndef FP8REF_VERSION
#define FP8REF_VERSION "unknown"
#endif

namespace {

int usage_error(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "fp8-check: error: %s\n", fp8ref::tensor_io::escape_text(what).c_str());
  return 2;
}

// Every report goes to stdout: a write that failed (a full disk, a closed pipe) must not end
// in exit 0 or 1 as if the report had been delivered (docs/security.md).
int checked_exit(int code) {
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout.good();
  if (!failed) return code;
  const int err = errno;
  std::fprintf(stderr, "fp8-check: error: cannot write to standard output: %s\n",
               std::strerror(err != 0 ? err : EIO));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fp8-check: bit-exact FP8 codec and tensor checks (fp8ref)", "fp8-check"};
  app.set_version_flag("--version", std::string("fp8-check ") + FP8REF_VERSION);
  app.require_subcommand(1);
  fp8ref::cli::add_encode_command(app);
  fp8ref::cli::add_decode_command(app);
  fp8ref::cli::add_sweep_command(app);
  fp8ref::cli::add_selfcheck_command(app);
  fp8ref::cli::add_inspect_command(app);
  fp8ref::cli::add_diff_command(app);
  fp8ref::cli::add_quantize_command(app);
  fp8ref::cli::add_oracle_command(app);
  fp8ref::cli::add_verify_command(app);
  fp8ref::cli::add_explain_command(app);
  fp8ref::cli::add_golden_command(app);
  fp8ref::cli::add_layout_command(app);
#if defined(FP8REF_CLI_HAVE_FUZZ)
  fp8ref::cli::add_fuzz_command(app);
#endif
  try {
    app.parse(argc, argv);  // subcommand callbacks run inside parse()
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return usage_error(e.what());
  } catch (const fp8ref::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  } catch (const fp8ref::cli::ExitCode& e) {
    return checked_exit(e.code);
  } catch (const std::bad_alloc&) {
    return usage_error("out of memory (a size in the input is too large for this machine)");
  } catch (const std::length_error& e) {
    return usage_error(std::string("a size in the input is too large for this machine (") +
                       e.what() + ")");
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return checked_exit(0);
}
