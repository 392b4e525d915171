// Sweep reporting (see sweep_report.h).
#include "proptests/common/sweep_report.h"

#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "proptests/common/test_level.h"

namespace fp8ref::test {

bool report_sweep(const std::string& case_name, std::uint64_t inputs, const SweepLog& log,
                  const std::vector<std::string>& config_names, int input_hex_digits) {
  std::cout << case_name << ": " << inputs << " inputs, " << log.count << " mismatches"
            << std::endl;
  if (log.count == 0) return true;
  std::map<std::string, std::string> metadata{{"replay", replay_command(0)},
                                              {"inputs", std::to_string(inputs)},
                                              {"mismatches", std::to_string(log.count)}};
  for (std::size_t i = 0; i < config_names.size(); ++i)
    metadata["config." + std::to_string(i)] = config_names[i];
  const std::string path = dump_mismatches(case_name, log.first, metadata);
  ADD_FAILURE() << case_name << ": " << inputs << " inputs, " << log.count
                << " mismatches; first:\n"
                << format_mismatches(log.first, config_names, input_hex_digits) << "dump: " << path
                << "\nreplay: " << replay_command(0);
  return false;
}

}  // namespace fp8ref::test
