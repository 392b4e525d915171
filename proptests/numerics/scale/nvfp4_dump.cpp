// Writes fp8ref's NVFP4 quantization (numerics/nvfp4_recipe.h) for the numpy cross-check
// proptests/numerics/scale/nvfp4_recipes_xcheck.py:
//   fp8ref_nvfp4_dump RECIPE RUNTIME BLOCK_ROWS ROWS COLS IN OUT
// IN: rows·cols little-endian f32; OUT: e2m1 codes (rows·cols bytes), UE4M3 scale codes
// (rows·ceil(cols/16) bytes), the per-tensor decode scale (f32 bits). Exit 2 on bad arguments.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "numerics/nvfp4_recipe.h"

int main(int argc, char** argv) {
  using namespace fp8ref;
  try {
    if (argc != 8) throw std::invalid_argument("usage: RECIPE RUNTIME BLOCK_ROWS ROWS COLS IN OUT");
    const std::string rn = argv[1], rtn = argv[2];
    const std::optional<Nvfp4Recipe> recipe = nvfp4_recipe_from_name(rn);
    if (!recipe) throw std::invalid_argument("unknown recipe " + rn);
    const Nvfp4Recipe r = *recipe;
    const Runtime rt = rtn == "torch_cpu"    ? Runtime::torch_cpu
                       : rtn == "torch_cuda" ? Runtime::torch_cuda
                       : rtn == "cuda_kernel"
                           ? Runtime::cuda_kernel
                           : throw std::invalid_argument("unknown runtime " + rtn);
    const int block_rows = std::stoi(argv[3]);
    const std::int64_t rows = std::stoll(argv[4]), cols = std::stoll(argv[5]);
    std::vector<float> x(std::size_t(rows * cols));
    std::ifstream in(argv[6], std::ios::binary);
    in.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * 4));
    if (!in) throw std::invalid_argument("cannot read the input");
    const Nvfp4Quantized q = nvfp4_quantize(r, rt, x.data(), rows, cols, block_rows);
    std::ofstream out(argv[7], std::ios::binary);
    out.write(reinterpret_cast<const char*>(q.codes.data()), std::streamsize(q.codes.size()));
    out.write(reinterpret_cast<const char*>(q.scales.data()), std::streamsize(q.scales.size()));
    out.write(reinterpret_cast<const char*>(&q.global_decode), 4);
    return out ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "fp8ref_nvfp4_dump: error: " << e.what() << std::endl;
    return 2;
  }
}
