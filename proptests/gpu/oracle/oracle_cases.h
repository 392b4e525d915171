// Random grouped-GEMM cases for the GPU oracle suites (docs/gpu_oracle.md §5): the reference
// suites' problems (proptests/reference/gemm_problem.h) with NaN / Inf poison in the codes, any
// split-K, epilogue and output dtype the model accepts, and the CPU oracle's output bits.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proptests/reference/gemm_problem.h"

namespace fp8ref::test {

struct OracleCase {
  Problem p;
  ModelChoice m;
  OutDtype out;
  RowPolicy policy;
  std::string describe() const {
    return std::string(to_string(m.model)) + " " + to_string(p.scaling) + " " +
           std::string(to_string(p.fa)) + "x" + std::string(to_string(p.fb)) + " -> " +
           to_string(out) + " split " + m.split().str() + " epilogue " + to_string(m.epilogue) +
           " M=" + std::to_string(p.M) + " N=" + std::to_string(p.N) + " K=" + std::to_string(p.K) +
           " G=" + std::to_string(p.G);
  }
};

// A few codes of `v` replaced by NaN / ±Inf (e5m2) or NaN (e4m3).
inline void poison(std::vector<std::uint8_t>& v, Format f) {
  if (v.empty() || *rc::gen::inRange(0, 4) != 0) return;
  const int n = *rc::gen::inRange(1, 4);
  for (int i = 0; i < n; ++i) {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, v.size());
    v[at] = f == Format::e4m3 ? *rc::gen::element<std::uint8_t>(0x7F, 0xFF)
                              : *rc::gen::element<std::uint8_t>(0x7C, 0xFC, 0x7E, 0xFF);
  }
}

inline OracleCase gen_oracle_case(std::int64_t max_n = 40, std::int64_t max_k = 300) {
  const std::int64_t G = *rc::gen::inRange<std::int64_t>(0, 5);
  OracleCase c{gen_problem(gen_map(G), G, max_n, max_k), {}, OutDtype::f32, RowPolicy::untouched};
  poison(c.p.a, c.p.fa);
  poison(c.p.b, c.p.fb);
  c.m = gen_model(c.p.scaling);
  if (accepts_split_k(c.m.model) && *rc::gen::inRange(0, 3) == 0)
    c.m.split_k = 1, c.m.split_blocks = *rc::gen::inRange<std::int64_t>(1, 3);
  const bool scalar = c.p.scaling != Scaling::blockwise && c.p.scaling != Scaling::mx;
  if (scalar && accepts_epilogue(c.m.model))
    c.m.epilogue = *rc::gen::element(Epilogue::model, Epilogue::scale_product, Epilogue::b_then_a,
                                     Epilogue::a_then_b);
  c.out = *rc::gen::element(OutDtype::f32, OutDtype::bf16, OutDtype::f16);
  c.policy = *rc::gen::element(RowPolicy::untouched, RowPolicy::zero);
  RC_CLASSIFY(true, to_string(c.m.model));
  return c;
}

// The CPU oracle's output bits, rows of no group pre-filled with 0xA5A5 poison.
inline std::vector<std::uint32_t> cpu_bits(const OracleCase& c) {
  const std::size_t n = std::size_t(c.p.M * c.p.N);
  std::vector<float> f(c.out == OutDtype::f32 ? n : 0, std::bit_cast<float>(0xA5A5A5A5u));
  std::vector<std::uint16_t> h(c.out == OutDtype::f32 ? 0 : n, 0xA5A5);
  ref::grouped_gemm_forward(c.p.operands(), c.p.group_of, c.m, c.policy, {c.out, f, h, {}});
  std::vector<std::uint32_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = c.out == OutDtype::f32 ? std::bit_cast<std::uint32_t>(f[i]) : h[i];
  return bits;
}

}  // namespace fp8ref::test
