// `fp8-check encode` and `fp8-check decode`: TestFloat-style filters (docs/cli.md). One hex
// bit pattern per stdin line in, one hex code (encode) or bit pattern (decode) per line out.
#pragma once

#include <CLI/CLI.hpp>

namespace fp8ref::cli {

void add_encode_command(CLI::App& app);
void add_decode_command(CLI::App& app);

}  // namespace fp8ref::cli
