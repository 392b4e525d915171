#!/usr/bin/env python3
"""Timing peer of tools/bench/codec_bench.cpp: ml_dtypes' numpy `astype` on the same f32 array.

Reads N little-endian f32 values from --input, times `x.astype(float8_*)` (encode) and
`codes.astype(np.float32)` (decode) for e4m3, e5m2, e8m0 (best CPU time of --repeat runs; numpy
casts run on one thread), and prints one line per format: `FORMAT ENCODE_NS DECODE_NS` (ns per element),
after a first line `ml_dtypes VERSION numpy VERSION`.
"""

import argparse
import time

import ml_dtypes
import numpy as np

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
           "e8m0": ml_dtypes.float8_e8m0fnu}


def best_ns(fn, n, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time: numpy casts run on one thread
        fn()
        best = min(best, time.process_time() - t0)
    return best / n * 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    x = np.fromfile(args.input, dtype="<f4")
    print(f"ml_dtypes {ml_dtypes.__version__} numpy {np.__version__}", flush=True)
    with np.errstate(all="ignore"):
        for name, t in FORMATS.items():
            codes = x.astype(t)  # warm-up, and the input of the decode timing
            enc = best_ns(lambda: x.astype(t), len(x), args.repeat)
            dec = best_ns(lambda: codes.astype(np.float32), len(x), args.repeat)
            print(f"{name} {enc:.4f} {dec:.4f}", flush=True)


if __name__ == "__main__":
    main()
