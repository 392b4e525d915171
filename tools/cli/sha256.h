// SHA-256 (FIPS 180-4 §6.2) for the golden-file manifest: hashes a byte string and returns the
// 64-digit lowercase hex digest that `sha256sum` prints. Small and dependency-free on purpose.
#pragma once

#include <string>
#include <string_view>

namespace fp8ref::cli {

std::string sha256_hex(std::string_view bytes);

}  // namespace fp8ref::cli
