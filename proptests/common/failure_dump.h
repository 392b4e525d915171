// Failing cases as files (docs/design.md §20: a failure writes the case as a safetensors file that
// fp8-check can open): a minimal safetensors writer for little-endian integer tensors, and the
// mismatch record the codec sweeps and batched properties share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fp8ref::test {

// One mismatch: the input bit pattern (zero-extended source bits), the configuration it was
// checked under (an index into the caller's list of names), the oracle's and the codec's code.
struct Mismatch {
  std::uint64_t input;
  std::uint8_t config;
  std::uint8_t ref_z;
  std::uint8_t got_z;
};

struct DumpTensor {
  std::string name;
  std::string dtype;  // safetensors dtype: "U8", "U64"
  std::uint64_t count;
  std::vector<std::uint8_t> bytes;  // little-endian element bytes
};

DumpTensor u8_tensor(std::string name, const std::vector<std::uint8_t>& v);
DumpTensor u64_tensor(std::string name, const std::vector<std::uint64_t>& v);

// Writes <dir>/<case_name>.safetensors, dir = $FP8REF_FAILURE_DIR or ./fp8ref-failures; returns
// the path, or an explanation starting with "(not written" when the file could not be written.
std::string dump_failure_case(std::string_view case_name, const std::vector<DumpTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

// The mismatches as tensors input (U64), config (U8), ref_z (U8), got_z (U8); `metadata` should
// name the configs ("config.0" = "e4m3 cuda_satfinite", ...) and carry the replay command.
std::string dump_mismatches(std::string_view case_name, const std::vector<Mismatch>& mismatches,
                            const std::map<std::string, std::string>& metadata);

// "input 0x3f800000 [e4m3 cuda_nosat]: ref_z 0x38 got_z 0x39" lines, at most `limit`.
std::string format_mismatches(const std::vector<Mismatch>& mismatches,
                              const std::vector<std::string>& config_names, int hex_digits,
                              std::size_t limit = 8);

}  // namespace fp8ref::test
