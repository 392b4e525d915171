// fp8ref's codes and scales as raw little-endian files for the recipe cross-checks: OUT_DIR mode
// writes inputs with one class per block (ordinary, zero, subnormal / tiny / huge amax, amax at or
// next to a recipe threshold, one NaN or Inf) and fp8ref's results for every recipe, geometry and
// source type, for proptests/reference/quantize/recipes_xcheck.py (numpy + ml_dtypes); --requests
// mode quantizes inputs another program wrote (the GPU machine's torch cross-check,
// proptests/fidelity/recipes_torch_xcheck.py). Usage: fp8ref_recipes_dump OUT_DIR |
// fp8ref_recipes_dump --requests DIR
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "numerics/source.h"
#include "reference/quantize.h"

namespace {

using namespace fp8ref;
using namespace fp8ref::ref;

std::uint64_t g_state = 0x9E3779B97F4A7C15ULL;
std::uint32_t next_u32() {
  g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return std::uint32_t(g_state >> 32);
}
// Uniform in [lo, hi].
int uniform(int lo, int hi) { return lo + int(next_u32() % std::uint32_t(hi - lo + 1)); }

// ---- class-weighted blocks, drawn as exact source bit patterns --------------------------------

// A source type's bit fields: f32 1/8/23, bf16 1/8/7, f16 1/5/10.
struct Fields {
  int exp_bits, man_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int max_field() const { return (1 << exp_bits) - 2; }  // of the largest finite value
  std::uint32_t man_mask() const { return (1u << man_bits) - 1; }
  std::uint32_t sign() const { return 1u << (exp_bits + man_bits); }
  std::uint32_t make(int field, std::uint32_t man) const {
    return std::uint32_t(field) << man_bits | man;
  }
  int field_of(std::uint32_t p) const { return int((p & ~sign()) >> man_bits); }
};
Fields fields(Source s) {
  return s == Source::f32 ? Fields{8, 23} : (s == Source::bf16 ? Fields{8, 7} : Fields{5, 10});
}
double value_of(Source s, std::uint32_t p) {
  return std::bit_cast<double>(source_to_f64_bits(s, p));
}

// The positive source pattern nearest to c (ties to even): positive patterns order like values.
std::uint32_t nearest_pattern(Source s, double c) {
  const Fields f = fields(s);
  std::uint32_t lo = 0, hi = f.make(f.max_field(), f.man_mask());
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo + 1) / 2;
    if (value_of(s, mid) <= c)
      lo = mid;
    else
      hi = mid - 1;
  }
  const double below = c - value_of(s, lo), above = value_of(s, lo + 1) - c;
  return below < above || (below == above && lo % 2 == 0) ? lo : lo + 1;
}

// Block classes; recipes_xcheck.py classifies every block again from its data and fails when a
// recipe saw no block of some class. 13% of blocks hold a NaN or an Inf.
enum class BlockClass {
  ordinary,
  zero,
  subnormal,
  tiny,
  pow2,
  maxpos_pow2,
  threshold,
  near_max,
  nan,
  inf
};
constexpr int kClasses = 10;
constexpr int kWeights[kClasses] = {30, 5, 5, 5, 8, 8, 12, 5, 6, 6};

BlockClass draw_class() {
  int total = 0;
  for (const int w : kWeights) total += w;
  int c = int(next_u32() % std::uint32_t(total));
  for (int i = 0; i < kClasses; ++i)
    if ((c -= kWeights[i]) < 0) return BlockClass(i);
  return BlockClass::ordinary;
}

// A value below exponent field `top` + 1: field top, top - 1, ... with probability 1/2, 1/4, ...,
// a random mantissa and sign; a subnormal pattern once the field reaches 0.
std::uint32_t below(const Fields& f, int top) {
  int e = top;
  while (e > 0 && (next_u32() & 1)) --e;
  const std::uint32_t man = next_u32() & f.man_mask(), sign = (next_u32() & 1) ? f.sign() : 0;
  return sign | (e > 0 ? f.make(e, man) : man);
}

// One source pattern next to (or at) a recipe threshold: a power of two or max_pos * 2^k (one
// pattern either side; exact ones are their own classes), MX EVEN's carry point (2 - 2^-(m+1))
// * 2^e of the element format (m mantissa bits), the clamp constants 1e-4 (DeepGEMM), 1e-6 (the
// te epsilon used here) and 1e-12 (torchao) nearest in the source type (at, or one either side).
std::uint32_t threshold_pattern(const Fields& f, Source s, Format elem) {
  const int field = uniform(std::max(2, f.bias() - 20), std::min(f.max_field() - 1, f.bias() + 20));
  const int step = next_u32() % 2 ? 1 : -1;
  const int m = elem == Format::e4m3 ? 3 : 2;
  switch (uniform(0, 3)) {
    case 0: return f.make(field, 0) + std::uint32_t(step);
    case 1: return f.make(field, 3u << (f.man_bits - 2)) + std::uint32_t(step);
    case 2:
      return f.make(field, ((1u << (m + 1)) - 1) << (f.man_bits - m - 1)) +
             std::uint32_t(uniform(-1, 1));
    default: {
      const std::uint32_t t = nearest_pattern(s, std::array{1e-4, 1e-6, 1e-12}[uniform(0, 2)]);
      if (f.field_of(t) < 2) return f.make(field, 0) + std::uint32_t(step);  // not normal here
      return t + std::uint32_t(uniform(-1, 1));
    }
  }
}

// The pattern that sets a block's amax (sign added by the caller); zero blocks have none.
std::uint32_t amax_pattern(BlockClass c, const Fields& f, Source s, Format elem) {
  const std::uint32_t man = next_u32() & f.man_mask();
  const int lo = std::max(1, f.bias() - 20), hi = std::min(f.max_field(), f.bias() + 20);
  switch (c) {
    case BlockClass::subnormal: return man | 1u;
    case BlockClass::tiny: return f.make(uniform(1, f.exp_bits == 8 ? 21 : 3), man);
    case BlockClass::pow2: return f.make(uniform(lo, hi), 0);
    case BlockClass::maxpos_pow2: return f.make(uniform(lo, hi), 3u << (f.man_bits - 2));
    case BlockClass::threshold: return threshold_pattern(f, s, elem);
    case BlockClass::near_max:
      return f.make(f.max_field(), f.man_mask()) - std::uint32_t(uniform(0, 3));
    default: return f.make(f.bias() + uniform(-8, 8), man);  // ordinary, and NaN / Inf blocks
  }
}

// Fills block [r0, r1) x [c0, c1) of x (row stride k) with class c: one element sets the amax,
// the others lie below its binade (all subnormal in a subnormal block); NaN and Inf blocks are
// ordinary blocks with one element replaced by a NaN (random sign and payload) or +-Inf.
void fill_block(std::vector<std::uint32_t>& x, std::int64_t k, std::int64_t r0, std::int64_t r1,
                std::int64_t c0, std::int64_t c1, BlockClass c, Source s, Format elem) {
  const Fields f = fields(s);
  const auto at = [&]() -> std::uint32_t& {
    const std::int64_t i = r0 + std::int64_t(next_u32() % std::uint32_t(r1 - r0)),
                       j = c0 + std::int64_t(next_u32() % std::uint32_t(c1 - c0));
    return x[std::size_t(i * k + j)];
  };
  const std::uint32_t top = amax_pattern(c, f, s, elem);
  const int others = c == BlockClass::subnormal ? 0 : f.field_of(top) - 1;
  for (std::int64_t i = r0; i < r1; ++i)
    for (std::int64_t j = c0; j < c1; ++j)
      x[std::size_t(i * k + j)] =
          c == BlockClass::zero ? (next_u32() & 1) * f.sign() : below(f, others);
  const std::uint32_t sign = (next_u32() & 1) ? f.sign() : 0;
  if (c != BlockClass::zero) at() = top | sign;
  const std::uint32_t inf = f.make(f.max_field() + 1, 0);
  if (c == BlockClass::inf) at() = inf | sign;
  if (c == BlockClass::nan)
    at() = ((next_u32() & 1) ? f.sign() : 0) | inf | 1u << (f.man_bits - 1) |
           (next_u32() & (f.man_mask() >> 1));
}

template <class T>
void write(const std::string& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

template <class E, std::size_t N>
E token(const std::string& s, const E (&all)[N]) {
  for (const E e : all)
    if (to_string(e) == s) return e;
  throw std::invalid_argument("unknown token '" + s + "'");
}

// --requests DIR: DIR/requests.txt holds one case a line, NAME RECIPE FORMAT RUNTIME POW2 EPS_BITS
// SRC BLOCK ROWS COLS (tokens as to_string prints them), its input DIR/NAME.x.bin row-major source
// bits. Writes DIR/NAME.q.u8 (codes), NAME.s.f32 (decode scales, row-major grid), NAME.e8.u8 (MX
// E8M0 codes) and DIR/results.txt lines "NAME SCALE_ROWS SCALE_COLS" or "NAME error WHY".
// One request line -> its output files; returns the results.txt line.
std::string answer(const std::string& dir, const std::string& line) {
  std::istringstream in(line);
  std::string name, kind, elem, runtime, src, block;
  int pow2 = 0;
  std::uint32_t eps_bits = 0;
  std::int64_t rows = 0, cols = 0;
  if (!(in >> name >> kind >> elem >> runtime >> pow2 >> eps_bits >> src >> block >> rows >> cols))
    throw std::invalid_argument("malformed request line: " + line);
  constexpr RecipeKind kinds[] = {RecipeKind::deepgemm, RecipeKind::torchao,  RecipeKind::te,
                                  RecipeKind::mx_floor, RecipeKind::mx_rceil, RecipeKind::mx_ceil,
                                  RecipeKind::mx_even};
  constexpr Format formats[] = {Format::e4m3, Format::e5m2};
  constexpr Runtime runtimes[] = {Runtime::torch_cpu, Runtime::torch_cuda, Runtime::cuda_kernel};
  constexpr Source sources[] = {Source::f32, Source::bf16, Source::f16};
  constexpr BlockGeometry blocks[] = {BlockGeometry::tensorwise,  BlockGeometry::rowwise,
                                      BlockGeometry::per_channel, BlockGeometry::b1x128,
                                      BlockGeometry::b128x1,      BlockGeometry::b128x128,
                                      BlockGeometry::b1x32,       BlockGeometry::b32x1};
  const Recipe r{token(kind, kinds), token(elem, formats), token(runtime, runtimes), pow2 != 0,
                 std::bit_cast<float>(eps_bits)};
  const Source s = token(src, sources);
  std::ifstream f(dir + "/" + name + ".x.bin", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  const std::size_t width = s == Source::f32 ? 4 : 2;
  if (rows < 0 || cols < 0 || bytes.size() != std::size_t(rows * cols) * width)
    throw std::invalid_argument(name + ".x.bin: " + std::to_string(bytes.size()) + " bytes for (" +
                                std::to_string(rows) + ", " + std::to_string(cols) + ") " + src);
  std::vector<std::uint32_t> b32(s == Source::f32 ? std::size_t(rows * cols) : 0);
  std::vector<std::uint16_t> b16(s == Source::f32 ? 0 : std::size_t(rows * cols));
  if (s == Source::f32)
    std::memcpy(b32.data(), bytes.data(), bytes.size());
  else
    std::memcpy(b16.data(), bytes.data(), bytes.size());
  const void* data = s == Source::f32 ? static_cast<const void*>(b32.data()) : b16.data();
  const Quantized q = quantize({data, s, rows, cols, cols, 1}, r, token(block, blocks));
  write(dir + "/" + name + ".q.u8", q.codes);
  write(dir + "/" + name + ".s.f32", q.scale);
  write(dir + "/" + name + ".e8.u8", q.e8m0);
  return name + " " + std::to_string(q.scale_rows) + " " + std::to_string(q.scale_cols);
}

int answer_requests(const std::string& dir) {
  std::ifstream requests(dir + "/requests.txt");
  if (!requests) {
    std::fprintf(stderr, "fp8ref_recipes_dump: cannot read %s/requests.txt\n", dir.c_str());
    return 2;
  }
  std::ofstream results(dir + "/results.txt");
  int failed = 0;
  for (std::string line; std::getline(requests, line);) {
    if (line.empty()) continue;
    try {
      results << answer(dir, line) << '\n';
    } catch (const std::exception& e) {
      results << line.substr(0, line.find(' ')) << " error " << e.what() << '\n';
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

// Recipes with the block geometries and source types their libraries quantize with (DeepGEMM:
// per-token, per-block, per-channel casts; torchao: float8 tensorwise / rowwise / axiswise and the
// blockwise casts; TE: current scaling and 1x128 / 128x128 blockwise; MX: 1x32 and 32x1). MX
// recipes written as torch expressions take bf16 or f32 only (torchao to_mx).
struct Plan {
  Recipe recipe;
  std::vector<Source> sources;
  std::vector<BlockGeometry> geometries;
};

std::vector<Plan> plans() {
  using G = BlockGeometry;
  const std::vector<Source> torch_src{Source::f32, Source::bf16},
      kernel_src{Source::f32, Source::bf16, Source::f16};
  std::vector<Plan> out;
  for (Runtime rt : {Runtime::torch_cpu, Runtime::torch_cuda})
    for (Format f : {Format::e4m3, Format::e5m2}) {
      for (bool p : {false, true}) {
        if (f == Format::e4m3)
          out.push_back({{RecipeKind::deepgemm, f, rt, p, 0.0f},
                         torch_src,
                         {G::b1x128, G::b128x128, G::b128x1}});
        out.push_back({{RecipeKind::torchao, f, rt, p, 0.0f},
                       torch_src,
                       {G::tensorwise, G::rowwise, G::per_channel, G::b1x128, G::b128x128}});
      }
      for (RecipeKind k :
           {RecipeKind::mx_floor, RecipeKind::mx_rceil, RecipeKind::mx_ceil, RecipeKind::mx_even})
        out.push_back({{k, f, rt, false, 0.0f}, torch_src, {G::b1x32, G::b32x1}});
    }
  for (Format f : {Format::e4m3, Format::e5m2}) {
    for (bool p : {false, true})
      for (float eps : {0.0f, 1e-6f})
        out.push_back({{RecipeKind::te, f, Runtime::cuda_kernel, p, eps},
                       kernel_src,
                       {G::tensorwise, G::b1x128, G::b128x128}});
    out.push_back({{RecipeKind::mx_rceil, f, Runtime::cuda_kernel, false, 0.0f},
                   kernel_src,
                   {G::b1x32, G::b32x1}});
  }
  return out;
}

// Tensor shapes per geometry: dozens of blocks (some partial) per case; a tensorwise case is one
// block, so there is one small case per class.
std::pair<std::int64_t, std::int64_t> shape_of(BlockGeometry g) {
  switch (g) {
    case BlockGeometry::tensorwise: return {12, 40};
    case BlockGeometry::rowwise: return {72, 100};
    case BlockGeometry::per_channel: return {40, 72};
    case BlockGeometry::b1x128: return {24, 320};
    case BlockGeometry::b128x1: return {320, 24};
    case BlockGeometry::b128x128: return {200, 300};
    case BlockGeometry::b1x32: return {24, 112};
    case BlockGeometry::b32x1: return {112, 24};
  }
  return {0, 0};
}

template <class T>
void append(std::ofstream& out, const std::vector<T>& v) {
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

// One case: class-weighted blocks (or every block of class `forced` when >= 0), quantized. Appends
// the source bits, codes, decode scales and E8M0 codes to `data` (one file: creating thousands of
// small files is slow) and writes a manifest line with their byte counts.
void dump_case(std::ofstream& data, std::ofstream& manifest, const std::string& name,
               const Recipe& r, Source src, BlockGeometry g, int forced) {
  const auto [m, k] = shape_of(g);
  const BlockShape b = block_shape(g, m, k);
  std::vector<std::uint32_t> x(std::size_t(m * k));
  for (std::int64_t r0 = 0; r0 < m; r0 += b.rows)
    for (std::int64_t c0 = 0; c0 < k; c0 += b.cols)
      fill_block(x, k, r0, std::min(m, r0 + b.rows), c0, std::min(k, c0 + b.cols),
                 forced >= 0 ? BlockClass(forced) : draw_class(), src, r.elem);
  const std::vector<std::uint16_t> x16(x.begin(), x.end());  // 16-bit sources: the low halves
  const void* bits = src == Source::f32 ? static_cast<const void*>(x.data()) : x16.data();
  const Quantized q = quantize({bits, src, m, k, k, 1}, r, g);
  if (src == Source::f32)
    append(data, x);
  else
    append(data, x16);
  append(data, q.codes);
  append(data, q.scale);
  append(data, q.e8m0);
  manifest << name << ' ' << to_string(r.kind) << ' ' << to_string(r.elem) << ' '
           << to_string(r.runtime) << ' ' << int(r.pow2) << ' '
           << std::bit_cast<std::uint32_t>(r.epsilon) << ' ' << to_string(src) << ' '
           << to_string(g) << ' ' << m << ' ' << k << ' '
           << (src == Source::f32 ? x.size() * 4 : x16.size() * 2) << ' ' << q.codes.size() << ' '
           << q.scale.size() * 4 << ' ' << q.e8m0.size() << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--requests") return answer_requests(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: fp8ref_recipes_dump OUT_DIR | --requests DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::ofstream manifest(dir + "/manifest.txt"), data(dir + "/cases.bin", std::ios::binary);
  int id = 0;
  for (const Plan& p : plans())
    for (const Source src : p.sources)
      for (const BlockGeometry g : p.geometries)
        for (int c = 0; c < (g == BlockGeometry::tensorwise ? kClasses : 1); ++c)
          dump_case(data, manifest, "case" + std::to_string(id++), p.recipe, src, g,
                    g == BlockGeometry::tensorwise ? c : -1);
  return manifest && data ? 0 : 1;
}
