// RapidCheck's internal API behind plain values (rc_adapter.h).
#include "campaign/rc_adapter.h"

#include <rapidcheck.h>

#include <iostream>
#include <iterator>
#include <stdexcept>

namespace fp8ref::fuzz::rc_adapter {
namespace {

using namespace rc::detail;

class NullListener : public TestListener {
 public:
  void onTestCaseFinished(const CaseDescription&) override {}
  void onShrinkTried(const CaseDescription&, bool) override {}
  void onTestFinished(const TestMetadata&, const TestResult&) override {}
};

// RC_TAG stores a std::string tag as its printed form, in double quotes.
std::string unquoted(const std::string& t) {
  return t.size() >= 2 && t.front() == '"' && t.back() == '"' ? t.substr(1, t.size() - 2) : t;
}

std::string shown(const Example& ex) {
  std::string s;
  for (const auto& [type, value] : ex)
    if (value != "<\?\?\?>") s += (s.empty() ? "" : "; ") + value;
  if (s.size() > 600) s = s.substr(0, 600) + " ...";
  return s;
}

BatchOutcome outcome_of(const TestResult& res) {
  BatchOutcome o;
  SuccessResult ok;
  FailureResult fail;
  GaveUpResult gave;
  Error err;
  if (res.match(ok)) {
    o.successes = ok.numSuccess;
    for (const auto& [tags, n] : ok.distribution)
      for (const std::string& t : tags) o.tags[unquoted(t)] += n;
  } else if (res.match(fail)) {
    o.kind = BatchOutcome::Kind::failed;
    o.successes = fail.numSuccess;
    o.message = fail.description;
    o.counterexample = shown(fail.counterExample);
    serialize(fail.reproduce, std::back_inserter(o.reproduce));
  } else if (res.match(gave)) {
    o.kind = BatchOutcome::Kind::gave_up;
    o.successes = gave.numSuccess;
    o.message = gave.description;
  } else if (res.match(err)) {
    o.kind = BatchOutcome::Kind::error;
    o.message = err.description;
  }
  return o;
}

}  // namespace

BatchOutcome run_batch(const std::function<void()>& property, const std::string& name,
                       std::uint64_t seed, int max_success, int max_size) {
  TestParams params;
  params.seed = seed;
  params.maxSuccess = max_success;
  params.maxSize = max_size;
  NullListener listener;
  const TestMetadata md{name, name};
  return outcome_of(checkProperty(toProperty(property), md, params, listener));
}

BatchOutcome replay(const std::function<void()>& property, const std::string& name,
                    const std::vector<std::uint8_t>& token) {
  Reproduce rep;
  try {
    const auto end = deserialize(token.begin(), token.end(), rep);
    if (end != token.end()) throw std::invalid_argument("trailing bytes");
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("replay token does not decode: ") + e.what());
  }
  NullListener listener;
  const TestMetadata md{name, name};
  return outcome_of(checkProperty(toProperty(property), md, TestParams(), listener, {{name, rep}}));
}

void quiet_configuration() {
  static const bool done = [] {
    std::streambuf* saved = std::cerr.rdbuf(nullptr);
    (void)configuration();
    std::cerr.rdbuf(saved);
    return true;
  }();
  (void)done;
}

}  // namespace fp8ref::fuzz::rc_adapter
