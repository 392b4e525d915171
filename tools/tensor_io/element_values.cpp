// Element decode tables (element_values.h), written from the format definitions; independent of
// numerics/ so fp8-check can diff files even when the codecs under test are wrong.
#include "element_values.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace fp8ref::tensor_io {
namespace {

enum class Special { Ieee, FnAllOnes, Fnuz, FiniteOnly };

struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  Special special;
};

MiniFloat layout(DType t) {
  switch (t) {
    case DType::F16: return {5, 10, 15, Special::Ieee};
    case DType::BF16: return {8, 7, 127, Special::Ieee};
    case DType::F8_E4M3: return {4, 3, 7, Special::FnAllOnes};
    case DType::F8_E5M2: return {5, 2, 15, Special::Ieee};
    case DType::F8_E4M3FNUZ: return {4, 3, 8, Special::Fnuz};
    case DType::F8_E5M2FNUZ: return {5, 2, 16, Special::Fnuz};
    case DType::F6_E2M3: return {2, 3, 1, Special::FiniteOnly};
    case DType::F6_E3M2: return {3, 2, 3, Special::FiniteOnly};
    default: return {2, 1, 1, Special::FiniteOnly};  // F4 e2m1
  }
}

bool is_minifloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8_E4M3 || t == DType::F8_E5M2 ||
         t == DType::F8_E4M3FNUZ || t == DType::F8_E5M2FNUZ || t == DType::F4 ||
         t == DType::F6_E2M3 || t == DType::F6_E3M2;
}

FpClass classify_minifloat(const MiniFloat& f, std::uint64_t bits) {
  const std::uint64_t sign = bits >> (f.exp_bits + f.man_bits);
  const std::uint64_t mag = bits & ((std::uint64_t{1} << (f.exp_bits + f.man_bits)) - 1);
  const std::uint64_t exp_all = (std::uint64_t{1} << f.exp_bits) - 1;
  const std::uint64_t e = mag >> f.man_bits;
  const std::uint64_t m = mag & ((std::uint64_t{1} << f.man_bits) - 1);
  switch (f.special) {
    case Special::Ieee:
      if (e != exp_all) return FpClass::Finite;
      if (m != 0) return FpClass::NaN;
      return sign ? FpClass::NegInf : FpClass::PosInf;
    case Special::FnAllOnes:
      return mag == ((exp_all << f.man_bits) | ((std::uint64_t{1} << f.man_bits) - 1))
                 ? FpClass::NaN
                 : FpClass::Finite;
    case Special::Fnuz: return (sign && mag == 0) ? FpClass::NaN : FpClass::Finite;
    case Special::FiniteOnly: return FpClass::Finite;
  }
  return FpClass::Finite;
}

double decode_minifloat(const MiniFloat& f, std::uint64_t bits) {
  switch (classify_minifloat(f, bits)) {
    case FpClass::NaN: return std::numeric_limits<double>::quiet_NaN();
    case FpClass::PosInf: return std::numeric_limits<double>::infinity();
    case FpClass::NegInf: return -std::numeric_limits<double>::infinity();
    case FpClass::Finite: break;
  }
  const bool neg = (bits >> (f.exp_bits + f.man_bits)) & 1;
  const auto e = static_cast<int>((bits >> f.man_bits) & ((1u << f.exp_bits) - 1));
  const auto m = static_cast<double>(bits & ((std::uint64_t{1} << f.man_bits) - 1));
  const double frac = m / static_cast<double>(std::uint64_t{1} << f.man_bits);
  // Subnormal (e == 0): 0.m * 2^(1-bias); normal: 1.m * 2^(e-bias).
  const double v = e == 0 ? std::ldexp(frac, 1 - f.bias) : std::ldexp(1.0 + frac, e - f.bias);
  return neg ? -v : v;
}

template <typename T>
T load(std::uint64_t bits) {
  T v;
  if constexpr (sizeof(T) == 8) {
    std::memcpy(&v, &bits, 8);
  } else {
    const auto b = static_cast<std::uint32_t>(bits);
    std::memcpy(&v, &b, sizeof(T));
  }
  return v;
}

}  // namespace

std::uint64_t raw_bits(const Tensor& t, std::uint64_t i) {
  const std::span<const std::uint8_t> b = t.bytes();
  if (t.dtype == DType::F4) return (b[i / 2] >> (4 * (i % 2))) & 0xf;
  if (dtype_bits(t.dtype) == 6) {  // LSB-first 6-bit stream (tensor.h)
    const std::uint64_t at = 6 * i;
    unsigned v = b[at / 8] >> (at % 8);
    if (at % 8 > 2) v |= unsigned{b[at / 8 + 1]} << (8 - at % 8);
    return v & 0x3f;
  }
  const auto w = static_cast<std::size_t>(dtype_bits(t.dtype) / 8);
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < w; ++k) v |= std::uint64_t{b[i * w + k]} << (8 * k);
  return v;
}

FpClass classify_bits(DType t, std::uint64_t bits) {
  if (is_minifloat(t)) return classify_minifloat(layout(t), bits);
  double v = 0;
  if (t == DType::F32)
    v = load<float>(bits);
  else if (t == DType::F64)
    v = load<double>(bits);
  else if (t == DType::F8_E8M0)
    return bits == 0xff ? FpClass::NaN : FpClass::Finite;
  else
    return FpClass::Finite;
  if (std::isnan(v)) return FpClass::NaN;
  if (std::isinf(v)) return v > 0 ? FpClass::PosInf : FpClass::NegInf;
  return FpClass::Finite;
}

double decode_bits(DType t, std::uint64_t bits) {
  if (is_minifloat(t)) return decode_minifloat(layout(t), bits);
  switch (t) {
    case DType::F32: return load<float>(bits);
    case DType::F64: return load<double>(bits);
    case DType::F8_E8M0:
      return bits == 0xff ? std::numeric_limits<double>::quiet_NaN()
                          : std::ldexp(1.0, static_cast<int>(bits) - 127);
    case DType::I8: return static_cast<std::int8_t>(bits);
    case DType::I16: return static_cast<std::int16_t>(bits);
    case DType::I32: return static_cast<std::int32_t>(bits);
    case DType::I64: return static_cast<double>(static_cast<std::int64_t>(bits));
    default: return static_cast<double>(bits);  // unsigned and BOOL
  }
}

std::int64_t ulp_ordinal(DType t, std::uint64_t bits) {
  const int w = dtype_bits(t);
  const bool sign_magnitude = dtype_is_float(t) && t != DType::F8_E8M0;
  if (sign_magnitude) {
    const std::uint64_t mag = bits & ((std::uint64_t{1} << (w - 1)) - 1);
    const bool neg = (bits >> (w - 1)) & 1;
    return neg ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
  }
  switch (t) {
    case DType::I8: return static_cast<std::int8_t>(bits);
    case DType::I16: return static_cast<std::int16_t>(bits);
    case DType::I32: return static_cast<std::int32_t>(bits);
    case DType::I64:
    case DType::U64: return static_cast<std::int64_t>(bits);
    default: return static_cast<std::int64_t>(bits);
  }
}

bool has_code_histogram(DType t) { return dtype_bits(t) <= 8 && dtype_is_float(t); }

}  // namespace fp8ref::tensor_io
