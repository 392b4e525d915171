// fp8ref's codes and scales as raw little-endian files for the recipe cross-checks: OUT_DIR mode
// writes class-weighted inputs and results for proptests/python/recipes_xcheck.py (numpy +
// ml_dtypes); --requests mode quantizes inputs another program wrote (the GPU machine's torch
// cross-check, proptests/device/recipes_torch_xcheck.py). Usage: fp8ref_recipes_dump OUT_DIR |
// fp8ref_recipes_dump --requests DIR
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
#include <vector>

#include "reference/quantize.h"

namespace {

using namespace fp8ref;

std::uint64_t g_state = 0x9E3779B97F4A7C15ULL;
std::uint32_t next_u32() {
  g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return std::uint32_t(g_state >> 32);
}

// A class-weighted f32: ordinary, powers of two, near-power mantissas, subnormal, zero, NaN, Inf.
float draw(int block_exp) {
  const std::uint32_t c = next_u32() % 100;
  const float s = std::ldexp(1.0f, block_exp);
  const float sign = (next_u32() & 1) ? -1.0f : 1.0f;
  if (c < 60) return sign * float(next_u32() % (1u << 23)) / float(1u << 23) * s;
  if (c < 72) return sign * std::ldexp(s, int(next_u32() % 16) - 8);
  if (c < 82)
    return sign *
           std::bit_cast<float>((std::bit_cast<std::uint32_t>(s) & 0xFF800000u) |
                                (next_u32() % 2 ? next_u32() % 4 : 0x7FFFFFu - next_u32() % 4));
  if (c < 88) return std::bit_cast<float>(next_u32() % (1u << 23)) * sign;
  if (c < 94) return 0.0f * sign;
  if (c < 97) return sign * std::numeric_limits<float>::quiet_NaN();
  return sign * std::numeric_limits<float>::infinity();
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

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--requests") return answer_requests(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: fp8ref_recipes_dump OUT_DIR | --requests DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::ofstream manifest(dir + "/manifest.txt");
  std::vector<Recipe> recipes;
  for (Runtime rt : {Runtime::torch_cpu, Runtime::torch_cuda})
    for (Format f : {Format::e4m3, Format::e5m2}) {
      for (bool p : {false, true}) {
        if (f == Format::e4m3) recipes.push_back({RecipeKind::deepgemm, f, rt, p, 0.0f});
        recipes.push_back({RecipeKind::torchao, f, rt, p, 0.0f});
      }
      for (RecipeKind k :
           {RecipeKind::mx_floor, RecipeKind::mx_rceil, RecipeKind::mx_ceil, RecipeKind::mx_even})
        recipes.push_back({k, f, rt, false, 0.0f});
    }
  for (Format f : {Format::e4m3, Format::e5m2}) {
    for (bool p : {false, true})
      for (float eps : {0.0f, 1e-6f})
        recipes.push_back({RecipeKind::te, f, Runtime::cuda_kernel, p, eps});
    recipes.push_back({RecipeKind::mx_rceil, f, Runtime::cuda_kernel, false, 0.0f});
  }
  const std::int64_t m = 48, k = 256;
  int id = 0;
  for (const Recipe& r : recipes)
    for (Source src : {Source::f32, Source::bf16}) {
      if (src == Source::bf16 && r.kind == RecipeKind::deepgemm)
        continue;  // DeepGEMM: .float() first; same as f32
      const BlockGeometry g = is_mx(r.kind) ? BlockGeometry::b1x32 : BlockGeometry::b1x128;
      const int bcols = is_mx(r.kind) ? 32 : 128;
      std::vector<std::uint32_t> x32(std::size_t(m * k));
      std::vector<std::uint16_t> x16(std::size_t(m * k));
      for (std::int64_t i = 0; i < m; ++i) {
        const int e = i % 8 == 7 ? -135 : (i % 8 == 6 ? 110 : int(next_u32() % 40) - 20);
        for (std::int64_t j = 0; j < k; ++j) {
          const std::uint32_t b = std::bit_cast<std::uint32_t>(draw(e));
          x32[std::size_t(i * k + j)] = src == Source::bf16 ? (b & 0xFFFF0000u) : b;
          x16[std::size_t(i * k + j)] = std::uint16_t(b >> 16);
        }
      }
      const SourceView2d v{
          src == Source::bf16 ? static_cast<const void*>(x16.data()) : x32.data(), src, m, k, k, 1};
      const Quantized q = quantize(v, r, g);
      const std::string name = "case" + std::to_string(id++);
      write(dir + "/" + name + ".x.f32", x32);
      write(dir + "/" + name + ".q.u8", q.codes);
      write(dir + "/" + name + ".s.f32", q.scale);
      write(dir + "/" + name + ".e8.u8", q.e8m0);
      manifest << name << ' ' << to_string(r.kind) << ' ' << to_string(r.elem) << ' '
               << to_string(r.runtime) << ' ' << int(r.pow2) << ' '
               << std::bit_cast<std::uint32_t>(r.epsilon) << ' ' << to_string(src) << ' ' << m
               << ' ' << k << ' ' << bcols << '\n';
    }
  return 0;
}
