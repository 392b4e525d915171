// Format sniffing and dispatch (tensor_file.h).
#include "tensor_file.h"

#include <new>
#include <stdexcept>

#include "mapped_file.h"
#include "npy.h"
#include "safetensors.h"
#include "torch_save_writer.h"
#include "torch_zip.h"
#include "zip_archive.h"

namespace fp8ref::tensor_io {

std::string_view format_name(FileFormat f) {
  switch (f) {
    case FileFormat::Safetensors: return "safetensors";
    case FileFormat::Npy: return "npy";
    case FileFormat::Npz: return "npz";
    case FileFormat::TorchZip: return "torch.save zip";
  }
  return "?";
}

TensorFile parse_tensor_bytes(Bytes bytes, std::string_view file, const ReadOptions& opts_in,
                              FileFormat* format) {
  const BudgetScope scope(opts_in, bytes.size(), file);
  const ReadOptions& opts = scope.options();
  FileFormat f;
  TensorFile tf;
  if (looks_like_npy(bytes)) {
    f = FileFormat::Npy;
    tf.tensors.push_back({std::string(kNpyTensorName), parse_npy(bytes, file, opts)});
  } else if (looks_like_zip(bytes)) {
    const ZipReader zip(bytes, std::string(file), opts);
    f = zip_is_torch(zip) ? FileFormat::TorchZip : FileFormat::Npz;
    tf = f == FileFormat::TorchZip ? parse_torch_zip(zip, opts) : parse_npz(bytes, file, opts);
  } else if (bytes.size() >= 9 && bytes[8] == '{') {
    // Before the pickle checks: a safetensors header length is any 8-byte number, so its first
    // byte may be 0x80 (a pickle's PROTO opcode); a pickle never has '{' at offset 8 after it.
    f = FileFormat::Safetensors;
    tf = parse_safetensors(bytes, file, opts);
  } else if (looks_like_legacy_torch(bytes)) {
    fail(file,
         "legacy (pre-1.6, non-zip) torch.save format is not supported; re-save it with torch >= "
         "1.6");
  } else if (!bytes.empty() && bytes[0] == 0x80) {
    fail(file, "bare pickle stream is not supported (only torch.save zip archives)");
  } else {
    fail(file, "unrecognised file format (expected safetensors, npy, npz or a torch.save zip)");
  }
  for (const auto& [name, dtype] : opts.as_by_name)
    if (tf.find(name) == nullptr)
      fail(file, "--as " + name + "=" + std::string(dtype_name(dtype)) +
                     ": the file holds no tensor '" + name + "'");
  if (format != nullptr) *format = f;
  return tf;
}

// A size the checks let through can still exceed this machine's memory: that is reported as
// one line naming the file, never as a bare exception name.
TensorFile read_tensor_file(const std::string& path, const ReadOptions& opts, FileFormat* format) {
  try {
    if (opts.map) {
      auto f = std::make_shared<const MappedFile>(path);
      ReadOptions mapped = opts;
      mapped.mapping = f;
      return parse_tensor_bytes(f->bytes(), path, mapped, format);
    }
    const MappedFile f(path);
    return parse_tensor_bytes(f.bytes(), path, opts, format);
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory reading it (FP8REF_MAX_READ_BYTES lowers the read limit)");
  } catch (const std::length_error&) {
    fail(path, "a size in the file is too large for this machine");
  }
}

void write_tensor_file(const std::string& path, const TensorFile& tf) {
  auto ends_with = [&](std::string_view ext) {
    return path.size() >= ext.size() &&
           path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends_with(".safetensors")) {
    write_safetensors(path, tf);
  } else if (ends_with(".npz")) {
    write_file_atomic(path, serialize_npz(tf, path));
  } else if (ends_with(".npy")) {
    if (tf.tensors.size() != 1) fail(path, "an .npy file holds exactly one tensor");
    write_file_atomic(path, serialize_npy(tf.tensors[0].tensor, path));
  } else if (ends_with(".pt") || ends_with(".pth")) {
    write_file_atomic(path, serialize_torch_save(tf, path));
  } else {
    fail(path, "cannot tell the output format from the extension (.safetensors, .npz, .npy, .pt)");
  }
}

}  // namespace fp8ref::tensor_io
