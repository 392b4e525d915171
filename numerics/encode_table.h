// Batch encode by table (docs/numerics.md "Batch encode"): one code per class of source patterns
// that every non-stochastic rounding treats alike, each filled by the generic codec
// (ProfileCodec::encode), which stays the definition. The classes, and why they are exact:
//   16-bit sources (bf16, f16): one entry per pattern, 2^16 entries.
//   f32: one entry per (top 16 bits, low 16 bits != 0) pair, 2^17 entries. Every rounding
//   decision of an f32 -> FP8 / E8M0 cast reads the pattern only at bit 16 or above, plus whether
//   anything below is non-zero: FP8 keeps <= 3 of the 23 fraction bits, so the round bit is
//   fraction bit >= 19 (higher still for FP8 subnormals and f32 subnormal inputs) and the rest
//   only matters as "non-zero" (sticky); E8M0 reads fraction bit 22 and "fraction != 0" (bit 21
//   for f32 subnormals in [2^-127, 2^-126)); NaN is "exponent all ones and fraction != 0"; the
//   f32-subnormal rule of E8m0Rounding::nearest_f32_field compares with 0x00400000, whose low 16
//   bits are zero. The representative of a class is (hi << 16) | sticky.
// Not tabulated: f64 sources (every fraction bit can decide) and Rounding::sr (reads the
// discarded bits and the random bits). Verified against the generic codec in
// proptests/numerics/codec/encode_table_test.cpp (every class; every 16-bit pattern; 2^32 for a few
// casts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/profile.h"

namespace fp8ref {

class EncodeTable {
 public:
  // Tabulates `codec`. Throws std::invalid_argument for Rounding::sr and for f64 sources.
  explicit EncodeTable(const ProfileCodec& codec) : codec_(codec) {
    if (codec.rounding == Rounding::sr)
      throw std::invalid_argument(
          "EncodeTable: stochastic rounding reads every discarded bit and the random bits; "
          "use ProfileCodec::encode");
    if (codec.source == Source::f64)
      throw std::invalid_argument(
          "EncodeTable: an f64 source can be decided by any of its 52 fraction bits; "
          "use ProfileCodec::encode");
    if (codec.source == Source::f32) {
      table_.resize(std::size_t{1} << 17);
      for (std::uint32_t hi = 0; hi < 65536; ++hi) {
        table_[2 * hi] = codec.encode(std::uint64_t{hi} << 16);
        table_[2 * hi + 1] = codec.encode((std::uint64_t{hi} << 16) | 1);
      }
    } else {
      table_.resize(std::size_t{1} << 16);
      for (std::uint32_t b = 0; b < 65536; ++b) table_[b] = codec.encode(b);
    }
  }

  const ProfileCodec& codec() const { return codec_; }

  // One f32 pattern. Precondition: codec().source == Source::f32.
  std::uint8_t encode(std::uint32_t f32_bits) const {
    return table_[((f32_bits >> 16) << 1) | static_cast<std::uint32_t>((f32_bits & 0xFFFF) != 0)];
  }

  // One bf16 / f16 pattern. Precondition: codec().source is Source::bf16 or Source::f16.
  std::uint8_t encode16(std::uint16_t bits) const { return table_[bits]; }

  // z[i] = encode(a[i]). Throws std::invalid_argument when the table is not for f32 or the
  // sizes differ.
  void encode_f32(std::span<const std::uint32_t> a, std::span<std::uint8_t> z) const {
    check_batch(codec_.source == Source::f32, a.size(), z.size(), "encode_f32");
    const std::uint8_t* t = table_.data();
    for (std::size_t i = 0; i < z.size(); ++i)
      z[i] = t[((a[i] >> 16) << 1) | static_cast<std::uint32_t>((a[i] & 0xFFFF) != 0)];
  }

  // z[i] = encode16(a[i]). Throws std::invalid_argument when the table is not for bf16 / f16 or
  // the sizes differ.
  void encode_16(std::span<const std::uint16_t> a, std::span<std::uint8_t> z) const {
    check_batch(codec_.source != Source::f32, a.size(), z.size(), "encode_16");
    const std::uint8_t* t = table_.data();
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = t[a[i]];
  }

 private:
  void check_batch(bool source_ok, std::size_t a_size, std::size_t z_size, const char* fn) const {
    if (!source_ok)
      throw std::invalid_argument(std::string("EncodeTable::") + fn + ": the table is for " +
                                  std::string(to_string(codec_.source)) + " sources");
    if (a_size != z_size)
      throw std::invalid_argument(std::string("EncodeTable::") + fn + ": " +
                                  std::to_string(a_size) + " inputs but " + std::to_string(z_size) +
                                  " outputs");
  }

  ProfileCodec codec_;
  std::vector<std::uint8_t> table_;
};

}  // namespace fp8ref
