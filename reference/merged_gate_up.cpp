// Merged gate/up weights and scales (docs/design.md §13). See merged_gate_up.h.
#include "reference/merged_gate_up.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace fp8ref::ref {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("fp8ref: " + what); }
std::string str(std::int64_t x) { return std::to_string(x); }

void expect_size(const char* name, std::size_t got, std::int64_t want) {
  if (std::int64_t(got) != want)
    fail(std::string("merge gate/up: ") + name + " has " + str(std::int64_t(got)) +
         " elements, expected " + str(want));
}

// Per group g: the `rows` rows of `a` then those of `b`, each `cols` long.
template <class T>
std::vector<T> concat_rows(std::span<const T> a, std::span<const T> b, std::int64_t G,
                           std::int64_t rows, std::int64_t cols) {
  std::vector<T> out;
  out.reserve(a.size() + b.size());
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t n = rows * cols;
    out.insert(out.end(), a.begin() + g * n, a.begin() + (g + 1) * n);
    out.insert(out.end(), b.begin() + g * n, b.begin() + (g + 1) * n);
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> merge_gate_up_weights(std::span<const std::uint8_t> w1,
                                                std::span<const std::uint8_t> w3, std::int64_t G,
                                                std::int64_t H, std::int64_t K, BLayout layout) {
  if (G < 0 || H < 0 || K < 0) fail("merge gate/up: negative dimension");
  expect_size("W1", w1.size(), G * H * K);
  expect_size("W3", w3.size(), G * H * K);
  if (layout == BLayout::nk) return concat_rows(w1, w3, G, H, K);
  std::vector<std::uint8_t> out(std::size_t(2 * G * H * K));
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t k = 0; k < K; ++k) {
      const std::size_t src = std::size_t((g * K + k) * H), dst = std::size_t((g * K + k) * 2 * H);
      std::copy_n(w1.begin() + std::ptrdiff_t(src), H, out.begin() + std::ptrdiff_t(dst));
      std::copy_n(w3.begin() + std::ptrdiff_t(src), H,
                  out.begin() + std::ptrdiff_t(dst + std::size_t(H)));
    }
  return out;
}

std::vector<float> merge_gate_up_scales(Scaling scaling, std::span<const float> s1,
                                        std::span<const float> s3, std::int64_t G, std::int64_t H,
                                        std::int64_t K) {
  const std::int64_t nbk = (K + 127) / 128, nbh = (H + 127) / 128, nmx = (K + 31) / 32;
  switch (scaling) {
    case Scaling::none:
      expect_size("scale_w1", s1.size(), 0);
      expect_size("scale_w3", s3.size(), 0);
      return {};
    case Scaling::tensorwise:
      expect_size("scale_w1", s1.size(), G);
      expect_size("scale_w3", s3.size(), G);
      for (std::int64_t g = 0; g < G; ++g)
        if (std::bit_cast<std::uint32_t>(s1[std::size_t(g)]) !=
            std::bit_cast<std::uint32_t>(s3[std::size_t(g)]))
          fail("merge gate/up: tensorwise scales of W1 and W3 differ in group " + str(g) +
               "; a merged weight with one scale per expert must be requantized");
      return {s1.begin(), s1.end()};
    case Scaling::rowwise:
      expect_size("scale_w1", s1.size(), G * H);
      expect_size("scale_w3", s3.size(), G * H);
      return concat_rows(s1, s3, G, H, 1);
    case Scaling::blockwise:
      if (H % 128 != 0)
        fail("merge gate/up: 128x128 weight scales need H % 128 == 0, got H = " + str(H) +
             " (a block would straddle W1 and W3)");
      expect_size("scale_w1", s1.size(), G * nbh * nbk);
      expect_size("scale_w3", s3.size(), G * nbh * nbk);
      return concat_rows(s1, s3, G, nbh, nbk);
    case Scaling::mx:
      expect_size("scale_w1", s1.size(), G * H * nmx);
      expect_size("scale_w3", s3.size(), G * H * nmx);
      return concat_rows(s1, s3, G, H, nmx);
    case Scaling::nvfp4:
    case Scaling::mx16: {
      const std::int64_t nnv = (K + 15) / 16;
      expect_size("scale_w1", s1.size(), G * H * nnv);
      expect_size("scale_w3", s3.size(), G * H * nnv);
      return concat_rows(s1, s3, G, H, nnv);
    }
  }
  fail("merge gate/up: unknown scaling");
}

}  // namespace fp8ref::ref
