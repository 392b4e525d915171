// fp8-check-planted: `fuzz` alone, built over the planted-bug build of the library
// (numerics/plant.h, FP8REF_PLANT_HOOKS on). `fuzz --plant NAME` plants one catalogued bug; the
// mutation test (proptests/campaign/mutation_score.cmake) runs the campaign once per bug and
// requires each to be caught. A test program: never installed, not the shipped fp8-check.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "cli/errors.h"
#include "cli/fuzz.h"

int main(int argc, char** argv) {
  CLI::App app{"fp8-check-planted: the fuzz campaign over planted bugs (tests only)",
               "fp8-check-planted"};
  app.require_subcommand(1);
  fp8ref::cli::add_fuzz_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "fp8-check-planted: error: %s\n", e.what());
    return 2;
  } catch (const fp8ref::cli::ExitCode& e) {
    std::fflush(stdout);
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fp8-check-planted: error: %s\n", e.what());
    return 2;
  }
  std::fflush(stdout);
  return 0;
}
