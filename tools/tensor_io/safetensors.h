// safetensors reader/writer (https://github.com/huggingface/safetensors, format section):
// u64 LE header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, __metadata__},
// then the byte buffer. Offsets are validated: in range, non-overlapping, span == shape x dtype.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "byte_reader.h"
#include "tensor.h"

namespace fp8ref::tensor_io {

inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;  // same limit as the Rust crate

// `file` is only used in messages. Tensors come back in data-offset order.
TensorFile parse_safetensors(Bytes bytes, std::string_view file, const ReadOptions& opts);
std::vector<std::uint8_t> serialize_safetensors(const TensorFile& tf, std::string_view file);

TensorFile read_safetensors(const std::string& path, const ReadOptions& opts);  // mmaps
void write_safetensors(const std::string& path, const TensorFile& tf);

}  // namespace fp8ref::tensor_io
