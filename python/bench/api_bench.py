#!/usr/bin/env python3
"""Benchmark of the Python package (docs/python.md "Speed"; a program that prints ratios, not a
test): per-call overhead of encode / decode / diff on one element, and encode of N f32 values
(default 10^8) against the C++ batch path (numerics/encode_table.h, timed inside the module on
the same array) and against ml_dtypes `astype` in the same run. Best wall time of --repeat runs.

    PYTHONPATH=build/python python python/bench/api_bench.py [--n 100000000] [--repeat 3]
"""

import argparse
import time

import ml_dtypes
import numpy as np

import fp8ref
from fp8ref import _core

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def best(fn, repeat):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def per_call_us(fn, calls=20000):
    fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def overhead_table():
    x1 = np.ones(1, np.float32)
    c1 = fp8ref.encode(x1, "e4m3", profile="ocp_sat")
    rows = [("encode(1 f32)", lambda: fp8ref.encode(x1, "e4m3", profile="ocp_sat")),
            ("decode(1 code)", lambda: fp8ref.decode(c1)),
            ("diff(1 f32, bitwise)", lambda: fp8ref.diff(x1, x1)),
            ("_core.encode(1 f32), no Python layer",
             lambda: _core.encode(x1.view(np.uint32), "f32", "e4m3", "ocp_sat", "", 32, None))]
    print("call overhead (mean of 20000 calls; limit 20 us)")
    for name, fn in rows:
        print(f"  {name:40s} {per_call_us(fn):8.2f} us")


def encode_table(n, repeat):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(n, dtype=np.float32) *
         np.exp2(rng.integers(-8, 9, n)).astype(np.float32))
    print(f"\nencode of {n} f32 (best of {repeat}; ns per element)")
    print(f"  {'format':6s} {'C++ batch':>10s} {'fp8ref':>10s} {'ml_dtypes':>10s} "
          f"{'fp8ref/C++':>11s} {'ml_dtypes/fp8ref':>17s}")
    for fmt, dt in FORMATS.items():
        cpp = _core._encode_table_seconds(x, fmt, "ml_dtypes_0_6", repeat)
        py = best(lambda: fp8ref.encode(x, fmt, profile="ml_dtypes_0_6"), repeat)
        ml = best(lambda: x.astype(dt), repeat)
        ns = 1e9 / n
        print(f"  {fmt:6s} {cpp * ns:10.3f} {py * ns:10.3f} {ml * ns:10.3f} "
              f"{py / cpp:10.2f}x {ml / py:16.2f}x")
    same = np.array_equal(fp8ref.encode(x[:10**6], "e4m3", profile="ml_dtypes_0_6")
                          .view(np.uint8), x[:10**6].astype(FORMATS["e4m3"]).view(np.uint8))
    print(f"  (first 10^6 codes bitwise equal to ml_dtypes: {same})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**8)
    ap.add_argument("--repeat", type=int, default=3)
    o = ap.parse_args()
    print(f"fp8ref Python API benchmark: numpy {np.__version__}, ml_dtypes "
          f"{ml_dtypes.__version__}")
    overhead_table()
    encode_table(o.n, o.repeat)


if __name__ == "__main__":
    main()
