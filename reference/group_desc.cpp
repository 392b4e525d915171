// Group descriptors: validation and conversions (docs/design.md §8). See group_desc.h.
#include "reference/group_desc.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "numerics/plant.h"

namespace fp8ref::ref {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("fp8ref: " + what); }
std::string str(std::int64_t x) { return std::to_string(x); }

}  // namespace

void validate_offsets(std::span<const std::int64_t> offs, std::int64_t M, std::int64_t align) {
  if (align < 1) fail("group offsets: alignment must be >= 1, got " + str(align));
  std::int64_t prev = 0;
  for (std::size_t g = 0; g < offs.size(); ++g) {
    const std::int64_t o = offs[g];
    if (o < 0) fail("group offsets: offs[" + str(g) + "] = " + str(o) + " is negative");
    if (o < prev)
      fail("group offsets: non-monotonic, offs[" + str(g) + "] = " + str(o) + " < offs[" +
           str(g - 1) + "] = " + str(prev));
    if (o > M) fail("group offsets: offs[" + str(g) + "] = " + str(o) + " is beyond M = " + str(M));
    if (o % align != 0)
      fail("group offsets: offs[" + str(g) + "] = " + str(o) +
           " is not a multiple of the alignment " + str(align));
    prev = o;
  }
}

void validate_sizes(std::span<const std::int64_t> sizes, std::int64_t M) {
  std::int64_t sum = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    if (sizes[g] < 0)
      fail("group sizes: sizes[" + str(g) + "] = " + str(sizes[g]) + " is negative");
    sum += sizes[g];
    if (sum > M)
      fail("group sizes: the sizes up to group " + str(g) + " sum to " + str(sum) +
           ", beyond M = " + str(M));
  }
}

void validate_row_map(std::span<const std::int32_t> row_map, std::int64_t G) {
  for (std::size_t r = 0; r < row_map.size(); ++r)
    if (row_map[r] < -1 || row_map[r] >= G)
      fail("row map: row_map[" + str(r) + "] = " + str(row_map[r]) +
           " is outside [-1, G = " + str(G) + ")");
}

std::vector<std::int64_t> offsets_from_sizes(std::span<const std::int64_t> sizes) {
  std::vector<std::int64_t> offs(sizes.size());
  std::int64_t sum = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    if (sizes[g] < 0)
      fail("group sizes: sizes[" + str(g) + "] = " + str(sizes[g]) + " is negative");
    offs[g] = sum += sizes[g];
  }
  return offs;
}

std::vector<std::int64_t> sizes_from_offsets(std::span<const std::int64_t> offs) {
  validate_offsets(offs, offs.empty() ? 0 : offs.back(), 1);
  std::vector<std::int64_t> sizes(offs.size());
  for (std::size_t g = 0; g < offs.size(); ++g) sizes[g] = offs[g] - (g ? offs[g - 1] : 0);
  return sizes;
}

std::vector<std::int32_t> row_map_from_offsets(std::span<const std::int64_t> offs, std::int64_t M) {
  validate_offsets(offs, M, 1);
  std::vector<std::int32_t> map(std::size_t(M), -1);
  std::int64_t start = 0;
  for (std::size_t g = 0; g < offs.size(); ++g) {
    std::int64_t end = offs[g];
#ifdef FP8REF_PLANT_HOOKS
    if (FP8REF_PLANTED(offs_off_by_one) && g == 0 && end > 0) --end;
#endif
    for (std::int64_t r = start; r < end; ++r) map[std::size_t(r)] = std::int32_t(g);
    start = offs[g];
  }
  return map;
}

std::vector<std::int64_t> offsets_from_row_map(std::span<const std::int32_t> row_map,
                                               std::int64_t G) {
  validate_row_map(row_map, G);
  std::vector<std::int64_t> offs(std::size_t(G), 0);
  std::int32_t cur = 0;
  bool padding = false;
  for (std::size_t r = 0; r < row_map.size(); ++r) {
    const std::int32_t g = row_map[r];
    if (g == -1) {
      padding = true;
      continue;
    }
    if (padding)
      fail("row map: row " + str(r) + " (group " + str(g) +
           ") follows a padding row; end offsets cannot describe interleaved padding");
    if (g < cur)
      fail("row map: row " + str(r) + " belongs to group " + str(g) + " after group " + str(cur) +
           "; groups must be contiguous and ascending");
    cur = g;
    offs[std::size_t(g)] = std::int64_t(r) + 1;
  }
  for (std::size_t g = 1; g < offs.size(); ++g) offs[g] = std::max(offs[g], offs[g - 1]);
  return offs;
}

AlignedLayout aligned_layout_from_sizes(std::span<const std::int64_t> sizes, std::int64_t align) {
  if (align < 1) fail("aligned layout: alignment must be >= 1, got " + str(align));
  AlignedLayout l{{}, {sizes.begin(), sizes.end()}, align, 0};
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    if (sizes[g] < 0)
      fail("group sizes: sizes[" + str(g) + "] = " + str(sizes[g]) + " is negative");
    l.starts.push_back(l.total);
    l.total += (sizes[g] + align - 1) / align * align;
  }
  return l;
}

void validate_aligned_layout(const AlignedLayout& l, std::int64_t M) {
  if (l.align < 1) fail("aligned layout: alignment must be >= 1, got " + str(l.align));
  if (l.starts.size() != l.sizes.size())
    fail("aligned layout: " + str(std::int64_t(l.starts.size())) + " starts but " +
         str(std::int64_t(l.sizes.size())) + " sizes");
  std::int64_t end = 0;
  for (std::size_t g = 0; g < l.starts.size(); ++g) {
    const std::int64_t s = l.starts[g], n = l.sizes[g];
    if (n < 0) fail("aligned layout: sizes[" + str(g) + "] = " + str(n) + " is negative");
    if (s < 0) fail("aligned layout: starts[" + str(g) + "] = " + str(s) + " is negative");
    if (s % l.align != 0)
      fail("aligned layout: starts[" + str(g) + "] = " + str(s) + " is misaligned (alignment " +
           str(l.align) + ")");
    if (s < end)
      fail("aligned layout: group " + str(g) + " starts at " + str(s) +
           ", inside the previous groups (which end at " + str(end) + ")");
    if (s + n > M)
      fail("aligned layout: group " + str(g) + " ends at " + str(s + n) + ", beyond M = " + str(M));
    end = s + n;
  }
}

std::vector<std::int32_t> row_map_from_aligned(const AlignedLayout& l, std::int64_t M) {
  validate_aligned_layout(l, M);
  std::vector<std::int32_t> map(std::size_t(M), -1);
  for (std::size_t g = 0; g < l.starts.size(); ++g)
    for (std::int64_t r = l.starts[g]; r < l.starts[g] + l.sizes[g]; ++r)
      map[std::size_t(r)] = std::int32_t(g);
  return map;
}

void validate_masked(std::span<const std::int64_t> masked_m, std::int64_t M_max) {
  if (M_max < 0) fail("masked layout: M_max = " + str(M_max) + " is negative");
  for (std::size_t g = 0; g < masked_m.size(); ++g) {
    if (masked_m[g] < 0)
      fail("masked layout: masked_m[" + str(g) + "] = " + str(masked_m[g]) + " is negative");
    if (masked_m[g] > M_max)
      fail("masked layout: masked_m[" + str(g) + "] = " + str(masked_m[g]) +
           " is beyond M_max = " + str(M_max));
  }
}

std::vector<std::int32_t> row_map_from_masked(std::span<const std::int64_t> masked_m,
                                              std::int64_t M_max) {
  validate_masked(masked_m, M_max);
  std::vector<std::int32_t> map(masked_m.size() * std::size_t(M_max), -1);
  for (std::size_t g = 0; g < masked_m.size(); ++g)
    for (std::int64_t i = 0; i < masked_m[g]; ++i)
      map[g * std::size_t(M_max) + std::size_t(i)] = std::int32_t(g);
  return map;
}

std::vector<std::vector<std::int64_t>> rows_by_group(std::span<const std::int32_t> row_map,
                                                     std::int64_t G) {
  validate_row_map(row_map, G);
  std::vector<std::vector<std::int64_t>> rows;
  rows.resize(std::size_t(G));
  for (std::size_t r = 0; r < row_map.size(); ++r)
    if (row_map[r] >= 0) rows[std::size_t(row_map[r])].push_back(std::int64_t(r));
  return rows;
}

}  // namespace fp8ref::ref
