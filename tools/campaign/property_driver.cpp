// The campaign's property driver over RapidCheck's public API (property_driver.h).
#include "campaign/property_driver.h"

#include <rapidcheck.h>

#include <stdexcept>
#include <utility>

namespace fp8ref::fuzz::driver {
namespace {

using Kind = BatchOutcome::Kind;

// One run of the property: how it ended and, for a failure or a discard, what it threw. The
// messages are RapidCheck's (its PropertyAdapter), so reports read as before.
struct CaseRun {
  Kind kind = Kind::passed;  // gave_up: the case was discarded (a generator gave up)
  std::string message;
};

// The property as a RapidCheck generator of case runs: each value() runs the property once on the
// values its `*gen` picks draw (rc::gen::exec), with the context's per-case tags cleared first.
rc::Gen<CaseRun> case_runs(const Property& property, CampaignContext& ctx) {
  return rc::gen::exec([&property, &ctx]() -> CaseRun {
    ctx.tags.clear();
    try {
      property(ctx);
      return {};
    } catch (const rc::GenerationFailure& e) {
      return {Kind::gave_up, std::string("Generation failed with message:\n") + e.what()};
    } catch (const std::exception& e) {
      return {Kind::failed, std::string("Exception thrown with message:\n") + e.what()};
    } catch (...) {
      return {Kind::failed, "Unknown object thrown"};
    }
  });
}

// RapidCheck's size for the i-th passing case (its sizeFor): sizes spread evenly over
// 0..max_size, the largest always used.
int size_for(int max_success, int max_size, int i) {
  const int sizes = max_size + 1;
  const int regular = (max_success / sizes) * sizes;
  if (i < regular) return i % sizes;
  const int rest = max_success - regular;
  return rest == 1 ? 0 : ((i % sizes) * max_size) / (rest - 1);
}

// --- the reproduce token: version, seed, case index, size, shrink path -------------------------

constexpr std::uint8_t kTokenVersion = 1;
constexpr std::uint64_t kMaxCaseIndex = std::uint64_t(1) << 24;

struct Reproduce {
  std::uint64_t seed = 0;
  std::uint64_t case_index = 0;  // the split of Random(seed) the case was drawn from
  int size = 0;
  std::vector<std::size_t> path;  // the index of the accepted shrink at each step
};

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(std::uint8_t(v | 0x80));
  out.push_back(std::uint8_t(v));
}

std::uint64_t get_varint(const std::vector<std::uint8_t>& in, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= in.size()) throw std::invalid_argument("replay token does not decode: truncated");
    const std::uint8_t b = in[at++];
    v |= std::uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::invalid_argument("replay token does not decode: a number is too long");
}

std::vector<std::uint8_t> encode(const Reproduce& r) {
  std::vector<std::uint8_t> out{kTokenVersion};
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(r.seed >> (8 * i)));
  put_varint(out, r.case_index);
  put_varint(out, std::uint64_t(r.size));
  put_varint(out, r.path.size());
  for (std::size_t p : r.path) put_varint(out, p);
  return out;
}

Reproduce decode(const std::vector<std::uint8_t>& token) {
  if (token.size() < 9 || token[0] != kTokenVersion)
    throw std::invalid_argument("replay token does not decode: not a version-1 token");
  Reproduce r;
  for (int i = 0; i < 8; ++i) r.seed |= std::uint64_t(token[1 + i]) << (8 * i);
  std::size_t at = 9;
  r.case_index = get_varint(token, at);
  const std::uint64_t size = get_varint(token, at), n = get_varint(token, at);
  // Bounds far above any batch (cases, sizes, shrink steps), so a hostile token cannot spin.
  if (r.case_index > kMaxCaseIndex || size > 1'000'000 || n > token.size())
    throw std::invalid_argument("replay token does not decode: index, size or path out of range");
  r.size = int(size);
  for (std::uint64_t i = 0; i < n; ++i) r.path.push_back(std::size_t(get_varint(token, at)));
  if (at != token.size())
    throw std::invalid_argument("replay token does not decode: trailing bytes");
  return r;
}

// The random state case `index` of a batch from `seed` was drawn with.
rc::Random case_random(std::uint64_t seed, std::uint64_t index) {
  rc::Random r(seed);
  rc::Random drawn = r.split();
  for (std::uint64_t i = 0; i < index; ++i) drawn = r.split();
  return drawn;
}

// RapidCheck's shrinkTestCase: accept the first shrink that still fails, start over from its
// shrinks, until none fails. Returns the smallest failing case and the path to it.
rc::Shrinkable<CaseRun> shrink(rc::Shrinkable<CaseRun> best, std::vector<std::size_t>& path) {
  auto shrinks = best.shrinks();
  std::size_t i = 0;
  while (auto next = shrinks.next()) {
    if (next->value().kind == Kind::failed) {
      best = std::move(*next);
      shrinks = best.shrinks();
      path.push_back(i);
      i = 0;
    } else {
      ++i;
    }
  }
  return best;
}

// "classes: a b c", the coverage classes of a failing case ("" when it has none).
std::string classes_text(const std::vector<std::string>& tags) {
  std::string s;
  for (const std::string& t : tags) s += (s.empty() ? "" : " ") + t;
  return s.empty() ? s : "classes: " + s;
}

// The last run of a failing case, with capture on: its message, classes and case file.
void finish_failure(BatchOutcome& o, const rc::Shrinkable<CaseRun>& shrunk, CampaignContext& ctx) {
  ctx.capture = true;
  ctx.captured = {};
  const CaseRun last = shrunk.value();
  ctx.capture = false;
  o.kind = Kind::failed;
  o.message = last.message;
  o.counterexample = classes_text(ctx.tags);
}

}  // namespace

BatchOutcome run_batch(const Property& property, CampaignContext& ctx, std::uint64_t seed,
                       int max_success, int max_size) {
  const rc::Gen<CaseRun> gen = case_runs(property, ctx);
  BatchOutcome o;
  const std::int64_t max_discard = std::int64_t(10) * max_success;  // RapidCheck's default ratio
  std::int64_t discarded = 0, recent_discards = 0;
  rc::Random r(seed);
  for (std::uint64_t index = 0; o.successes < max_success; ++index) {
    const int size = size_for(max_success, max_size, int(o.successes)) + int(recent_discards / 10);
    const rc::Shrinkable<CaseRun> drawn = gen(r.split(), size);
    const CaseRun run = drawn.value();
    if (run.kind == Kind::failed) {
      o.tags.clear();  // as RapidCheck: a batch's class counts are those of a batch that passed
      Reproduce rep{seed, index, size, {}};
      finish_failure(o, shrink(drawn, rep.path), ctx);
      o.reproduce = encode(rep);
      return o;
    }
    if (run.kind == Kind::gave_up) {
      ++recent_discards;
      if (++discarded > max_discard) {
        o.tags.clear();
        o.kind = Kind::gave_up, o.message = run.message;
        return o;
      }
      continue;
    }
    ++o.successes;
    recent_discards = 0;
    for (const std::string& t : ctx.tags) ++o.tags[t];
  }
  return o;
}

BatchOutcome replay(const Property& property, CampaignContext& ctx,
                    const std::vector<std::uint8_t>& token) {
  const Reproduce rep = decode(token);
  const rc::Gen<CaseRun> gen = case_runs(property, ctx);
  rc::Shrinkable<CaseRun> at = gen(case_random(rep.seed, rep.case_index), rep.size);
  for (std::size_t step : rep.path) {
    auto shrinks = at.shrinks();
    auto next = shrinks.next();
    for (std::size_t i = 0; i < step && next; ++i) next = shrinks.next();
    if (!next) throw std::invalid_argument("replay token does not decode: no such shrink");
    at = std::move(*next);
  }
  BatchOutcome o;
  const CaseRun run = at.value();
  o.kind = run.kind, o.message = run.message;
  if (run.kind == Kind::passed) o.successes = 1;
  if (run.kind == Kind::failed) o.counterexample = classes_text(ctx.tags);
  return o;
}

}  // namespace fp8ref::fuzz::driver
