// The `oracle` sweep peer: numerics/oracle/table_oracle.h, a second, deliberately different
// encoder (nearest-representable search over the code table), run on the same f64 value the
// profile codec rounds: the source pattern widened exactly, then narrowed to f32 first where
// the profile reproduces a library that double-rounds (ProfileCodec::via_f32).
#include <memory>
#include <string>

#include "cli/errors.h"
#include "cli/sweep_peer.h"
#include "numerics/oracle/table_oracle.h"

namespace fp8ref::cli {
namespace {

using namespace fp8ref::oracle;

class OraclePeer final : public InProcessPeer {
 public:
  explicit OraclePeer(const ProfileCodec& c) : codec_(c) {}

  std::string description() const override {
    return "numerics/oracle/table_oracle.h on the profile's f64 value";
  }

  void encode_block(const std::uint64_t* in, std::size_t n, std::uint8_t* out) const override {
    for (std::size_t k = 0; k < n; ++k) {
      std::uint64_t d = source_to_f64_bits(codec_.source, in[k]);
      if (codec_.via_f32) d = f32_to_f64_bits(f64_to_f32_bits_rne(d));
      out[k] = codec_.format == Format::e8m0 ? table_oracle_encode_e8m0(d, codec_.e8m0)
                                             : table_oracle_encode(codec_.format, d, codec_.fp8);
    }
  }

 private:
  ProfileCodec codec_;
};

}  // namespace

std::unique_ptr<InProcessPeer> make_oracle_peer(const ProfileCodec& c) {
  if (c.rounding == Rounding::sr)
    throw UsageError(
        "--against oracle does not take stochastic rounding (no random bits in a sweep)");
  return std::make_unique<OraclePeer>(c);
}

}  // namespace fp8ref::cli
