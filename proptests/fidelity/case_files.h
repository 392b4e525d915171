// The files of the cuBLASLt prediction (part 7b of run_fidelity.sh): the dumped GEMM problem, a
// safetensors case file of the one GEMM case form (tools/cases/gemm_case.h, docs/fuzz.md "Case
// files") that proptests/fidelity/scaled_mm_predict.py writes, and the outputs a library produced
// for it.
//
// Case file: an M-grouped forward with torch `offs` descriptors (fp8ref.desc = offs), B stored nk.
// Output file ("got"): M*N values row-major, f32 bits (uint32) or bf16 bits (uint16),
// little-endian, as torch's tensors dump them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases/gemm_case.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/safetensors.h"

namespace fp8ref::device {

using cases::GemmCase;

// Library outputs, widened to f32 (bf16 bits << 16), with the dtype they were produced in.
struct GotOutput {
  std::string label;
  OutDtype dtype = OutDtype::f32;
  std::vector<std::uint32_t> bits;  // f32 bits, or bf16 bits in the low 16
};

static_assert(std::endian::native == std::endian::little, "output files are little-endian");

// The case, with offs (cumulative group ends, the driver's entry point) filled from the group
// sizes; std::runtime_error naming the file for anything but an offs-described forward case.
inline GemmCase read_case(const std::string& path) {
  try {
    GemmCase c = cases::load_gemm(tensor_io::read_safetensors(path, {}));
    if (c.desc != cases::Desc::offs || c.b_layout != ref::BLayout::nk)
      throw std::invalid_argument("not an offs-described case with B stored nk");
    c.offs = c.gs.ends();
    return c;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

inline GotOutput read_got(const std::string& label, OutDtype dtype, const std::string& path,
                          std::int64_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::vector<char> buf{std::istreambuf_iterator<char>(in), {}};
  const std::size_t width = dtype == OutDtype::f32 ? 4 : 2;
  if (count < 0 || buf.size() != std::size_t(count) * width)
    throw std::runtime_error(path + ": " + std::to_string(buf.size()) + " bytes, expected " +
                             std::to_string(count) + " outputs of " + std::to_string(width) +
                             " bytes");
  GotOutput g{label, dtype, std::vector<std::uint32_t>(std::size_t(count))};
  for (std::size_t i = 0; i < g.bits.size(); ++i) {
    if (width == 4) {
      std::memcpy(&g.bits[i], buf.data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, buf.data() + 2 * i, 2);
      g.bits[i] = h;
    }
  }
  return g;
}

// The bits a model's f32 result has in `dtype` (bf16: RNE, the reference's own conversion).
inline std::uint32_t out_bits(float z, OutDtype dtype) {
  return dtype == OutDtype::f32 ? std::bit_cast<std::uint32_t>(z) : f32_to_bf16_rne(z);
}

inline float got_value(std::uint32_t bits, OutDtype dtype) {
  return dtype == OutDtype::f32 ? std::bit_cast<float>(bits) : bf16_to_f32(std::uint16_t(bits));
}

}  // namespace fp8ref::device
