// fp8-check quantize (quantize.h): reads one f32 / bf16 / f16 tensor, quantizes it with
// fp8ref::quantize (reference/quantize.h) and writes "codes" (F8_E4M3 / F8_E5M2, the input's
// shape) and "scales" (the layout's bytes: F32, F8_E8M0, U8 or I32) with the recipe as metadata.
#include "cli/quantize.h"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "cases/enum_tokens.h"
#include "cli/errors.h"
#include "cli/quantize_subbyte.h"
#include "numerics/scale_layout.h"
#include "reference/quantize.h"
#include "reference/swiglu.h"
#include "tensor_io/mapped_file.h"
#include "tensor_io/tensor_file.h"

#ifdef FP8REF_CLI_HAVE_GPU
#include "gpu/device.h"
#include "gpu/quantize.h"
#endif

namespace fp8ref::cli {
namespace {

using tensor_io::DType;
using tensor_io::Tensor;

constexpr std::array kFormats = {Format::e4m3, Format::e5m2};

struct Layout {
  std::optional<ScaleLayoutF32> f32;
  std::optional<ScaleLayoutE8m0> e8m0;
};
Layout parse_layout(const std::string& s) {
  constexpr ScaleLayoutF32 f32s[] = {ScaleLayoutF32::row_major, ScaleLayoutF32::col_major,
                                     ScaleLayoutF32::tma_mn_major, ScaleLayoutF32::te_compact,
                                     ScaleLayoutF32::cublas_k_major_pad4};
  constexpr ScaleLayoutE8m0 e8s[] = {ScaleLayoutE8m0::row_major, ScaleLayoutE8m0::blocked_128x4,
                                     ScaleLayoutE8m0::deepgemm_packed};
  std::string names;
  for (const auto l : f32s) {
    if (to_string(l) == s) return {l, std::nullopt};
    names += std::string(names.empty() ? "" : ", ") + std::string(to_string(l));
  }
  for (const auto l : e8s) {
    if (to_string(l) == s) return {std::nullopt, l};
    names += ", " + std::string(to_string(l));
  }
  throw UsageError("unknown scale layout '" + s + "' (one of: " + names + ")");
}

// The serialised scale tensor's dtype and per-group shape (docs/recipes.md "CLI").
std::pair<DType, std::vector<std::int64_t>> scale_tensor_shape(const Layout& l, std::int64_t r,
                                                               std::int64_t c) {
  const auto up = [](std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; };
  if (l.f32) {
    switch (*l.f32) {
      case ScaleLayoutF32::row_major:
      case ScaleLayoutF32::te_compact: return {DType::F32, {r, c}};
      case ScaleLayoutF32::col_major: return {DType::F32, {c, r}};
      case ScaleLayoutF32::tma_mn_major: return {DType::F32, {c, up(r, 4)}};
      case ScaleLayoutF32::cublas_k_major_pad4: return {DType::F32, {r, up(c, 4)}};
    }
  }
  switch (*l.e8m0) {
    case ScaleLayoutE8m0::row_major: return {DType::F8_E8M0, {r, c}};
    case ScaleLayoutE8m0::blocked_128x4: return {DType::U8, {up(r, 128), up(c, 4)}};
    case ScaleLayoutE8m0::deepgemm_packed: return {DType::I32, {up(c, 4) / 4, up(r, 4)}};
  }
  throw UsageError("unknown scale layout");
}

// The input as row-major source bits (copied: tensor bytes carry no alignment promise).
struct SourceBits {
  Source src;
  std::vector<std::uint32_t> b32;
  std::vector<std::uint16_t> b16;
  const void* data() const {
    return src == Source::f32 ? static_cast<const void*>(b32.data()) : b16.data();
  }
};
SourceBits source_bits(const Tensor& x) {
  SourceBits s{};
  switch (x.dtype) {
    case DType::F32: s.src = Source::f32; break;
    case DType::BF16: s.src = Source::bf16; break;
    case DType::F16: s.src = Source::f16; break;
    default:
      throw UsageError("input dtype " + std::string(tensor_io::dtype_name(x.dtype)) +
                       " cannot be quantized (F32, BF16 or F16)");
  }
  if (s.src == Source::f32) {
    s.b32.resize(x.data.size() / 4);
    std::memcpy(s.b32.data(), x.data.data(), s.b32.size() * 4);
  } else {
    s.b16.resize(x.data.size() / 2);
    std::memcpy(s.b16.data(), x.data.data(), s.b16.size() * 2);
  }
  return s;
}

Recipe make_recipe(const QuantizeOptions& o, bool* default_runtime) {
  const RecipeKind kind = cases::parse_token<UsageError>("recipe", o.recipe, kAllRecipeKinds);
  *default_runtime = o.runtime.empty();
  const Runtime rt =
      o.runtime.empty()
          ? (kind == RecipeKind::te || kind == RecipeKind::mx_rceil ? Runtime::cuda_kernel
                                                                    : Runtime::torch_cuda)
          : cases::parse_token<UsageError>("runtime", o.runtime, kAllRuntimes);
  const Recipe r{kind, cases::parse_token<UsageError>("format", o.format, kFormats), rt, o.pow2,
                 o.epsilon};
  try {
    validate(r);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return r;
}

}  // namespace

namespace {

// The G planes of x quantized (after the library's shape check and the NaN policy).
std::vector<ref::Quantized> quantize_planes(const Tensor& x, const SourceBits& bits,
                                            const Recipe& r, ref::BlockGeometry g,
                                            const QuantizeOptions& o,
                                            const std::string& source_name) {
  const std::int64_t groups = x.shape.size() == 3 ? x.shape[0] : 1;
  const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  std::vector<ref::Quantized> planes;
  try {
    if (!o.allow_partial_blocks) require_library_shape(r, g, rows, cols);
    const std::size_t elem = bits.src == Source::f32 ? 4 : 2;
    for (std::int64_t i = 0; i < groups; ++i) {
      const ref::SourceView2d v{
          static_cast<const unsigned char*>(bits.data()) + std::size_t(i * rows * cols) * elem,
          bits.src,
          rows,
          cols,
          cols,
          1};
      check_nan_input(v, o.nan == "reject" ? ref::NanInput::reject : ref::NanInput::propagate);
      planes.push_back(quantize(v, r, g));
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(source_name + ": " + e.what());
  }
  return planes;
}

// The same planes from the GPU kernels (gpu/quantize.h), which write the grid row-major here; the
// layout is then serialised as on the CPU path, so both paths share everything but the kernel.
std::vector<ref::Quantized> quantize_planes_cuda(const Tensor& x, const SourceBits& bits,
                                                 const Recipe& r, ref::BlockGeometry g,
                                                 const QuantizeOptions& o,
                                                 const std::string& source_name) {
#ifdef FP8REF_CLI_HAVE_GPU
  if (!gpu::device_available()) throw UsageError("--device cuda: " + gpu::device_description());
  const std::int64_t groups = x.shape.size() == 3 ? x.shape[0] : 1;
  const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  if (bits.src != Source::bf16 && bits.src != Source::f32)
    throw UsageError(source_name + ": --device cuda takes F32 or BF16 input");
  std::vector<ref::Quantized> planes;
  try {
    if (o.allow_partial_blocks)
      throw std::invalid_argument(
          "--allow-partial-blocks is a CPU option (the kernels keep to "
          "the library's shapes)");
    const std::size_t elem = bits.src == Source::f32 ? 4 : 2;
    for (std::int64_t i = 0; i < groups; ++i) {
      const void* plane =
          static_cast<const unsigned char*>(bits.data()) + std::size_t(i * rows * cols) * elem;
      check_nan_input({plane, bits.src, rows, cols, cols, 1},
                      o.nan == "reject" ? ref::NanInput::reject : ref::NanInput::propagate);
      const gpu::HostQuantized h =
          gpu::quantize_host(plane, bits.src, rows, cols, r, g, {}, ScaleLayoutF32::row_major,
                             ScaleLayoutE8m0::row_major);
      ref::Quantized q{r, g, rows, cols, h.codes, h.grid.rows, h.grid.cols, {}, {}, {}};
      if (is_mx(r.kind)) q.e8m0 = h.scales;
      for (std::int64_t k = 0; k < h.grid.rows * h.grid.cols; ++k) {
        std::uint32_t w = 0;
        if (!is_mx(r.kind)) std::memcpy(&w, h.scales.data() + 4 * k, 4);
        q.scale.push_back(is_mx(r.kind) ? detail::e8m0_value_f32(h.scales[std::size_t(k)])
                                        : std::bit_cast<float>(w));
      }
      planes.push_back(std::move(q));
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(source_name + ": " + e.what());
  }
  return planes;
#else
  (void)x, (void)bits, (void)r, (void)g, (void)o;
  throw UsageError(source_name + ": --device cuda: this fp8-check was built without CUDA");
#endif
}

// The planes' scale grid serialised in the layout.
std::vector<std::uint8_t> scale_bytes(const std::vector<ref::Quantized>& planes, const Recipe& r,
                                      const Layout& layout, const QuantizeOptions& o,
                                      const std::string& source_name) {
  const std::int64_t groups = std::int64_t(planes.size());
  const std::int64_t sr = planes.empty() ? 0 : planes[0].scale_rows,
                     sc = planes.empty() ? 0 : planes[0].scale_cols;
  ScaleGridF32 f{groups, sr, sc, {}};
  for (const ref::Quantized& q : planes)
    for (const float s : q.scale) f.bits.push_back(std::bit_cast<std::uint32_t>(s));
  if (layout.f32) return serialize(*layout.f32, f);
  ScaleGridE8m0 grid{groups, sr, sc, {}};
  if (is_mx(r.kind)) {
    for (const ref::Quantized& q : planes)
      grid.codes.insert(grid.codes.end(), q.e8m0.begin(), q.e8m0.end());
  } else if (r.pow2) {
    try {
      grid = ue8m0_from_f32(f);
    } catch (const std::invalid_argument& e) {
      throw UsageError(source_name + ": layout " + o.layout + ": " + e.what() +
                       " (NaN, Inf or subnormal scale)");
    }
  } else {
    throw UsageError("layout " + o.layout + " stores E8M0 scales, and recipe " + o.recipe +
                     " gives f32 scales: use an MX recipe, --pow2, or an f32 layout");
  }
  return serialize(*layout.e8m0, grid);
}

// --swiglu: the input must be a merged (M, 2H) BF16 gate/up GEMM output (gate = columns [0, H),
// up = [H, 2H)).
void check_swiglu_input(const Tensor& x, const std::string& source_name) {
  if (x.dtype != DType::BF16 || x.shape.size() != 2 || x.shape[1] % 2 != 0)
    throw UsageError(source_name + ": --swiglu takes a BF16 (M, 2H) merged gate/up tensor, not " +
                     std::string(tensor_io::dtype_name(x.dtype)) + " " +
                     tensor_io::shape_string(x.shape));
}

// h = silu(gate) * up in f32 (reference/swiglu.h) as the (M, H) F32 tensor that is then
// quantized: the CPU side of gpu::swiglu_quantize's oracle (docs/recipes.md "SwiGLU").
Tensor swiglu_input(const Tensor& x, const std::string& source_name) {
  const std::int64_t rows = x.shape[0], H = x.shape[1] / 2;
  std::vector<std::uint16_t> gate_up(std::size_t(rows * 2 * H));
  if (!gate_up.empty()) std::memcpy(gate_up.data(), x.bytes().data(), gate_up.size() * 2);
  std::vector<float> h;
  try {
    h = ref::swiglu_merged_bf16(gate_up, rows, H);
  } catch (const std::exception& e) {
    throw UsageError(source_name + ": --swiglu: " + e.what());
  }
  Tensor t{DType::F32, {rows, H}, std::vector<std::uint8_t>(h.size() * 4)};
  if (!h.empty()) std::memcpy(t.data.data(), h.data(), t.data.size());
  return t;
}

// The NaN policy, the device and the tensor's shape of an FP8 quantization (UsageError on bad
// input), checked before any work.
void check_quantize_input(const Tensor& x, const QuantizeOptions& o,
                          const std::string& source_name) {
  if (o.nan != "propagate" && o.nan != "reject")
    throw UsageError("unknown NaN policy '" + o.nan + "' (one of: propagate, reject)");
  if (x.shape.size() != 2 && x.shape.size() != 3)
    throw UsageError(source_name + ": shape " + tensor_io::shape_string(x.shape) +
                     " is not 2-D (M, K) or 3-D (G, N, K)");
  if (o.device != "cpu" && o.device != "cuda")
    throw UsageError("unknown device '" + o.device + "' (one of: cpu, cuda)");
  // A zero extent leaves nothing to quantize; refused before the per-group loop, which would
  // otherwise run over every (empty) group of a huge leading dimension.
  if (x.numel() == 0)
    throw UsageError(source_name + ": shape " + tensor_io::shape_string(x.shape) +
                     " has no elements to quantize");
}

// The planes of a quantization computed elsewhere than from x's own bytes (--swiglu --device
// cuda: the fused kernel reads the gate/up and x only gives h's shape and dtype).
using PlanesOf = std::function<std::vector<ref::Quantized>(const Recipe&, ref::BlockGeometry)>;

tensor_io::TensorFile quantize_tensor_planes(const Tensor& x, const QuantizeOptions& o,
                                             const std::string& source_name,
                                             const PlanesOf* planes_of);

// --swiglu --device cuda: gpu::swiglu_quantize on the merged gate/up, the (M, H) planes of h over
// 1x128 (MX: 1x32) blocks, the one geometry the fused kernel writes.
std::vector<ref::Quantized> swiglu_planes_cuda(const Tensor& gate_up, const Recipe& r,
                                               ref::BlockGeometry g, const QuantizeOptions& o,
                                               const std::string& source_name) {
#ifdef FP8REF_CLI_HAVE_GPU
  if (!gpu::device_available()) throw UsageError("--device cuda: " + gpu::device_description());
  const ref::BlockGeometry fused =
      is_mx(r.kind) ? ref::BlockGeometry::b1x32 : ref::BlockGeometry::b1x128;
  if (g != fused)
    throw UsageError("--swiglu --device cuda quantizes h over " + std::string(to_string(fused)) +
                     " blocks (the fused kernel), not " + std::string(to_string(g)));
  if (o.allow_partial_blocks)
    throw UsageError(
        "--allow-partial-blocks is a CPU option (the kernels keep to the "
        "library's shapes)");
  const std::int64_t rows = gate_up.shape[0], two_h = gate_up.shape[1];
  std::vector<std::uint16_t> bits(std::size_t(rows * two_h));
  if (!bits.empty()) std::memcpy(bits.data(), gate_up.bytes().data(), bits.size() * 2);
  gpu::HostQuantized h;
  try {
    h = gpu::swiglu_quantize_host(bits.data(), rows, two_h, r, ScaleLayoutF32::row_major,
                                  ScaleLayoutE8m0::row_major);
  } catch (const std::invalid_argument& e) {
    throw UsageError(source_name + ": --swiglu: " + e.what());
  }
  ref::Quantized q{r, g, rows, two_h / 2, h.codes, h.grid.rows, h.grid.cols, {}, {}, {}};
  if (is_mx(r.kind)) q.e8m0 = h.scales;
  for (std::int64_t k = 0; k < h.grid.rows * h.grid.cols; ++k) {
    std::uint32_t w = 0;
    if (!is_mx(r.kind)) std::memcpy(&w, h.scales.data() + 4 * k, 4);
    q.scale.push_back(is_mx(r.kind) ? detail::e8m0_value_f32(h.scales[std::size_t(k)])
                                    : std::bit_cast<float>(w));
  }
  return {std::move(q)};
#else
  (void)gate_up, (void)r, (void)g, (void)o;
  throw UsageError(source_name + ": --device cuda: this fp8-check was built without CUDA");
#endif
}

}  // namespace

tensor_io::TensorFile quantize_tensor(const Tensor& x, const QuantizeOptions& o,
                                      const std::string& source_name) {
  return quantize_tensor_planes(x, o, source_name, nullptr);
}

namespace {

// --swiglu: h = silu(gate) * up of the merged gate/up x, quantized by the options' recipe (on the
// CPU from h's f32 values, on CUDA by the fused kernel), plus the metadata that says so.
tensor_io::TensorFile quantize_swiglu_tensor(const Tensor& x, const QuantizeOptions& o,
                                             const std::string& source_name) {
  check_swiglu_input(x, source_name);
  QuantizeOptions h_options = o;
  h_options.swiglu = false;
  tensor_io::TensorFile out;
  if (o.device == "cuda") {
    const Tensor h_shape{DType::F32, {x.shape[0], x.shape[1] / 2}, {}};
    const PlanesOf gpu_planes = [&](const Recipe& r, ref::BlockGeometry g) {
      return swiglu_planes_cuda(x, r, g, o, source_name);
    };
    out = quantize_tensor_planes(h_shape, h_options, source_name, &gpu_planes);
  } else {
    out = quantize_tensor_planes(swiglu_input(x, source_name), h_options, source_name, nullptr);
  }
  out.metadata["fp8ref.swiglu"] =
      "codes and scales of h = silu(gate) * up (f32), gate = input columns [0, H), up = [H, 2H)";
  return out;
}

// The output file of an FP8 quantization: codes in x's shape, scales in the layout's shape (a
// leading group dimension for 3-D x), and the fp8ref.* metadata that names the recipe.
tensor_io::TensorFile quantized_file(const std::vector<ref::Quantized>& planes, const Tensor& x,
                                     const Recipe& r, ref::BlockGeometry g, const Layout& layout,
                                     const QuantizeOptions& o, bool default_runtime,
                                     const std::string& source_name) {
  const std::int64_t groups = std::int64_t(planes.size());
  const std::int64_t sr = planes.empty() ? 0 : planes[0].scale_rows,
                     sc = planes.empty() ? 0 : planes[0].scale_cols;
  Tensor codes{r.elem == Format::e4m3 ? DType::F8_E4M3 : DType::F8_E5M2, x.shape, {}};
  for (const ref::Quantized& q : planes)
    codes.data.insert(codes.data.end(), q.codes.begin(), q.codes.end());
  auto [dtype, shape] = scale_tensor_shape(layout, sr, sc);
  if (x.shape.size() == 3) shape.insert(shape.begin(), groups);
  tensor_io::TensorFile out;
  out.tensors.push_back({"codes", std::move(codes)});
  out.tensors.push_back(
      {"scales", Tensor{dtype, shape, scale_bytes(planes, r, layout, o, source_name)}});
  char eps[32];
  std::snprintf(eps, sizeof eps, "%.9g", double(r.epsilon));
  out.metadata = {
      {"fp8ref.op", "quantize"},
      {"fp8ref.recipe", std::string(to_string(r.kind))},
      {"fp8ref.format", std::string(to_string(r.elem))},
      {"fp8ref.runtime", std::string(to_string(r.runtime)) + (default_runtime ? " (default)" : "")},
      {"fp8ref.pow2", r.pow2 ? "1" : "0"},
      {"fp8ref.epsilon", eps},
      {"fp8ref.block", std::string(to_string(g))},
      {"fp8ref.layout", o.layout},
      {"fp8ref.scale_grid",
       std::to_string(groups) + "," + std::to_string(sr) + "," + std::to_string(sc)},
      {"fp8ref.scales", layout.f32 ? "decode scale s (x ~= code * s), f32 bits"
                                   : "E8M0 codes, s = 2^(code - 127), 0xFF NaN"},
      {"fp8ref.nan", o.nan},
      {"fp8ref.source", source_name},
      {"fp8ref.source_dtype", std::string(tensor_io::dtype_name(x.dtype))}};
  return out;
}

tensor_io::TensorFile quantize_tensor_planes(const Tensor& x, const QuantizeOptions& o,
                                             const std::string& source_name,
                                             const PlanesOf* planes_of) {
  if (o.swiglu) return quantize_swiglu_tensor(x, o, source_name);
  if (is_subbyte_recipe(o.recipe)) {
    if (planes_of) throw UsageError("--swiglu --device cuda quantizes to FP8 (e4m3 / e5m2)");
    return quantize_subbyte_tensor(x, o, source_name);
  }
  if (o.f6_codes != "u8")
    throw UsageError("--f6-codes applies to the mxfp6 recipes, not " + o.recipe);
  bool default_runtime = false;
  const Recipe r = make_recipe(o, &default_runtime);
  const ref::BlockGeometry g =
      cases::parse_token<UsageError>("block", o.block, kAllBlockGeometries);
  const Layout layout = parse_layout(o.layout);
  check_quantize_input(x, o, source_name);
  const std::vector<ref::Quantized> planes =
      planes_of            ? (*planes_of)(r, g)
      : o.device == "cuda" ? quantize_planes_cuda(x, source_bits(x), r, g, o, source_name)
                           : quantize_planes(x, source_bits(x), r, g, o, source_name);
  return quantized_file(planes, x, r, g, layout, o, default_runtime, source_name);
}

// FILE[:tensor]: the whole argument when such a file exists, else split at the last ':'.
std::pair<std::string, std::string> split_input(const std::string& in) {
  const auto colon = in.rfind(':');
  if (std::filesystem::exists(in) || colon == std::string::npos) return {in, ""};
  return {in.substr(0, colon), in.substr(colon + 1)};
}

void run_quantize(const QuantizeOptions& o) {
  const auto [file, name] = split_input(o.in);
  if (tensor_io::same_file(o.out, file))
    throw UsageError("--out " + o.out + " is the input file " + file + ": refused");
  tensor_io::TensorFile tf;
  try {
    tf = tensor_io::read_tensor_file(file, {});
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
  const Tensor* x = nullptr;
  std::string chosen = name;
  if (name.empty()) {
    if (tf.tensors.size() != 1)
      throw UsageError(file + " holds " + std::to_string(tf.tensors.size()) +
                       " tensors: name one as FILE:tensor");
    x = &tf.tensors[0].tensor;
    chosen = tf.tensors[0].name;
  } else if ((x = tf.find(name)) == nullptr) {
    throw UsageError(file + " has no tensor '" + name + "'");
  }
  const tensor_io::TensorFile out = quantize_tensor(*x, o, file + ":" + chosen);
  try {
    tensor_io::write_tensor_file(o.out, out);
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
  const Tensor& codes = out.tensors[0].tensor;
  const Tensor& scales = out.tensors[1].tensor;
  std::printf(
      "%s:%s %s %s -> %s\n  recipe %s %s runtime %s%s, block %s, layout %s\n"
      "  codes %s %s, scales %s %s, device %s\n",
      tensor_io::escape_text(file).c_str(), tensor_io::escape_text(chosen).c_str(),
      std::string(tensor_io::dtype_name(x->dtype)).c_str(),
      tensor_io::shape_string(x->shape).c_str(), tensor_io::escape_text(o.out).c_str(),
      out.metadata.at("fp8ref.recipe").c_str(), out.metadata.at("fp8ref.format").c_str(),
      out.metadata.at("fp8ref.runtime").c_str(), o.pow2 ? " pow2" : "",
      out.metadata.at("fp8ref.block").c_str(), o.layout.c_str(),
      std::string(tensor_io::dtype_name(codes.dtype)).c_str(),
      tensor_io::shape_string(codes.shape).c_str(),
      std::string(tensor_io::dtype_name(scales.dtype)).c_str(),
      tensor_io::shape_string(scales.shape).c_str(), o.device.c_str());
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* sub = app.add_subcommand(
      "quantize", "Quantize a tensor under a named scale recipe, block geometry and scale layout");
  sub->add_option("--recipe", o->recipe,
                  "deepgemm, torchao, te, mx_floor, mx_rceil, mx_ceil, mx_even; FP4 / FP6: "
                  "nvfp4_te, nvfp4_torchao_0.18 (= nvfp4_torchao_rcp: torchao 0.17-0.18), "
                  "nvfp4_torchao_0.16 (= nvfp4_torchao: torchao 0.13-0.16), mxfp4, mxfp6 "
                  "(mxfp4_ceil / _even / "
                  "_rceil, mxfp6_...: "
                  "the scale mode; FLOOR by default)")
      ->required();
  sub->add_option("--block", o->block,
                  "tensorwise, rowwise, per_channel, 1x128, 128x1, 128x128, 1x32, 32x1; 1x16, "
                  "16x16 (nvfp4)")
      ->required();
  sub->add_option(
         "--layout", o->layout,
         "row_major, col_major, tma_mn_major, te_compact, cublas_k_major_pad4, e8m0_row_major, "
         "e8m0_blocked_128x4, deepgemm_packed_ue8m0; ue4m3_row_major, ue4m3_blocked_128x4 "
         "(nvfp4)")
      ->required();
  sub->add_option("--in", o->in,
                  "Input FILE or FILE:tensor (F32, BF16 or F16; (M, K) or (G, N, K))")
      ->required();
  sub->add_option("--out", o->out, "Output file (.safetensors): tensors codes and scales")
      ->required();
  sub->add_option("--format", o->format, "Element format: e4m3 or e5m2; mxfp6: e2m3 or e3m2")
      ->capture_default_str();
  sub->add_option("--f6-codes", o->f6_codes,
                  "mxfp6 codes: u8 (U8, one code per byte, bits 5:0) or packed (F6_E2M3 / "
                  "F6_E3M2, the GEMM operand dtype)")
      ->capture_default_str();
  sub->add_option("--runtime", o->runtime,
                  "torch_cpu, torch_cuda or cuda_kernel (default: cuda_kernel for te and mx_rceil, "
                  "torch_cuda otherwise)");
  sub->add_flag("--pow2", o->pow2, "Power-of-two scales (deepgemm ue8m0, torchao / te pow2)");
  sub->add_option("--epsilon", o->epsilon, "te amax epsilon")->capture_default_str();
  sub->add_option("--nan", o->nan, "NaN elements: propagate (as the library does) or reject")
      ->capture_default_str();
  sub->add_flag(
      "--allow-partial-blocks", o->allow_partial_blocks,
      "Quantize shapes the recipe's library rejects (partial blocks: amax over real elements)");
  sub->add_option("--device", o->device,
                  "cpu (the reference) or cuda (the GPU kernels: same outputs and metadata; "
                  "without a device: one line, exit 2)")
      ->capture_default_str();
  sub->add_flag("--swiglu", o->swiglu,
                "The input is a merged (M, 2H) BF16 gate/up GEMM output: quantize h = silu(gate) * "
                "up (f32, reference/swiglu.h); --device cuda runs the fused SwiGLU + 1x128 (MX: "
                "1x32) quantize kernel");
  sub->callback([o] { run_quantize(*o); });
}

}  // namespace fp8ref::cli
