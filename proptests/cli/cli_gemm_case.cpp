// Case files and expected outputs for the `fp8-check oracle|verify grouped-gemm` ctest
// (cli_gemm_check.cmake), written with the tensor_io writer. `ints FILE` is the independent
// oracle: small integer operands and power-of-two scales, every expected output summed by hand in
// double and rounded by this file's own RNE. `random FILE` / `lib OUT ...` give a random case
// and the library's forward on it (plumbing: split-K, epilogue); `nudge` changes one element.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases/enum_tokens.h"
#include "reference/grouped_gemm.h"
#include "tensor_io/tensor_file.h"

namespace {

using namespace fp8ref::tensor_io;
namespace ref = fp8ref::ref;
using fp8ref::OutDtype;
using I64s = std::vector<std::int64_t>;

template <class T>
Tensor tensor(DType t, I64s shape, const std::vector<T>& v) {
  Tensor x{t, std::move(shape), std::vector<std::uint8_t>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(x.data.data(), v.data(), x.data.size());
  return x;
}

struct Lcg {
  std::uint32_t s;
  std::uint32_t next() { return s = s * 1664525u + 1013904223u; }
  std::uint8_t byte() { return std::uint8_t(next() >> 24); }
  float unit() { return 0.5f + float(next() >> 8) * 0x1p-23f; }  // [0.5, 2.5), 24 random bits
};

// B (G, N, K) -> (G, K, N).
std::vector<std::uint8_t> to_kn(const std::vector<std::uint8_t>& b, std::int64_t G, std::int64_t N,
                                std::int64_t K) {
  std::vector<std::uint8_t> t(b.size());
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t k = 0; k < K; ++k)
        t[std::size_t((g * K + k) * N + n)] = b[std::size_t((g * N + n) * K + k)];
  return t;
}

// ---- random case: e4m3 codes of |x| < 2 (top exponent bit clear: no NaN), general f32 scales
// for tensorwise / rowwise / blockwise, E8M0 codes 120..135 for mx. Offsets {4, 4, 9}: group 1
// is empty and row 9 belongs to no group.
constexpr std::int64_t kM = 10, kN = 6, kK = 288, kG = 3, kBk = 3, kMx = 9;

struct RandomCase {
  std::vector<std::uint8_t> a, b, sa_mx, sb_mx;
  std::vector<float> sa_tw, sb_tw, sa_rw, sb_rw, sa_bw, sb_bw;
};

RandomCase make_random() {
  Lcg r{12345};
  RandomCase c;
  auto codes = [&r](std::int64_t n, std::uint8_t mask, std::uint8_t base) {
    std::vector<std::uint8_t> v(std::size_t(n), 0);
    for (auto& x : v) x = std::uint8_t((r.byte() & mask) + base);
    return v;
  };
  auto floats = [&r](std::int64_t n) {
    std::vector<float> v(std::size_t(n), 0.0f);
    for (auto& x : v) x = r.unit();
    return v;
  };
  c.a = codes(kM * kK, 0xBF, 0), c.b = codes(kG * kN * kK, 0xBF, 0);
  c.sa_tw = floats(1), c.sb_tw = floats(kG), c.sa_rw = floats(kM), c.sb_rw = floats(kG * kN);
  c.sa_bw = floats(kM * kBk), c.sb_bw = floats(kG * kBk);
  c.sa_mx = codes(kM * kMx, 0x0F, 120), c.sb_mx = codes(kG * kN * kMx, 0x0F, 120);
  return c;
}

void write_random(const std::string& path) {
  const RandomCase c = make_random();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TensorFile tf;
  auto add = [&tf](const char* name, Tensor t) { tf.tensors.push_back({name, std::move(t)}); };
  add("a", tensor(DType::F8_E4M3, {kM, kK}, c.a));
  add("b", tensor(DType::F8_E4M3, {kG, kN, kK}, c.b));
  add("b_kn", tensor(DType::F8_E4M3, {kG, kK, kN}, to_kn(c.b, kG, kN, kK)));
  add("offs", tensor(DType::I32, {kG}, std::vector<std::int32_t>{4, 4, 9}));
  add("sa_tensorwise", tensor(DType::F32, {}, c.sa_tw));  // 0-d
  add("sb_tensorwise", tensor(DType::F32, {kG}, c.sb_tw));
  add("sa_rowwise", tensor(DType::F32, {kM, 1}, c.sa_rw));  // torch _scaled_mm's (M, 1)
  add("sb_rowwise", tensor(DType::F32, {kG, kN}, c.sb_rw));
  add("sa_blockwise", tensor(DType::F32, {kM, kBk}, c.sa_bw));
  add("sb_blockwise", tensor(DType::F32, {kG, 1, kBk}, c.sb_bw));
  add("sa_mx", tensor(DType::F8_E8M0, {kM, kMx}, c.sa_mx));
  add("sb_mx", tensor(DType::F8_E8M0, {kG, kN, kMx}, c.sb_mx));
  // Bad input. Same element counts in the wrong shape: the blockwise A scales transposed (the
  // column-major (M, K/128) of cuBLASLt dumped as its storage), the mx B scales as (G, K/32, N).
  std::vector<float> t(c.sa_bw.size());
  for (std::int64_t m = 0; m < kM; ++m)
    for (std::int64_t j = 0; j < kBk; ++j)
      t[std::size_t(j * kM + m)] = c.sa_bw[std::size_t(m * kBk + j)];
  add("sa_blockwise_t", tensor(DType::F32, {kBk, kM}, t));
  add("sb_mx_t", tensor(DType::F8_E8M0, {kG, kMx, kN}, c.sb_mx));
  add("sa_mx_f32", tensor(DType::F32, {kM, kMx}, std::vector<float>(kM * kMx, 0.75f)));
  std::vector<std::uint8_t> mx_nan = c.sa_mx;
  mx_nan[3] = 0xFF;  // row 0: E8M0 NaN
  add("sa_mx_nan", tensor(DType::F8_E8M0, {kM, kMx}, mx_nan));
  std::vector<float> nan_used = c.sb_rw, nan_idle = c.sb_rw;
  nan_used[2 * kN + 1] = nan;  // group 2 has rows
  nan_idle[1 * kN + 1] = nan;  // group 1 has none: never read
  add("sb_rowwise_nan", tensor(DType::F32, {kG, kN}, nan_used));
  add("sb_rowwise_nan_idle", tensor(DType::F32, {kG, kN}, nan_idle));
  add("offs_nonmono", tensor(DType::I64, {kG}, I64s{4, 3, 9}));
  add("offs_beyond", tensor(DType::I32, {kG}, std::vector<std::int32_t>{4, 4, 11}));
  add("offs_short", tensor(DType::I32, {2}, std::vector<std::int32_t>{4, 9}));
  write_tensor_file(path, tf);
}

std::vector<float> e8m0_values(const std::vector<std::uint8_t>& codes) {
  std::vector<float> v(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) v[i] = std::ldexp(1.0f, int(codes[i]) - 127);
  return v;
}

std::vector<std::uint32_t> forward(const RandomCase& c, ref::Scaling s, ref::ModelChoice m,
                                   OutDtype d) {
  std::vector<float> sa, sb;
  switch (s) {
    case ref::Scaling::none: break;
    case ref::Scaling::tensorwise: sa = c.sa_tw, sb = c.sb_tw; break;
    case ref::Scaling::rowwise: sa = c.sa_rw, sb = c.sb_rw; break;
    case ref::Scaling::blockwise: sa = c.sa_bw, sb = c.sb_bw; break;
    case ref::Scaling::mx: sa = e8m0_values(c.sa_mx), sb = e8m0_values(c.sb_mx); break;
    case ref::Scaling::nvfp4:
    case ref::Scaling::mx16: break;  // the Blackwell models: test_cli_blackwell_gemm.py
  }
  const ref::GroupedGemmOperands op{
      kM, kN, kK, kG, fp8ref::Format::e4m3, fp8ref::Format::e4m3, c.a, c.b, ref::BLayout::nk,
      s,  sa, sb};
  std::vector<float> f(d == OutDtype::f32 ? kM * kN : 0);
  std::vector<std::uint16_t> h(d == OutDtype::f32 ? 0 : kM * kN);
  ref::grouped_gemm_forward_offs(op, I64s{4, 4, 9}, m, ref::RowPolicy::zero, {d, f, h, {}});
  std::vector<std::uint32_t> bits(kM * kN);
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = d == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

// `lib OUT SCALING MODEL DTYPE S L EPILOGUE`: the library's forward on the random case as tensor
// `out`. Refuses a split-K or epilogue that gives the same bits as the model's default on this
// case, so that a CLI ignoring the flag cannot pass.
void write_lib(char** arg) {
  constexpr std::array kScalings = {ref::Scaling::none, ref::Scaling::tensorwise,
                                    ref::Scaling::rowwise, ref::Scaling::blockwise,
                                    ref::Scaling::mx};
  const auto s = fp8ref::cases::parse_token("scaling", arg[1], kScalings);
  const auto model = fp8ref::cases::parse_token("model", arg[2], fp8ref::kAllAccumulationModels);
  const std::string ds = arg[3];
  const OutDtype d = ds == "f32" ? OutDtype::f32 : ds == "bf16" ? OutDtype::bf16 : OutDtype::f16;
  const auto ep = fp8ref::cases::parse_token("epilogue", arg[6], fp8ref::kAllEpilogues);
  const ref::ModelChoice m{model, std::stoi(arg[4]), std::stoll(arg[5]), ep};
  const RandomCase c = make_random();
  const std::vector<std::uint32_t> bits = forward(c, s, m, d);
  if ((!m.split().is_single() || ep != fp8ref::Epilogue::model) &&
      bits == forward(c, s, {model, 1, 0, fp8ref::Epilogue::model}, d))
    throw std::runtime_error("the random case does not tell this split-K / epilogue apart");
  TensorFile tf;
  if (d == OutDtype::f32)
    tf.tensors.push_back({"out", tensor(DType::F32, {kM, kN}, bits)});
  else
    tf.tensors.push_back({"out", tensor(d == OutDtype::bf16 ? DType::BF16 : DType::F16, {kM, kN},
                                        std::vector<std::uint16_t>(bits.begin(), bits.end()))});
  write_tensor_file(arg[0], tf);
}

// ---- integer case: A e4m3 and B e5m2 integers in [-3, 3], scales 2^j with j in [-1, 1]
// (scale products 2^-2..2^2), so every output is a multiple of 2^-4 below 2^13: exact in f32 and
// normal in f16. Offsets {3, 3, 6}: group 1 empty, row 6 in no group. K = 160: two 128-blocks
// and five 32-blocks, both partial at the end.
constexpr std::int64_t iM = 7, iN = 5, iK = 160, iG = 3, iBk = 2, iMx = 5;
const I64s kIntOffs{3, 3, 6};

// FP8 code of an integer |v| <= 3, from the format definition (1.m × 2^e, bias, m bits).
std::uint8_t fp8_code(int v, int mbits, int bias) {
  if (v == 0) return 0;
  const int mag = v < 0 ? -v : v, e = mag >= 2 ? 1 : 0;
  const int m = (mag << mbits >> e) - (1 << mbits);
  return std::uint8_t((v < 0 ? 0x80 : 0) | ((e + bias) << mbits) | m);
}

// RNE of a normal double to p significant bits (nearbyint in the default rounding mode).
double round_to_bits(double v, int p) {
  if (v == 0.0) return 0.0;
  int e = 0;
  std::frexp(v, &e);  // |v| = f·2^e, f in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(v, p - e)), e - p);
}

std::uint32_t out_bits(double v, const std::string& dtype) {
  if (dtype == "f32") return std::bit_cast<std::uint32_t>(float(round_to_bits(v, 24)));
  if (dtype == "bf16") return std::bit_cast<std::uint32_t>(float(round_to_bits(v, 8))) >> 16;
  const double r = round_to_bits(v, 11);  // f16: sign, exponent + 15, 10 fraction bits
  if (r == 0.0) return 0;
  int e = 0;
  const double f = std::frexp(std::fabs(r), &e);  // |r| = (2f)·2^(e-1)
  if (e - 1 < -14 || e - 1 > 15) throw std::runtime_error("integer case leaves f16's normal range");
  return (r < 0 ? 0x8000u : 0u) | std::uint32_t(e - 1 + 15) << 10 |
         std::uint32_t(std::ldexp(2 * f - 1, 10));
}

struct IntCase {
  std::vector<int> a, b;                                                    // (M, K), (G, N, K)
  std::vector<int> sa_tw, sb_tw, sa_rw, sb_rw, sa_bw, sb_bw, sa_mx, sb_mx;  // exponents j
};

// The exponent of the scale pair that multiplies a[r, k]·b[g, n, k].
int scale_exp(const IntCase& c, const std::string& s, std::int64_t r, std::int64_t g,
              std::int64_t n, std::int64_t k) {
  const std::size_t kb = std::size_t(k / 128), km = std::size_t(k / 32);
  const std::size_t ur = std::size_t(r), ug = std::size_t(g), un = std::size_t(n);
  if (s == "tensorwise") return c.sa_tw[0] + c.sb_tw[ug];
  if (s == "rowwise") return c.sa_rw[ur] + c.sb_rw[ug * iN + un];
  if (s == "blockwise") return c.sa_bw[ur * iBk + kb] + c.sb_bw[ug * iBk + kb];
  if (s == "mx") return c.sa_mx[ur * iMx + km] + c.sb_mx[(ug * iN + un) * iMx + km];
  return 0;
}

// want (M, N) in `dtype`: row r of group g(r) is sum_k a·b·2^j, exact in double; +0 elsewhere.
Tensor int_want(const IntCase& c, const std::string& s, const std::string& dtype,
                const std::vector<int>& group_of_row) {
  std::vector<std::uint32_t> w(iM * iN, 0);
  for (std::int64_t r = 0; r < iM; ++r)
    for (std::int64_t n = 0; n < iN; ++n) {
      const int g = group_of_row[std::size_t(r)];
      if (g < 0) continue;
      double y = 0.0;
      for (std::int64_t k = 0; k < iK; ++k)
        y += std::ldexp(c.a[std::size_t(r * iK + k)] * c.b[std::size_t((g * iN + n) * iK + k)],
                        scale_exp(c, s, r, g, n, k));
      w[std::size_t(r * iN + n)] = out_bits(y, dtype);
    }
  if (dtype == "f32") return tensor(DType::F32, {iM, iN}, w);
  return tensor(dtype == "bf16" ? DType::BF16 : DType::F16, {iM, iN},
                std::vector<std::uint16_t>(w.begin(), w.end()));
}

void write_ints(const std::string& path) {
  Lcg r{777};
  auto ints = [&r](std::int64_t n, int lo, int hi) {
    std::vector<int> v(std::size_t(n), 0);
    for (auto& x : v) x = lo + int(r.next() >> 8) % (hi - lo + 1);
    return v;
  };
  IntCase c{ints(iM * iK, -3, 3),      ints(iG * iN * iK, -3, 3), ints(1, -1, 1),
            ints(iG, -1, 1),           ints(iM, -1, 1),           ints(iG * iN, -1, 1),
            ints(iM * iBk, -1, 1),     ints(iG * iBk, -1, 1),     ints(iM * iMx, -1, 1),
            ints(iG * iN * iMx, -1, 1)};
  auto codes = [](const std::vector<int>& v, int mbits, int bias) {
    std::vector<std::uint8_t> q(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) q[i] = fp8_code(v[i], mbits, bias);
    return q;
  };
  auto f32 = [](const std::vector<int>& j) {
    std::vector<float> v(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) v[i] = std::ldexp(1.0f, j[i]);
    return v;
  };
  auto e8m0 = [](const std::vector<int>& j) {
    std::vector<std::uint8_t> v(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) v[i] = std::uint8_t(127 + j[i]);
    return v;
  };
  const std::vector<std::uint8_t> b = codes(c.b, 2, 15);
  TensorFile tf;
  auto add = [&tf](const std::string& name, Tensor t) {
    tf.tensors.push_back({name, std::move(t)});
  };
  add("a", tensor(DType::F8_E4M3, {iM, iK}, codes(c.a, 3, 7)));
  add("b", tensor(DType::F8_E5M2, {iG, iN, iK}, b));
  add("b_kn", tensor(DType::F8_E5M2, {iG, iK, iN}, to_kn(b, iG, iN, iK)));
  add("b2d",
      tensor(DType::F8_E5M2, {iN, iK}, std::vector<std::uint8_t>(b.begin(), b.begin() + iN * iK)));
  add("offs", tensor(DType::I64, {iG}, kIntOffs));
  add("sa_tensorwise", tensor(DType::F32, {1}, f32(c.sa_tw)));  // (1,): same as 0-d
  add("sb_tensorwise", tensor(DType::F32, {iG}, f32(c.sb_tw)));
  add("sa_rowwise", tensor(DType::F32, {iM}, f32(c.sa_rw)));
  add("sb_rowwise", tensor(DType::F32, {iG, iN}, f32(c.sb_rw)));
  add("sa_blockwise", tensor(DType::F32, {iM, iBk}, f32(c.sa_bw)));
  add("sb_blockwise", tensor(DType::F32, {iG, 1, iBk}, f32(c.sb_bw)));
  add("sa_mx", tensor(DType::F8_E8M0, {iM, iMx}, e8m0(c.sa_mx)));
  add("sb_mx", tensor(DType::F8_E8M0, {iG, iN, iMx}, e8m0(c.sb_mx)));
  const std::vector<int> groups{0, 0, 0, 2, 2, 2, -1};  // from kIntOffs
  for (const char* s : {"none", "tensorwise", "rowwise", "blockwise", "mx"})
    for (const char* d : {"f32", "bf16", "f16"})
      add(std::string("want_") + s + "_" + d, int_want(c, s, d, groups));
  add("want_b2d_f32", int_want(c, "none", "f32", std::vector<int>(iM, 0)));  // one group, all rows
  write_tensor_file(path, tf);
}

// `nudge IN OUT NAME INDEX ULPS [nonzero]`: element INDEX of NAME (F32, BF16 or F16) moved ULPS
// steps away from zero by adding ULPS to its bit pattern; `nonzero` refuses a zero element (a
// relative change of a zero means nothing).
void nudge(const std::string& in, const std::string& out, const std::string& name,
           std::size_t index, std::int64_t ulps, bool nonzero) {
  TensorFile tf = read_tensor_file(in, {});
  for (NamedTensor& t : tf.tensors) {
    if (t.name != name) continue;
    const std::size_t w = t.tensor.dtype == DType::F32 ? 4 : 2;
    std::uint32_t bits = 0;
    std::memcpy(&bits, t.tensor.data.data() + index * w, w);
    if (nonzero && (bits & (w == 4 ? 0x7FFFFFFFu : 0x7FFFu)) == 0)
      throw std::runtime_error("element is zero");
    bits = std::uint32_t(std::int64_t(bits) + ulps);
    std::memcpy(t.tensor.data.data() + index * w, &bits, w);
    write_tensor_file(out, tf);
    return;
  }
  throw std::runtime_error(in + " has no tensor " + name);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "random" && argc == 3)
      write_random(argv[2]);
    else if (mode == "ints" && argc == 3)
      write_ints(argv[2]);
    else if (mode == "lib" && argc == 9)
      write_lib(argv + 2);
    else if (mode == "nudge" && (argc == 7 || (argc == 8 && argv[7] == std::string("nonzero"))))
      nudge(argv[2], argv[3], argv[4], std::stoul(argv[5]), std::stoll(argv[6]), argc == 8);
    else {
      std::fprintf(stderr,
                   "usage: %s random FILE | ints FILE | lib OUT SCALING MODEL DTYPE S L EPILOGUE "
                   "| nudge IN OUT NAME INDEX ULPS [nonzero]\n",
                   argv[0]);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
