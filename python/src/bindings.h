// Shared pieces of the nanobind module fp8ref._core (docs/python.md): array aliases, numpy
// arrays that own a moved std::vector (no copy on the way out), and the registration functions
// of the codec and tensor halves.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tensor_io/tensor.h"

namespace fp8ref::py {

namespace nb = nanobind;

// Any C-contiguous CPU array (buffer protocol or DLPack), read only, any dtype and rank.
using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
// Raw bytes of one tensor: the Python layer passes a uint8 view of the caller's array.
using ByteArray =
    nb::ndarray<nb::ro, const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
using NumpyArray = nb::ndarray<nb::numpy, T>;

// A numpy array of `shape` that owns `v` (moved to the heap, freed by the array's capsule).
template <class T>
NumpyArray<T> owning_array(std::vector<T>&& v, const std::vector<std::size_t>& shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return NumpyArray<T>(heap->data(), shape.size(), shape.data(), owner);
}

// The shape of `a` as size_t extents.
inline std::vector<std::size_t> shape_of(const AnyArray& a) {
  std::vector<std::size_t> s(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) s[i] = a.shape(i);
  return s;
}

// A tensor crossing into and out of the module: (dtype name, shape, 1-D bytes).
using PyTensor = std::tuple<std::string, std::vector<std::int64_t>, ByteArray>;
using OutTensor = std::tuple<std::string, std::vector<std::int64_t>, NumpyArray<std::uint8_t>>;
// The owned tensor of a PyTensor (ValueError on a dtype / size mismatch), and back (no copy).
tensor_io::Tensor to_tensor(const std::string& what, const PyTensor& t);
OutTensor from_tensor(tensor_io::Tensor&& t);

void register_codec(nb::module_& m);
void register_tensors(nb::module_& m);
void register_oracle(nb::module_& m);  // oracle_bindings.cpp
void register_presets(nb::module_& m);  // preset_bindings.cpp

}  // namespace fp8ref::py
