// Suites that check bits against an independent oracle (docs/fuzz.md "Oracle suites"):
//   codec.profiles    every profile's e4m3 / e5m2 cast (each rounding it has) against the rational
//                     oracle, on exact ties, the saturation boundary ± one ulp, the subnormal
//                     boundaries, NaN / Inf and random patterns;
//   quantize.recipes  (suites_recipes.cpp) each recipe's scales and codes against its formula;
//   layout.offsets    every position of every scale layout against its closed-form offset.
// A case is a variant and a seed (the inputs follow from them), so its file is two numbers.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "campaign/suite.h"
#include "numerics/oracle/rational_oracle.h"
#include "numerics/profile.h"
#include "numerics/scale_layout.h"

namespace fp8ref::fuzz {

namespace {

struct SeedCase {
  std::int64_t variant = 0;
  std::uint64_t seed = 0;
};

}  // namespace

std::string hex(std::uint64_t x) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(x));
  return b;
}

Suite seed_suite(SuiteInfo info, std::int64_t variants,
                 std::function<std::string(std::int64_t)> tag,
                 std::function<void(std::int64_t, std::uint64_t)> check) {
  CaseSuite<SeedCase> cs;
  // At RapidCheck's nominal size, so that every variant is equally likely from the first case on
  // (inRange narrows its range with the size, which starts at 0).
  cs.draw = [variants] {
    return SeedCase{*rc::gen::resize(rc::kNominalSize, rc::gen::inRange<std::int64_t>(0, variants)),
                    *rc::gen::arbitrary<std::uint64_t>()};
  };
  cs.check = [check](const SeedCase& c) { check(c.variant, c.seed); };
  cs.tags = [tag](const SeedCase& c) { return std::vector<std::string>{tag(c.variant)}; };
  cs.save = [](const SeedCase& c) {
    TensorFile tf;
    tf.metadata["variant"] = std::to_string(c.variant);
    tf.metadata["seed"] = std::to_string(c.seed);
    return tf;
  };
  cs.load = [variants](const TensorFile& tf) {
    SeedCase c;
    c.variant = get_meta_int(tf, "variant");
    try {
      c.seed = std::stoull(get_meta(tf, "seed"));
    } catch (const std::exception&) {
      throw std::invalid_argument("case file: seed is not a number");
    }
    if (c.variant < 0 || c.variant >= variants)
      throw std::invalid_argument("case file: variant out of range");
    return c;
  };
  cs.diff = [](const SeedCase& x, const SeedCase& y) {
    return first_difference({{"variant", x.variant == y.variant}, {"seed", x.seed == y.seed}});
  };
  return make_suite<SeedCase>(std::move(info), cs);
}

namespace {

// --- codec.profiles -----------------------------------------------------------------------------

struct CodecVariant {
  Profile profile;
  Format format;
  Source source;
  Rounding rounding;
};

const std::vector<CodecVariant>& codec_variants() {
  static const std::vector<CodecVariant> v = [] {
    std::vector<CodecVariant> out;
    for (Profile p : kAllProfiles)
      for (Format f : {Format::e4m3, Format::e5m2})
        for (Source s : {Source::f32, Source::bf16})
          for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
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

double code_double(Format f, std::uint8_t code) {
  return oracle::code_value(f, code).value.convert_to<double>();
}

// An f64 magnitude on a boundary of format f: a tie between neighbours, max finite, the overflow
// tie past it, the subnormal and normal edges; or a random finite code's value.
double boundary_value(Format f, std::mt19937_64& rng) {
  const std::uint8_t maxc = f == Format::e4m3 ? 0x7E : 0x7B;
  const int man = f == Format::e4m3 ? 3 : 2;
  const std::uint8_t min_normal = std::uint8_t(1 << man);
  switch (rng() % 6) {
    case 0:
    case 1: {  // a tie between neighbours (the overflow tie included)
      const std::uint8_t c = std::uint8_t(rng() % maxc);
      return (code_double(f, c) + code_double(f, std::uint8_t(c + 1))) / 2;
    }
    case 2: {  // max finite, the overflow tie and the value one max-ulp beyond
      const double m = code_double(f, maxc), ulp = m - code_double(f, maxc - 1);
      const int k = int(rng() % 3);
      return m + ulp * 0.5 * k;
    }
    case 3: {  // subnormal edges: half the smallest subnormal, the smallest, the last, min normal
      const double sub = code_double(f, 1);
      const double picks[] = {sub / 2,
                              sub,
                              1.5 * sub,
                              code_double(f, min_normal - 1),
                              code_double(f, min_normal),
                              (code_double(f, min_normal - 1) + code_double(f, min_normal)) / 2};
      return picks[rng() % 6];
    }
    case 4: return code_double(f, std::uint8_t(rng() % (maxc + 1)));
    default: return std::ldexp(double(rng() % 1024) + 1, int(rng() % 40) - 30);
  }
}

// The source pattern of a drawn input: a boundary value, perhaps moved one source ulp either
// way, with a random sign; or NaN / Inf.
std::uint64_t codec_input(const CodecVariant& v, std::mt19937_64& rng) {
  const bool bf16 = v.source == Source::bf16;
  const int sign_bit = bf16 ? 15 : 31;
  std::uint64_t bits;
  if (rng() % 16 == 0) {
    const std::uint64_t specials[] = {0x7F800000u, 0x7FC00001u, 0x7F800001u};
    bits = specials[rng() % 3] >> (bf16 ? 16 : 0);
  } else {
    const float x = float(boundary_value(v.format, rng));  // exact: <= 5 significant bits
    bits = std::bit_cast<std::uint32_t>(x) >> (bf16 ? 16 : 0);
    const int step = int(rng() % 3) - 1;
    if (bits != 0 || step > 0) bits = std::uint64_t(std::int64_t(bits) + step);
  }
  if (rng() & 1) bits |= std::uint64_t{1} << sign_bit;
  return bits;
}

void check_codec(std::int64_t variant, std::uint64_t seed) {
  const CodecVariant& v = codec_variants()[std::size_t(variant)];
  const ProfileCodec codec = make_codec(v.profile, v.format, v.source, v.rounding);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 48; ++i) {
    const std::uint64_t bits = codec_input(v, rng);
    const std::uint8_t got = codec.encode(bits);
    const std::uint8_t want =
        oracle::rational_oracle_encode(v.format, source_to_f64_bits(v.source, bits), codec.fp8);
    fold_result(&got, 1);
    if (got != want)
      throw Violation("codec " + std::string(to_string(v.profile)) + " " +
                      std::string(to_string(v.source)) + "->" + std::string(to_string(v.format)) +
                      " " + std::string(to_string(v.rounding)) + ": input " + hex(bits) +
                      " encodes to " + hex(got) + ", the rational oracle says " + hex(want));
  }
}

// --- layout.offsets -----------------------------------------------------------------------------

constexpr const char* kLayoutNames[] = {
    "e8m0:row_major", "e8m0:blocked_128x4", "e8m0:deepgemm_packed", "f32:row_major",
    "f32:col_major",  "f32:tma_mn_major",   "f32:te_compact",       "f32:cublas_k_major_pad4"};
constexpr std::int64_t kLayouts = 8;

std::int64_t up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

// Closed-form element offsets (in elements: bytes for E8M0, words for f32) and padded sizes,
// written from docs/recipes.md's layout table, not from numerics/scale_layout.h.
struct LayoutForm {
  std::int64_t total;
  std::int64_t (*at)(std::int64_t g, std::int64_t r, std::int64_t c, std::int64_t R,
                     std::int64_t C);
};
LayoutForm layout_form(std::int64_t l, std::int64_t G, std::int64_t R, std::int64_t C) {
  switch (l) {
    case 0:
    case 3:
    case 6:
      return {G * R * C,
              [](auto g, auto r, auto c, auto R, auto C) { return (g * R + r) * C + c; }};
    case 1:  // 512-byte tiles of 128 rows x 4 columns, tiles row-major
      return {G * up(R, 128) * up(C, 4), [](auto g, auto r, auto c, auto R, auto C) {
                const std::int64_t tiles_c = up(C, 4) / 4;
                const std::int64_t tile = (r / 128) * tiles_c + c / 4;
                const std::int64_t in = (r % 32) * 16 + ((r / 32) % 4) * 4 + (c % 4);
                return g * up(R, 128) * up(C, 4) + tile * 512 + in;
              }};
    case 2:  // int32 words [g][c/4][r] of 4 little-endian codes, rows padded to 4
      return {G * up(R, 4) * up(C, 4), [](auto g, auto r, auto c, auto R, auto C) {
                return g * up(R, 4) * up(C, 4) + (c >> 2) * (up(R, 4) * 4) + r * 4 + (c & 3);
              }};
    case 4:
      return {G * C * R,
              [](auto g, auto r, auto c, auto R, auto C) { return (g * C + c) * R + r; }};
    case 5:
      return {G * C * up(R, 4),
              [](auto g, auto r, auto c, auto R, auto C) { return (g * C + c) * up(R, 4) + r; }};
    default:
      return {G * R * up(C, 4),
              [](auto g, auto r, auto c, auto R, auto C) { return (g * R + r) * up(C, 4) + c; }};
  }
}

const ScaleLayoutE8m0 kE8m0Layouts[] = {ScaleLayoutE8m0::row_major, ScaleLayoutE8m0::blocked_128x4,
                                        ScaleLayoutE8m0::deepgemm_packed};
const ScaleLayoutF32 kF32Layouts[] = {ScaleLayoutF32::row_major, ScaleLayoutF32::col_major,
                                      ScaleLayoutF32::tma_mn_major, ScaleLayoutF32::te_compact,
                                      ScaleLayoutF32::cublas_k_major_pad4};

void layout_fail(std::int64_t l, const std::string& what) {
  throw Violation(std::string("layout ") + kLayoutNames[l] + ": " + what);
}

void check_layout(std::int64_t l, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::int64_t G = 1 + std::int64_t(rng() % 3);
  const std::int64_t R = rng() % 2 ? 1 + std::int64_t(rng() % 300) : 128 * (1 + rng() % 2) + 1;
  const std::int64_t C = 1 + std::int64_t(rng() % 10);
  const LayoutForm form = layout_form(l, G, R, C);
  const bool f32 = l >= 3;
  const std::uint32_t pad = l == 7 ? 0x3F800000u : 0u;
  std::vector<std::uint32_t> vals(std::size_t(G * R * C));
  for (auto& x : vals)
    x = f32 ? std::uint32_t(rng() | 0x40000000u) : std::uint32_t(1 + rng() % 254);
  // The expected serialisation, built from the closed form alone.
  std::vector<std::uint32_t> want(std::size_t(form.total), pad);
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c)
        want[std::size_t(form.at(g, r, c, R, C))] = vals[std::size_t((g * R + r) * C + c)];
  std::vector<std::uint8_t> bytes;
  if (f32) {
    bytes.resize(want.size() * 4);
    for (std::size_t i = 0; i < want.size(); ++i)
      for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = std::uint8_t(want[i] >> (8 * b));
    const ScaleLayoutF32 lf = kF32Layouts[l - 3];
    const ScaleGridF32 grid{G, R, C, vals};
    if (serialize(lf, grid) != bytes) layout_fail(l, "serialize differs from the closed form");
    if (deserialize(lf, bytes, G, R, C) != grid)
      layout_fail(l, "deserialize of the closed form differs from the grid");
  } else {
    for (std::uint32_t w : want) bytes.push_back(std::uint8_t(w));
    const ScaleLayoutE8m0 le = kE8m0Layouts[l];
    const ScaleGridE8m0 grid{G, R, C, std::vector<std::uint8_t>(vals.begin(), vals.end())};
    if (serialize(le, grid) != bytes) layout_fail(l, "serialize differs from the closed form");
    if (deserialize(le, bytes, G, R, C) != grid)
      layout_fail(l, "deserialize of the closed form differs from the grid");
  }
  fold_result(bytes.data(), bytes.size());
}

}  // namespace

void add_oracle_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"codec.profiles",
       "every profile's FP8 cast == the rational oracle on ties, saturation, subnormal edges",
       "cpu",
       400,
       {"format:e4m3", "format:e5m2"},
       {}},
      std::int64_t(codec_variants().size()),
      [](std::int64_t v) {
        return std::string("format:") +
               std::string(to_string(codec_variants()[std::size_t(v)].format));
      },
      check_codec));
  add_recipe_suite(out);  // suites_recipes.cpp
  out.push_back(seed_suite(
      {"layout.offsets",
       "every position of every scale layout == its closed-form offset; padding defined",
       "cpu",
       300,
       {std::begin(kLayoutNames), std::end(kLayoutNames)},
       {}},
      kLayouts, [](std::int64_t l) { return std::string(kLayoutNames[l]); }, check_layout));
}

}  // namespace fp8ref::fuzz
