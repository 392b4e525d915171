// Case files for the `fp8-check oracle|verify grouped-gemm` ctest (cli_gemm_check.cmake), written
// with the tensor_io writer: `write FILE` writes a small blockwise-scaled grouped forward with an
// empty group and a row outside every group; `perturb IN OUT NAME` copies IN with the lowest bit
// of NAME's element 0 (row 0, in group 0) flipped.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor_io/tensor_file.h"

namespace {

using namespace fp8ref::tensor_io;

Tensor tensor(DType t, std::vector<std::int64_t> shape, const void* data, std::size_t bytes) {
  Tensor x{t, std::move(shape), std::vector<std::uint8_t>(bytes)};
  std::memcpy(x.data.data(), data, bytes);
  return x;
}

void write_case(const std::string& path) {
  constexpr std::int64_t M = 10, N = 6, K = 160, G = 3;  // two 128-blocks along K, one along N
  std::vector<std::uint8_t> a(M * K), b(G * N * K);
  std::uint32_t s = 12345;
  auto next = [&s] { return s = s * 1664525u + 1013904223u; };
  for (auto& x : a) x = std::uint8_t(next() >> 24) & 0xF7;  // 0x7F / 0xFF (NaN) excluded
  for (auto& x : b) x = std::uint8_t(next() >> 24) & 0xF7;
  std::vector<float> sa(M * 2), sb(G * 1 * 2);
  for (std::size_t i = 0; i < sa.size(); ++i) sa[i] = 0.5f + 0.03125f * float(i);
  for (std::size_t i = 0; i < sb.size(); ++i) sb[i] = 0.25f * float(i + 1);
  const std::int32_t offs[G] = {4, 4, 9};  // group 1 empty, row 9 outside every group
  TensorFile tf;
  tf.tensors.push_back({"a", tensor(DType::F8_E4M3, {M, K}, a.data(), a.size())});
  tf.tensors.push_back({"b", tensor(DType::F8_E4M3, {G, N, K}, b.data(), b.size())});
  tf.tensors.push_back({"scale_a", tensor(DType::F32, {M, 2}, sa.data(), sa.size() * 4)});
  tf.tensors.push_back({"scale_b", tensor(DType::F32, {G, 1, 2}, sb.data(), sb.size() * 4)});
  tf.tensors.push_back({"offs", tensor(DType::I32, {G}, offs, sizeof offs)});
  write_tensor_file(path, tf);
}

void perturb(const std::string& in, const std::string& out, const std::string& name) {
  TensorFile tf = read_tensor_file(in, {});
  for (NamedTensor& t : tf.tensors)
    if (t.name == name) {
      t.tensor.data[0] ^= 1;
      write_tensor_file(out, tf);
      return;
    }
  throw std::runtime_error(in + " has no tensor " + name);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 3)
      write_case(argv[2]);
    else if (mode == "perturb" && argc == 5)
      perturb(argv[2], argv[3], argv[4]);
    else {
      std::fprintf(stderr, "usage: %s write FILE | perturb IN OUT NAME\n", argv[0]);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
