// libFuzzer harness for the tensor_io npz parser (docs/design.md §16): any input must either parse
// or throw tensor_io::Error; crashes, leaks and sanitizer reports are bugs. Limit: 64 MiB per
// tensor.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor_io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  fp8ref::tensor_io::ReadOptions opts;
  opts.max_bytes = std::uint64_t{64} << 20;
  opts.max_read_bytes = std::uint64_t{64} << 20;  // within -malloc_limit_mb: a blow-up is a finding
  if (size > 0 && (data[0] & 1)) opts.as_dtype = fp8ref::tensor_io::DType::F8_E4M3;
  try {
    fp8ref::tensor_io::parse_npz(bytes, "fuzz", opts);
  } catch (const fp8ref::tensor_io::Error&) {
  }
  return 0;
}
