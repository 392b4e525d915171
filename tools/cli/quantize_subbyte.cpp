// fp8-check quantize for the FP4 / FP6 recipes (quantize_subbyte.h): NVFP4 through
// numerics/nvfp4_recipe.h, MXFP4 / MXFP6 through numerics/mx_subbyte_quantize.h, one (rows, cols)
// plane at a time ((G, N, K) inputs: G planes, each with its own NVFP4 global scale).
#include "cli/quantize_subbyte.h"

#include <cstring>
#include <optional>
#include <vector>

#include "cli/errors.h"
#include "numerics/mx_subbyte_quantize.h"
#include "numerics/nvfp4_recipe.h"
#include "numerics/scale_layout.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {
namespace {

using tensor_io::DType;
using tensor_io::Tensor;

struct SubbyteChoice {
  bool nvfp4;
  Nvfp4Recipe nv;
  Runtime rt;
  Format elem;
  RecipeKind mx_mode;  // MXFP4 / MXFP6 scale mode
  int block_rows;
  bool blocked;  // 128x4 layout
};

Runtime parse_runtime(const std::string& s, Runtime dflt) {
  if (s.empty()) return dflt;
  for (const Runtime r : {Runtime::torch_cpu, Runtime::torch_cuda, Runtime::cuda_kernel})
    if (to_string(r) == s) return r;
  throw UsageError("unknown runtime '" + s + "' (one of: torch_cpu, torch_cuda, cuda_kernel)");
}

// The scale mode of an MX recipe name's suffix: "" or "_floor" (torchao's default), "_ceil",
// "_even", "_rceil".
RecipeKind mx_subbyte_mode(const std::string& suffix) {
  if (suffix.empty() || suffix == "_floor") return RecipeKind::mx_floor;
  if (suffix == "_ceil") return RecipeKind::mx_ceil;
  if (suffix == "_even") return RecipeKind::mx_even;
  if (suffix == "_rceil") return RecipeKind::mx_rceil;
  throw UsageError("unknown MX scale mode '" + suffix + "' (floor, ceil, even, rceil)");
}

SubbyteChoice parse_choice(const QuantizeOptions& o) {
  SubbyteChoice c{};
  if (o.f6_codes != "u8" && o.f6_codes != "packed")
    throw UsageError("--f6-codes: expected u8 or packed, not " + o.f6_codes);
  if (o.f6_codes == "packed" && o.recipe.rfind("mxfp6", 0) != 0)
    throw UsageError("--f6-codes packed applies to the mxfp6 recipes, not " + o.recipe);
  c.nvfp4 = o.recipe.rfind("nvfp4_", 0) == 0;
  const std::string fam = c.nvfp4 ? "ue4m3" : "e8m0";
  if (o.layout != fam + "_row_major" && o.layout != fam + "_blocked_128x4")
    throw UsageError("recipe " + o.recipe + " writes " + fam + " scales: layout " + fam +
                     "_row_major or " + fam + "_blocked_128x4, not " + o.layout);
  c.blocked = o.layout == fam + "_blocked_128x4";
  if (o.pow2 || o.epsilon != 0.0f)
    throw UsageError("recipe " + o.recipe + " takes no --pow2 / --epsilon");
  if (c.nvfp4) {
    const std::optional<Nvfp4Recipe> nv = nvfp4_recipe_from_name(o.recipe);
    if (!nv) throw UsageError("unknown recipe " + o.recipe);
    c.nv = *nv;
    c.rt = parse_runtime(o.runtime,
                         c.nv == Nvfp4Recipe::te ? Runtime::cuda_kernel : Runtime::torch_cuda);
    c.elem = Format::e2m1;
    if (o.block != "1x16" && !(o.block == "16x16" && c.nv == Nvfp4Recipe::te))
      throw UsageError("recipe " + o.recipe + " takes --block 1x16" +
                       (c.nv == Nvfp4Recipe::te ? " or 16x16" : "") + ", not " + o.block);
    c.block_rows = o.block == "16x16" ? 16 : 1;
    return c;
  }
  if (o.block != "1x32")
    throw UsageError("recipe " + o.recipe + " takes --block 1x32, not " + o.block);
  const bool fp4 = o.recipe.rfind("mxfp4", 0) == 0;
  c.mx_mode = mx_subbyte_mode(o.recipe.substr(5));
  const bool rceil = c.mx_mode == RecipeKind::mx_rceil;
  if (!o.runtime.empty() && o.runtime != "torch_cpu" && o.runtime != "torch_cuda" &&
      !(rceil && o.runtime == "cuda_kernel"))
    throw UsageError("recipe " + o.recipe + " is torchao's to_mx: runtime torch_cpu or torch_cuda" +
                     (rceil ? " (or cuda_kernel: cvt.rp.satfinite.ue8m0x2)" : ""));
  c.rt = parse_runtime(o.runtime, Runtime::torch_cuda);
  if (fp4) {
    if (o.format != "e4m3" && o.format != "e2m1")
      throw UsageError("recipe " + o.recipe + " has e2m1 elements, not " + o.format);
    c.elem = Format::e2m1;
  } else {  // mxfp6: e2m3 (the default) or e3m2
    if (o.format != "e4m3" && o.format != "e2m3" && o.format != "e3m2")
      throw UsageError("recipe " + o.recipe + " has e2m3 or e3m2 elements, not " + o.format);
    c.elem = o.format == "e3m2" ? Format::e3m2 : Format::e2m3;
  }
  return c;
}

// The input as f32 values (bf16 / f16 are exact in f32).
std::vector<float> source_f32(const Tensor& x) {
  if (x.dtype != DType::F32 && x.dtype != DType::BF16 && x.dtype != DType::F16)
    throw UsageError("input dtype " + std::string(tensor_io::dtype_name(x.dtype)) +
                     " cannot be quantized (F32, BF16 or F16)");
  std::vector<float> v(x.numel());
  for (std::uint64_t i = 0; i < x.numel(); ++i)
    v[i] = float(tensor_io::decode_bits(x.dtype, tensor_io::raw_bits(x, i)));
  return v;
}

// The codes, scales and (NVFP4) global decode scales of every group, concatenated.
struct SubbytePlanes {
  std::vector<std::uint8_t> codes, scales;
  std::vector<float> global;
};

SubbytePlanes quantize_groups(const SubbyteChoice& c, const std::vector<float>& v,
                              std::int64_t groups, std::int64_t rows, std::int64_t cols,
                              const std::string& source_name) {
  SubbytePlanes out;
  try {
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* p = v.data() + g * rows * cols;
      if (c.nvfp4) {
        const Nvfp4Quantized q = nvfp4_quantize(c.nv, c.rt, p, rows, cols, c.block_rows);
        out.codes.insert(out.codes.end(), q.codes.begin(), q.codes.end());
        out.scales.insert(out.scales.end(), q.scales.begin(), q.scales.end());
        out.global.push_back(q.global_decode);
      } else {
        const MxSubbyteQuantized q = mx_subbyte_quantize(c.elem, c.mx_mode, c.rt, p, rows, cols);
        out.codes.insert(out.codes.end(), q.codes.begin(), q.codes.end());
        out.scales.insert(out.scales.end(), q.scales.begin(), q.scales.end());
      }
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(source_name + ": " + e.what());
  }
  return out;
}

}  // namespace

bool is_subbyte_recipe(const std::string& r) {
  // NVFP4: the names of numerics/nvfp4_recipe.h but nvfp4_torchao_single_level (library only: the
  // CLI's torchao recipes take the per-tensor scale).
  if (const auto nv = nvfp4_recipe_from_name(r)) return *nv != Nvfp4Recipe::torchao_single_level;
  for (const char* fam : {"mxfp4", "mxfp6"})
    for (const char* mode : {"", "_floor", "_ceil", "_even", "_rceil"})
      if (r == std::string(fam) + mode) return true;
  return false;
}

tensor_io::TensorFile quantize_subbyte_tensor(const Tensor& x, const QuantizeOptions& o,
                                              const std::string& source_name) {
  const SubbyteChoice c = parse_choice(o);
  if (x.shape.size() != 2 && x.shape.size() != 3)
    throw UsageError(source_name + ": shape " + tensor_io::shape_string(x.shape) +
                     " is not 2-D (M, K) or 3-D (G, N, K)");
  const std::int64_t groups = x.shape.size() == 3 ? x.shape[0] : 1;
  const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  const std::int64_t blk = c.nvfp4 ? 16 : kMxSubbyteBlock, nb = (cols + blk - 1) / blk;
  if (c.elem == Format::e2m1 && cols % 2 != 0)
    throw UsageError(source_name + ": FP4 codes pack two per byte along rows: K = " +
                     std::to_string(cols) + " must be even");
  const SubbytePlanes q = quantize_groups(c, source_f32(x), groups, rows, cols, source_name);
  const std::vector<std::uint8_t>&codes = q.codes, &scales = q.scales;
  const std::vector<float>& global = q.global;
  tensor_io::TensorFile out;
  const bool f6_packed = c.elem != Format::e2m1 && o.f6_codes == "packed";
  if (c.elem == Format::e2m1)
    out.tensors.push_back({"codes", tensor_io::pack_unpacked_f4(codes, x.shape, source_name)});
  else if (f6_packed)
    out.tensors.push_back(
        {"codes", tensor_io::pack_unpacked_subbyte(
                      codes, x.shape, c.elem == Format::e3m2 ? DType::F6_E3M2 : DType::F6_E2M3,
                      source_name)});
  else
    out.tensors.push_back({"codes", Tensor{DType::U8, x.shape, codes}});
  const ScaleGridE8m0 grid{groups, rows, nb, scales};
  std::vector<std::int64_t> sshape{rows, nb};
  if (c.blocked) sshape = {(rows + 127) / 128 * 128, (nb + 3) / 4 * 4};
  if (groups > 1 || x.shape.size() == 3) sshape.insert(sshape.begin(), groups);
  const DType sd = c.blocked ? DType::U8 : c.nvfp4 ? DType::F8_E4M3 : DType::F8_E8M0;
  out.tensors.push_back(
      {"scales",
       Tensor{sd, sshape, c.blocked ? serialize(ScaleLayoutE8m0::blocked_128x4, grid) : scales}});
  if (c.nvfp4) {
    Tensor gs{DType::F32,
              x.shape.size() == 3 ? std::vector<std::int64_t>{groups} : std::vector<std::int64_t>{},
              std::vector<std::uint8_t>(global.size() * 4)};
    std::memcpy(gs.data.data(), global.data(), gs.data.size());
    out.tensors.push_back({"global_scale", std::move(gs)});
  }
  out.metadata = {{"fp8ref.op", "quantize"},
                  {"fp8ref.recipe", o.recipe},
                  {"fp8ref.format", std::string(to_string(c.elem))},
                  {"fp8ref.runtime", std::string(to_string(c.rt))},
                  {"fp8ref.block", o.block},
                  {"fp8ref.layout", o.layout},
                  {"fp8ref.codes",
                   c.elem == Format::e2m1 ? "e2m1 packed two per byte, element 2i in the low nibble"
                   : f6_packed ? std::string(to_string(c.elem)) + " packed 6 bits each, LSB first"
                               : std::string(to_string(c.elem)) + " one code per byte, bits 5:0"},
                  {"fp8ref.scales", c.nvfp4 ? "ue4m3 codes; x ~= e2m1 * ue4m3 * global_scale"
                                            : "E8M0 codes, s = 2^(code - 127), 0xFF NaN"},
                  {"fp8ref.source", source_name},
                  {"fp8ref.source_dtype", std::string(tensor_io::dtype_name(x.dtype))}};
  return out;
}

}  // namespace fp8ref::cli
