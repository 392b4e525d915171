// Suites that check bits against an independent oracle (docs/fuzz.md "Oracle suites"):
//   codec.profiles    every profile's e4m3 / e5m2 / e8m0 cast from f32, bf16, f16 and f64 (each
//                     rounding it has, stochastic rounding with random bits included) against the
//                     rational oracle, on exact ties, the saturation boundary ± one ulp, the
//                     subnormal boundaries, E8M0's powers of two and value ties, NaN / Inf;
//   quantize.recipes  (suites_recipes.cpp) each recipe's scales and codes against its formula;
//   layout.offsets    every position of every scale layout (the grouped 128x4 ones included)
//                     against its closed-form offset.
// A case is a variant and a seed (the inputs follow from them), so its file is two numbers.
#include <algorithm>
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
#include "numerics/scale_layout_grouped.h"

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
                 std::function<void(std::int64_t, std::uint64_t, Fingerprint&)> check) {
  CaseSuite<SeedCase> cs;
  // At RapidCheck's nominal size, so that every variant is equally likely from the first case on
  // (inRange narrows its range with the size, which starts at 0).
  cs.draw = [variants] {
    return SeedCase{*rc::gen::resize(rc::kNominalSize, rc::gen::inRange<std::int64_t>(0, variants)),
                    *rc::gen::arbitrary<std::uint64_t>()};
  };
  cs.check = [check](const SeedCase& c, Fingerprint& fp) { check(c.variant, c.seed, fp); };
  cs.tags = [tag](const SeedCase& c) { return std::vector<std::string>{tag(c.variant)}; };
  cs.save = [](const SeedCase& c) {
    TensorFile tf;
    cases::put_meta(tf, "variant", std::to_string(c.variant));
    cases::put_meta(tf, "seed", std::to_string(c.seed));
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
      for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0})
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

// E8M0 boundaries: 2^k, the value tie 1.5·2^k, or a random significand; 2^-127 .. 2^127 and a
// few binades past either end.
double e8m0_boundary(std::mt19937_64& rng) {
  const int k = int(rng() % 261) - 130;
  switch (rng() % 3) {
    case 0: return std::ldexp(1.0, k);
    case 1: return std::ldexp(1.5, k);
    default: return std::ldexp(1.0 + double(rng() % 256) / 256, k);
  }
}

// The binary16 pattern of v, exact when v is an f16 value (below 2^-24 it flushes to 0, from
// 2^16 on it is Inf); the boundary values drawn here are exact where they are in range.
std::uint64_t f16_bits(double v) {
  const std::uint64_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a < 0x1p-24) return sign;
  if (a >= 0x1p16) return sign | 0x7C00;
  int e = 0;
  (void)std::frexp(a, &e);
  if (e - 1 < -14) return sign | std::uint64_t(std::ldexp(a, 24));
  return sign | (std::uint64_t(e - 1 + 15) << 10) |
         std::uint64_t((std::ldexp(a, 1 - e) - 1) * 1024);
}

// v as a pattern of the variant's source type (f32 and bf16 through the f32, whose value it is
// for the boundaries drawn; bf16 keeps the top half).
std::uint64_t source_pattern(Source s, double v) {
  switch (s) {
    case Source::f64: return std::bit_cast<std::uint64_t>(v);
    case Source::f16: return f16_bits(v);
    case Source::bf16: return std::bit_cast<std::uint32_t>(float(v)) >> 16;
    default: return std::bit_cast<std::uint32_t>(float(v));
  }
}

int sign_bit_of(Source s) { return s == Source::f64 ? 63 : (s == Source::f32 ? 31 : 15); }

// The source pattern of a drawn input: a boundary value, perhaps moved one source ulp either
// way, with a random sign; or NaN / Inf.
std::uint64_t codec_input(const CodecVariant& v, std::mt19937_64& rng) {
  const int sign_bit = sign_bit_of(v.source);
  std::uint64_t bits;
  if (rng() % 16 == 0) {  // Inf, a quiet NaN with a payload bit, a signalling NaN
    const std::uint64_t exp_ones = v.source == Source::f64   ? 0x7FF0000000000000u
                                   : v.source == Source::f32 ? 0x7F800000u
                                   : v.source == Source::f16 ? 0x7C00u
                                                             : 0x7F80u;
    const std::uint64_t quiet = (exp_ones & (~exp_ones + 1)) >> 1;  // the top fraction bit
    const std::uint64_t specials[] = {exp_ones, exp_ones | quiet | 1, exp_ones | 1};
    bits = specials[rng() % 3];
  } else {
    const double x = v.format == Format::e8m0 ? e8m0_boundary(rng) : boundary_value(v.format, rng);
    bits = source_pattern(v.source, x);
    const int step = int(rng() % 3) - 1;
    if (bits != 0 || step > 0) bits = std::uint64_t(std::int64_t(bits) + step);
  }
  if (rng() & 1) bits |= std::uint64_t{1} << sign_bit;
  return bits;
}

// The rational oracle's code for the codec's declared policies (a profile that rounds f64 to f32
// first is given that f32). Stochastic rounding: away from zero iff floor(frac·2^R) + rand >= 2^R.
std::uint8_t rational_expected(const ProfileCodec& codec, std::uint64_t bits, std::uint32_t rand) {
  std::uint64_t d = source_to_f64_bits(codec.source, bits);
  if (codec.via_f32) d = f32_to_f64_bits(f64_to_f32_bits_rne(d));
  if (codec.format == Format::e8m0) return oracle::rational_oracle_encode_e8m0(d, codec.e8m0);
  const oracle::Fp8Input in = oracle::prepare_fp8(codec.format, d);
  if (codec.rounding != Rounding::sr || in.v.kind != oracle::ValueKind::finite)
    return oracle::rational_oracle_encode(in, codec.fp8);
  const oracle::SrOutcomes o = oracle::sr_outcomes(in.b, codec.fp8.overflow, codec.fp8.sr_bits);
  const std::uint64_t r = rand & ((std::uint64_t{1} << codec.fp8.sr_bits) - 1);
  return o.away_count + r >= (std::uint64_t{1} << codec.fp8.sr_bits) ? o.away_from_zero
                                                                     : o.toward_zero;
}

// Coverage class of a variant: "rounding:sr", else "<format>:<source>".
std::string codec_class(const CodecVariant& v) {
  if (v.rounding == Rounding::sr) return "rounding:sr";
  return std::string(to_string(v.format)) + ":" + std::string(to_string(v.source));
}
std::vector<std::string> codec_classes() {
  std::vector<std::string> out;
  for (const CodecVariant& v : codec_variants())
    if (std::find(out.begin(), out.end(), codec_class(v)) == out.end())
      out.push_back(codec_class(v));
  return out;
}

void check_codec(std::int64_t variant, std::uint64_t seed, Fingerprint& fp) {
  const CodecVariant& v = codec_variants()[std::size_t(variant)];
  const ProfileCodec codec = make_codec(v.profile, v.format, v.source, v.rounding);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 48; ++i) {
    const std::uint64_t bits = codec_input(v, rng);
    const std::uint32_t rand = std::uint32_t(rng());
    const std::uint8_t got = codec.encode(bits, rand);
    const std::uint8_t want = rational_expected(codec, bits, rand);
    fp.fold(&got, 1);
    if (got != want)
      throw Violation("codec " + std::string(to_string(v.profile)) + " " +
                      std::string(to_string(v.source)) + "->" + std::string(to_string(v.format)) +
                      " " + std::string(to_string(v.rounding)) + ": input " + hex(bits) +
                      " (random bits " + hex(rand) + ") encodes to " + hex(got) +
                      ", the rational oracle says " + hex(want));
  }
}

// --- layout.offsets -----------------------------------------------------------------------------

constexpr const char* kLayoutNames[] = {"e8m0:row_major",
                                        "e8m0:blocked_128x4",
                                        "e8m0:deepgemm_packed",
                                        "f32:row_major",
                                        "f32:col_major",
                                        "f32:tma_mn_major",
                                        "f32:te_compact",
                                        "f32:cublas_k_major_pad4",
                                        "e8m0:blocked_grouped_rows",
                                        "e8m0:blocked_grouped_cols"};
constexpr std::int64_t kLayouts = 10;

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

// Byte (r, c) of the 128x4 blocked layout of a (rows, cols) grid, from its closed form.
std::int64_t blocked_closed_form(std::int64_t r, std::int64_t c, std::int64_t cols) {
  return ((r / 128) * (up(cols, 4) / 4) + c / 4) * 512 + (r % 32) * 16 + ((r / 32) % 4) * 4 + c % 4;
}

// The grouped 128x4 layouts of docs/recipes.md: M-grouped, group g's rows start at tile row
// sum_{h<g} ceil(m_h / 128); K-grouped, group g's columns start at column sum_{h<g} up(c_h, 4)
// of one blocked grid. Padding bytes are zero.
void check_grouped_layout(std::int64_t l, std::mt19937_64& rng, Fingerprint& fp) {
  const std::int64_t R = 1 + std::int64_t(rng() % 300), C = 1 + std::int64_t(rng() % 10);
  const bool rows = l == 8;
  std::vector<std::int64_t> ends;
  for (std::uint64_t g = 0, n = rng() % 5; g < n; ++g)
    ends.push_back(std::int64_t(rng() % std::uint64_t((rows ? R : C) + 1)));
  std::sort(ends.begin(), ends.end());
  ends.push_back(rows ? R : C);
  std::vector<std::uint8_t> codes(std::size_t(R * C));
  for (auto& x : codes) x = std::uint8_t(1 + rng() % 254);
  // Group start, group index of each row (M-grouped) or column (K-grouped), padded starts.
  std::vector<std::int64_t> start_of(std::size_t(rows ? R : C)), base_of(start_of.size());
  std::int64_t prev = 0, base = 0;
  for (const std::int64_t e : ends) {
    for (std::int64_t i = prev; i < e; ++i)
      start_of[std::size_t(i)] = prev, base_of[std::size_t(i)] = base;
    base += rows ? (e - prev + 127) / 128 : up(e - prev, 4);
    prev = e;
  }
  const std::int64_t total = rows ? base * 128 * up(C, 4) : up(R, 128) * base;
  std::vector<std::uint8_t> want(std::size_t(total), 0);
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::size_t i = std::size_t(rows ? r : c);
      const std::int64_t at =
          rows ? base_of[i] * 128 * up(C, 4) + blocked_closed_form(r - start_of[i], c, C)
               : blocked_closed_form(r, base_of[i] + c - start_of[i], base);
      want[std::size_t(at)] = codes[std::size_t(r * C + c)];
    }
  const ScaleGridE8m0 grid{1, R, C, codes};
  const std::vector<std::uint8_t> got = rows ? serialize_blocked_grouped_rows(grid, ends)
                                             : serialize_blocked_grouped_cols(grid, ends);
  fp.fold(got.data(), got.size());
  if (got != want) layout_fail(l, "serialize differs from the closed form");
  if (rows && deserialize_blocked_grouped_rows(want, ends, C) != grid)
    layout_fail(l, "deserialize of the closed form differs from the grid");
}

void check_layout(std::int64_t l, std::uint64_t seed, Fingerprint& fp) {
  std::mt19937_64 rng(seed);
  if (l >= 8) return check_grouped_layout(l, rng, fp);
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
  fp.fold(bytes.data(), bytes.size());
}

}  // namespace

void add_oracle_suites(std::vector<Suite>& out) {
  out.push_back(seed_suite(
      {"codec.profiles",
       "every profile's FP8 / E8M0 cast (f32 bf16 f16 f64; sr) == the rational oracle on edges",
       "cpu",
       400,
       codec_classes(),
       {}},
      std::int64_t(codec_variants().size()),
      [](std::int64_t i) { return codec_class(codec_variants()[std::size_t(i)]); }, check_codec));
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
