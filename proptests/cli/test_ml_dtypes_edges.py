#!/usr/bin/env python3
"""`fp8-check encode --profile ml_dtypes_0_6` against ml_dtypes' own astype on the edge classes.

The exhaustive sweeps (ctest test_ml_dtypes_sweep.*) compare in bulk over a pipe of raw bytes; this
test takes the other road, the TestFloat-style text filter a user pipes values through, on the
values that decide the profile: max and the overflow ties (448/464/480, 57344/61440), subnormal
boundaries, +-0, +-Inf, NaNs with either sign, e8m0 ties and the f32-subnormal range, and, from
f64, f32 midpoints +-1 ulp (ml_dtypes goes f64 -> f32 -> fp8). Exit 0 iff every code agrees.
Usage: test_ml_dtypes_edges.py --fp8-check PATH
"""

import argparse
import subprocess
import sys

import ml_dtypes
import numpy as np

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
           "e8m0": ml_dtypes.float8_e8m0fnu}


def f32_edges():
    base = [0.0, 1.0, 1.5, 0.75, 3.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 65536.0, 2.0**-6,
            2.0**-9, 2.0**-10, 1.5 * 2.0**-10, 2.0**-14, 2.0**-16, 2.0**-17, 2.0**-126, 2.0**-127,
            1.01 * 2.0**-127, 2.0**-149, 2.0**127, 1.5 * 2.0**127, np.inf, np.nan,
            float(np.finfo(np.float32).max)]
    x = np.array(base, dtype=np.float32)
    up = np.nextafter(x, np.float32(np.inf))
    down = np.nextafter(x, np.float32(0))
    allv = np.concatenate([x, up, down])
    return np.concatenate([allv, -allv])


def f64_edges():
    # f32 midpoints of the interesting f32 values, exactly, and +-1 f64 ulp around them
    x = f32_edges()
    x = x[np.isfinite(x)].astype(np.float64)
    nxt = np.nextafter(x.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    mid = (x + nxt) / 2
    cands = [x, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]
    for code in range(0, 0x7F):  # e4m3 / e5m2 ties between adjacent codes, +-2^-40 relative
        for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            a = np.array([code, code + 1], dtype=np.uint8).view(t).astype(np.float64)
            if np.all(np.isfinite(a)):
                m = (a[0] + a[1]) / 2
                cands.append(np.array([m, m * (1 + 2.0**-40), m * (1 - 2.0**-40)]))
    v = np.concatenate(cands)
    return np.concatenate([v, -v])


def run_encode(exe, fmt, source, patterns, digits):
    text = "".join(f"{int(p):0{digits}x}\n" for p in patterns)
    r = subprocess.run([exe, "encode", "--format", fmt, "--profile", "ml_dtypes_0_6", "--from",
                        source], input=text.encode(), capture_output=True, check=False)
    if r.returncode != 0:
        sys.exit(f"fp8-check encode failed ({r.returncode}): {r.stderr.decode().strip()}")
    return [int(line, 16) for line in r.stdout.decode().split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    args = ap.parse_args()
    failures = 0
    total = 0
    with np.errstate(all="ignore"):
        cases = [("f32", f32_edges(), np.uint32, 8), ("f64", f64_edges(), np.uint64, 16)]
    for fmt, t in FORMATS.items():
        for source, values, uint, digits in cases:
            with np.errstate(all="ignore"):
                want = values.astype(t).view(np.uint8)
            got = run_encode(args.fp8_check, fmt, source, values.view(uint), digits)
            total += len(values)
            for v, p, w, g in zip(values, values.view(uint), want, got):
                if w != g:
                    failures += 1
                    if failures <= 20:
                        print(f"{fmt} from {source}: {int(p):0{digits}x} ({v!r}) "
                              f"ml_dtypes {int(w):02x} fp8ref {g:02x}")
    print(f"{total} inputs, {failures} mismatches "
          f"(ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
