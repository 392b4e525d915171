// Launchers of the data-movement kernels (gpu/pad_permute.h): the host computes each plan as
// index maps and uploads them once (PadPlan, PermutePlan); every launch checks its arguments
// (one line, std::invalid_argument) before running one gather.
#include "gpu/pad_permute.h"

#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "gpu/pad_permute_kernels.h"

namespace fp8ref::gpu {
namespace {

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string("gpu ") + op + ": " + why);
}

std::int64_t round_up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

void check_rows(const char* op, const char* what, std::int64_t rows, std::int64_t row_bytes,
                const void* data, std::int64_t want_rows) {
  if (rows < 0 || row_bytes < 1) fail(op, std::string(what) + ": bad shape");
  if (rows != want_rows)
    fail(op, std::string(what) + " has " + std::to_string(rows) + " rows, the plan needs " +
                 std::to_string(want_rows));
  if (rows > 0 && data == nullptr) fail(op, std::string(what) + ": null device buffer");
}

std::int64_t total_of(const char* op, std::span<const std::int64_t> sizes) {
  std::int64_t t = 0;
  for (auto s : sizes) {
    if (s < 0) fail(op, "negative group size");
    t += s;
  }
  return t;
}

void check_routing(const char* op, const HostRouting& r) {
  if (r.tokens < 0 || r.k < 1 || r.experts < 1) fail(op, "bad routing shape");
  if (std::int64_t(r.expert.size()) != r.tokens * r.k)
    fail(op, "routing has " + std::to_string(r.expert.size()) + " entries, needs tokens * k");
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (std::int64_t j = 0; j < r.k; ++j) {
      const std::int32_t e = r.expert[std::size_t(t * r.k + j)];
      if (e < -1 || e >= r.experts)
        fail(op, "token " + std::to_string(t) + " slot " + std::to_string(j) + ": expert " +
                     std::to_string(e) + " out of range");
      for (std::int64_t i = 0; i < j && e >= 0; ++i)
        if (r.expert[std::size_t(t * r.k + i)] == e)
          fail(op,
               "token " + std::to_string(t) + " routes to expert " + std::to_string(e) + " twice");
    }
}

}  // namespace

PadLayout pad_layout(std::span<const std::int64_t> sizes, std::int64_t align, EmptyGroups empty) {
  if (align < 1) fail("pad", "align must be >= 1");
  const std::int64_t T = total_of("pad", sizes), G = std::int64_t(sizes.size());
  PadLayout p{{}, 0, round_up(T + G * align, align)};
  for (auto s : sizes) {
    p.starts.push_back(p.used);
    p.used += s == 0 ? (empty == EmptyGroups::one_block ? align : 0) : round_up(s, align);
  }
  return p;
}

DeviceIndexMap upload_index_map(std::span<const std::int64_t> host) {
  std::int64_t* p = nullptr;
  const std::size_t bytes = (host.empty() ? 1 : host.size()) * sizeof(std::int64_t);
  FP8REF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), bytes));
  DeviceIndexMap m{std::shared_ptr<const std::int64_t>(
                       p, [](const std::int64_t* q) { cudaFree(const_cast<std::int64_t*>(q)); }),
                   std::int64_t(host.size())};
  if (!host.empty()) FP8REF_CUDA_CHECK(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
  return m;
}

PadPlan plan_pad(std::span<const std::int64_t> sizes, std::int64_t align, EmptyGroups empty) {
  PadPlan plan{pad_layout(sizes, align, empty), total_of("pad", sizes), {}, {}};
  std::vector<std::int64_t> pad_map(std::size_t(plan.layout.capacity), -1), unpad_map;
  for (std::size_t g = 0; g < sizes.size(); ++g)
    for (std::int64_t i = 0; i < sizes[g]; ++i) {
      pad_map[std::size_t(plan.layout.starts[g] + i)] = std::int64_t(unpad_map.size());
      unpad_map.push_back(plan.layout.starts[g] + i);
    }
  plan.pad_map = upload_index_map(pad_map);
  plan.unpad_map = upload_index_map(unpad_map);
  return plan;
}

void pad_rows(DeviceRows in, const PadPlan& plan, DeviceRowsOut out, cudaStream_t stream,
              int max_blocks) {
  check_rows("pad", "input", in.rows, in.row_bytes, in.data, plan.rows_in);
  check_rows("pad", "output", out.rows, out.row_bytes, out.data, plan.layout.capacity);
  if (in.row_bytes != out.row_bytes) fail("pad", "input and output row widths differ");
  if (plan.layout.capacity == 0) return;
  detail::launch_gather_rows(in.data, in.row_bytes, plan.pad_map.data.get(), plan.layout.capacity,
                             out.data, max_blocks, stream);
}

void unpad_rows(DeviceRows in, const PadPlan& plan, DeviceRowsOut out, cudaStream_t stream,
                int max_blocks) {
  check_rows("unpad", "input", in.rows, in.row_bytes, in.data, plan.layout.capacity);
  check_rows("unpad", "output", out.rows, out.row_bytes, out.data, plan.rows_in);
  if (in.row_bytes != out.row_bytes) fail("unpad", "input and output row widths differ");
  if (plan.rows_in == 0) return;
  detail::launch_gather_rows(in.data, in.row_bytes, plan.unpad_map.data.get(), plan.rows_in,
                             out.data, max_blocks, stream);
}

void pad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
              EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks) {
  pad_rows(in, plan_pad(sizes, align, empty), out, stream, max_blocks);
}

void unpad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
                EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks) {
  unpad_rows(in, plan_pad(sizes, align, empty), out, stream, max_blocks);
}

PermuteOrder permute_order(const HostRouting& r) {
  check_routing("permute", r);
  std::vector<std::vector<std::int64_t>> slots(std::size_t(r.experts));  // t * k + j per expert
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (std::int64_t j = 0; j < r.k; ++j)
      if (const std::int32_t e = r.expert[std::size_t(t * r.k + j)]; e >= 0)
        slots[std::size_t(e)].push_back(t * r.k + j);
  PermuteOrder o;
  o.row_of.assign(std::size_t(r.tokens * r.k), -1);
  for (const auto& s : slots) {
    o.expert_sizes.push_back(std::int64_t(s.size()));
    for (const std::int64_t slot : s) {
      o.row_of[std::size_t(slot)] = std::int64_t(o.source_token.size());
      o.source_token.push_back(slot / r.k);
    }
  }
  return o;
}

PermutePlan plan_permute(const HostRouting& routing) {
  const PermuteOrder o = permute_order(routing);
  return {routing.tokens, routing.k, std::int64_t(o.source_token.size()),
          upload_index_map(o.source_token), upload_index_map(o.row_of)};
}

void permute_rows(DeviceRows in, const PermutePlan& plan, DeviceRowsOut out, cudaStream_t stream,
                  int max_blocks) {
  check_rows("permute", "input", in.rows, in.row_bytes, in.data, plan.tokens);
  check_rows("permute", "output", out.rows, out.row_bytes, out.data, plan.rows);
  if (in.row_bytes != out.row_bytes) fail("permute", "input and output row widths differ");
  if (plan.rows == 0) return;
  detail::launch_gather_rows(in.data, in.row_bytes, plan.source_token.data.get(), plan.rows,
                             out.data, max_blocks, stream);
}

void permute_scales_mn_major(const std::uint32_t* in, std::int64_t scale_cols,
                             const PermutePlan& plan, std::uint32_t* out, std::size_t out_words,
                             cudaStream_t stream, int max_blocks) {
  if (scale_cols < 0) fail("permute scales", "negative scale columns");
  const std::size_t need = std::size_t(scale_cols * round_up(plan.rows, 4));
  if (out_words < need)
    fail("permute scales",
         "output of " + std::to_string(out_words) + " words, needs " + std::to_string(need));
  if (need == 0) return;
  if (in == nullptr || out == nullptr) fail("permute scales", "null device buffer");
  detail::launch_gather_columns(in, round_up(plan.tokens, 4), scale_cols,
                                plan.source_token.data.get(), plan.rows, out,
                                round_up(plan.rows, 4), max_blocks, stream);
}

void unpermute_combine(const float* y, std::int64_t H, const PermutePlan& plan, const float* prob,
                       Combine c, float* out, std::size_t out_floats, cudaStream_t stream,
                       int max_blocks) {
  if (H < 0) fail("unpermute", "negative hidden size");
  const std::size_t need = std::size_t(plan.tokens * H);
  if (out_floats < need)
    fail("unpermute",
         "output of " + std::to_string(out_floats) + " floats, needs " + std::to_string(need));
  if (need == 0) return;
  if (out == nullptr || prob == nullptr || (plan.rows > 0 && y == nullptr))
    fail("unpermute", "null device buffer");
  detail::launch_combine(y, H, plan.row_of.data.get(), prob, plan.tokens, plan.k, c == Combine::fma,
                         out, max_blocks, stream);
}

void permute_rows(DeviceRows in, const HostRouting& routing, DeviceRowsOut out, cudaStream_t stream,
                  int max_blocks) {
  permute_rows(in, plan_permute(routing), out, stream, max_blocks);
}

void permute_scales_mn_major(const std::uint32_t* in, std::int64_t scale_cols,
                             const HostRouting& routing, std::uint32_t* out, std::size_t out_words,
                             cudaStream_t stream, int max_blocks) {
  permute_scales_mn_major(in, scale_cols, plan_permute(routing), out, out_words, stream,
                          max_blocks);
}

void unpermute_combine(const float* y, std::int64_t H, const HostRouting& routing,
                       const float* prob, Combine c, float* out, std::size_t out_floats,
                       cudaStream_t stream, int max_blocks) {
  unpermute_combine(y, H, plan_permute(routing), prob, c, out, out_floats, stream, max_blocks);
}

}  // namespace fp8ref::gpu
