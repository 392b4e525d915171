// Planted bugs for the campaign's mutation test (docs/fuzz.md "Planted bugs"): a catalogue of
// single, realistic bugs in numerics/ and reference/, each behind a hook that exists only when
// FP8REF_PLANT_HOOKS is defined. That macro is set for the test executable fp8-check-planted
// (never installed); the library, fp8-check and every other target compile without it, so their
// code and behaviour do not change. In a hooked build the bug to plant is chosen at run time by
// the environment variable FP8REF_PLANT (a name below) or by set_active(); none is the default.
#pragma once

#ifdef FP8REF_PLANT_HOOKS

#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace fp8ref::plant {

enum class Bug : int {
  none,
  codec_ties_half_up,      // codec RNE: a tie rounds away from zero
  codec_sat_one_high,      // codec saturation: one code past max finite passes through
  codec_subnormal_ftz,     // codec: subnormal results flushed to zero
  mx_rceil_floors,         // MX RCEIL scale exponent rounded down
  deepgemm_amax_clamp,     // DeepGEMM amax clamp 1e-5 instead of 1e-4
  te_epsilon_ignored,      // Transformer Engine amax_epsilon not applied
  swizzle_128x4_dropped,   // blocked_128x4: row-major inside the 512-byte tile
  packed_bytes_swapped,    // deepgemm_packed: big-endian bytes in each int32 word
  wgmma_keeps_14_bits,     // wgmma step result keeps 14 fraction bits, not 13
  promote_every_256,       // promoted f32 sums promote every 256 of K, not 128
  rowwise_scales_swapped,  // rowwise epilogue RN(sb·RN(sa·acc)), not RN(sa·RN(sb·acc))
  splitk_reversed,         // split-K slices added in reverse order
  blockwise_fma_split,     // promoted blockwise: acc + RN(s·T) instead of fmaf(s, T, acc)
  offs_off_by_one,         // group end offsets: the first group's last row left out
  empty_wgrad_zeroed,      // wgrad of an empty group: zero instead of RN_out(C[g])
  pad_rows_to_group,       // padded row map: padding rows mapped to their group
  pad_rows_written,        // pad_rows: padding rows filled with the group's last row
  quantize_ties_away,      // quantize's f32 -> FP8 element cast: a tie rounds away from zero
  e8m0_ties_down,          // E8M0 nearest roundings: the value tie 1.5 * 2^k rounds down
  mma_sync_c_first,        // mma.sync step: C enters the first HMMA instead of RN(C + T2) last
  grouped_no_restart,      // M-grouped 128x4 layout: groups do not restart at a tile
};

inline constexpr std::array<std::string_view, 22> kNames = {
    "none",
    "codec_ties_half_up",
    "codec_sat_one_high",
    "codec_subnormal_ftz",
    "mx_rceil_floors",
    "deepgemm_amax_clamp",
    "te_epsilon_ignored",
    "swizzle_128x4_dropped",
    "packed_bytes_swapped",
    "wgmma_keeps_14_bits",
    "promote_every_256",
    "rowwise_scales_swapped",
    "splitk_reversed",
    "blockwise_fma_split",
    "offs_off_by_one",
    "empty_wgrad_zeroed",
    "pad_rows_to_group",
    "pad_rows_written",
    "quantize_ties_away",
    "e8m0_ties_down",
    "mma_sync_c_first",
    "grouped_no_restart",
};

inline std::string_view name(Bug b) { return kNames[static_cast<std::size_t>(b)]; }

// The bug named `s`; throws std::invalid_argument for an unknown name ("" is none).
inline Bug parse(std::string_view s) {
  if (s.empty()) return Bug::none;
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<Bug>(i);
  throw std::invalid_argument("unknown planted bug '" + std::string(s) + "'");
}

namespace detail {
inline Bug& selected() {
  static Bug b = [] {
    const char* env = std::getenv("FP8REF_PLANT");
    return parse(env ? env : "");
  }();
  return b;
}
}  // namespace detail

inline Bug active() { return detail::selected(); }
inline void set_active(Bug b) { detail::selected() = b; }

}  // namespace fp8ref::plant

// True when bug `name` (a plant::Bug enumerator) is planted; only usable under the macro.
#define FP8REF_PLANTED(name) (::fp8ref::plant::active() == ::fp8ref::plant::Bug::name)
// The same inside a constexpr function (never planted during constant evaluation).
#define FP8REF_PLANTED_RT(name) (!std::is_constant_evaluated() && FP8REF_PLANTED(name))

#endif  // FP8REF_PLANT_HOOKS

// Every header whose code FP8REF_PLANT_HOOKS changes includes this one, so a source compiled once
// for both builds (FP8REF_PLANT_FREE: fp8ref_plant_free_objects, tools/CMakeLists.txt) must never
// reach it. (At the end of the file: without the macro the preprocessed text stays as it was.)
#ifdef FP8REF_PLANT_FREE
#error "a source shared by the normal and the planted build includes a hooked header"
#endif
