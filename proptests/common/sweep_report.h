// Reporting of sweeps and batched checks: always prints "N inputs, M mismatches" (the measured
// count goes into the test log); on mismatches fails the running Google Test with the first ones
// in hex, dumps them as safetensors and prints the replay command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proptests/common/parallel_sweep.h"

namespace fp8ref::test {

// `config_names[i]` names configuration i of the mismatches; `input_hex_digits` is 4 / 8 / 16
// for 16-bit / f32 / f64 inputs. Returns true when there was no mismatch.
bool report_sweep(const std::string& case_name, std::uint64_t inputs, const SweepLog& log,
                  const std::vector<std::string>& config_names, int input_hex_digits);

}  // namespace fp8ref::test
