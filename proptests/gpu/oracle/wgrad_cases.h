// K-grouped wgrad cases for the GPU oracle's tests (docs/gpu_oracle.md §5): the `gemm.wgrad`
// suite's draw (its group-size distributions, scalings, models, split-K and epilogues), any output
// dtype for any model, and poison: NaN / Inf codes, and C holding NaN (any sign and payload),
// ±Inf and -0. The CPU oracle's output bits (reference/grouped_wgrad.cpp).
#pragma once

#include <rapidcheck.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "campaign/wgrad_case.h"
#include "proptests/gpu/oracle/oracle_cases.h"
#include "reference/grouped_gemm.h"

namespace fp8ref::test {

inline std::string describe(const fuzz::WgradCase& w) {
  std::string sizes;
  for (auto s : w.gs.sizes) {
    if (!sizes.empty()) sizes += ',';
    sizes += std::to_string(s);
  }
  return std::string(to_string(w.model.model)) + " " + to_string(w.scaling) + " " +
         std::string(to_string(w.fdy)) + "x" + std::string(to_string(w.fx)) + " -> " +
         to_string(w.out) + " split " + w.model.split().str() + " epilogue " +
         to_string(w.model.epilogue) + " N=" + std::to_string(w.N) + " K=" + std::to_string(w.K) +
         " groups [" + sizes + "] tail " + std::to_string(w.gs.tail);
}

// A few entries of C replaced by NaN (random sign and payload, quiet or signalling), ±Inf or -0.
inline void poison_c(std::vector<float>& c) {
  if (c.empty() || *rc::gen::inRange(0, 3) != 0) return;
  const int n = *rc::gen::inRange(1, 4);
  for (int i = 0; i < n; ++i) {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, c.size());
    const std::uint32_t payload = *rc::gen::inRange<std::uint32_t>(1, 0x800000);
    const std::uint32_t sign = *rc::gen::element(0u, 0x80000000u);
    c[at] = std::bit_cast<float>(
        *rc::gen::element(sign | 0x7F800000u | payload, sign | 0x7F800000u, sign));
  }
}

inline fuzz::WgradCase draw_wgrad_case() {
  fuzz::WgradCase w = fuzz::draw_wgrad();
  w.out = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  poison(w.dy, w.fdy);
  poison(w.x, w.fx);
  poison_c(w.c);
  RC_CLASSIFY(true, to_string(w.model.model));
  return w;
}

// dW's bits from `run(operands, offs, model, output)`: the CPU or a GPU oracle.
template <class Run>
std::vector<std::uint32_t> wgrad_bits(const fuzz::WgradCase& w, Run run) {
  const std::size_t n = w.c.size();
  std::vector<float> f(w.out == OutDtype::f32 ? n : 0);
  std::vector<std::uint16_t> h(w.out == OutDtype::f32 ? 0 : n);
  run(w.operands(), w.gs.ends(), w.model, GemmOutput{w.out, f, h, {}});
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = w.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

inline std::vector<std::uint32_t> cpu_wgrad_bits(const fuzz::WgradCase& w) {
  return wgrad_bits(w, [](const auto& op, const auto& offs, auto m, const GemmOutput& y) {
    ref::grouped_gemm_wgrad(op, offs, m, y);
  });
}

// The first element where two runs differ, as "dW[g][n][k] CPU 0x.. GPU 0x.." ("" when equal).
inline std::string first_dw_mismatch(const fuzz::WgradCase& w,
                                     const std::vector<std::uint32_t>& want,
                                     const std::vector<std::uint32_t>& got) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      char buf[160];
      const std::size_t nk = std::size_t(w.N * w.K);
      std::snprintf(buf, sizeof buf, "dW[%zu][%zu][%zu]: CPU 0x%08x, GPU oracle 0x%08x", i / nk,
                    i % nk / std::size_t(w.K), i % std::size_t(w.K), want[i], got[i]);
      return describe(w) + ": " + buf;
    }
  return "";
}

}  // namespace fp8ref::test
