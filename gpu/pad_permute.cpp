// Launchers of the data-movement kernels (gpu/pad_permute.h): the host computes each plan as an
// index map, checks every argument (one line, std::invalid_argument) before any launch, uploads
// the map on the stream and runs one gather.
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

// A host index map on the device for the duration of one launch (freed in stream order).
struct DeviceMap {
  std::int64_t* data = nullptr;
  cudaStream_t stream;
  DeviceMap(const std::vector<std::int64_t>& host, cudaStream_t s) : stream(s) {
    const std::size_t bytes = (host.empty() ? 1 : host.size()) * sizeof(std::int64_t);
    FP8REF_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data), bytes, s));
    if (!host.empty())
      FP8REF_CUDA_CHECK(cudaMemcpyAsync(data, host.data(), host.size() * sizeof(std::int64_t),
                                        cudaMemcpyHostToDevice, s));
  }
  ~DeviceMap() { cudaFreeAsync(data, stream); }
  DeviceMap(const DeviceMap&) = delete;
  DeviceMap& operator=(const DeviceMap&) = delete;
};

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

void pad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
              EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks) {
  const PadLayout p = pad_layout(sizes, align, empty);
  check_rows("pad", "input", in.rows, in.row_bytes, in.data, total_of("pad", sizes));
  check_rows("pad", "output", out.rows, out.row_bytes, out.data, p.capacity);
  if (in.row_bytes != out.row_bytes) fail("pad", "input and output row widths differ");
  if (p.capacity == 0) return;
  std::vector<std::int64_t> map(std::size_t(p.capacity), -1);
  std::int64_t src = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g)
    for (std::int64_t i = 0; i < sizes[g]; ++i) map[std::size_t(p.starts[g] + i)] = src++;
  const DeviceMap dmap(map, stream);
  detail::launch_gather_rows(in.data, in.row_bytes, dmap.data, p.capacity, out.data, max_blocks,
                             stream);
}

void unpad_rows(DeviceRows in, std::span<const std::int64_t> sizes, std::int64_t align,
                EmptyGroups empty, DeviceRowsOut out, cudaStream_t stream, int max_blocks) {
  const PadLayout p = pad_layout(sizes, align, empty);
  const std::int64_t T = total_of("unpad", sizes);
  check_rows("unpad", "input", in.rows, in.row_bytes, in.data, p.capacity);
  check_rows("unpad", "output", out.rows, out.row_bytes, out.data, T);
  if (in.row_bytes != out.row_bytes) fail("unpad", "input and output row widths differ");
  if (T == 0) return;
  std::vector<std::int64_t> map;
  for (std::size_t g = 0; g < sizes.size(); ++g)
    for (std::int64_t i = 0; i < sizes[g]; ++i) map.push_back(p.starts[g] + i);
  const DeviceMap dmap(map, stream);
  detail::launch_gather_rows(in.data, in.row_bytes, dmap.data, T, out.data, max_blocks, stream);
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

void permute_rows(DeviceRows in, const HostRouting& routing, DeviceRowsOut out, cudaStream_t stream,
                  int max_blocks) {
  const PermuteOrder o = permute_order(routing);
  const std::int64_t P = std::int64_t(o.source_token.size());
  check_rows("permute", "input", in.rows, in.row_bytes, in.data, routing.tokens);
  check_rows("permute", "output", out.rows, out.row_bytes, out.data, P);
  if (in.row_bytes != out.row_bytes) fail("permute", "input and output row widths differ");
  if (P == 0) return;
  const DeviceMap dmap(o.source_token, stream);
  detail::launch_gather_rows(in.data, in.row_bytes, dmap.data, P, out.data, max_blocks, stream);
}

void permute_scales_mn_major(const std::uint32_t* in, std::int64_t scale_cols,
                             const HostRouting& routing, std::uint32_t* out, std::size_t out_words,
                             cudaStream_t stream, int max_blocks) {
  const PermuteOrder o = permute_order(routing);
  const std::int64_t P = std::int64_t(o.source_token.size());
  if (scale_cols < 0) fail("permute scales", "negative scale columns");
  const std::size_t need = std::size_t(scale_cols * round_up(P, 4));
  if (out_words < need)
    fail("permute scales",
         "output of " + std::to_string(out_words) + " words, needs " + std::to_string(need));
  if (need == 0) return;
  if (in == nullptr || out == nullptr) fail("permute scales", "null device buffer");
  const DeviceMap dmap(o.source_token, stream);
  detail::launch_gather_columns(in, round_up(routing.tokens, 4), scale_cols, dmap.data, P, out,
                                round_up(P, 4), max_blocks, stream);
}

void unpermute_combine(const float* y, std::int64_t H, const HostRouting& routing,
                       const float* prob, Combine c, float* out, std::size_t out_floats,
                       cudaStream_t stream, int max_blocks) {
  const PermuteOrder o = permute_order(routing);
  if (H < 0) fail("unpermute", "negative hidden size");
  const std::size_t need = std::size_t(routing.tokens * H);
  if (out_floats < need)
    fail("unpermute",
         "output of " + std::to_string(out_floats) + " floats, needs " + std::to_string(need));
  if (need == 0) return;
  if (out == nullptr || prob == nullptr || (!o.source_token.empty() && y == nullptr))
    fail("unpermute", "null device buffer");
  const DeviceMap dmap(o.row_of, stream);
  detail::launch_combine(y, H, dmap.data, prob, routing.tokens, routing.k, c == Combine::fma, out,
                         max_blocks, stream);
}

}  // namespace fp8ref::gpu
