// Reader for the tensors-only subset of torch.save zip archives (torch >= 1.6 format:
// <prefix>/data.pkl + <prefix>/data/<key> storages, torch/serialization.py). Nested dicts, lists
// and tuples of tensors become dotted names ("model.layers.0.w", "0"); non-tensor scalars are kept
// as metadata. Strided and offset views are materialised contiguous.
#pragma once

#include "byte_reader.h"
#include "tensor.h"
#include "zip_archive.h"

namespace fp8ref::tensor_io {

TensorFile parse_torch_zip(const ZipReader& zip, const ReadOptions& opts);
TensorFile parse_torch_zip(Bytes bytes, std::string_view file, const ReadOptions& opts);
bool zip_is_torch(const ZipReader& zip);  // has a <prefix>/data.pkl member

// Legacy (pre-1.6) torch.save files: a bare pickle stream starting with the magic number, or tar.
bool looks_like_legacy_torch(Bytes bytes);

}  // namespace fp8ref::tensor_io
