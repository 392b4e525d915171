// Golden vectors of one Hopper wgmma FP8 step (docs/design.md §10, docs/models.md `hopper_wgmma`
// step):
// outputs of mmasim's Hopper FP8 wgmma model (an independent implementation, run on the GPU machine
// by proptests/fidelity/mmasim_step_xcheck.py). Every vector must be reproduced bitwise by
// numerics/models/wgmma_step.h `hopper_wgmma_step`. Two encodings of the same vectors:
//   .hex          TestFloat-style lines `fa fb a0..a31 b0..b31 c z` (hex; '#' starts a comment)
//   .safetensors  tensors fa, fb (U8, 0 = e4m3, 1 = e5m2), a, b (U8, n x 32), c, z (F32), as
//                 `fp8-check golden accept` keeps them (needs FP8REF_GOLDEN_STEP_TENSOR_IO)
// The file path is compiled in (FP8REF_GOLDEN_STEP_FILE); the environment variable of that name
// overrides it.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/models.h"
#ifdef FP8REF_GOLDEN_STEP_TENSOR_IO
#include "tensor_io/tensor_file.h"
#endif

#ifndef FP8REF_GOLDEN_STEP_FILE
#error "FP8REF_GOLDEN_STEP_FILE must name golden/reference/hopper_wgmma_step.hex"
#endif

namespace fp8ref {
namespace {

struct GoldenStep {
  int line;
  Format fa, fb;
  std::uint8_t a[kHopperWgmmaK], b[kHopperWgmmaK];
  std::uint32_t c, z;
  std::string text;
};

std::string golden_path() {
  const char* env = std::getenv("FP8REF_GOLDEN_STEP_FILE");
  return env && *env ? env : FP8REF_GOLDEN_STEP_FILE;
}

bool parse_format(const std::string& s, Format* f) {
  if (s == "e4m3") return *f = Format::e4m3, true;
  if (s == "e5m2") return *f = Format::e5m2, true;
  return false;
}

// Parses a hex token of exactly `digits` digits.
bool parse_hex(const std::string& s, std::size_t digits, std::uint32_t* v) {
  if (s.size() != digits) return false;
  std::uint32_t r = 0;
  for (char ch : s) {
    const int d = ch >= '0' && ch <= '9'   ? ch - '0'
                  : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                  : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                           : -1;
    if (d < 0) return false;
    r = r << 4 | std::uint32_t(d);
  }
  *v = r;
  return true;
}

// Reads every vector; a malformed line is a test failure naming the line.
std::vector<GoldenStep> load_hex(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good())
      << "cannot open golden file " << path
      << " (generate it with proptests/fidelity/mmasim_step_xcheck.py --emit-golden)";
  std::vector<GoldenStep> out;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream ss(text);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    GoldenStep g{};
    g.line = line;
    g.text = text;
    bool ok = tok.size() == 2 + 2 * kHopperWgmmaK + 2 && parse_format(tok[0], &g.fa) &&
              parse_format(tok[1], &g.fb);
    for (int k = 0; ok && k < 2 * kHopperWgmmaK; ++k) {
      std::uint32_t v = 0;
      ok = parse_hex(tok[std::size_t(2 + k)], 2, &v);
      (k < kHopperWgmmaK ? g.a[k] : g.b[k - kHopperWgmmaK]) = std::uint8_t(v);
    }
    ok = ok && parse_hex(tok[tok.size() - 2], 8, &g.c) && parse_hex(tok.back(), 8, &g.z);
    EXPECT_TRUE(ok) << path << ":" << line << ": malformed golden line: " << text;
    if (ok) out.push_back(g);
  }
  return out;
}

#ifdef FP8REF_GOLDEN_STEP_TENSOR_IO
// The same vectors from safetensors; the `text` of each is its .hex line, for messages.
std::vector<GoldenStep> load_safetensors(const std::string& path) {
  namespace tio = fp8ref::tensor_io;
  const tio::TensorFile tf = tio::read_tensor_file(path, {});
  auto get = [&](const char* name, tio::DType dt, std::size_t width) -> const tio::Tensor& {
    const tio::Tensor* t = tf.find(name);
    if (!t || t->dtype != dt || t->shape.empty() ||
        t->numel() != std::uint64_t(t->shape[0]) * width)
      throw std::runtime_error(path + ": tensor " + name +
                               " missing or of the wrong dtype / shape");
    return *t;
  };
  const tio::Tensor &fa = get("fa", tio::DType::U8, 1), &fb = get("fb", tio::DType::U8, 1);
  const tio::Tensor &a = get("a", tio::DType::U8, kHopperWgmmaK),
                    &b = get("b", tio::DType::U8, kHopperWgmmaK);
  const tio::Tensor &c = get("c", tio::DType::F32, 1), &z = get("z", tio::DType::F32, 1);
  const std::size_t n = std::size_t(fa.shape[0]);
  if (fb.numel() != n || a.numel() != n * kHopperWgmmaK || b.numel() != n * kHopperWgmmaK ||
      c.numel() != n || z.numel() != n)
    throw std::runtime_error(path + ": tensors of different lengths");
  std::vector<GoldenStep> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    GoldenStep& g = out[i];
    g.line = int(i);
    if (fa.data[i] > 1 || fb.data[i] > 1) throw std::runtime_error(path + ": format id not 0 or 1");
    g.fa = fa.data[i] ? Format::e5m2 : Format::e4m3;
    g.fb = fb.data[i] ? Format::e5m2 : Format::e4m3;
    std::ostringstream text;
    text << to_string(g.fa) << ' ' << to_string(g.fb) << std::hex;
    for (int k = 0; k < kHopperWgmmaK; ++k) g.a[k] = a.data[i * kHopperWgmmaK + std::size_t(k)];
    for (int k = 0; k < kHopperWgmmaK; ++k) g.b[k] = b.data[i * kHopperWgmmaK + std::size_t(k)];
    std::memcpy(&g.c, c.data.data() + 4 * i, 4);  // little-endian on every supported host
    std::memcpy(&g.z, z.data.data() + 4 * i, 4);
    text << std::setfill('0');
    for (int k = 0; k < kHopperWgmmaK; ++k) text << ' ' << std::setw(2) << int(g.a[k]);
    for (int k = 0; k < kHopperWgmmaK; ++k) text << ' ' << std::setw(2) << int(g.b[k]);
    text << ' ' << std::setw(8) << g.c << ' ' << std::setw(8) << g.z;
    g.text = text.str();
  }
  return out;
}
#endif

std::vector<GoldenStep> load(const std::string& path) {
  const std::string ext = ".safetensors";
  if (path.size() < ext.size() || path.compare(path.size() - ext.size(), ext.size(), ext) != 0)
    return load_hex(path);
#ifdef FP8REF_GOLDEN_STEP_TENSOR_IO
  return load_safetensors(path);
#else
  ADD_FAILURE() << path << ": reading safetensors needs FP8REF_GOLDEN_STEP_TENSOR_IO";
  return {};
#endif
}

TEST(GoldenHopperWgmmaStep, EveryMmasimVectorIsReproducedBitwise) {
  const std::string path = golden_path();
  const std::vector<GoldenStep> cases = load(path);
  int mismatches = 0;
  for (const GoldenStep& g : cases) {
    const std::uint32_t got = std::bit_cast<std::uint32_t>(
        hopper_wgmma_step(g.a, g.b, kHopperWgmmaK, g.fa, g.fb, std::bit_cast<float>(g.c)));
    if (got == g.z) continue;
    if (++mismatches <= 10)
      ADD_FAILURE() << path << (path.ends_with(".hex") ? ":" : " vector ") << g.line << ": got_z "
                    << std::hex << got << ", ref_z " << g.z << "\n  " << g.text;
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size() << " golden vectors";
}

// The file must keep covering every operand format pair, not shrink to a token sample.
TEST(GoldenHopperWgmmaStep, CoversEveryFormatPair) {
  const std::vector<GoldenStep> cases = load(golden_path());
  int count[2][2] = {};
  for (const GoldenStep& g : cases) ++count[g.fa == Format::e5m2][g.fb == Format::e5m2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_GE(count[i][j], 250) << "format pair " << (i ? "e5m2" : "e4m3") << " x "
                                  << (j ? "e5m2" : "e4m3");
}

}  // namespace
}  // namespace fp8ref
