// tensor_io_roundtrip IN OUT [--as DTYPE]: reads any supported tensor file and rewrites it (format
// chosen by OUT's extension). Used by the Python interop test; exit 2 with one line on bad input.
#include <cstdio>
#include <string>

#include "tensor_io/tensor_file.h"

int main(int argc, char** argv) {
  using namespace fp8ref::tensor_io;
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--as")) {
    std::fprintf(stderr, "usage: tensor_io_roundtrip IN OUT [--as DTYPE]\n");
    return 2;
  }
  try {
    ReadOptions opts;
    if (argc == 5) {
      opts.as_dtype = dtype_from_name(argv[4]);
      if (!opts.as_dtype) throw Error(std::string("unknown dtype '") + argv[4] + "'");
    }
    write_tensor_file(argv[2], read_tensor_file(argv[1], opts));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
