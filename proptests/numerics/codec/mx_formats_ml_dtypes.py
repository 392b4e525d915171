#!/usr/bin/env python3
"""fp8ref's ml_dtypes_0_6 profile for FP4 / FP6 (e2m1, e2m3, e3m2) against the ml_dtypes package.

For one format: decode of every code; every bf16 and f16 pattern; with --f32 every one of the 2^32
f32 patterns; with --f64-samples N class-weighted f64 inputs. fp8ref's side comes from
fp8ref_codec_dump: its EncodeTable for the 16-bit and f32 sweeps (the table equals the generic
codec on every class, proptests/numerics/codec/encode_table_test.cpp, so a 2^32 sweep costs one table
lookup per input here), the generic codec itself for f64. ml_dtypes' side is numpy `astype`.
Exit 0 iff 0 mismatches; 1 on mismatches; 2 on a setup error.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

FORMATS = {"e2m1": ("float4_e2m1fn", 4), "e2m3": ("float6_e2m3fn", 6), "e3m2": ("float6_e3m2fn", 6)}


def dump(exe, workdir, *args):
    subprocess.run([exe, *args], check=True)


def compare(name, ref_z, got_z, inputs, width):
    bad = np.flatnonzero(ref_z != got_z)
    print(f"{name}: {len(ref_z)} inputs, {len(bad)} mismatches")
    for i in bad[:8]:
        print(f"  input 0x{int(inputs[i]):0{width}x}: ml_dtypes 0x{int(ref_z[i]):02x}, "
              f"fp8ref 0x{int(got_z[i]):02x}")
    return len(bad)


def check_decode(exe, wd, fmt, t, bits):
    out = os.path.join(wd, "decode.bin")
    dump(exe, wd, "decode", fmt, out)
    got = np.fromfile(out, dtype="<f8")[: 1 << bits]
    codes = np.arange(1 << bits, dtype=np.uint8)
    ref = codes.view(t).astype(np.float64)
    return compare(f"{fmt} decode", ref.view(np.uint64), got.view(np.uint64), codes, 2)


def check_16bit(exe, wd, fmt, t, source):
    import ml_dtypes

    out = os.path.join(wd, f"table_{source}.bin")
    dump(exe, wd, "table", fmt, "ml_dtypes_0_6", source, out)
    table = np.fromfile(out, dtype=np.uint8)
    x = np.arange(1 << 16, dtype=np.uint16)
    flt = ml_dtypes.bfloat16 if source == "bf16" else np.float16
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x.view(flt).astype(t).view(np.uint8)
    return compare(f"{fmt} from {source}", ref, table[x], x, 4)


def check_f32(exe, wd, fmt, t, chunk=1 << 24):
    """Every f32 x against table[class(x)], class(x) = (x >> 16) * 2 + (x & 0xFFFF != 0). A chunk
    is 2^24 / 2^16 = 256 runs of 2^16 inputs with one top half each: in run r the first input has
    class 2 * top, the others 2 * top + 1, so fp8ref's codes are compared per run, without an
    index array per input (that gather took half the sweep's time)."""
    out = os.path.join(wd, "table_f32.bin")
    dump(exe, wd, "table", fmt, "ml_dtypes_0_6", "f32", out)
    table = np.fromfile(out, dtype=np.uint8)
    runs = chunk >> 16
    base = np.arange(chunk, dtype=np.uint32)
    x = np.empty(chunk, np.uint32)
    bad, shown, t0 = 0, 0, time.perf_counter()
    for lo in range(0, 1 << 32, chunk):
        np.add(base, np.uint32(lo), out=x)
        with np.errstate(invalid="ignore", over="ignore"):
            ref = x.view(np.float32).astype(t).view(np.uint8).reshape(runs, 1 << 16)
        top = 2 * ((lo >> 16) + np.arange(runs))
        differs = np.empty(ref.shape, bool)
        np.not_equal(ref[:, :1], table[top][:, None], out=differs[:, :1])
        np.not_equal(ref[:, 1:], table[top + 1][:, None], out=differs[:, 1:])
        n = int(np.count_nonzero(differs))
        if n and shown < 8:
            got = table[2 * (x >> 16) + (x & 0xFFFF != 0)]
            i = np.flatnonzero(differs)[: 8 - shown]
            for j in i:
                print(f"  input 0x{int(x[j]):08x}: ml_dtypes 0x{int(ref.flat[j]):02x}, "
                      f"fp8ref 0x{int(got[j]):02x}")
            shown += len(i)
        bad += n
    print(f"{fmt} from f32: {1 << 32} inputs, {bad} mismatches ({time.perf_counter() - t0:.1f} s)")
    return bad


def f64_samples(fmt, t, n, rng):
    """Class-weighted f64: codes, midpoints between codes (ties), midpoints +- 1 and +- 2^29 f64 ulps
    (the f32 rounding of a near-tie lands on the tie: ml_dtypes rounds twice), huge, tiny, NaN, Inf,
    and random patterns across the format's range."""
    vals = np.unique(np.abs(np.arange(256, dtype=np.uint8).view(t).astype(np.float64)))
    mids = (vals[:-1] + vals[1:]) / 2
    top = np.array([vals[-1] * 2 - mids[-1]])  # max's tie with the virtual next value
    pool = np.concatenate([vals, mids, top])
    k = rng.integers(0, 8, n)
    x = rng.choice(pool, n).view(np.uint64).copy()
    x[k == 1] += rng.choice(np.array([1, 2**29, 2**29 - 1, 2**29 + 1], np.uint64), (k == 1).sum())
    x[k == 2] -= rng.choice(np.array([1, 2**29, 2**29 - 1, 2**29 + 1], np.uint64), (k == 2).sum())
    e = rng.integers(-12, 8, n)
    rnd = ((e + 1023).astype(np.uint64) << np.uint64(52)) | (rng.integers(0, 1 << 52, n, dtype=np.uint64))
    x[k >= 5] = rnd[k >= 5]
    special = rng.choice(np.array([0x7FF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001,
                                   0x7FEFFFFFFFFFFFFF, 0x0000000000000001, 0x3E80000000000000], np.uint64),
                         n)
    x[k == 3] = special[k == 3]
    x[x == 0] = 0
    x |= rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    x[(x & np.uint64(0x7FFFFFFFFFFFFFFF)) == 0] &= np.uint64(0x8000000000000000)
    return x


def check_f64(exe, wd, fmt, t, n, seed):
    rng = np.random.default_rng(seed)
    x = f64_samples(fmt, t, n, rng)
    inp, out = os.path.join(wd, "f64.bin"), os.path.join(wd, "f64_codes.bin")
    x.astype("<u8").tofile(inp)
    dump(exe, wd, "encode", fmt, "ml_dtypes_0_6", "f64", inp, out)
    got = np.fromfile(out, dtype=np.uint8)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x.view(np.float64).astype(t).view(np.uint8)
    return compare(f"{fmt} from f64 ({n} class-weighted samples, seed {seed})", ref, got, x, 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True, help="the fp8ref_codec_dump program")
    ap.add_argument("--format", required=True, choices=sorted(FORMATS))
    ap.add_argument("--f32", action="store_true", help="also every one of the 2^32 f32 patterns")
    ap.add_argument("--f64-samples", type=int, default=0)
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args()
    try:
        import ml_dtypes
    except ImportError as e:
        print(f"error: cannot import ml_dtypes: {e}", file=sys.stderr)
        return 2
    name, bits = FORMATS[args.format]
    t = getattr(ml_dtypes, name)
    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}: {name}")
    with tempfile.TemporaryDirectory(prefix="fp8ref_mx_") as wd:
        bad = check_decode(args.dump, wd, args.format, t, bits)
        bad += check_16bit(args.dump, wd, args.format, t, "bf16")
        bad += check_16bit(args.dump, wd, args.format, t, "f16")
        if args.f64_samples:
            bad += check_f64(args.dump, wd, args.format, t, args.f64_samples, args.seed)
        if args.f32:
            bad += check_f32(args.dump, wd, args.format, t)
    print("RESULT:", "PASS" if bad == 0 else f"FAIL ({bad} mismatches)")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
