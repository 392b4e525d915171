// One dumped GEMM problem of the cuBLASLt prediction (part 7b of
// run_fidelity.sh; proptests/fidelity/scaled_mm_predict.py writes it): FP8 operands, decode scales
// and group offsets in the layouts of reference/grouped_gemm.h, plus the outputs a library produced
// for it.
//
// Case file, little-endian:
//   "FP8GEMM1"                 8 bytes
//   M N K G                    4 x int64
//   fa fb scaling, 5 zero      8 x uint8   (format 0 = e4m3, 1 = e5m2; scaling 0 none,
//                                           1 tensorwise, 2 rowwise, 3 blockwise)
//   A                          M*K uint8   row-major (M, K)
//   B                          G*N*K uint8 row-major (G, N, K)
//   offs                       G int64     cumulative group ends (torch `offs`)
//   n_sa, scale_a              int64, n_sa f32   shapes as GroupedGemmOperands documents
//   n_sb, scale_b              int64, n_sb f32
// Output file ("got"): M*N values row-major, f32 bits (uint32) or bf16 bits (uint16).
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
#include "reference/group_desc.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::device {

// The case as the CPU reference takes it (tools/cases/gemm_case.h): read_case fills M, N, K, G,
// the formats, the scaling, a, b (layout nk), offs, sa, sb and group_of (-1 outside every group).
using cases::GemmCase;

// Library outputs, widened to f32 (bf16 bits << 16), with the dtype they were produced in.
struct GotOutput {
  std::string label;
  OutDtype dtype = OutDtype::f32;
  std::vector<std::uint32_t> bits;  // f32 bits, or bf16 bits in the low 16
};

namespace detail {

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    buf_.assign(std::istreambuf_iterator<char>(in), {});
  }
  template <class T>
  T get() {
    T v;
    need(sizeof(T));
    std::memcpy(&v, buf_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> get_n(std::int64_t n) {
    if (n < 0) fail("negative element count");
    std::vector<T> v(static_cast<std::size_t>(n));
    need(std::size_t(n) * sizeof(T));
    std::memcpy(v.data(), buf_.data() + pos_, std::size_t(n) * sizeof(T));
    pos_ += std::size_t(n) * sizeof(T);
    return v;
  }
  bool at_end() const { return pos_ == buf_.size(); }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
  }

 private:
  void need(std::size_t n) const {
    if (buf_.size() - pos_ < n) fail("truncated file");
  }
  std::string path_;
  std::vector<char> buf_;
  std::size_t pos_ = 0;
};

inline Format format_of(std::uint8_t id, const Reader& r) {
  if (id > 1) r.fail("format id " + std::to_string(id) + " is not 0 (e4m3) or 1 (e5m2)");
  return id ? Format::e5m2 : Format::e4m3;
}

}  // namespace detail

static_assert(std::endian::native == std::endian::little, "case files are little-endian");

inline GemmCase read_case(const std::string& path) {
  detail::Reader r(path);
  char magic[8];
  for (char& ch : magic) ch = r.get<char>();
  if (std::memcmp(magic, "FP8GEMM1", 8) != 0) r.fail("not an FP8GEMM1 case file");
  GemmCase c;
  c.M = r.get<std::int64_t>(), c.N = r.get<std::int64_t>();
  c.K = r.get<std::int64_t>(), c.G = r.get<std::int64_t>();
  if (c.M < 0 || c.N < 0 || c.K < 0 || c.G < 1) r.fail("bad dimensions");
  c.fa = detail::format_of(r.get<std::uint8_t>(), r);
  c.fb = detail::format_of(r.get<std::uint8_t>(), r);
  const std::uint8_t s = r.get<std::uint8_t>();
  if (s > 3) r.fail("scaling id " + std::to_string(s));
  c.scaling = ref::Scaling(s);
  for (int i = 0; i < 5; ++i) r.get<std::uint8_t>();
  c.a = r.get_n<std::uint8_t>(c.M * c.K);
  c.b = r.get_n<std::uint8_t>(c.G * c.N * c.K);
  c.offs = r.get_n<std::int64_t>(c.G);
  c.sa = r.get_n<float>(r.get<std::int64_t>());
  c.sb = r.get_n<float>(r.get<std::int64_t>());
  if (!r.at_end()) r.fail("trailing bytes");
  ref::validate_offsets(c.offs, c.M, 1);
  c.group_of = ref::row_map_from_offsets(c.offs, c.M);
  return c;
}

inline GotOutput read_got(const std::string& label, OutDtype dtype, const std::string& path,
                          std::int64_t count) {
  detail::Reader r(path);
  GotOutput g{label, dtype, {}};
  if (dtype == OutDtype::f32) {
    g.bits = r.get_n<std::uint32_t>(count);
  } else {
    const std::vector<std::uint16_t> h = r.get_n<std::uint16_t>(count);
    g.bits.assign(h.begin(), h.end());
  }
  if (!r.at_end()) r.fail("has more than the " + std::to_string(count) + " expected outputs");
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
