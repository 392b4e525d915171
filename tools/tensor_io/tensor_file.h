// Format detection and dispatch for fp8-check: one entry point that reads any supported tensor
// file (safetensors, npy, npz, torch.save zip) and one that writes by file extension.
#pragma once

#include <string>

#include "byte_reader.h"
#include "tensor.h"

namespace fp8ref::tensor_io {

enum class FileFormat { Safetensors, Npy, Npz, TorchZip };

std::string_view format_name(FileFormat f);
// Sniffs the content (not the extension). Single-array npy files hold one tensor named "tensor".
TensorFile parse_tensor_bytes(Bytes bytes, std::string_view file, const ReadOptions& opts,
                              FileFormat* format = nullptr);
TensorFile read_tensor_file(const std::string& path, const ReadOptions& opts,
                            FileFormat* format = nullptr);

// Writes by extension: .safetensors, .npz (stored), .npy (exactly one tensor).
void write_tensor_file(const std::string& path, const TensorFile& tf);

}  // namespace fp8ref::tensor_io
