// Group descriptors of grouped GEMMs (docs/design.md §8): cumulative end offsets (torch `offs`),
// sizes (MaxText `group_sizes`), per-row map with -1 for padding (DeepGEMM contiguous layout),
// aligned prefix sums, and masked (G, M_max) + masked_m (DeepGEMM masked layout); conversions
// between them and validation. Empty groups are legal in every form.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fp8ref::ref {

// Validation throws std::invalid_argument naming the descriptor, the index and the values.

// offs[g] = end row of group g (torch `offs`): 0 <= offs[0] <= offs[1] <= ... <= offs[G-1] <= M.
// Rows >= offs[G-1] belong to no group. align > 1 requires every offs[g] % align == 0.
void validate_offsets(std::span<const std::int64_t> offs, std::int64_t M, std::int64_t align);

// sizes[g] >= 0 with sum <= M.
void validate_sizes(std::span<const std::int64_t> sizes, std::int64_t M);

// row_map[r] in [-1, G): the group of row r, -1 for a row of no group (padding).
void validate_row_map(std::span<const std::int32_t> row_map, std::int64_t G);

std::vector<std::int64_t> offsets_from_sizes(std::span<const std::int64_t> sizes);
std::vector<std::int64_t> sizes_from_offsets(std::span<const std::int64_t> offs);

// Row map of M rows from end offsets: rows [offs[g-1], offs[g]) -> g, rows past the last -> -1.
std::vector<std::int32_t> row_map_from_offsets(std::span<const std::int64_t> offs, std::int64_t M);

// End offsets from a row map whose groups are contiguous and in ascending order with padding
// only at the end (e.g. 0 0 1 1 3 -1 -1 gives offs 2 4 4 5); throws when the map is not of that
// form (interleaved padding, a group split in two, groups out of order).
std::vector<std::int64_t> offsets_from_row_map(std::span<const std::int32_t> row_map,
                                               std::int64_t G);

// Aligned prefix sums: group g occupies rows [starts[g], starts[g] + sizes[g]) and starts are
// the prefix sums of sizes rounded up to `align` (an empty group takes no rows); rows between a
// group's end and the next start are padding. total = the rounded sum (the rows needed).
struct AlignedLayout {
  std::vector<std::int64_t> starts;
  std::vector<std::int64_t> sizes;
  std::int64_t align;
  std::int64_t total;
};
AlignedLayout aligned_layout_from_sizes(std::span<const std::int64_t> sizes, std::int64_t align);
// starts non-decreasing, each a multiple of align, groups not overlapping, all within M.
void validate_aligned_layout(const AlignedLayout& layout, std::int64_t M);
std::vector<std::int32_t> row_map_from_aligned(const AlignedLayout& layout, std::int64_t M);

// Masked layout: G blocks of M_max rows; row g*M_max + i is valid iff i < masked_m[g].
void validate_masked(std::span<const std::int64_t> masked_m, std::int64_t M_max);
std::vector<std::int32_t> row_map_from_masked(std::span<const std::int64_t> masked_m,
                                              std::int64_t M_max);

// Rows of each group in ascending order (from a row map), e.g. for K-grouped wgrad.
std::vector<std::vector<std::int64_t>> rows_by_group(std::span<const std::int32_t> row_map,
                                                     std::int64_t G);

}  // namespace fp8ref::ref
