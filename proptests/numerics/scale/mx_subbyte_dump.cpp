// Writes fp8ref's MXFP4 / MXFP6 quantization (numerics/mx_subbyte_quantize.h) for the numpy
// cross-check proptests/numerics/scale/mx_subbyte_recipes_xcheck.py:
//   fp8ref_mx_subbyte_dump ELEM MODE RUNTIME ROWS COLS IN OUT
// ELEM e2m1 | e2m3 | e3m2; MODE mx_floor | mx_ceil | mx_even | mx_rceil; IN: rows·cols
// little-endian f32; OUT: element codes (rows·cols bytes), E8M0 codes (rows·ceil(cols/32) bytes).
// Exit 2 on bad arguments.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "numerics/mx_subbyte_quantize.h"

int main(int argc, char** argv) {
  using namespace fp8ref;
  try {
    if (argc != 8) throw std::invalid_argument("usage: ELEM MODE RUNTIME ROWS COLS IN OUT");
    const auto elem = parse_format(argv[1]);
    if (!elem) throw std::invalid_argument(std::string("unknown format ") + argv[1]);
    const std::string mn = argv[2], rtn = argv[3];
    RecipeKind mode = RecipeKind::deepgemm;
    for (const RecipeKind k :
         {RecipeKind::mx_floor, RecipeKind::mx_ceil, RecipeKind::mx_even, RecipeKind::mx_rceil})
      if (to_string(k) == mn) mode = k;
    Runtime rt = Runtime::torch_cpu;
    bool known_rt = false;
    for (const Runtime r : {Runtime::torch_cpu, Runtime::torch_cuda, Runtime::cuda_kernel})
      if (to_string(r) == rtn) rt = r, known_rt = true;
    if (!known_rt) throw std::invalid_argument("unknown runtime " + rtn);
    const std::int64_t rows = std::stoll(argv[4]), cols = std::stoll(argv[5]);
    std::vector<float> x(std::size_t(rows * cols));
    std::ifstream in(argv[6], std::ios::binary);
    in.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * 4));
    if (!in) throw std::invalid_argument("cannot read the input");
    const MxSubbyteQuantized q = mx_subbyte_quantize(*elem, mode, rt, x.data(), rows, cols);
    std::ofstream out(argv[7], std::ios::binary);
    out.write(reinterpret_cast<const char*>(q.codes.data()), std::streamsize(q.codes.size()));
    out.write(reinterpret_cast<const char*>(q.scales.data()), std::streamsize(q.scales.size()));
    return out ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "fp8ref_mx_subbyte_dump: error: " << e.what() << std::endl;
    return 2;
  }
}
