// Fuzz suites (docs/fuzz.md "The suites"): a property over a generated case, run by the campaign
// runner (`fp8-check fuzz`, runner.h) and by CTest. A suite's case can be written as a tensor file
// and read back, so a shrunk failure becomes a file that `fp8-check` opens and `golden accept` pins
// as a regression that the `golden.regressions` suite replays.
#pragma once

#include <omp.h>
#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "campaign/gen/group_sizes.h"
#include "cases/enum_tokens.h"
#include "cases/tensor_form.h"
#include "tensor_io/tensor.h"

namespace fp8ref::fuzz {

using tensor_io::TensorFile;

// The case-file helpers (tools/cases/tensor_form.h), by their short names in the suites.
using cases::f32_tensor;
using cases::first_difference;
using cases::get_f32;
using cases::get_i32;
using cases::get_i64;
using cases::get_meta;
using cases::get_meta_int;
using cases::get_u32;
using cases::get_u8;
using cases::i32_tensor;
using cases::i64_tensor;
using cases::load_group_sizes;
using cases::same_bits;
using cases::save_group_sizes;
using cases::u32_tensor;
using cases::u8_tensor;

// A property violation: what differs, where (thrown by checks; RapidCheck reports it).
struct Violation : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SuiteInfo {
  std::string name;                  // "gemm.forward"
  std::string summary;               // one line
  std::string label;                 // "cpu" or "gpu"
  int ctest_cases = 100;             // cases of the level-1 CTest run
  std::vector<std::string> classes;  // every tag the suite's cases should hit (coverage)
  // Classes expected fewer than 15 times in the level-1 case count: `--require-classes`
  // requires them only from 4× that count (level 2) on. docs/fuzz.md lists them.
  std::vector<std::string> rare_classes;
};

// --- what a property run reports besides pass / fail --------------------------------------------

// The fingerprint of a suite run's results: FNV-1a over the result bytes its checks fold in
// (bitwise determinism across runs and thread counts, docs/fuzz.md).
struct Fingerprint {
  std::uint64_t value = 0xcbf29ce484222325ull;  // the FNV-1a offset basis
  void fold(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) value = (value ^ p[i]) * 0x100000001b3ull;
  }
};

// What the runner keeps for the suite it runs, passed explicitly to every property call: the
// fingerprint of the results, the coverage classes of the running case, and whether the case is
// to be captured (the one rerun of a shrunk failure) with the captured case. The runner owns one
// per suite run; a property run outside the campaign gets a fresh one.
struct CampaignContext {
  Fingerprint fingerprint;
  std::vector<std::string> tags;  // the running case's coverage classes (cleared per case)
  bool capture = false;
  TensorFile captured;
};

// What every suite provides. `property` draws a case with RapidCheck's generators and checks it,
// reporting to the context it is given: the case's coverage classes, its result bits (the
// fingerprint), and the case itself when the context asks for a capture (so the runner can write
// the shrunk counterexample);
// `replay` checks a case read back from a tensor file (throws Violation when it fails,
// std::invalid_argument on a malformed file); `unavailable_reason` says why the suite cannot run
// here (GPU suites: no device).
// `roundtrip` is a property too: a drawn case written as a safetensors file and read back must
// load as the same case, field by field (a field the file drops would replay another case).
// Results are fingerprinted: checks fold their output bits into the Fingerprint they are given.
struct Suite {
  SuiteInfo info;
  std::function<void(CampaignContext&)> property;
  std::function<void(const TensorFile&)> replay;
  std::function<std::string()> unavailable_reason;  // empty when the suite can run
  std::function<void()> roundtrip;
};

// Sets the OpenMP thread count for a scope (suites that compare thread counts).
struct ThreadCount {
  int saved;
  explicit ThreadCount(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
};

// A typed suite: draw / check / tags / save / load of one Case type.
template <class Case>
struct CaseSuite {
  std::function<Case()> draw;  // uses *gen inside a RapidCheck property
  std::function<void(const Case&, Fingerprint&)> check;
  std::function<std::vector<std::string>(const Case&)> tags;
  std::function<TensorFile(const Case&)> save;
  std::function<Case(const TensorFile&)> load;
  // The first field in which two cases differ, "" when none (the case-file round trip).
  std::function<std::string(const Case&, const Case&)> diff;
};

// The case file of `tf` written as safetensors bytes and parsed again (what a dump then a replay
// does, without the file system).
TensorFile through_safetensors(const TensorFile& tf);

template <class Case>
Suite make_suite(
    SuiteInfo info, CaseSuite<Case> cs,
    std::function<std::string()> unavailable = [] { return std::string(); }) {
  Suite s;
  s.info = std::move(info);
  s.property = [cs](CampaignContext& ctx) {
    const Case c = cs.draw();
    ctx.tags = cs.tags(c);
    if (ctx.capture) ctx.captured = cs.save(c);
    cs.check(c, ctx.fingerprint);
  };
  // A malformed file is bad input (std::invalid_argument from load); anything the check throws
  // for a case that loaded is a failure of the code under test, as in a campaign.
  s.replay = [cs](const TensorFile& tf) {
    const Case c = cs.load(tf);
    Fingerprint unused;  // a replayed case is checked, not fingerprinted
    try {
      cs.check(c, unused);
    } catch (const Violation&) {
      throw;
    } catch (const std::exception& e) {
      throw Violation(std::string("the check threw: ") + e.what());
    }
  };
  s.unavailable_reason = std::move(unavailable);
  s.roundtrip = [cs] {
    const Case c = cs.draw();
    const Case back = cs.load(through_safetensors(cs.save(c)));
    const std::string differs = cs.diff(c, back);
    if (!differs.empty())
      throw Violation("case file round trip: the case read back differs in its " + differs);
  };
  return s;
}

// Every suite, in campaign order.
const std::vector<Suite>& all_suites();

// Registration (one function per source file, called by all_suites()).
void add_gemm_suites(std::vector<Suite>& out);
void add_data_suites(std::vector<Suite>& out);
void add_gpu_suites(std::vector<Suite>& out);
void add_blackwell_suites(std::vector<Suite>& out);
void add_oracle_suites(std::vector<Suite>& out);      // suites_oracle.cpp
void add_recipe_suite(std::vector<Suite>& out);       // suites_recipes.cpp (quantize.recipes)
void add_model_bits_suites(std::vector<Suite>& out);  // suites_model_bits.cpp
void add_law_suites(std::vector<Suite>& out);         // laws/: second oracles (law_suites.h)

// A suite whose case is a variant in [0, variants) and a seed from which the check draws its
// inputs (its case file holds the two numbers); `tag(variant)` names the variant's coverage class.
Suite seed_suite(SuiteInfo info, std::int64_t variants,
                 std::function<std::string(std::int64_t)> tag,
                 std::function<void(std::int64_t, std::uint64_t, Fingerprint&)> check);
// 0x-prefixed hexadecimal, for messages.
std::string hex(std::uint64_t x);
void add_gpu_quantize_suites(std::vector<Suite>& out);
void add_gpu_data_suites(std::vector<Suite>& out);
void add_gpu_gemm_suites(std::vector<Suite>& out);           // suites_gpu_gemm.cpp
void add_gpu_oracle_suites(std::vector<Suite>& out);         // suites_gpu_oracle.cpp
void add_gpu_quantize_dual_suites(std::vector<Suite>& out);  // suites_gpu_quantize_dual.cpp
void add_gpu_swiglu_suites(std::vector<Suite>& out);         // suites_gpu_swiglu.cpp
// Why the GPU suites cannot run here ("" when a device is present): no CUDA build, no device.
std::string gpu_unavailable();

}  // namespace fp8ref::fuzz
