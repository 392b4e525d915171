// Data-movement and quantizer fuzz suites (docs/fuzz.md "The suites"): pad / unpad over the
// tokens-per-group distributions, and per-group quantization along tokens (K-grouped wgrad
// operands) against its definition (each group quantized on its own), global blocking when every
// group is block-aligned, and thread-count invariance.
#include <algorithm>
#include <bit>
#include <cstring>
#include <random>

#include "campaign/gen/choices.h"
#include "campaign/gen/group_sizes.h"
#include "campaign/gen/values.h"
#include "campaign/suite.h"
#include "cases/quantize_case.h"
#include "reference/pad_permute.h"
#include "reference/quantize.h"

namespace fp8ref::fuzz {

namespace {

std::int64_t round_up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

// memcmp that accepts empty ranges (whose data() may be null).
bool bytes_equal(const void* a, const void* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

// --- pad / unpad -------------------------------------------------------------------------------
struct PadCase {
  gen::GroupSizes gs;
  ref::EmptyGroupPolicy empty = ref::EmptyGroupPolicy::keep_empty;
  std::int64_t row_bytes = 1;
  std::vector<std::uint8_t> rows;  // total rows
};

PadCase draw_pad() {
  PadCase p;
  gen::SizeLimits lim;
  lim.aligns = {16, 32, 128};
  lim.max_total = 600;
  p.gs = *gen::group_sizes(lim);
  p.gs.tail = 0;
  p.empty = *rc::gen::element(ref::EmptyGroupPolicy::keep_empty, ref::EmptyGroupPolicy::one_block);
  p.row_bytes = *rc::gen::element<std::int64_t>(1, 2, 4, 16, 33);
  std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
  p.rows.resize(std::size_t(p.gs.total() * p.row_bytes));
  for (auto& b : p.rows) b = std::uint8_t(rng() | 1);  // never zero: padding must be told apart
  return p;
}

TensorFile save_pad(const PadCase& p) {
  TensorFile tf;
  tf.tensors.push_back({"rows", u8_tensor(p.rows, {p.gs.total(), p.row_bytes})});
  save_group_sizes(p.gs, tf);
  cases::put_meta(tf, "empty",
                  p.empty == ref::EmptyGroupPolicy::keep_empty ? "keep_empty" : "one_block");
  cases::put_meta(tf, "row_bytes", std::to_string(p.row_bytes));
  return tf;
}

PadCase load_pad(const TensorFile& tf) {
  PadCase p;
  p.gs = load_group_sizes(tf);
  p.empty = get_meta(tf, "empty") == "one_block" ? ref::EmptyGroupPolicy::one_block
                                                 : ref::EmptyGroupPolicy::keep_empty;
  p.row_bytes = get_meta_int(tf, "row_bytes");
  p.rows = get_u8(tf, "rows");
  if (p.row_bytes < 1 || std::int64_t(p.rows.size()) != p.gs.total() * p.row_bytes)
    throw std::invalid_argument("case file: rows do not match the group sizes");
  return p;
}

// The padded row map against the definition: group g on the first sizes[g] rows from its start,
// -1 (a padding row: never read, never written) on every other row up to the capacity.
void check_row_map(const PadCase& p, const ref::PadPlan& plan) {
  const std::vector<std::int32_t> map = ref::padded_row_map(plan);
  if (std::int64_t(map.size()) != plan.capacity)
    throw Violation("padded row map: " + std::to_string(map.size()) + " rows, expected " +
                    std::to_string(plan.capacity));
  std::vector<std::int32_t> want(map.size(), -1);
  std::int64_t start = 0;
  for (std::size_t g = 0; g < p.gs.sizes.size(); ++g) {
    for (std::int64_t i = 0; i < p.gs.sizes[g]; ++i) want[std::size_t(start + i)] = std::int32_t(g);
    const std::int64_t s = p.gs.sizes[g];
    start += s == 0 ? (p.empty == ref::EmptyGroupPolicy::one_block ? p.gs.align : 0)
                    : round_up(s, p.gs.align);
  }
  for (std::size_t r = 0; r < map.size(); ++r)
    if (map[r] != want[r])
      throw Violation("padded row map: row " + std::to_string(r) + " maps to " +
                      std::to_string(map[r]) + ", expected " + std::to_string(want[r]));
}

void check_pad(const PadCase& p, Fingerprint& fp) {
  const std::int64_t T = p.gs.total(), G = p.gs.groups(), A = p.gs.align, W = p.row_bytes;
  const ref::PadPlan plan = ref::plan_padding(p.gs.sizes, A, p.empty);
  // The plan against the definition (docs/design.md §13).
  std::int64_t start = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t s = p.gs.sizes[std::size_t(g)];
    const std::int64_t padded =
        s == 0 ? (p.empty == ref::EmptyGroupPolicy::one_block ? A : 0) : round_up(s, A);
    if (plan.starts[std::size_t(g)] != start || plan.padded_sizes[std::size_t(g)] != padded)
      throw Violation("pad plan: group " + std::to_string(g) + " starts at " +
                      std::to_string(plan.starts[std::size_t(g)]) + " with " +
                      std::to_string(plan.padded_sizes[std::size_t(g)]) + " rows, expected " +
                      std::to_string(start) + " and " + std::to_string(padded));
    start += padded;
  }
  if (plan.used != start || plan.capacity != round_up(T + G * A, A) || plan.capacity < plan.used)
    throw Violation("pad plan: used " + std::to_string(plan.used) + " capacity " +
                    std::to_string(plan.capacity) + ", expected " + std::to_string(start) +
                    " and " + std::to_string(round_up(T + G * A, A)));
  check_row_map(p, plan);
  std::vector<std::uint8_t> padded(std::size_t(plan.capacity * W), 0xA5);
  ref::pad_rows(plan, {p.rows, T, W}, {padded, plan.capacity, W});
  fp.fold(padded.data(), padded.size());
  // True rows where the plan says, every other row zero bytes.
  std::vector<char> is_true(std::size_t(plan.capacity), 0);
  std::int64_t src = 0;
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t i = 0; i < p.gs.sizes[std::size_t(g)]; ++i, ++src) {
      const std::int64_t dst = plan.starts[std::size_t(g)] + i;
      is_true[std::size_t(dst)] = 1;
      if (!bytes_equal(&padded[std::size_t(dst * W)], &p.rows[std::size_t(src * W)],
                       std::size_t(W)))
        throw Violation("pad: row " + std::to_string(src) + " of group " + std::to_string(g) +
                        " not at row " + std::to_string(dst));
    }
  for (std::int64_t r = 0; r < plan.capacity; ++r)
    if (!is_true[std::size_t(r)])
      for (std::int64_t j = 0; j < W; ++j)
        if (padded[std::size_t(r * W + j)] != 0)
          throw Violation("pad: padding row " + std::to_string(r) + " is not zero");
  std::vector<std::uint8_t> back(std::size_t(T * W), 0);
  ref::unpad_rows(plan, {padded, plan.capacity, W}, {back, T, W});
  if (back != p.rows) throw Violation("unpad(pad(x)) != x");
}

// --- per-group quantization ----------------------------------------------------------------------
using QuantCase = cases::QuantizeCase;

std::int64_t block_rows(ref::BlockGeometry g) {
  return g == ref::BlockGeometry::b128x128 || g == ref::BlockGeometry::b128x1 ? 128
         : g == ref::BlockGeometry::b32x1                                     ? 32
                                                                              : 1;
}

QuantCase draw_quant() {
  QuantCase q;
  q.recipe = *gen::recipe();
  q.geometry = gen::is_mx_recipe(q.recipe.kind)
                   ? *rc::gen::element(ref::BlockGeometry::b32x1, ref::BlockGeometry::b1x32)
                   : *rc::gen::element(ref::BlockGeometry::b128x128, ref::BlockGeometry::b128x1,
                                       ref::BlockGeometry::b1x128, ref::BlockGeometry::rowwise);
  gen::SizeLimits lim;
  lim.max_total = 400;
  lim.max_groups = 16;
  lim.aligns = {std::max<std::int64_t>(block_rows(q.geometry), 4)};
  q.gs = *gen::group_sizes(lim);
  q.gs.tail = 0;
  q.cols = *rc::gen::weightedOneOf<std::int64_t>({{3, rc::gen::element<std::int64_t>(32, 128, 256)},
                                                  {1, rc::gen::inRange<std::int64_t>(1, 300)}});
  q.values = *gen::value_class(true);
  q.x = gen::fill_f32(q.values, q.gs.total() * q.cols, *rc::gen::inRange(-20, 21),
                      *rc::gen::arbitrary<std::uint64_t>());
  return q;
}

TensorFile save_quant(const QuantCase& q) {
  TensorFile tf;
  cases::save_quantize_case(q, cases::SourceShape::matrix, tf);
  return tf;
}

QuantCase load_quant(const TensorFile& tf) {
  QuantCase q;
  cases::load_quantize_case(tf, q);
  return q;
}

bool same(const ref::Quantized& a, std::int64_t a_row0, std::int64_t a_brow0,
          const ref::Quantized& b) {
  if (b.rows == 0) return true;
  if (a.codes.size() < std::size_t(a_row0 * a.cols) + b.codes.size() ||
      !bytes_equal(a.codes.data() + a_row0 * a.cols, b.codes.data(), b.codes.size()))
    return false;
  const std::size_t n = b.scale.size();
  const std::size_t off = std::size_t(a_brow0 * a.scale_cols);
  if (off + n > a.scale.size()) return false;
  return bytes_equal(a.scale.data() + off, b.scale.data(), n * 4) &&
         (b.e8m0.empty() || bytes_equal(a.e8m0.data() + off, b.e8m0.data(), n));
}

void check_quant(const QuantCase& q, Fingerprint& fp) {
  const std::int64_t M = q.gs.total(), C = q.cols, br = block_rows(q.geometry);
  const ref::SourceView2d x{q.x.data(), Source::f32, M, C, C, 1};
  const std::vector<std::int64_t> ends = q.gs.ends();
  ref::Quantized grouped, grouped2;
  {
    ThreadCount t(1);
    grouped = quantize_grouped_rows(x, q.recipe, q.geometry, ends);
  }
  {
    ThreadCount t(2);
    grouped2 = quantize_grouped_rows(x, q.recipe, q.geometry, ends);
  }
  fp.fold(grouped.codes.data(), grouped.codes.size());
  fp.fold(grouped.scale.data(), grouped.scale.size() * 4);
  if (grouped.codes != grouped2.codes || grouped.scale.size() != grouped2.scale.size() ||
      !bytes_equal(grouped.scale.data(), grouped2.scale.data(), grouped.scale.size() * 4))
    throw Violation("per-group quantize: 1 thread and 2 threads give different bits");
  // Definition: each group quantized on its own, its block rows following the previous group's.
  std::int64_t row0 = 0, brow0 = 0;
  bool aligned = true;
  for (std::size_t g = 0; g < q.gs.sizes.size(); ++g) {
    const std::int64_t m = q.gs.sizes[g];
    if (m % br) aligned = false;
    const ref::SourceView2d xg{q.x.data() + row0 * C, Source::f32, m, C, C, 1};
    const ref::Quantized alone = quantize(xg, q.recipe, q.geometry);
    if (!same(grouped, row0, brow0, alone))
      throw Violation(
          "per-group quantize: group " + std::to_string(g) + " (rows " + std::to_string(row0) +
          ".." + std::to_string(row0 + m) + ") differs from quantizing the group alone [" +
          std::string(to_string(q.recipe.kind)) + " " + std::string(to_string(q.geometry)) + "]");
    row0 += m;
    brow0 += (m + br - 1) / br;
  }
  if (grouped.scale_rows != brow0)
    throw Violation("per-group quantize: " + std::to_string(grouped.scale_rows) +
                    " block rows, expected " + std::to_string(brow0));
  if (aligned) {
    const ref::Quantized global = quantize(x, q.recipe, q.geometry);
    if (!same(global, 0, 0, grouped) || global.scale.size() != grouped.scale.size())
      throw Violation(
          "per-group quantize != global blocking although every group is a multiple of " +
          std::to_string(br) + " rows");
  }
}

bool same_sizes(const gen::GroupSizes& x, const gen::GroupSizes& y) {
  return x.sizes == y.sizes && x.dist == y.dist && x.align == y.align && x.tail == y.tail;
}

std::string pad_diff(const PadCase& x, const PadCase& y) {
  if (!same_sizes(x.gs, y.gs)) return "group sizes";
  if (x.empty != y.empty) return "empty-group policy";
  if (x.row_bytes != y.row_bytes || x.rows != y.rows) return "rows";
  return "";
}

std::string quant_diff(const QuantCase& x, const QuantCase& y) {
  if (!same_sizes(x.gs, y.gs)) return "group sizes";
  if (x.recipe.kind != y.recipe.kind || x.recipe.elem != y.recipe.elem ||
      x.recipe.runtime != y.recipe.runtime || x.recipe.pow2 != y.recipe.pow2 ||
      std::bit_cast<std::uint32_t>(x.recipe.epsilon) !=
          std::bit_cast<std::uint32_t>(y.recipe.epsilon))
    return "recipe";
  if (x.geometry != y.geometry) return "geometry";
  if (x.values != y.values) return "value class";
  if (x.cols != y.cols || x.x != y.x) return "source tensor";
  return "";
}

}  // namespace

void add_data_suites(std::vector<Suite>& out) {
  {
    std::vector<std::string> classes;
    for (auto d : gen::kSizeDists) classes.push_back(std::string("dist:") + to_string(d));
    for (const char* a : {"align:16", "align:32", "align:128", "sizes:edge_128", "sizes:edge_256"})
      classes.push_back(a);
    out.push_back(make_suite<PadCase>(
        {"pad.roundtrip",
         "pad / unpad: plan and row map == definition, padding rows zero, unpad(pad(x)) == x",
         "cpu",
         3000,
         classes,
         {}},
        {draw_pad, check_pad,
         [](const PadCase& p) {
           auto t = gen::size_tags(p.gs);
           t.push_back("align:" + std::to_string(p.gs.align));
           return t;
         },
         save_pad, load_pad, pad_diff}));
  }
  {
    std::vector<std::string> classes;
    for (auto d : gen::kSizeDists) classes.push_back(std::string("dist:") + to_string(d));
    for (auto v : gen::kValueClasses) classes.push_back(std::string("values:") + gen::to_string(v));
    classes.push_back("sizes:edge_128");
    classes.push_back("sizes:edge_256");
    classes.push_back("groups:aligned");
    classes.push_back("groups:unaligned");
    out.push_back(make_suite<QuantCase>(
        {"quantize.grouped",
         "per-group quantize == each group alone; == global blocking when aligned; threads",
         "cpu",
         1000,
         classes,
         {}},
        {draw_quant, check_quant,
         [](const QuantCase& q) {
           auto t = gen::size_tags(q.gs);
           t.push_back(std::string("values:") + gen::to_string(q.values));
           bool aligned = true;
           for (auto s : q.gs.sizes) aligned = aligned && s % block_rows(q.geometry) == 0;
           t.push_back(aligned ? "groups:aligned" : "groups:unaligned");
           return t;
         },
         save_quant, load_quant, quant_diff}));
  }
}

}  // namespace fp8ref::fuzz
