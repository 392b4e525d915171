// `fp8-check layout detect` (layout_detect.h): candidate images from numerics/scale_layout.h,
// byte comparison with the dump, the report.
#include "cli/layout_detect.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/errors.h"
#include "cli/quantize.h"
#include "numerics/scale_layout.h"
#include "tensor_io/element_values.h"
#include "tensor_io/tensor.h"
#include "tensor_io/tensor_file.h"

namespace fp8ref::cli {

using tensor_io::escape_text;
using tensor_io::Tensor;

namespace {

constexpr ScaleLayoutF32 kF32Layouts[] = {ScaleLayoutF32::row_major, ScaleLayoutF32::col_major,
                                          ScaleLayoutF32::tma_mn_major, ScaleLayoutF32::te_compact,
                                          ScaleLayoutF32::cublas_k_major_pad4};
constexpr ScaleLayoutE8m0 kE8m0Layouts[] = {
    ScaleLayoutE8m0::row_major, ScaleLayoutE8m0::blocked_128x4, ScaleLayoutE8m0::deepgemm_packed};

// The element each byte of layout l holds: the layout serialises the element indices.
std::vector<std::int64_t> f32_owner(ScaleLayoutF32 l, std::int64_t g, std::int64_t r,
                                    std::int64_t c) {
  const auto geo = detail::f32_geometry(l, r, c);
  std::vector<std::int64_t> owner(serialized_size(l, g, r, c), -1);
  for (std::int64_t gi = 0; gi < g; ++gi)
    for (std::int64_t ri = 0; ri < r; ++ri)
      for (std::int64_t ci = 0; ci < c; ++ci) {
        const std::int64_t o = geo.transposed ? ci : ri, i = geo.transposed ? ri : ci;
        const std::size_t w = std::size_t((gi * geo.outer + o) * geo.inner + i);
        for (int b = 0; b < 4; ++b) owner[w * 4 + std::size_t(b)] = (gi * r + ri) * c + ci;
      }
  return owner;
}

std::vector<std::int64_t> e8m0_owner(ScaleLayoutE8m0 l, std::int64_t g, std::int64_t r,
                                     std::int64_t c) {
  std::vector<std::int64_t> owner(serialized_size(l, g, r, c), -1);
  for (std::int64_t gi = 0; gi < g; ++gi)
    for (std::int64_t ri = 0; ri < r; ++ri)
      for (std::int64_t ci = 0; ci < c; ++ci)
        owner[detail::e8m0_offset(l, gi, ri, ci, r, c)] = (gi * r + ri) * c + ci;
  return owner;
}

std::uint32_t reciprocal_bits(std::uint32_t b) {
  return std::bit_cast<std::uint32_t>(1.0f / std::bit_cast<float>(b));
}

bool all_pow2(const std::vector<std::uint32_t>& bits) {
  return std::all_of(bits.begin(), bits.end(), [](std::uint32_t b) {
    return (b & 0x807FFFFFu) == 0 && (b >> 23) != 0 && (b >> 23) != 0xFF;
  });
}

}  // namespace

std::vector<LayoutImage> layout_candidates_e8m0(std::int64_t g, std::int64_t r, std::int64_t c,
                                                const std::vector<std::uint8_t>& codes) {
  std::vector<LayoutImage> out;
  const ScaleGridE8m0 grid{g, r, c, codes};
  for (const auto l : kE8m0Layouts)
    out.push_back({std::string(to_string(l)), serialize(l, grid), e8m0_owner(l, g, r, c), 1});
  return out;
}

std::vector<LayoutImage> layout_candidates_f32(std::int64_t g, std::int64_t r, std::int64_t c,
                                               const std::vector<std::uint32_t>& bits) {
  std::vector<LayoutImage> out;
  std::vector<std::uint32_t> inv(bits.size());
  std::transform(bits.begin(), bits.end(), inv.begin(), reciprocal_bits);
  for (const bool rec : {false, true}) {
    const ScaleGridF32 grid{g, r, c, rec ? inv : bits};
    for (const auto l : kF32Layouts)
      out.push_back({std::string(to_string(l)) + (rec ? " (reciprocals)" : ""), serialize(l, grid),
                     f32_owner(l, g, r, c), 4, rec});
    if (!all_pow2(grid.bits)) continue;
    for (auto e : layout_candidates_e8m0(g, r, c, ue8m0_from_f32(grid).codes)) {
      e.name += rec ? " (UE8M0 of the reciprocals)" : " (UE8M0 of the scales)";
      e.reciprocal = rec;
      out.push_back(std::move(e));
    }
  }
  return out;
}

namespace {

struct DetectOptions {
  std::string dump, canonical, like, block;
  std::string row_groups;      // FILE:offs: cumulative group ends along the grid's rows
  std::string source, recipe;  // --source X --recipe R --block B: canonical scales by quantizing
  bool json = false;
};

// FILE[:tensor]: the whole argument when such a file exists, else split at the last ':'.
const Tensor& load_one(const std::string& spec, tensor_io::TensorFile& tf, std::string& label) {
  const auto colon = spec.rfind(':');
  std::error_code ec;
  const bool whole = std::filesystem::exists(spec, ec) || colon == std::string::npos;
  const std::string file = whole ? spec : spec.substr(0, colon);
  const std::string name = whole ? "" : spec.substr(colon + 1);
  try {
    tf = tensor_io::read_tensor_file(file, {});
  } catch (const tensor_io::Error& e) {
    throw UsageError(e.what());
  }
  const Tensor* t = nullptr;
  if (name.empty()) {
    if (tf.tensors.size() != 1)
      throw UsageError(escape_text(file) + " holds " + std::to_string(tf.tensors.size()) +
                       " tensors: name one as FILE:tensor");
    t = &tf.tensors[0].tensor;
    label = file + ":" + tf.tensors[0].name;
  } else if ((t = tf.find(name)) == nullptr) {
    throw UsageError(escape_text(file) + " has no tensor '" + escape_text(name) + "'");
  } else {
    label = spec;
  }
  return *t;
}

struct Grid {
  std::int64_t g = 1, r = 0, c = 0;
};

Grid grid_of_shape(const std::vector<std::int64_t>& s, const std::string& what) {
  if (s.size() == 2) return {1, s[0], s[1]};
  if (s.size() == 3) return {s[0], s[1], s[2]};
  throw UsageError(what + " must be 2-D (rows, cols) or 3-D (groups, rows, cols), got " +
                   tensor_io::shape_string(s));
}

// --block RxC (1x128, 128x128, 1x32, 32x1, ...) over the codes' (M, K) or (G, M, K).
Grid grid_of_like(const Tensor& codes, const std::string& block) {
  const auto x = block.find('x');
  std::int64_t br = 0, bc = 0;
  try {
    std::size_t p1 = 0, p2 = 0;
    if (x == std::string::npos) throw std::invalid_argument("");
    br = std::stoll(block.substr(0, x), &p1);
    bc = std::stoll(block.substr(x + 1), &p2);
    if (p1 != x || p2 != block.size() - x - 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError("--block wants RxC (e.g. 1x128, 128x128, 1x32), got '" + block + "'");
  }
  if (br < 1 || bc < 1 || br > (1 << 20) || bc > (1 << 20))
    throw UsageError("--block RxC needs 1 <= R, C <= 2^20, got '" + block + "'");
  const Grid cg = grid_of_shape(codes.shape, "--like codes");
  return {cg.g, (cg.r + br - 1) / br, (cg.c + bc - 1) / bc};
}

constexpr std::int64_t kMaxScales = std::int64_t{1} << 18;

struct Verdict {
  bool size_ok = false, match = false;
  std::int64_t first = -1;            // first departing byte
  std::int64_t agree = 0, total = 0;  // elements that agree (padding counts as one element)
};

Verdict compare(const LayoutImage& c, std::span<const std::uint8_t> dump, bool values) {
  Verdict v;
  v.size_ok = c.bytes.size() == dump.size();
  if (!v.size_ok) return v;
  std::int64_t elems = 0;
  for (auto o : c.owner) elems = std::max(elems, o + 1);
  std::vector<char> bad(std::size_t(elems) + 1, 0);  // last slot: the padding
  for (std::size_t i = 0; i < dump.size(); ++i) {
    const std::int64_t o = c.owner[i];
    if ((!values && o >= 0) || c.bytes[i] == dump[i]) continue;
    if (v.first < 0) v.first = std::int64_t(i);
    bad[o < 0 ? std::size_t(elems) : std::size_t(o)] = 1;
  }
  v.total = elems + 1;
  v.agree = v.total - std::count(bad.begin(), bad.end(), 1);
  v.match = v.first < 0;
  return v;
}

std::string hex_at(std::span<const std::uint8_t> b, std::size_t off, int width) {
  std::uint32_t x = 0;
  for (int k = width - 1; k >= 0; --k) x = x << 8 | b[off + std::size_t(k)];
  char buf[16];
  std::snprintf(buf, sizeof buf, width == 4 ? "0x%08x" : "0x%02x", x);
  return buf;
}

std::string departure(const LayoutImage& c, const Verdict& v, std::span<const std::uint8_t> dump,
                      const Grid& g) {
  const auto off = std::size_t(v.first);
  const std::int64_t o = c.owner[off];
  std::string where = "padding";
  if (o >= 0)
    where = "scale (g " + std::to_string(o / (g.r * g.c)) + ", r " + std::to_string(o / g.c % g.r) +
            ", c " + std::to_string(o % g.c) + ")";
  const std::size_t at = off / std::size_t(c.element_bytes) * std::size_t(c.element_bytes);
  return "departs at byte " + std::to_string(off) + " (" + where + "): dump " +
         hex_at(dump, at, c.element_bytes) + ", layout " + hex_at(c.bytes, at, c.element_bytes) +
         "; " + std::to_string(v.agree) + "/" + std::to_string(v.total) + " elements agree";
}

// Matching candidates whose bytes hold the same elements at the same places (and, when values
// were compared, the same sense) are one layout on this grid (row_major = te_compact always).
std::vector<std::vector<std::size_t>> match_classes(const std::vector<LayoutImage>& c,
                                                    const std::vector<Verdict>& v, bool values) {
  std::vector<std::vector<std::size_t>> classes;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!v[i].match) continue;
    auto same = [&](const std::vector<std::size_t>& k) {
      const LayoutImage& a = c[k[0]];
      return a.owner == c[i].owner && a.element_bytes == c[i].element_bytes &&
             (!values || a.reciprocal == c[i].reciprocal);
    };
    const auto it = std::find_if(classes.begin(), classes.end(), same);
    if (it == classes.end())
      classes.push_back({i});
    else
      it->push_back(i);
  }
  return classes;
}

std::string joined(const std::vector<LayoutImage>& c, const std::vector<std::size_t>& k) {
  std::string s;
  for (auto i : k) s += (s.empty() ? "" : " = ") + c[i].name;
  return s;
}

// The verdict: one class of matching layouts, an ambiguous set of classes, the closest layout of
// the dump's size (`best`, cands.size() when none has it), or none.
std::string verdict_text(const std::vector<LayoutImage>& cands, const std::vector<Verdict>& v,
                         const std::vector<std::vector<std::size_t>>& classes, std::size_t best,
                         std::span<const std::uint8_t> dump, const Grid& g) {
  std::string text;
  if (classes.size() == 1) {
    text += "matched: " + joined(cands, classes[0]) + "\n";
  } else if (classes.size() > 1) {
    text += "ambiguous: the dump matches " + std::to_string(classes.size()) +
            " different layouts (repeated scales cannot tell them apart):";
    for (const auto& k : classes) text += " [" + joined(cands, k) + "]";
    text += "\n";
  } else if (best < cands.size()) {
    text += "no layout matches; closest: " + cands[best].name + ", " +
            departure(cands[best], v[best], dump, g) + "\n";
  } else {
    text += "no layout matches: none has the dump's size of " + std::to_string(dump.size()) +
            " bytes\n";
  }
  return text;
}

void report(const DetectOptions& o, const std::vector<LayoutImage>& cands,
            std::span<const std::uint8_t> dump, const Grid& g, bool values,
            const std::string& dump_label, const std::string& ref_label) {
  std::vector<Verdict> v;
  for (const auto& c : cands) v.push_back(compare(c, dump, values));
  const auto classes = match_classes(cands, v, values);
  std::size_t best = cands.size();
  for (std::size_t i = 0; i < cands.size(); ++i)
    if (v[i].size_ok && (best == cands.size() || v[i].agree > v[best].agree)) best = i;
  nlohmann::ordered_json j = {{"schema", "fp8ref.layout_detect/1"},
                              {"dump", tensor_io::json_text(dump_label)},
                              {"reference", tensor_io::json_text(ref_label)},
                              {"grid", {g.g, g.r, g.c}},
                              {"compared", values ? "values" : "size_and_padding"},
                              {"candidates", nlohmann::ordered_json::array()}};
  std::string text = escape_text(dump_label) + ": " + std::to_string(dump.size()) +
                     " bytes; scale grid " + std::to_string(g.g) + " x " + std::to_string(g.r) +
                     " x " + std::to_string(g.c) + " from " + escape_text(ref_label) +
                     (values ? "" : " (sizes and padding only: --canonical compares the values)") +
                     "\n";
  for (std::size_t i = 0; i < cands.size(); ++i) {
    std::string what = !v[i].size_ok ? "needs " + std::to_string(cands[i].bytes.size()) +
                                           " bytes, not " + std::to_string(dump.size())
                       : v[i].match ? "match"
                                    : departure(cands[i], v[i], dump, g);
    char line[96];
    std::snprintf(line, sizeof line, "  %-48s ", cands[i].name.c_str());
    text += line + what + "\n";
    j["candidates"].push_back({{"layout", cands[i].name},
                               {"bytes", cands[i].bytes.size()},
                               {"match", v[i].match},
                               {"first_departing_byte", v[i].first},
                               {"elements_agree", v[i].agree},
                               {"elements", v[i].total},
                               {"detail", what}});
  }
  j["matched"] = nlohmann::ordered_json::array();
  for (const auto& k : classes) j["matched"].push_back(joined(cands, k));
  if (classes.empty() && best < cands.size()) j["closest"] = cands[best].name;
  text += verdict_text(cands, v, classes, best, dump, g);
  j["verdict"] = classes.size() == 1 ? "match" : classes.empty() ? "none" : "ambiguous";
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << text;
  std::cout.flush();
  if (classes.size() != 1) throw ExitCode{1};
}

// --source: the source quantized under --recipe / --block with the row_major layout, whose
// "scales" tensor is the canonical grid (docs/recipes.md "CLI").
Tensor canonical_from_source(const DetectOptions& o, const Tensor& x, const std::string& label) {
  QuantizeOptions q;
  q.recipe = o.recipe, q.block = o.block, q.layout = "row_major";
  tensor_io::TensorFile tf = quantize_tensor(x, q, label);
  const Tensor* s = tf.find("scales");
  if (s == nullptr) throw UsageError("--source: quantize wrote no scales");
  return *s;
}

// blocked_128x4 per row group: the rows of group i (ends `offs`) start a new 128-row tile at
// sum_{h<i} align(m_h, 128), each group swizzled as blocked_128x4 on its own, padding codes 0.
// This is the form in which MX grouped GEMMs take token-grouped 1x32 scales (docs/recipes.md
// "Layouts").
LayoutImage row_group_blocked(const std::vector<std::int64_t>& offs, std::int64_t c,
                              const std::vector<std::uint8_t>& codes) {
  const std::int64_t c4 = (c + 3) / 4 * 4;
  std::int64_t rows = 0, s = 0;
  for (const std::int64_t e : offs) rows += (e - s + 127) / 128 * 128, s = e;
  LayoutImage im{"blocked_128x4_row_groups", std::vector<std::uint8_t>(std::size_t(rows * c4), 0),
                 std::vector<std::int64_t>(std::size_t(rows * c4), -1), 1};
  std::int64_t base = 0;
  s = 0;
  for (const std::int64_t e : offs) {
    for (std::int64_t ri = s; ri < e; ++ri)
      for (std::int64_t ci = 0; ci < c; ++ci) {
        const auto at = std::size_t(base * c4 + detail::blocked_offset(ri - s, ci, c4 / 4));
        im.bytes[at] = codes[std::size_t(ri * c + ci)];
        im.owner[at] = ri * c + ci;
      }
    base += (e - s + 127) / 128 * 128, s = e;
  }
  return im;
}

// --row-groups FILE:offs: the per-group blocked candidate, from E8M0 codes or power-of-two f32
// scales (their UE8M0 codes).
void add_row_group_candidates(const DetectOptions& o, const Grid& g, const Tensor& ref, bool values,
                              std::vector<LayoutImage>& cands) {
  tensor_io::TensorFile tf;
  std::string label;
  const Tensor& t = load_one(o.row_groups, tf, label);
  if (tensor_io::dtype_is_float(t.dtype) || t.shape.size() != 1 || g.g != 1)
    throw UsageError("--row-groups: " + label +
                     " must be a 1-D integer tensor of group ends, for "
                     "a 2-D scale grid");
  std::vector<std::int64_t> offs;
  std::int64_t prev = 0;
  for (std::uint64_t i = 0; i < t.numel(); ++i) {
    const double v = tensor_io::decode_bits(t.dtype, tensor_io::raw_bits(t, i));
    if (!(v >= double(prev) && v <= double(g.r)))
      throw UsageError("--row-groups: " + label + "[" + std::to_string(i) +
                       "] is not a group end in [" + std::to_string(prev) + ", " +
                       std::to_string(g.r) + "]");
    offs.push_back(prev = std::int64_t(v));
  }
  std::vector<std::uint8_t> codes(std::size_t(g.r * g.c), 0x7F);
  if (values && ref.dtype == tensor_io::DType::F32) {
    std::vector<std::uint32_t> bits(codes.size());
    std::memcpy(bits.data(), ref.bytes().data(), bits.size() * 4);
    if (!all_pow2(bits)) return;
    codes = ue8m0_from_f32(ScaleGridF32{1, g.r, g.c, bits}).codes;
  } else if (values) {
    const auto b = ref.bytes();
    codes.assign(b.begin(), b.end());
  }
  cands.push_back(row_group_blocked(offs, g.c, codes));
}

void run_detect(const DetectOptions& o) {
  const int refs = !o.canonical.empty() + !o.like.empty() + !o.source.empty();
  if (refs != 1)
    throw UsageError(
        "layout detect needs exactly one of --canonical FILE:scales, --like FILE:codes and "
        "--source FILE:x");
  if (!o.like.empty() && o.block.empty()) throw UsageError("--like needs --block RxC (e.g. 1x128)");
  if (!o.source.empty() && (o.recipe.empty() || o.block.empty()))
    throw UsageError("--source needs --recipe and --block (as quantize takes them)");
  tensor_io::TensorFile dump_file, ref_file;
  std::string dump_label, ref_label;
  const Tensor& dump_t = load_one(o.dump, dump_file, dump_label);
  const std::string& ref_spec = !o.canonical.empty() ? o.canonical
                                : !o.like.empty()    ? o.like
                                                     : o.source;
  const Tensor& loaded = load_one(ref_spec, ref_file, ref_label);
  const Tensor quantized =
      o.source.empty() ? Tensor{} : canonical_from_source(o, loaded, ref_label);
  const Tensor& ref = o.source.empty() ? loaded : quantized;
  if (!o.source.empty()) ref_label += " quantized (" + o.recipe + ", " + o.block + ")";
  const bool values = o.like.empty();
  const Grid g =
      values ? grid_of_shape(ref.shape, "--canonical scales") : grid_of_like(ref, o.block);
  if (g.g * g.r > kMaxScales || g.g * g.r * g.c > kMaxScales)
    throw UsageError("the scale grid has more than 2^18 scales: pass a slice of the tensors");
  const std::int64_t n = g.g * g.r * g.c;
  std::vector<LayoutImage> cands;
  if (!values || ref.dtype == tensor_io::DType::F32) {
    std::vector<std::uint32_t> bits(std::size_t(n), 0x3F800000u);  // --like: values unknown
    if (values) std::memcpy(bits.data(), ref.bytes().data(), bits.size() * 4);
    cands = layout_candidates_f32(g.g, g.r, g.c, bits);
  } else if (ref.dtype == tensor_io::DType::F8_E8M0 || ref.dtype == tensor_io::DType::U8) {
    const auto b = ref.bytes();
    cands = layout_candidates_e8m0(g.g, g.r, g.c, std::vector<std::uint8_t>(b.begin(), b.end()));
  } else {
    throw UsageError("--canonical scales must be F32 (scales) or F8_E8M0 / U8 (E8M0 codes), got " +
                     std::string(tensor_io::dtype_name(ref.dtype)));
  }
  if (!o.row_groups.empty()) add_row_group_candidates(o, g, ref, values, cands);
  if (!values)  // the reciprocal variants differ only in values
    std::erase_if(cands, [](const LayoutImage& c) { return c.reciprocal; });
  report(o, cands, dump_t.bytes(), g, values, dump_label, ref_label);
}

}  // namespace

void add_layout_command(CLI::App& app) {
  CLI::App* layout = app.add_subcommand("layout", "Scale-layout forensics (docs/cli.md)");
  layout->require_subcommand(1);
  auto o = std::make_shared<DetectOptions>();
  CLI::App* d = layout->add_subcommand(
      "detect", "Which named layout a dumped scale tensor is in, or where it departs");
  d->add_option("dump", o->dump, "The dumped scales: FILE or FILE:tensor (any dtype: its bytes)")
      ->required();
  d->add_option("--canonical", o->canonical,
                "The logical scales FILE[:tensor]: F32 (G,)R,C grid, or E8M0/U8 codes");
  d->add_option("--like", o->like,
                "The codes FILE[:tensor] (M, K) or (G, M, K): the grid from their shape and "
                "--block (sizes and padding compared only)");
  d->add_option("--source", o->source,
                "The quantized source FILE[:tensor]: canonical scales by quantizing it under "
                "--recipe and --block");
  d->add_option("--recipe", o->recipe, "With --source: the quantize recipe (deepgemm, te, ...)");
  d->add_option("--block", o->block,
                "Block geometry RxC with --like (1x128, 128x128, 1x32, ...), or quantize's "
                "--block with --source");
  d->add_option("--row-groups", o->row_groups,
                "FILE[:offs]: cumulative group ends along the rows; adds blocked_128x4 per row "
                "group (each group starts a new 128-row tile)");
  d->add_flag("--json", o->json, "Machine-readable output (schema fp8ref.layout_detect/1)");
  d->callback([o] { run_detect(*o); });
}
}  // namespace fp8ref::cli
