// Writing a torch.save zip archive (docs/cli.md "File formats"): the layout torch 2.x's
// torch.save writes (torch/serialization.py _save): `archive/data.pkl`, a protocol-2 pickle of a
// dict name -> torch._utils._rebuild_tensor_v3(persistent storage, 0, size, stride, False,
// OrderedDict(), dtype), one `archive/data/<i>` member of raw little-endian bytes per tensor, and
// `archive/byteorder` ("little"), `archive/version` ("3\n"). F4 is written as float4_e2m1fn_x2:
// two codes per byte, element 0 in the low nibble, the last dimension halved.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tensor.h"

namespace fp8ref::tensor_io {

// The archive's bytes (stored, uncompressed). A dtype torch lacks, a 0-d F4 tensor or an F4
// tensor whose last dimension is odd is refused (Error naming `file`).
std::vector<std::uint8_t> serialize_torch_save(const TensorFile& tf, std::string_view file);

}  // namespace fp8ref::tensor_io
