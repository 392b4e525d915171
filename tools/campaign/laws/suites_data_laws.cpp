// data.laws (docs/fuzz.md "Oracle suites"): laws of the grouped data path checked without
// restating its layout: the padded row map names each group exactly sizes[g] times and every
// other row -1; pad_rows leaves every row outside a group's true rows zero and unpad_rows undoes
// it; an empty group's wgrad equals that of the same group given all-zero rows (RN_out(C[g] + 0)
// = C[g] for f32 output and C without zeros), i.e. the model's own arithmetic on a zero
// contribution. pad.roundtrip and gemm.wgrad check the same against their direct formulas.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/laws/law_suites.h"
#include "reference/grouped_gemm.h"
#include "reference/pad_permute.h"

namespace fp8ref::fuzz {
namespace {

constexpr const char* kDataLaws[] = {"pad_map_counts", "pad_rows_zero", "wgrad_empty_is_zero_rows"};
constexpr std::int64_t kNumDataLaws = 3;

// 1..6 groups, a third of them empty, sizes up to 2·align.
std::vector<std::int64_t> draw_sizes(std::mt19937_64& rng, std::int64_t align) {
  std::vector<std::int64_t> sizes(1 + rng() % 6);
  for (auto& s : sizes) s = rng() % 3 == 0 ? 0 : std::int64_t(rng() % std::uint64_t(2 * align + 1));
  return sizes;
}

ref::PadPlan draw_plan(std::mt19937_64& rng) {
  const std::int64_t aligns[] = {1, 16, 32, 128};
  const std::int64_t align = aligns[rng() % 4];
  const auto policy =
      rng() & 1 ? ref::EmptyGroupPolicy::keep_empty : ref::EmptyGroupPolicy::one_block;
  return ref::plan_padding(draw_sizes(rng, align), align, policy);
}

void law_map_counts(std::mt19937_64& rng, Fingerprint& fp) {
  const ref::PadPlan plan = draw_plan(rng);
  const std::vector<std::int32_t> map = ref::padded_row_map(plan);
  fp.fold(map.data(), map.size() * 4);
  std::vector<std::int64_t> count(plan.sizes.size(), 0);
  std::int64_t padding = 0;
  for (const std::int32_t g : map) {
    if (g == -1) {
      ++padding;
      continue;
    }
    if (g < 0 || std::size_t(g) >= count.size())
      throw Violation("padded row map holds " + std::to_string(g));
    ++count[std::size_t(g)];
  }
  for (std::size_t g = 0; g < count.size(); ++g)
    if (count[g] != plan.sizes[g])
      throw Violation("padded row map names group " + std::to_string(g) + " " +
                      std::to_string(count[g]) + " times, its size is " +
                      std::to_string(plan.sizes[g]));
  if (padding != plan.capacity - plan.rows_in)
    throw Violation("padded row map has " + std::to_string(padding) + " padding rows, not " +
                    std::to_string(plan.capacity - plan.rows_in));
}

// Every input row has a non-zero byte; the padded buffer's rows are the input rows in order,
// found by skipping zero rows, and exactly capacity - rows_in rows are zero.
void law_pad_rows(std::mt19937_64& rng, Fingerprint& fp) {
  const ref::PadPlan plan = draw_plan(rng);
  const std::int64_t rb = 1 + std::int64_t(rng() % 8);
  std::vector<std::uint8_t> in(std::size_t(plan.rows_in * rb));
  for (auto& b : in) b = std::uint8_t(rng());
  for (std::int64_t r = 0; r < plan.rows_in; ++r) in[std::size_t(r * rb)] |= 1;
  std::vector<std::uint8_t> out(std::size_t(plan.capacity * rb), 0xA5);
  ref::pad_rows(plan, {in, plan.rows_in, rb}, {out, plan.capacity, rb});
  fp.fold(out.data(), out.size());
  std::int64_t next = 0, zero_rows = 0;
  for (std::int64_t r = 0; r < plan.capacity; ++r) {
    const auto row = out.begin() + r * rb;
    if (std::all_of(row, row + rb, [](std::uint8_t b) { return b == 0; })) {
      ++zero_rows;
      continue;
    }
    if (next >= plan.rows_in || !std::equal(row, row + rb, in.begin() + next * rb))
      throw Violation("padded row " + std::to_string(r) + " is neither zero nor input row " +
                      std::to_string(next));
    ++next;
  }
  if (next != plan.rows_in || zero_rows != plan.capacity - plan.rows_in)
    throw Violation("pad_rows kept " + std::to_string(next) + " of " +
                    std::to_string(plan.rows_in) + " rows with " + std::to_string(zero_rows) +
                    " zero rows");
  std::vector<std::uint8_t> back(in.size(), 0);
  ref::unpad_rows(plan, {out, plan.capacity, rb}, {back, plan.rows_in, rb});
  if (back != in) throw Violation("unpad_rows(pad_rows(x)) != x");
}

std::uint8_t finite_e4m3(std::mt19937_64& rng) {
  const std::uint8_t c = std::uint8_t(rng());
  return (c & 0x7F) == 0x7F ? std::uint8_t(c ^ 1) : c;
}

// Group g empty, and the same with m all-zero rows inserted for g: dW[g] must agree.
void law_wgrad_empty(std::mt19937_64& rng, Fingerprint& fp) {
  const std::int64_t N = 1 + std::int64_t(rng() % 8), K = 1 + std::int64_t(rng() % 8);
  std::vector<std::int64_t> sizes = draw_sizes(rng, 4);
  const std::size_t g = rng() % sizes.size();
  sizes[g] = 0;
  const std::int64_t G = std::int64_t(sizes.size());
  std::vector<float> c(std::size_t(G * N * K));
  for (auto& v : c)
    v = std::ldexp(float(1 + rng() % 255), int(rng() % 20) - 10) * (rng() & 1 ? 1 : -1);
  const ref::ModelChoice model{
      rng() & 1 ? AccumulationModel::exact : AccumulationModel::fp32_sequential, 1};
  std::vector<float> dw[2];
  for (int zero_rows = 0; zero_rows < 2; ++zero_rows) {
    std::vector<std::int64_t> sz = sizes, offs;
    sz[g] = zero_rows ? 1 + std::int64_t(rng() % 5) : 0;
    std::int64_t M = 0;
    for (auto s : sz) offs.push_back(M += s);
    std::vector<std::uint8_t> dy(std::size_t(M * N)), x(std::size_t(M * K));
    for (auto& b : dy) b = finite_e4m3(rng);
    for (auto& b : x) b = finite_e4m3(rng);
    const std::int64_t r0 = offs[g] - sz[g];
    std::fill(dy.begin() + r0 * N, dy.begin() + offs[g] * N, std::uint8_t{0});
    const ref::WgradOperands op{M,  N,  K, G, Format::e4m3, Format::e4m3, dy, x, ref::Scaling::none,
                                {}, {}, c};
    dw[zero_rows].resize(c.size());
    ref::grouped_gemm_wgrad(op, offs, model, dw[zero_rows], {});
  }
  fp.fold(dw[0].data(), dw[0].size() * 4);
  for (std::int64_t e = std::int64_t(g) * N * K; e < std::int64_t(g + 1) * N * K; ++e)
    if (std::bit_cast<std::uint32_t>(dw[0][std::size_t(e)]) !=
        std::bit_cast<std::uint32_t>(dw[1][std::size_t(e)]))
      throw Violation("wgrad of empty group " + std::to_string(g) + " at " + std::to_string(e) +
                      ": " + hex(std::bit_cast<std::uint32_t>(dw[0][std::size_t(e)])) +
                      ", with all-zero rows " +
                      hex(std::bit_cast<std::uint32_t>(dw[1][std::size_t(e)])));
}

void check_data_law(std::int64_t law, std::uint64_t seed, Fingerprint& fp) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 4; ++i) {
    if (law == 0)
      law_map_counts(rng, fp);
    else if (law == 1)
      law_pad_rows(rng, fp);
    else
      law_wgrad_empty(rng, fp);
  }
}

}  // namespace

void add_data_law_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"data.laws",
       "pad row map counts, padding rows zero, empty-group wgrad == zero rows",
       "cpu",
       200,
       {std::begin(kDataLaws), std::end(kDataLaws)},
       {}},
      kNumDataLaws, [](std::int64_t v) { return std::string(kDataLaws[v]); }, check_data_law));
}

}  // namespace fp8ref::fuzz
