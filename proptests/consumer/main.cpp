// Consumer of an installed fp8ref (proptests/consumer/run.sh): encodes 448 to e4m3 through the
// public codec API and checks the OCP max-finite code 0b0'1111'110 = 0x7E; then evaluates one
// exact dot product through the accumulation models' entry header (numerics/models.h, whose
// pieces install under numerics/models/): 448·448 = 200704, exact in f32.
#include <cstdint>
#include <cstdio>

#include "numerics/codec.h"
#include "numerics/models.h"

int main() {
  const fp8ref::EncodeSpec spec{fp8ref::Rounding::rne, fp8ref::Overflow::sat,
                                fp8ref::NanEncoding::quiet_signed, fp8ref::InfEncoding::saturate,
                                /*sr_bits=*/0};
  const std::uint8_t got_z = fp8ref::encode(fp8ref::Format::e4m3, 448.0, spec);
  if (got_z != 0x7E) {
    std::fprintf(stderr, "FAIL: encode(e4m3, 448) = 0x%02X, want 0x7E\n", got_z);
    return 1;
  }
  std::printf("ok: encode(e4m3, 448) = 0x%02X\n", got_z);

  const float unit = 1.0f;
  const fp8ref::ElementScales scales{&unit, &unit, false};
  const double got_dot = fp8ref::exact_dot(&got_z, &got_z, 1, fp8ref::Format::e4m3,
                                           fp8ref::Format::e4m3, scales, fp8ref::OutDtype::f32);
  if (got_dot != 200704.0) {
    std::fprintf(stderr, "FAIL: exact_dot(448, 448) = %g, want 200704\n", got_dot);
    return 1;
  }
  std::printf("ok: exact_dot(448, 448) = %g\n", got_dot);
  return 0;
}
