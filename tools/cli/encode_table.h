// Table-driven encoders built from a ProfileCodec, for throughput (tools/bench) — never for
// verification, which always runs the generic codec.
//   16-bit sources: one entry per pattern (65536).
//   f32: one entry per (top 16 bits, low 16 bits != 0) pair (2^17). Exact for every non-stochastic
//   rounding because every rounding decision of an f32 -> FP8/E8M0 cast reads the f32 pattern
//   only at bit 16 or above, plus whether anything below is non-zero: FP8 keeps <= 3 of the 23
//   fraction bits, so the round bit is fraction bit >= 19 (higher still for FP8 subnormals and
//   f32 subnormal inputs); E8M0 reads fraction bit 22 and "fraction != 0"; NaN is "exponent all
//   ones and fraction != 0"; the f32-subnormal rule of E8m0Rounding::nearest_f32_field compares
//   with 0x00400000. The representative of a class is (hi << 16) | sticky.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "numerics/profile.h"

namespace fp8ref::cli {

class EncodeTable {
 public:
  explicit EncodeTable(const ProfileCodec& codec) : source_(codec.source) {
    if (codec.rounding == Rounding::sr)
      throw std::invalid_argument("EncodeTable: stochastic rounding reads the low bits");
    if (source_ == Source::f32) {
      table_.resize(std::size_t{1} << 17);
      for (std::uint32_t hi = 0; hi < 65536; ++hi) {
        table_[2 * hi] = codec.encode(std::uint64_t{hi} << 16);
        table_[2 * hi + 1] = codec.encode((std::uint64_t{hi} << 16) | 1);
      }
    } else if (source_ == Source::bf16 || source_ == Source::f16) {
      table_.resize(65536);
      for (std::uint32_t b = 0; b < 65536; ++b) table_[b] = codec.encode(b);
    } else {
      throw std::invalid_argument("EncodeTable: f32, bf16 or f16 sources only");
    }
  }

  std::uint8_t encode_f32(std::uint32_t u) const {
    return table_[((u >> 16) << 1) | static_cast<std::uint32_t>((u & 0xFFFF) != 0)];
  }
  std::uint8_t encode_16(std::uint16_t b) const { return table_[b]; }

 private:
  Source source_;
  std::vector<std::uint8_t> table_;
};

}  // namespace fp8ref::cli
