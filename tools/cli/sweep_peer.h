// The implementations a sweep compares fp8ref's profile codec against ("peers"):
//   cuda       CUDA's own host conversion functions from <cuda_fp8.h> (cuda_* profiles only);
//   oracle     numerics/oracle/table_oracle.h on the f64 value after the profile's source step;
//   ml_dtypes, torch   the Python libraries, run by tools/python/cast_stream.py, which streams
//              their output codes for all inputs in order over a pipe.
// Each peer writes the code that *it* produces; the sweep counts where fp8ref differs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cli/sweep_domain.h"
#include "numerics/profile.h"

namespace fp8ref::cli {

enum class PeerKind : std::uint8_t { cuda, oracle, ml_dtypes, torch };

PeerKind parse_peer_option(std::string_view s);  // throws UsageError
std::string_view to_string(PeerKind p);

// A peer that runs in this process; encode_block is called concurrently from worker threads.
class InProcessPeer {
 public:
  virtual ~InProcessPeer() = default;
  virtual std::string description() const = 0;
  // out[k] = the peer's code for source pattern inputs[k], k < n.
  virtual void encode_block(const std::uint64_t* inputs, std::size_t n,
                            std::uint8_t* out) const = 0;
};

// A peer in another process; read_chunk is called from one thread at a time, chunks in order.
class StreamPeer {
 public:
  virtual ~StreamPeer() = default;
  virtual std::string description() const = 0;
  // out[k] = the peer's code for domain input lo + k, k < n. Throws std::runtime_error when the
  // stream ends early or the peer process fails.
  virtual void read_chunk(std::uint64_t lo, std::size_t n, std::uint8_t* out) = 0;
};

// Where the Python peers come from: interpreter, script path, torch device.
struct StreamOptions {
  std::string python;  // empty: $FP8REF_PYTHON, else "python3"
  std::string script;  // empty: <prefix>/share/fp8ref/python/cast_stream.py next to the
                       // installed fp8-check, else the source tree's tools/python/cast_stream.py
  std::string device = "cpu";  // torch only
};

// Whether this build has the `cuda` peer (false: no CUDA toolkit headers were found). The
// `oracle` peer is always built.
bool cuda_peer_available();

// Throw UsageError when the peer cannot check this codec (e.g. cuda with a non-cuda profile).
std::unique_ptr<InProcessPeer> make_cuda_peer(const ProfileCodec& codec);
std::unique_ptr<InProcessPeer> make_oracle_peer(const ProfileCodec& codec);

// Probes the library first (`cast_stream.py --probe`); throws UsageError when the interpreter,
// the script or the library is missing. The process starts here and streams `domain` in order.
// `chunk` is the size of every read_chunk call but the last: for sampled domains the child
// reads exactly that many f64 inputs before it answers, so both sides must agree on it.
std::unique_ptr<StreamPeer> make_stream_peer(PeerKind kind, const ProfileCodec& codec,
                                             const SweepDomain& domain, std::size_t chunk,
                                             const StreamOptions& opts);

// "ml_dtypes 0.6.0 (numpy 2.4.6)" when `kind`'s library imports under the configured interpreter,
// an empty string when it does not (`why` then says what failed).
std::string probe_stream_library(PeerKind kind, const StreamOptions& opts, std::string* why);

}  // namespace fp8ref::cli
