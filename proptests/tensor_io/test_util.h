// Shared helpers for the tensor_io tests: deterministic tensors of every dtype and byte builders
// for hand-made malformed files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor_io/tensor.h"

namespace fp8ref::tensor_io::test {

inline constexpr DType kAllDTypes[] = {
    DType::F64,     DType::F32,         DType::F16,         DType::BF16,    DType::I64,
    DType::I32,     DType::I16,         DType::I8,          DType::U8,      DType::U16,
    DType::U32,     DType::U64,         DType::BOOL,        DType::F8_E4M3, DType::F8_E5M2,
    DType::F8_E8M0, DType::F8_E4M3FNUZ, DType::F8_E5M2FNUZ, DType::F4};

// Bytes are a fixed pseudo-random sequence (BOOL gets 0/1), so every bit pattern class appears.
inline Tensor make_tensor(DType t, std::vector<std::int64_t> shape, std::uint32_t seed = 1) {
  Tensor x{t, std::move(shape), {}};
  std::uint64_t n = 1;
  for (auto d : x.shape) n *= static_cast<std::uint64_t>(d);
  x.data.resize(static_cast<std::size_t>(bytes_for(t, n)));
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (auto& b : x.data) {
    s = s * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(t == DType::BOOL ? (s >> 31) : (s >> 24));
  }
  if (t == DType::F4 && n % 2 == 1 && !x.data.empty())
    x.data.back() &= 0x0f;  // unused nibble is zero
  return x;
}

inline std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

inline void put_le(std::vector<std::uint8_t>& v, std::uint64_t x, int n) {
  for (int i = 0; i < n; ++i) v.push_back(i < 8 ? static_cast<std::uint8_t>(x >> (8 * i)) : 0);
}

// safetensors file from a raw header string and a payload.
inline std::vector<std::uint8_t> safetensors_raw(const std::string& header, std::size_t payload) {
  std::vector<std::uint8_t> v;
  put_le(v, header.size(), 8);
  v.insert(v.end(), header.begin(), header.end());
  v.resize(v.size() + payload, 0x3c);
  return v;
}

}  // namespace fp8ref::tensor_io::test
