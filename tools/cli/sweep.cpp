// Sweep engine (sweep.h). In-process peers: worker threads take 2^20-input blocks from an
// atomic counter and compare in 4096-input batches. Stream peers: one thread reads 2^24-code
// chunks from the pipe while the workers compare the previous chunk. Per-block results are
// merged in block order, so the reported first mismatches never depend on scheduling.
#include "cli/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/errors.h"
#include "numerics/encode_table.h"

namespace fp8ref::cli {
namespace {

constexpr std::uint64_t kBlock = std::uint64_t{1} << 20;         // in-process work unit
constexpr std::size_t kBatch = 4096;                             // inputs per peer call
constexpr std::uint64_t kChunk = std::uint64_t{1} << 24;         // stream read unit (exhaustive)
constexpr std::uint64_t kSampledChunk = std::uint64_t{1} << 20;  // 8 MiB of f64 per write

// fp8ref's side of the comparison: the generic codec, or a table built from it (sweep.h Engine).
struct Fp8refSide {
  const ProfileCodec& codec;
  const EncodeTable* table;  // null: the generic codec

  std::uint8_t encode(std::uint64_t in) const {
    if (!table) return codec.encode(in);
    return codec.source == Source::f32 ? table->encode(static_cast<std::uint32_t>(in))
                                       : table->encode16(static_cast<std::uint16_t>(in));
  }
};

struct BlockResult {
  std::uint64_t mismatches = 0;
  std::vector<SweepMismatch> first;
  SampleClassCounts classes{};
};

// Compares fp8ref with the peer codes peer[k] for the inputs in[k], k < n, into r.
void compare_batch(const Fp8refSide& fp8ref, std::size_t n, const std::uint64_t* in,
                   const std::uint8_t* peer, std::size_t keep, BlockResult& r) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint8_t got = fp8ref.encode(in[k]);
    if (got != peer[k]) {
      if (r.first.size() < keep) r.first.push_back({in[k], peer[k], got});
      ++r.mismatches;
    }
  }
}

// in[k] = input lo + k; sampled inputs are also counted per class into r.
void fill_inputs(const SweepDomain& d, std::uint64_t lo, std::size_t n, std::uint64_t* in,
                 BlockResult& r) {
  if (!d.sampled) {
    for (std::size_t k = 0; k < n; ++k) in[k] = lo + k;
    return;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const SampleDraw s = draw_f64_sample(d.format, d.seed, lo + k);
    in[k] = s.f64_bits;
    ++r.classes[static_cast<std::size_t>(s.cls)];
  }
}

void merge(std::vector<BlockResult>& blocks, std::size_t keep, SweepResult& out) {
  for (BlockResult& b : blocks) {
    out.mismatches += b.mismatches;
    for (const SweepMismatch& m : b.first)
      if (out.first.size() < keep) out.first.push_back(m);
    for (int c = 0; c < kSampleClassCount; ++c) out.classes[c] += b.classes[c];
  }
}

// Runs fn(block_index) for block indices 0..n_blocks-1 on `threads` threads.
template <class Fn>
void parallel_blocks(std::uint64_t n_blocks, unsigned threads, Fn fn) {
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (std::uint64_t b; (b = next.fetch_add(1)) < n_blocks;) fn(b);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n_blocks;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

void sweep_in_process(const SweepSpec& spec, const Fp8refSide& fp8ref, const SweepDomain& d,
                      const InProcessPeer& peer, unsigned threads, Progress& progress,
                      SweepResult& out) {
  const std::uint64_t n_blocks = (d.count + kBlock - 1) / kBlock;
  std::vector<BlockResult> blocks(n_blocks);
  parallel_blocks(n_blocks, threads, [&](std::uint64_t b) {
    std::uint64_t in[kBatch];
    std::uint8_t ref[kBatch];
    const std::uint64_t lo = b * kBlock, hi = std::min(d.count, lo + kBlock);
    for (std::uint64_t i = lo; i < hi; i += kBatch) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, hi - i));
      fill_inputs(d, i, n, in, blocks[b]);
      peer.encode_block(in, n, ref);
      compare_batch(fp8ref, n, in, ref, spec.keep, blocks[b]);
    }
    progress.add(hi - lo);
  });
  merge(blocks, spec.keep, out);
}

void sweep_stream(const SweepSpec& spec, const Fp8refSide& fp8ref, const SweepDomain& d,
                  StreamPeer& peer, unsigned threads, Progress& progress, SweepResult& out) {
  const std::uint64_t chunk = d.sampled ? kSampledChunk : kChunk;
  std::vector<std::uint8_t> bufs[2] = {std::vector<std::uint8_t>(chunk),
                                       std::vector<std::uint8_t>(chunk)};
  auto read = [&](std::uint64_t lo, int slot) {
    peer.read_chunk(lo, static_cast<std::size_t>(std::min(chunk, d.count - lo)), bufs[slot].data());
  };
  std::future<void> pending = std::async(std::launch::async, read, 0, 0);
  int slot = 0;
  for (std::uint64_t lo = 0; lo < d.count; lo += chunk, slot ^= 1) {
    pending.get();
    if (lo + chunk < d.count) pending = std::async(std::launch::async, read, lo + chunk, slot ^ 1);
    const std::uint64_t n = std::min(chunk, d.count - lo);
    const std::uint64_t n_blocks = (n + kBatch - 1) / kBatch;
    std::vector<BlockResult> blocks(n_blocks);
    const std::uint8_t* ref = bufs[slot].data();
    parallel_blocks(n_blocks, threads, [&](std::uint64_t b) {
      std::uint64_t in[kBatch];
      const std::uint64_t i = lo + b * kBatch;
      const auto m = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, lo + n - i));
      fill_inputs(d, i, m, in, blocks[b]);
      compare_batch(fp8ref, m, in, ref + (i - lo), spec.keep, blocks[b]);
    });
    merge(blocks, spec.keep, out);
    progress.add(n);
  }
}

}  // namespace

Engine parse_engine_option(std::string_view s) {
  if (s == "generic") return Engine::generic;
  if (s == "table") return Engine::table;
  throw UsageError("unknown engine '" + std::string(s) + "' (expected generic|table)");
}

std::string_view to_string(Engine e) { return e == Engine::table ? "table" : "generic"; }

std::string codec_label(const ProfileCodec& c) {
  return std::string(to_string(c.format)) + " " + std::string(to_string(c.profile)) + " " +
         std::string(to_string(c.source)) + " " + std::string(to_string(c.rounding));
}

SweepDomain sweep_domain(const SweepSpec& spec) {
  const Source s = spec.codec.source;
  SweepDomain d{s, spec.codec.format, 0};
  if (s == Source::f64) {
    if (spec.samples == 0)
      throw UsageError("--from f64 has 2^64 inputs: give --samples N (class-weighted f64 draws)");
    if (spec.first != 0) throw UsageError("--first is for exhaustive sweeps; f64 takes --samples");
    d.count = spec.samples;
    d.sampled = true;
    d.seed = spec.seed;
    return d;
  }
  if (spec.samples != 0) throw UsageError("--samples is for --from f64 only");
  const std::uint64_t all = std::uint64_t{1} << source_bits(s);
  if (spec.first > all)
    throw UsageError("--first " + std::to_string(spec.first) + " exceeds the " +
                     std::to_string(all) + " inputs of " + std::string(to_string(s)));
  d.count = spec.first ? spec.first : all;
  return d;
}

SweepResult run_sweep(const SweepSpec& spec, ProgressStyle style, const std::string& label) {
  if (spec.codec.rounding == Rounding::sr)
    throw UsageError("sweep does not take --rounding sr (it has no random bits to feed)");
  const SweepDomain d = sweep_domain(spec);
  if (spec.engine == Engine::table && spec.codec.source == Source::f64)
    throw UsageError("--engine table: f64 sources are not tabulated (numerics/encode_table.h)");
  const ProfileCodec codec = spec.codec;
  std::optional<EncodeTable> table;
  if (spec.engine == Engine::table) table.emplace(codec);
  const Fp8refSide fp8ref{codec, table ? &*table : nullptr};
  SweepResult out;
  out.threads = spec.threads ? spec.threads : std::max(1u, std::thread::hardware_concurrency());
  out.inputs = d.count;
  std::unique_ptr<InProcessPeer> in_process;
  std::unique_ptr<StreamPeer> stream;
  switch (spec.peer) {
    case PeerKind::cuda: in_process = make_cuda_peer(spec.codec); break;
    case PeerKind::oracle: in_process = make_oracle_peer(spec.codec); break;
    case PeerKind::ml_dtypes:
    case PeerKind::torch:
      stream = make_stream_peer(spec.peer, spec.codec, d,
                                static_cast<std::size_t>(d.sampled ? kSampledChunk : kChunk),
                                spec.stream);
      break;
  }
  out.peer_description = in_process ? in_process->description() : stream->description();
  const auto start = std::chrono::steady_clock::now();
  {
    Progress progress(label, d.count, style);
    if (in_process)
      sweep_in_process(spec, fp8ref, d, *in_process, out.threads, progress, out);
    else
      sweep_stream(spec, fp8ref, d, *stream, out.threads, progress, out);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace fp8ref::cli
