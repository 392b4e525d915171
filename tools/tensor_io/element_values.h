// Per-element views of a Tensor for inspect/diff: raw bit pattern, decoded value (double), value
// class (finite / NaN / +Inf / -Inf) and the format-ULP ordinal. Decoding follows the format
// definitions (docs/design.md §4): e4m3fn bias 7, no Inf, S.1111.111 NaN; e5m2 bias 15 IEEE-like;
// e8m0 2^(e-127), 0xFF NaN; *fnuz: 0x80 the only NaN, bias 8/16; e2m1 bias 1, finite only.
#pragma once

#include <cstdint>

#include "tensor.h"

namespace fp8ref::tensor_io {

// The class of one decoded code, as C's fpclassify splits it (finite, NaN, infinite) with the
// infinity's sign; not the generators' input classes (cases::ValueClass,
// tools/cases/value_class.h).
enum class FpClass : std::uint8_t { Finite, NaN, PosInf, NegInf };

std::uint64_t raw_bits(const Tensor& t, std::uint64_t i);  // F4: the 4-bit code
double decode_bits(DType t, std::uint64_t bits);  // NaN for NaN codes; integers exact up to 2^53
FpClass classify_bits(DType t, std::uint64_t bits);

// Ordinal on the format's number line: adjacent representable values differ by 1, +0 and -0 both
// map to 0, ±Inf sit one step beyond ±max. Integer types: the integer itself. Meaningless for NaN.
std::int64_t ulp_ordinal(DType t, std::uint64_t bits);

// Bits of the field "code" used for histograms: 8-bit floats and F4 only.
bool has_code_histogram(DType t);

}  // namespace fp8ref::tensor_io
