// Loading and checking the inputs of `fp8-check oracle|verify grouped-gemm` (gemm_case.h).
// Shapes are checked in full, not by element count: a scale tensor must have the shape of
// reference/grouped_gemm.h for its scaling up to size-1 axes (which move no element), so a
// transposed or column-major dump of the same size is refused instead of being misread.
#include "cli/gemm_case.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "cli/errors.h"
#include "cli/inspect.h"
#include "reference/group_desc.h"
#include "tensor_io/element_values.h"

namespace fp8ref::cli {

using namespace fp8ref::tensor_io;
using ref::BLayout;
using ref::Scaling;

void usage(const std::string& what) { throw UsageError(what); }

TensorFile load_file(const std::string& path) {
  try {
    return read_tensor_file(path, {});
  } catch (const tensor_io::Error& e) {
    usage(e.what());
  }
}

const Tensor& find_tensor(const TensorFile& tf, const std::string& file, const std::string& name,
                          const char* flag) {
  const Tensor* t = tf.find(name);
  if (t == nullptr) usage(std::string(flag) + ": " + file + " has no tensor '" + name + "'");
  return *t;
}

namespace {

constexpr std::string_view kUnpacked = ":unpacked";

// The --as values: NAME=DTYPE into ro (inspect's apply_as_options), NAME=DTYPE:unpacked into
// `unpacked`; a plain DTYPE (every tensor: the offsets and scales too) is refused here.
void parse_gemm_as(const std::vector<std::string>& values, ReadOptions& ro,
                   std::vector<std::pair<std::string, DType>>& unpacked) {
  std::vector<std::string> plain;
  for (const std::string& v : values) {
    const std::size_t eq = v.rfind('=');
    if (eq == std::string::npos || eq == 0)
      usage("--as: expected NAME=DTYPE or NAME=DTYPE:unpacked, got '" + v + "'");
    if (!v.ends_with(kUnpacked)) {
      plain.push_back(v);
      continue;
    }
    const DType d = parse_dtype_option(v.substr(eq + 1, v.size() - eq - 1 - kUnpacked.size()));
    if (d != DType::F4 && d != DType::F6_E2M3 && d != DType::F6_E3M2)
      usage("--as: '" + v + "': :unpacked takes e2m1, e2m3 or e3m2");
    unpacked.emplace_back(v.substr(0, eq), d);
  }
  apply_as_options(plain, ro);
  for (std::size_t i = 0; i < unpacked.size(); ++i) {
    const std::string& name = unpacked[i].first;
    bool twice = ro.as_by_name.contains(name);
    for (std::size_t j = 0; j < i; ++j) twice = twice || unpacked[j].first == name;
    if (twice) usage("--as: tensor '" + name + "' given twice");
  }
}

}  // namespace

std::int64_t scale_block_k(Scaling s) {
  switch (s) {
    case Scaling::blockwise: return kScaleBlockK;
    case Scaling::mx: return kMxBlockK;
    case Scaling::nvfp4:
    case Scaling::mx16: return kNvfp4BlockK;
    default: return 0;
  }
}

TensorFile load_input(const GemmOptions& o) {
  ReadOptions ro;
  std::vector<std::pair<std::string, DType>> unpacked;
  parse_gemm_as(o.as, ro, unpacked);
  TensorFile tf;
  try {
    tf = read_tensor_file(o.in, ro);
    for (const auto& [name, d] : unpacked) {
      const auto it = std::find_if(tf.tensors.begin(), tf.tensors.end(),
                                   [&](const NamedTensor& t) { return t.name == name; });
      if (it == tf.tensors.end()) usage("--as: " + o.in + " has no tensor '" + name + "'");
      if (it->tensor.dtype != DType::U8 && it->tensor.dtype != DType::I8)
        usage("--as " + name + "=" + std::string(dtype_name(d)) + ":unpacked: '" + name + "' is " +
              std::string(dtype_name(it->tensor.dtype)) +
              ", expected U8 or I8 (one code per byte)");
      const std::vector<std::uint8_t> bytes(it->tensor.data.begin(), it->tensor.data.end());
      it->tensor = pack_unpacked_subbyte(bytes, it->tensor.shape, d, o.in);
    }
  } catch (const tensor_io::Error& e) {
    usage(e.what());
  }
  return tf;
}

namespace {

Format fp8_format(const Tensor& t, const char* flag) {
  if (t.dtype == DType::F8_E4M3) return Format::e4m3;
  if (t.dtype == DType::F8_E5M2) return Format::e5m2;
  if (t.dtype == DType::F4) return Format::e2m1;       // the Blackwell models' FP4 operands
  if (t.dtype == DType::F6_E2M3) return Format::e2m3;  // and FP6 (kind::f8f6f4 / mxf8f6f4)
  if (t.dtype == DType::F6_E3M2) return Format::e3m2;
  const bool bytes = t.dtype == DType::U8 || t.dtype == DType::I8;
  usage(std::string(flag) + ": expected F8_E4M3, F8_E5M2, F6_E2M3, F6_E3M2 or F4 (e2m1), got " +
        std::string(dtype_name(t.dtype)) +
        (bytes ? " (one FP6 / FP4 code per byte: --as NAME=e2m3|e3m2|e2m1:unpacked)" : ""));
}

// The operand's codes one per byte (F4 / F6 unpacked: element i from the packed bits).
std::vector<std::uint8_t> operand_codes(const Tensor& t) {
  if (t.dtype != DType::F4 && t.dtype != DType::F6_E2M3 && t.dtype != DType::F6_E3M2) return t.data;
  std::vector<std::uint8_t> c(t.numel());
  for (std::uint64_t i = 0; i < t.numel(); ++i) c[i] = std::uint8_t(raw_bits(t, i));
  return c;
}

std::vector<std::int64_t> without_unit_axes(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s;
  for (const std::int64_t d : shape)
    if (d != 1) s.push_back(d);
  return s;
}

// The scale shapes of reference/grouped_gemm.h, with their recipe named for the message.
struct ScaleShapes {
  std::vector<std::int64_t> a, b;
  const char* a_rule;
  const char* b_rule;
};
ScaleShapes scale_shapes(const GemmCase& c) {
  const std::int64_t nbk = ceil_div(c.K, kScaleBlockK), nbn = ceil_div(c.N, kScaleBlockK);
  const std::int64_t nmx = ceil_div(c.K, kMxBlockK);
  switch (c.scaling) {
    case Scaling::none: return {{}, {}, "", ""};
    case Scaling::tensorwise: return {{}, {c.G}, "one scale", "(G) one per group"};
    case Scaling::rowwise: return {{c.M}, {c.G, c.N}, "(M)", "(G, N)"};
    case Scaling::blockwise:
      return {{c.M, nbk},
              {c.G, nbn, nbk},
              "1x128: (M, ceil(K/128))",
              "128x128: (G, ceil(N/128), ceil(K/128))"};
    case Scaling::mx:
      return {{c.M, nmx}, {c.G, c.N, nmx}, "1x32: (M, ceil(K/32))", "1x32: (G, N, ceil(K/32))"};
    case Scaling::nvfp4:
    case Scaling::mx16: {
      const std::int64_t nnv = ceil_div(c.K, kNvfp4BlockK);
      return {{c.M, nnv}, {c.G, c.N, nnv}, "1x16: (M, ceil(K/16))", "1x16: (G, N, ceil(K/16))"};
    }
  }
  return {{}, {}, "", ""};
}

// A scale tensor: F32, or F8_E8M0 decoded exactly to 2^(e-127) (0xFF to NaN, which the
// reference refuses where the scale is read), in `want`'s shape up to size-1 axes.
std::vector<float> load_scales(const TensorFile& tf, const GemmOptions& o, const std::string& name,
                               const char* flag, const std::vector<std::int64_t>& want,
                               const char* rule) {
  const Tensor& t = find_tensor(tf, o.in, name, flag);
  if (t.dtype != DType::F32 && t.dtype != DType::F8_E8M0 && t.dtype != DType::F8_E4M3)
    usage(std::string(flag) + ": expected F32, F8_E8M0 or F8_E4M3 (ue4m3) scales, got " +
          std::string(dtype_name(t.dtype)));
  if (without_unit_axes(t.shape) != without_unit_axes(want))
    usage(std::string(flag) + ": '" + name + "' has shape " + shape_string(t.shape) +
          ", expected " + shape_string(want) + " for " + o.scaling + " scaling (" + rule +
          "; size-1 axes may be added or dropped)");
  std::vector<float> s(t.numel());
  for (std::uint64_t i = 0; i < t.numel(); ++i) s[i] = float(decode_bits(t.dtype, raw_bits(t, i)));
  return s;
}

// torch `offs`: a 1-D integer tensor of G cumulative end rows, validated against M.
std::vector<std::int64_t> load_offsets(const TensorFile& tf, const GemmOptions& o,
                                       const GemmCase& c) {
  const Tensor& t = find_tensor(tf, o.in, o.offs, "--offs");
  if (dtype_is_float(t.dtype) || t.dtype == DType::BOOL || t.shape.size() != 1)
    usage("--offs: '" + o.offs + "' must be a 1-D integer tensor, got " +
          std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape));
  if (std::int64_t(t.numel()) != c.G)
    usage("--offs: '" + o.offs + "' has shape " + shape_string(t.shape) + ", expected " +
          shape_string({c.G}) + " (one end row per group of B)");
  std::vector<std::int64_t> offs(t.numel());
  for (std::uint64_t i = 0; i < t.numel(); ++i) {
    const double v = decode_bits(t.dtype, raw_bits(t, i));
    if (!(std::fabs(v) <= 0x1p62))
      usage("--offs: '" + o.offs + "'[" + std::to_string(i) + "] is out of range");
    offs[i] = std::int64_t(v);
  }
  try {
    ref::validate_offsets(offs, c.M, 1);
  } catch (const std::invalid_argument& e) {
    usage("--offs: '" + o.offs + "': " + e.what());
  }
  return offs;
}

// A (M, K) and B (G, N, K) for nk, (G, K, N) for kn, or one 2-D group (N, K) / (K, N).
void load_operands(const TensorFile& tf, const GemmOptions& o, GemmCase& c) {
  const Tensor& a = find_tensor(tf, o.in, o.a, "--a");
  const Tensor& b = find_tensor(tf, o.in, o.b, "--b");
  c.fa = fp8_format(a, "--a"), c.fb = fp8_format(b, "--b");
  if (o.b_layout != "nk" && o.b_layout != "kn")
    usage("--b-layout: expected nk or kn, got '" + o.b_layout + "'");
  c.b_layout = o.b_layout == "nk" ? BLayout::nk : BLayout::kn;
  if (a.shape.size() != 2)
    usage("--a: '" + o.a + "' has shape " + shape_string(a.shape) + ", expected (M, K)");
  c.M = a.shape[0], c.K = a.shape[1];
  const std::string k = "K = " + std::to_string(c.K);
  const std::string want = c.b_layout == BLayout::nk ? "(G, N, " + k + ") or (N, " + k + ")"
                                                     : "(G, " + k + ", N) or (" + k + ", N)";
  const std::size_t g_axis = b.shape.size() == 3 ? 1 : 0;
  const bool rank_ok = b.shape.size() == 2 || b.shape.size() == 3;
  if (!rank_ok || b.shape[g_axis + (c.b_layout == BLayout::nk ? 1 : 0)] != c.K)
    usage("--b: '" + o.b + "' has shape " + shape_string(b.shape) + ", expected " + want +
          " for --b-layout " + o.b_layout + " (K from A " + shape_string(a.shape) + ")");
  c.G = g_axis ? b.shape[0] : 1;
  c.N = b.shape[g_axis + (c.b_layout == BLayout::nk ? 0 : 1)];
  c.a = operand_codes(a), c.b = operand_codes(b);
}

Scaling parse_scaling(const std::string& s) {
  if (const auto x = ref::parse_scaling(s)) return *x;
  usage("--scaling: expected none, tensorwise, rowwise, blockwise, mx, mx16 or nvfp4, got '" + s +
        "'");
}

// nvfp4's optional per-tensor scales: F32, () or (1) for A, (G) for B; both or neither.
void load_tensor_scales(const TensorFile& tf, const GemmOptions& o, GemmCase& c) {
  if (o.tensor_scale_a.empty() && o.tensor_scale_b.empty()) return;
  if (c.scaling != Scaling::nvfp4)
    usage("--tensor-scale-a / --tensor-scale-b need --scaling nvfp4");
  if (o.tensor_scale_a.empty() || o.tensor_scale_b.empty())
    usage("--tensor-scale-a and --tensor-scale-b go together");
  c.ta = load_scales(tf, o, o.tensor_scale_a, "--tensor-scale-a", {}, "one scale");
  c.tb = load_scales(tf, o, o.tensor_scale_b, "--tensor-scale-b", {c.G}, "(G) one per group");
}

}  // namespace

GemmCase load_case(const GemmOptions& o) { return load_case(load_input(o), o); }

GemmCase load_case(const TensorFile& tf, const GemmOptions& o) {
  GemmCase c;
  load_operands(tf, o, c);
  c.scaling = parse_scaling(o.scaling);
  if (c.scaling == Scaling::none && !(o.scale_a.empty() && o.scale_b.empty()))
    usage("--scale-a / --scale-b given with --scaling none");
  if (c.scaling != Scaling::none && (o.scale_a.empty() || o.scale_b.empty()))
    usage("--scaling " + o.scaling + " needs --scale-a and --scale-b");
  if (c.scaling != Scaling::none) {
    const ScaleShapes want = scale_shapes(c);
    c.sa = load_scales(tf, o, o.scale_a, "--scale-a", want.a, want.a_rule);
    c.sb = load_scales(tf, o, o.scale_b, "--scale-b", want.b, want.b_rule);
  }
  load_tensor_scales(tf, o, c);
  if (!o.offs.empty())
    c.offs = load_offsets(tf, o, c);
  else if (c.G == 1)
    c.offs = {c.M};
  else
    usage("--offs is required when B holds " + std::to_string(c.G) + " groups");
  return c;
}

namespace {

// Group g's K columns [s, e) of A (M, K) and B as a one-group forward case.
GemmCase kgroup_case(const KGroupedCase& k, const Tensor& a, const Tensor& b, BLayout layout,
                     std::int64_t s, std::int64_t e) {
  GemmCase c;
  c.M = k.M, c.N = k.N, c.K = e - s, c.G = 1, c.b_layout = layout, c.offs = {k.M};
  c.fa = fp8_format(a, "--a"), c.fb = fp8_format(b, "--b");
  c.a.resize(std::size_t(c.M * c.K));
  for (std::int64_t m = 0; m < c.M; ++m)
    std::copy_n(a.data.begin() + m * k.K + s, c.K, c.a.begin() + m * c.K);
  if (layout == BLayout::kn) {  // rows [s, e) of (K, N): contiguous
    c.b.assign(b.data.begin() + s * k.N, b.data.begin() + e * k.N);
  } else {
    c.b.resize(std::size_t(c.N * c.K));
    for (std::int64_t n = 0; n < c.N; ++n)
      std::copy_n(b.data.begin() + n * k.K + s, c.K, c.b.begin() + n * c.K);
  }
  return c;
}

}  // namespace

std::int64_t kgroup_first_scale_row(std::span<const std::int64_t> offs, std::int64_t g,
                                    std::int64_t blk) {
  std::int64_t rb = 0, s = 0;
  for (std::size_t h = 0; h < std::size_t(g); ++h) rb += ceil_div(offs[h] - s, blk), s = offs[h];
  return rb;
}

GemmCase KGroupedCase::stacked() const {
  GemmCase c;
  c.M = G * M, c.N = N, c.K = K, c.G = G;
  for (std::int64_t g = 1; g <= G; ++g) c.offs.push_back(g * M);
  return c;
}

namespace {

// (rows, cols) row-major to (cols, rows).
template <class T>
std::vector<T> transposed(const std::vector<T>& v, std::int64_t rows, std::int64_t cols) {
  std::vector<T> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[std::size_t(c * rows + r)] = v[std::size_t(r * cols + c)];
  return t;
}

// --grouping k with blockwise / mx scales: the wgrad form of KGroupedCase (gemm_case.h).
void load_kgrouped_blocks(const TensorFile& tf, const GemmOptions& o, const Tensor& a,
                          const Tensor& b, BLayout layout, KGroupedCase& k, Scaling sc) {
  const std::int64_t blk = sc == Scaling::blockwise ? kScaleBlockK : kMxBlockK;
  const std::int64_t last = k.offs.empty() ? 0 : k.offs.back();
  const std::int64_t rb =
      kgroup_first_scale_row(k.offs, std::int64_t(k.offs.size()), blk) + ceil_div(k.K - last, blk);
  const char* rule = sc == Scaling::blockwise
                         ? "(rows, R): 1x128 blocks along K restarting at each group start"
                         : "(rows, R): 1x32 blocks along K restarting at each group start";
  const std::vector<float> sa = load_scales(tf, o, o.scale_a, "--scale-a", {k.M, rb}, rule);
  const std::vector<float> sb = load_scales(tf, o, o.scale_b, "--scale-b", {k.N, rb}, rule);
  k.block_scaling = sc;
  k.fa = fp8_format(a, "--a"), k.fb = fp8_format(b, "--b");
  k.dy = transposed(a.data, k.M, k.K);
  k.x = layout == BLayout::kn ? b.data : transposed(b.data, k.N, k.K);
  k.sdy = transposed(sa, k.M, rb);
  k.sx = transposed(sb, k.N, rb);
}

// Each group of a K-grouped case as a one-group forward case with its scalar scales (block
// scalings keep theirs in the wgrad form).
void add_kgroups(KGroupedCase& k, const Tensor& a, const Tensor& b, BLayout layout, Scaling sc,
                 const std::vector<float>& sa, const std::vector<float>& sb) {
  std::int64_t s = 0;
  for (std::int64_t g = 0; g < k.G; ++g) {
    const std::int64_t e = k.offs[std::size_t(g)];
    k.groups.push_back(kgroup_case(k, a, b, layout, s, e));
    GemmCase& c = k.groups.back();
    s = e;
    if (k.block_scaling != Scaling::none) continue;
    c.scaling = sc;
    if (sc == Scaling::tensorwise) c.sa = sa, c.sb = sb;
    if (sc == Scaling::rowwise) {
      c.sa.assign(sa.begin() + g * k.M, sa.begin() + (g + 1) * k.M);
      c.sb.assign(sb.begin() + g * k.N, sb.begin() + (g + 1) * k.N);
    }
  }
}

}  // namespace

KGroupedCase load_kgrouped_case(const GemmOptions& o) {
  return load_kgrouped_case(load_input(o), o);
}

KGroupedCase load_kgrouped_case(const TensorFile& tf, const GemmOptions& o) {
  const Tensor& a = find_tensor(tf, o.in, o.a, "--a");
  const Tensor& b = find_tensor(tf, o.in, o.b, "--b");
  fp8_format(a, "--a"), fp8_format(b, "--b");
  if (o.b_layout != "nk" && o.b_layout != "kn")
    usage("--b-layout: expected nk or kn, got '" + o.b_layout + "'");
  const BLayout layout = o.b_layout == "nk" ? BLayout::nk : BLayout::kn;
  if (a.shape.size() != 2)
    usage("--a: '" + o.a + "' has shape " + shape_string(a.shape) + ", expected (M, K_total)");
  KGroupedCase k;
  k.M = a.shape[0], k.K = a.shape[1];
  const std::size_t k_axis = layout == BLayout::nk ? 1 : 0;
  if (b.shape.size() != 2 || b.shape[k_axis] != k.K)
    usage("--b: '" + o.b + "' has shape " + shape_string(b.shape) + ", expected " +
          (layout == BLayout::nk ? "(N, " : "(") + std::to_string(k.K) +
          (layout == BLayout::nk ? ")" : ", N)") + " for --grouping k --b-layout " + o.b_layout);
  k.N = b.shape[1 - k_axis];
  if (o.offs.empty()) usage("--grouping k needs --offs (cumulative K ends, one per group)");
  GemmCase probe;  // load_offsets validates ends against the total, here K
  probe.M = k.K;
  const Tensor& ot = find_tensor(tf, o.in, o.offs, "--offs");
  probe.G = ot.shape.size() == 1 ? ot.shape[0] : 0;
  k.offs = load_offsets(tf, o, probe);
  k.G = probe.G;
  const Scaling sc = parse_scaling(o.scaling);
  if (sc == Scaling::nvfp4 || sc == Scaling::mx16)
    usage("--grouping k takes --scaling none, tensorwise, rowwise, blockwise or mx, not " +
          o.scaling);
  if ((sc == Scaling::none) != (o.scale_a.empty() && o.scale_b.empty()) ||
      (sc != Scaling::none && (o.scale_a.empty() || o.scale_b.empty())))
    usage("--scaling " + o.scaling +
          (sc == Scaling::none ? " takes no --scale-a / --scale-b"
                               : " needs --scale-a and --scale-b"));
  std::vector<float> sa, sb;
  if (sc == Scaling::tensorwise) {
    sa = load_scales(tf, o, o.scale_a, "--scale-a", {}, "one scale");
    sb = load_scales(tf, o, o.scale_b, "--scale-b", {}, "one scale");
  } else if (sc == Scaling::rowwise) {
    sa = load_scales(tf, o, o.scale_a, "--scale-a", {k.G * k.M}, "(G*M) per group and row");
    sb = load_scales(tf, o, o.scale_b, "--scale-b", {k.G * k.N}, "(G*N) per group and column");
  }
  if (sc == Scaling::blockwise || sc == Scaling::mx)
    load_kgrouped_blocks(tf, o, a, b, layout, k, sc);
  add_kgroups(k, a, b, layout, sc, sa, sb);
  return k;
}

namespace {

// Short model names (docs/design.md §10) that map to one model. `hopper_wgmma` names the
// tensor-core step, which every hopper model chains (fast: one chain over K; promoted: per 128-K
// block), so it is refused with a pointer to the compositions rather than mapped to one of them.
struct ModelAlias {
  std::string_view name;
  AccumulationModel model;
};
constexpr ModelAlias kModelAliases[] = {
    {"promoted_blockwise", AccumulationModel::hopper_promoted_blockwise},
    {"promoted_tensorwise", AccumulationModel::hopper_promoted_tensorwise},
    {"promoted_rowwise", AccumulationModel::hopper_promoted_rowwise},
};

}  // namespace

std::optional<AccumulationModel> model_from_cli_name(std::string_view name) {
  if (const auto m = accumulation_model_from_string(name)) return m;
  for (const ModelAlias& a : kModelAliases)
    if (name == a.name) return a.model;
  return std::nullopt;
}

ref::ModelChoice parse_model(const GemmOptions& o) {
  if (o.model == "hopper_wgmma")
    usage(
        "--model: 'hopper_wgmma' is the tensor-core step, not a composition; use "
        "hopper_unpromoted (one chain over K, \"fast accumulation\") or "
        "hopper_promoted_blockwise / _tensorwise / _rowwise");
  const auto m = model_from_cli_name(o.model);
  if (!m) {
    std::string names;
    for (AccumulationModel x : kAllAccumulationModels)
      names += std::string(names.empty() ? "" : ", ") + to_string(x);
    for (AccumulationModel x : kBlackwellAccumulationModels)
      names += ", " + std::string(to_string(x));
    for (const ModelAlias& a : kModelAliases) names += ", " + std::string(a.name);
    usage("--model: unknown model '" + o.model + "'; models and aliases: " + names);
  }
  const auto ep = epilogue_from_string(o.epilogue);
  if (!ep)
    usage("--epilogue: expected model, scale_product, b_then_a or a_then_b, got '" + o.epilogue +
          "'");
  return {*m, o.split_k, o.split_blocks, *ep};
}

OutDtype parse_out_dtype(const std::string& s) {
  if (const auto d = fp8ref::parse_out_dtype(s)) return *d;
  usage("--out-dtype: expected f32, bf16 or f16, got '" + s + "'");
}

}  // namespace fp8ref::cli
