// codec.tables (docs/fuzz.md "Oracle suites"): every profile's cast to every format it has (FP8,
// E8M0, FP6, FP4, UE4M3), from every source (f32, bf16, f16, f64), under every rounding it has
// (stochastic rounding with random bits included), against the table oracle
// (numerics/oracle/table_oracle.h: a sorted table of values and midpoints and a binary search,
// sharing no code with numerics/codec.h or the rational oracle of codec.profiles). The inputs are
// source bit patterns drawn over the format's whole range, a binade at a time, with random
// mantissas whose low bits are often clear (so exact values and ties occur), and NaN / Inf / 0.
#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/laws/law_suites.h"
#include "numerics/oracle/table_oracle.h"
#include "numerics/profile.h"

namespace fp8ref::fuzz {
namespace {

struct TableVariant {
  Profile profile;
  Format format;
  Source source;
  Rounding rounding;
};

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0, Format::e2m1,
                               Format::e2m3, Format::e3m2, Format::ue4m3};

const std::vector<TableVariant>& table_variants() {
  static const std::vector<TableVariant> v = [] {
    std::vector<TableVariant> out;
    for (Format f : kFormats)
      for (Profile p : kAllProfiles)
        for (Source s : {Source::f32, Source::bf16, Source::f16, Source::f64})
          for (Rounding r :
               {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::sr}) {
            try {
              (void)make_codec(p, f, s, r);
              out.push_back({p, f, s, r});
            } catch (const std::invalid_argument&) {
            }
          }
    return out;
  }();
  return v;
}

// The unbiased exponents a format's values (and its overflow) span, three binades either side.
struct Span {
  int lo, hi;
};
Span format_span(Format f) {
  switch (f) {
    case Format::e4m3:
    case Format::ue4m3: return {-12, 11};
    case Format::e5m2: return {-19, 18};
    case Format::e8m0: return {-130, 130};
    case Format::e2m1: return {-4, 5};
    case Format::e2m3: return {-6, 5};
    default: return {-7, 7};  // e3m2
  }
}

// Source field widths: exponent bits, mantissa bits.
struct SourceBits {
  int exp, man;
};
SourceBits source_widths(Source s) {
  switch (s) {
    case Source::f32: return {8, 23};
    case Source::bf16: return {8, 7};
    case Source::f16: return {5, 10};
    default: return {11, 52};
  }
}

// A source pattern: mostly a finite value in a random binade of the format's span (clamped to
// the source's own range; below it a subnormal), its mantissa random with a random number of low
// bits cleared; 1 in 32 a NaN, an Inf or a zero. Random sign.
std::uint64_t draw_source(const TableVariant& v, std::mt19937_64& rng) {
  const SourceBits sb = source_widths(v.source);
  const std::int64_t bias = (std::int64_t{1} << (sb.exp - 1)) - 1;
  const std::uint64_t all_ones = (std::uint64_t{1} << sb.exp) - 1;
  const std::uint64_t man_mask = (std::uint64_t{1} << sb.man) - 1;
  std::uint64_t field, man = rng() & man_mask;
  if (rng() % 32 == 0) {
    const int k = int(rng() % 3);
    field = k == 2 ? 0 : all_ones;
    man = k == 0 ? (man | (std::uint64_t{1} << (sb.man - 1))) : 0;  // quiet NaN, Inf, zero
  } else {
    const Span sp = format_span(v.format);
    const std::int64_t e = sp.lo + std::int64_t(rng() % std::uint64_t(sp.hi - sp.lo + 1));
    const std::int64_t biased = e + bias;
    field = biased < 0 ? 0 : std::uint64_t(std::min<std::int64_t>(biased, all_ones - 1));
    const int drop = int(rng() % std::uint64_t(sb.man + 1));
    man &= ~((std::uint64_t{1} << drop) - 1);
  }
  std::uint64_t bits = (field << sb.man) | man;
  if (rng() & 1) bits |= std::uint64_t{1} << (sb.exp + sb.man);
  return bits;
}

// The table oracle's code for one input under the codec's declared policies; a profile that
// rounds f64 to f32 first (codec.via_f32) is given that f32 value.
std::uint8_t table_expected(const ProfileCodec& codec, std::uint64_t bits, std::uint32_t rand) {
  std::uint64_t d = source_to_f64_bits(codec.source, bits);
  if (codec.via_f32) {
    const double x = std::bit_cast<double>(d);
    if (x == x)
      d = std::bit_cast<std::uint64_t>(static_cast<double>(static_cast<float>(x)));
    else
      d = f32_to_f64_bits(f64_to_f32_bits_rne(d));  // NaN: the payload the f32 keeps
  }
  if (codec.format == Format::e8m0) return oracle::table_oracle_encode_e8m0(d, codec.e8m0);
  return oracle::table_oracle_encode(codec.format, d, codec.fp8, rand);
}

void check_table(std::int64_t variant, std::uint64_t seed, Fingerprint& fp) {
  const TableVariant& v = table_variants()[std::size_t(variant)];
  const ProfileCodec codec = make_codec(v.profile, v.format, v.source, v.rounding);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bits = draw_source(v, rng);
    const std::uint32_t rand = std::uint32_t(rng());
    const std::uint8_t got = codec.encode(bits, rand);
    const std::uint8_t want = table_expected(codec, bits, rand);
    fp.fold(&got, 1);
    if (got != want)
      throw Violation("codec " + std::string(to_string(v.profile)) + " " +
                      std::string(to_string(v.source)) + "->" + std::string(to_string(v.format)) +
                      " " + std::string(to_string(v.rounding)) + ": input " + hex(bits) +
                      " (random bits " + hex(rand) + ") encodes to " + hex(got) +
                      ", the table oracle says " + hex(want));
  }
}

}  // namespace

void add_codec_table_suites(std::vector<Suite>& out) {
  std::vector<std::string> classes;
  for (Format f : kFormats) classes.push_back("format:" + std::string(to_string(f)));
  classes.push_back("rounding:sr");
  out.push_back(seed_suite(
      {"codec.tables",
       "every profile x format x source x rounding == the table oracle over the whole range",
       "cpu",
       400,
       classes,
       {}},
      std::int64_t(table_variants().size()),
      [](std::int64_t i) {
        const TableVariant& v = table_variants()[std::size_t(i)];
        return v.rounding == Rounding::sr ? std::string("rounding:sr")
                                          : "format:" + std::string(to_string(v.format));
      },
      check_table));
}

}  // namespace fp8ref::fuzz
