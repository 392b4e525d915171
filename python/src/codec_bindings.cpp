// fp8ref._core encode / decode (docs/python.md "Codecs"): the CLI's encode / decode filters on
// whole arrays, zero-copy in and out. Non-stochastic casts from f32 / bf16 / f16 go through
// numerics/encode_table.h (the C++ batch path; one table per cast, built once and cached), the
// others through ProfileCodec::encode per element. The GIL is released while the loop runs.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "bindings.h"
#include "cli/encode_options.h"
#include "cli/errors.h"
#include "numerics/codec.h"
#include "numerics/encode_table.h"
#include "numerics/profile.h"

namespace fp8ref::py {
namespace {

using cli::UsageError;

// A numpy array of `shape` over new, uninitialised storage (the caller fills every element).
template <class T>
std::pair<NumpyArray<T>, T*> fresh_array(const std::vector<std::size_t>& shape, std::size_t n) {
  T* data = new T[n == 0 ? 1 : n];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return {NumpyArray<T>(data, shape.size(), shape.data(), owner), data};
}

ProfileCodec codec_for(const std::string& source, const std::string& format,
                       const std::string& profile, const std::string& rounding, int sr_bits) {
  ProfileCodec c =
      cli::resolve_codec(cli::parse_profile_option(profile), cli::parse_format_option(format),
                         cli::parse_source_option(source), rounding);
  if (c.rounding == Rounding::sr) {
    if (sr_bits < 1 || sr_bits > 32)
      throw UsageError("--sr-bits must be in 1..32, got " + std::to_string(sr_bits));
    c.fp8.sr_bits = sr_bits;
  }
  return c;
}

// One table per (profile, format, source, rounding): the four fix the codec when it is tabulated
// (sr, whose sr_bits would also count, never is).
const EncodeTable& table_for(const ProfileCodec& c) {
  static std::mutex mu;
  static std::map<std::uint32_t, std::unique_ptr<const EncodeTable>> cache;
  const std::uint32_t key = std::uint32_t(c.profile) << 24 | std::uint32_t(c.format) << 16 |
                            std::uint32_t(c.source) << 8 | std::uint32_t(c.rounding);
  const std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<const EncodeTable>(c);
  return *slot;
}

std::uint64_t load_bits(const void* data, std::size_t i, int bytes) {
  std::uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(data) + i * std::size_t(bytes), std::size_t(bytes));
  return v;
}

void encode_into(const ProfileCodec& c, const void* x, std::size_t n, const std::uint32_t* rand,
                 std::uint8_t* z) {
  const int bytes = source_bits(c.source) / 8;
  if (c.rounding != Rounding::sr && c.source != Source::f64) {
    const EncodeTable& t = table_for(c);
    if (c.source == Source::f32)
      t.encode_f32({static_cast<const std::uint32_t*>(x), n}, {z, n});
    else
      t.encode_16({static_cast<const std::uint16_t*>(x), n}, {z, n});
    return;
  }
  for (std::size_t i = 0; i < n; ++i) z[i] = c.encode(load_bits(x, i, bytes), rand ? rand[i] : 0);
}

NumpyArray<std::uint8_t> encode(const AnyArray& x, const std::string& source,
                                const std::string& format, const std::string& profile,
                                const std::string& rounding, int sr_bits,
                                const std::optional<AnyArray>& rand) {
  const ProfileCodec c = codec_for(source, format, profile, rounding, sr_bits);
  if (x.itemsize() * 8 != std::size_t(source_bits(c.source)))
    throw UsageError("x: " + std::to_string(x.itemsize() * 8) + "-bit elements for a " +
                     std::string(to_string(c.source)) + " source");
  const bool sr = c.rounding == Rounding::sr;
  if (sr != rand.has_value())
    throw UsageError(sr ? "rounding sr needs rand= (one uint32 per element)"
                        : "rand= is only read by rounding sr");
  if (rand && (rand->itemsize() != 4 || rand->size() != x.size()))
    throw UsageError("rand: expected " + std::to_string(x.size()) + " uint32 values, got " +
                     std::to_string(rand->size()) + " of " + std::to_string(rand->itemsize() * 8) +
                     " bits");
  auto [z, out] = fresh_array<std::uint8_t>(shape_of(x), x.size());
  const auto* r = rand ? static_cast<const std::uint32_t*>(rand->data()) : nullptr;
  {
    nb::gil_scoped_release unlocked;
    encode_into(c, x.data(), x.size(), r, out);
  }
  return z;
}

template <class T>
NumpyArray<T> decode_as(const AnyArray& codes, Format f) {
  T table[256];
  for (int i = 0; i < 256; ++i) table[i] = T(decode_f64(f, std::uint8_t(i)));
  auto [z, out] = fresh_array<T>(shape_of(codes), codes.size());
  const auto* a = static_cast<const std::uint8_t*>(codes.data());
  {
    nb::gil_scoped_release unlocked;
    for (std::size_t i = 0; i < codes.size(); ++i) out[i] = table[a[i]];
  }
  return z;
}

nb::object decode(const AnyArray& codes, const std::string& format, const std::string& to) {
  const Format f = cli::parse_format_option(format);
  if (codes.itemsize() != 1)
    throw UsageError("codes: expected 8-bit codes, got " + std::to_string(codes.itemsize() * 8) +
                     "-bit elements");
  if (to == "f32") return nb::cast(decode_as<float>(codes, f));
  if (to == "f64") return nb::cast(decode_as<double>(codes, f));
  throw UsageError("unknown target '" + to + "' (expected f32 or f64)");
}

// The C++ batch path alone (EncodeTable::encode_f32 into a preallocated buffer), best wall time
// of `repeat` runs: the benchmark's baseline in the same process.
double encode_table_seconds(const AnyArray& x, const std::string& format,
                            const std::string& profile, int repeat) {
  const ProfileCodec c = codec_for("f32", format, profile, "", 32);
  if (x.itemsize() != 4) throw UsageError("x: expected f32 elements");
  std::vector<std::uint8_t> z(x.size());
  double best = 1e300;
  nb::gil_scoped_release unlocked;
  const EncodeTable& t = table_for(c);
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    t.encode_f32({static_cast<const std::uint32_t*>(x.data()), x.size()}, z);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

}  // namespace

void register_codec(nb::module_& m) {
  m.def("encode", &encode, nb::arg("x"), nb::arg("source"), nb::arg("format"), nb::arg("profile"),
        nb::arg("rounding"), nb::arg("sr_bits"), nb::arg("rand").none(),
        "Encode source bit patterns (f32 / f64 / bf16 / f16 by width) to 8-bit codes.");
  m.def("decode", &decode, nb::arg("codes"), nb::arg("format"), nb::arg("to"),
        "Decode 8-bit codes to f32 or f64 values (exact).");
  m.def("_encode_table_seconds", &encode_table_seconds, nb::arg("x"), nb::arg("format"),
        nb::arg("profile"), nb::arg("repeat"));
}

}  // namespace fp8ref::py
