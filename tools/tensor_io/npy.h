// NumPy .npy (format versions 1.0, 2.0, 3.0; numpy/lib/format.py) and .npz (zip of .npy) I/O.
// Reading: Fortran order is converted to C order, big-endian data is byte-swapped, 0-d and empty
// arrays are legal; '<f1' (ml_dtypes' float8_e5m2, the one type it writes so) reads as F8_E5M2;
// the opaque descr ('<V1', '<V2') needs ReadOptions::as_dtype (or as_by_name for its tensor).
// Writing: types numpy lacks (bf16, fp8, fp4) are written the way ml_dtypes' np.save writes them
// ('<V2' / '|V1', fp4 one value per byte), so np.load(f).view(ml_dtypes.X) restores them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "byte_reader.h"
#include "tensor.h"

namespace fp8ref::tensor_io {

// The name of a single-array .npy file's one tensor (ReadOptions::as_by_name, TensorFile).
inline constexpr std::string_view kNpyTensorName = "tensor";

Tensor parse_npy(Bytes bytes, std::string_view file, const ReadOptions& opts);
std::vector<std::uint8_t> serialize_npy(const Tensor& t, std::string_view file);

// Tensor names are the member names without ".npy" (np.savez convention).
TensorFile parse_npz(Bytes bytes, std::string_view file, const ReadOptions& opts);
std::vector<std::uint8_t> serialize_npz(const TensorFile& tf, std::string_view file);  // stored

bool looks_like_npy(Bytes bytes);

}  // namespace fp8ref::tensor_io
