// Padding, permutation and unpermute-combine (docs/design.md §13). See pad_permute.h.
#include "reference/pad_permute.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "numerics/plant.h"

namespace fp8ref::ref {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("fp8ref: " + what); }
std::string str(std::int64_t x) { return std::to_string(x); }

std::int64_t round_up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

void check_rows(const char* name, std::size_t bytes, std::int64_t rows, std::int64_t row_bytes,
                std::int64_t want_rows) {
  if (row_bytes < 0) fail(std::string(name) + ": negative row size");
  if (rows != want_rows)
    fail(std::string(name) + " has " + str(rows) + " rows, expected " + str(want_rows));
  if (std::int64_t(bytes) != rows * row_bytes)
    fail(std::string(name) + " has " + str(std::int64_t(bytes)) + " bytes, expected " + str(rows) +
         " rows of " + str(row_bytes));
}

void copy_row(RowsView in, std::int64_t from, RowsSpan out, std::int64_t to) {
  if (in.row_bytes)
    std::memcpy(out.bytes.data() + to * out.row_bytes, in.bytes.data() + from * in.row_bytes,
                std::size_t(in.row_bytes));
}

}  // namespace

PadPlan plan_padding(std::span<const std::int64_t> sizes, std::int64_t align,
                     EmptyGroupPolicy empty) {
  if (align < 1) fail("padding: alignment must be >= 1, got " + str(align));
  PadPlan p{align, empty, {sizes.begin(), sizes.end()}, {}, {}, 0, 0, 0};
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    if (sizes[g] < 0)
      fail("padding: sizes[" + str(std::int64_t(g)) + "] = " + str(sizes[g]) + " is negative");
    const std::int64_t padded =
        sizes[g] == 0 && empty == EmptyGroupPolicy::one_block ? align : round_up(sizes[g], align);
    p.starts.push_back(p.used);
    p.padded_sizes.push_back(padded);
    p.used += padded;
    p.rows_in += sizes[g];
  }
  // Each group adds < align rows of padding (or exactly align when empty under one_block), so
  // used <= T + G·align <= capacity: a size known before routing, as CUDA graphs need.
  p.capacity = round_up(p.rows_in + std::int64_t(sizes.size()) * align, align);
  return p;
}

std::vector<std::int64_t> padded_offsets(const PadPlan& plan) {
  std::vector<std::int64_t> offs(plan.starts.size());
  for (std::size_t g = 0; g < offs.size(); ++g) offs[g] = plan.starts[g] + plan.padded_sizes[g];
  return offs;
}

std::vector<std::int32_t> padded_row_map(const PadPlan& plan) {
  std::vector<std::int32_t> map(std::size_t(plan.capacity), -1);
  for (std::size_t g = 0; g < plan.starts.size(); ++g)
#ifdef FP8REF_PLANT_HOOKS
    std::fill_n(map.begin() + plan.starts[g],
                FP8REF_PLANTED(pad_rows_to_group) ? plan.padded_sizes[g] : plan.sizes[g],
                std::int32_t(g));
#else
    std::fill_n(map.begin() + plan.starts[g], plan.sizes[g], std::int32_t(g));
#endif
  return map;
}

AlignedLayout padded_layout(const PadPlan& plan) {
  return {plan.starts, plan.sizes, plan.align, plan.used};
}

void pad_rows(const PadPlan& plan, RowsView in, RowsSpan out) {
  check_rows("pad input", in.bytes.size(), in.rows, in.row_bytes, plan.rows_in);
  check_rows("pad output", out.bytes.size(), out.rows, in.row_bytes, plan.capacity);
  if (out.row_bytes != in.row_bytes) fail("pad: input and output rows differ in size");
  std::fill(out.bytes.begin(), out.bytes.end(), std::uint8_t{0});
  std::int64_t src = 0;
  for (std::size_t g = 0; g < plan.starts.size(); ++g)
    for (std::int64_t i = 0; i < plan.sizes[g]; ++i) copy_row(in, src++, out, plan.starts[g] + i);
#ifdef FP8REF_PLANT_HOOKS
  if (FP8REF_PLANTED(pad_rows_written))
    for (std::size_t g = 0, s = 0; g < plan.starts.size(); s += std::size_t(plan.sizes[g++]))
      for (std::int64_t i = plan.sizes[g]; i < plan.padded_sizes[g] && plan.sizes[g] > 0; ++i)
        copy_row(in, std::int64_t(s) + plan.sizes[g] - 1, out, plan.starts[g] + i);
#endif
}

void unpad_rows(const PadPlan& plan, RowsView in, RowsSpan out) {
  check_rows("unpad input", in.bytes.size(), in.rows, in.row_bytes, plan.capacity);
  check_rows("unpad output", out.bytes.size(), out.rows, in.row_bytes, plan.rows_in);
  if (out.row_bytes != in.row_bytes) fail("unpad: input and output rows differ in size");
  std::int64_t dst = 0;
  for (std::size_t g = 0; g < plan.starts.size(); ++g)
    for (std::int64_t i = 0; i < plan.sizes[g]; ++i) copy_row(in, plan.starts[g] + i, out, dst++);
}

PermutePlan plan_permute(const Routing& r) {
  if (r.tokens < 0 || r.k < 0 || r.experts < 0) fail("routing: negative dimension");
  if (std::int64_t(r.expert.size()) != r.tokens * r.k)
    fail("routing: expert ids have " + str(std::int64_t(r.expert.size())) +
         " entries, expected tokens·k = " + str(r.tokens * r.k));
  PermutePlan p{r.tokens, r.k, std::vector<std::int64_t>(std::size_t(r.experts), 0), {}, {}, {}};
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (std::int64_t j = 0; j < r.k; ++j) {
      const std::int32_t e = r.expert[std::size_t(t * r.k + j)];
      if (e < -1 || e >= r.experts)
        fail("routing: expert[" + str(t) + ", " + str(j) + "] = " + str(e) + " is outside [-1, " +
             str(r.experts) + ")");
      for (std::int64_t i = 0; i < j && e >= 0; ++i)
        if (r.expert[std::size_t(t * r.k + i)] == e)
          fail("routing: token " + str(t) + " is routed to expert " + str(e) + " twice");
      if (e >= 0) ++p.expert_sizes[std::size_t(e)];
    }
  std::vector<std::int64_t> next(std::size_t(r.experts), 0);  // next free row of each expert
  for (std::size_t e = 1; e < next.size(); ++e) next[e] = next[e - 1] + p.expert_sizes[e - 1];
  const std::int64_t total = next.empty() ? 0 : next.back() + p.expert_sizes.back();
  p.source_token.resize(std::size_t(total));
  p.source_slot.resize(std::size_t(total));
  p.row_of.assign(std::size_t(r.tokens * r.k), -1);
  for (std::int64_t t = 0; t < r.tokens; ++t)  // tokens ascending: ascending within each expert
    for (std::int64_t j = 0; j < r.k; ++j) {
      const std::int32_t e = r.expert[std::size_t(t * r.k + j)];
      if (e < 0) continue;
      const std::int64_t row = next[std::size_t(e)]++;
      p.source_token[std::size_t(row)] = t;
      p.source_slot[std::size_t(row)] = std::int32_t(j);
      p.row_of[std::size_t(t * r.k + j)] = row;
    }
  return p;
}

void permute_rows(const PermutePlan& plan, RowsView tokens, RowsSpan out) {
  check_rows("permute input", tokens.bytes.size(), tokens.rows, tokens.row_bytes, plan.tokens);
  check_rows("permute output", out.bytes.size(), out.rows, tokens.row_bytes,
             std::int64_t(plan.source_token.size()));
  if (out.row_bytes != tokens.row_bytes) fail("permute: input and output rows differ in size");
  for (std::size_t p = 0; p < plan.source_token.size(); ++p)
    copy_row(tokens, plan.source_token[p], out, std::int64_t(p));
}

RowsView permuted_scale_rows(const PermutePlan& plan, BlockGeometry geometry, RowsView scales,
                             std::vector<std::uint8_t>& storage) {
  switch (geometry) {
    case BlockGeometry::tensorwise: return scales;
    case BlockGeometry::rowwise:
    case BlockGeometry::b1x128:
    case BlockGeometry::b1x32: {
      const std::int64_t rows = std::int64_t(plan.source_token.size());
      storage.assign(std::size_t(rows * scales.row_bytes), 0);
      permute_rows(plan, scales, {storage, rows, scales.row_bytes});
      return {storage, rows, scales.row_bytes};
    }
    default: break;
  }
  fail(std::string("permute: ") + std::string(to_string(geometry)) +
       " activation scales span several rows and cannot travel with a permuted row "
       "(2D-scaled activations are rejected; quantize 1x128, 1x32 or rowwise instead)");
}

void unpermute_combine(const PermutePlan& plan, const Routing& r, std::span<const float> y,
                       std::int64_t H, CombineRounding rounding, std::span<float> out) {
  if (r.tokens != plan.tokens || r.k != plan.k) fail("unpermute: routing does not match the plan");
  if (std::int64_t(r.prob.size()) != r.tokens * r.k)
    fail("unpermute: probs have " + str(std::int64_t(r.prob.size())) +
         " entries, expected tokens·k = " + str(r.tokens * r.k));
  if (std::int64_t(y.size()) != std::int64_t(plan.source_token.size()) * H)
    fail("unpermute: y has " + str(std::int64_t(y.size())) + " elements, expected " +
         str(std::int64_t(plan.source_token.size())) + "·" + str(H));
  if (std::int64_t(out.size()) != r.tokens * H)
    fail("unpermute: output has " + str(std::int64_t(out.size())) + " elements, expected " +
         str(r.tokens * H));
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    float* o = out.data() + t * H;
    std::fill_n(o, H, 0.0f);
    bool first = true;
    for (std::int64_t j = 0; j < r.k; ++j) {
      const std::int64_t row = plan.row_of[std::size_t(t * r.k + j)];
      if (row < 0) continue;
      const float p = r.prob[std::size_t(t * r.k + j)];
      const float* yr = y.data() + row * H;
      for (std::int64_t h = 0; h < H; ++h) {
        if (first)
          o[h] = p * yr[h];
        else if (rounding == CombineRounding::fma)
          o[h] = std::fmaf(p, yr[h], o[h]);
        else
          o[h] = o[h] + p * yr[h];
      }
      first = false;
    }
  }
}

}  // namespace fp8ref::ref
