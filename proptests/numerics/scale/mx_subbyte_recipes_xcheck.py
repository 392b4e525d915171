#!/usr/bin/env python3
"""MXFP4 / MXFP6 scale modes (numerics/mx_subbyte_quantize.h) against an independent numpy +
ml_dtypes implementation written from torchao's to_mx (prototype/mx_formats/mx_tensor.py, as
docs/recipes.md "MXFP4 / MXFP6" pins it): element codes and E8M0 block scales, bitwise.

  mx_subbyte_recipes_xcheck.py --dump BUILD/proptests/numerics/scale/fp8ref_mx_subbyte_dump
      [--rows N] [--seed S]

Modes: FLOOR, CEIL, EVEN (torch_cpu, torch_cuda) and RCEIL (torch_cpu, torch_cuda: torchao 0.18
eager, the E8M0 code from ceil(log2(descale)) with log2 computed in f64 and rounded to f32 as
torch's f32 log2 is modelled; cuda_kernel: cvt.rp.satfinite.ue8m0x2 on f32(amax * f32(1/max_pos))).
Elements e2m1, e2m3, e3m2. Blocks of 32 along rows are drawn from classes: ordinary, all zero,
subnormal amax, powers of two, amax one ulp around max_pos·2^k (the modes' rounding edges), ties
of the element cast, huge, one NaN, one +-Inf. Codes of elements whose scaled value is NaN are not compared (FP4 / FP6
have no NaN; ml_dtypes and fp8ref's codec map it differently), nor those a NaN scale makes NaN
(RCEIL multiplies a NaN block by NaN); their block scales are.
Exit 0 iff 0 mismatches, 2 on a setup error.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

F32 = np.float32
ELEM = {"e2m1": (2, 1, 6.0), "e2m3": (2, 3, 7.5), "e3m2": (4, 2, 28.0)}  # emax, mbits, max_pos
MIN_NORMAL = F32(2.0 ** -126)


def bits(x):
    return np.asarray(x, F32).view(np.uint32)


def f32_of(b):
    return np.asarray(b, np.uint32).view(F32)


def cast(y, elem, ml):
    dt = {"e2m1": ml.float4_e2m1fn, "e2m3": ml.float6_e2m3fn, "e3m2": ml.float6_e3m2fn}[elem]
    with np.errstate(invalid="ignore", over="ignore"):
        return y.astype(dt).view(np.uint8) & (0xF if elem == "e2m1" else 0x3F)


def scale_floor_ceil_even(amax, elem, mode):
    """torchao to_mx FLOOR / CEIL / EVEN: the E8M0 code and the f32 divisor."""
    emax, mbits, _ = ELEM[elem]
    m = np.where(amax == 0, MIN_NORMAL, amax)
    b = bits(m).astype(np.int64)
    if mode == "mx_even":
        b = np.where(np.isnan(amax), b, (b + (1 << (23 - mbits - 1))) & 0xFF800000)
    p = ((b >> 23) & 0xFF) - 127
    if mode == "mx_ceil":
        p = p + ((b & 0x7FFFFF) > 0)
    biased = np.clip(p - emax, -127, 128) + 127
    biased = np.where(np.isnan(amax), 255, biased).astype(np.uint32)
    scale = np.maximum(f32_of(biased << 23), MIN_NORMAL)  # NaN code: +Inf
    return biased.astype(np.uint8), scale


def scale_rceil(amax, elem, runtime):
    """RCEIL: the E8M0 code and the f32 factor the elements are multiplied by."""
    max_pos = ELEM[elem][2]
    with np.errstate(all="ignore"):
        if runtime == "cuda_kernel":
            d = (amax * F32(1.0 / max_pos)).astype(F32)
            b = bits(d).astype(np.int64) & 0x7FFFFFFF
            field, man = b >> 23, b & 0x7FFFFF
            e = np.where(field == 0, (man > 0x400000).astype(np.int64), field + (man != 0))
            e = np.where(b == 0x7F800000, 254, np.minimum(e, 254))
            e = np.where(b > 0x7F800000, 255, e)
            factor = np.where(e == 0, F32(1), f32_of(((254 - e) << 23).astype(np.uint32)))
            return e.astype(np.uint8), factor.astype(F32)
        d = amax / F32(max_pos) if runtime == "torch_cpu" else amax * F32(1.0 / max_pos)
        d = d.astype(F32)
        lg = np.log2(d.astype(np.float64)).astype(F32)
        e = np.clip(np.ceil(lg), -127, 127) + 127
        e = np.where(d == 0, 0, e)
        e = np.where(np.isinf(d), 254, e)
        e = np.where(np.isnan(d), 255, e).astype(np.int64)
        exp2 = np.ldexp(1.0, (127 - e).astype(np.int64)).astype(F32)
        factor = np.where(e == 255, d, np.where(e == 254, F32(2.0 ** -127),
                                                np.where(e == 0, F32(1), exp2)))
        return e.astype(np.uint8), factor.astype(F32)


def reference(x, elem, mode, runtime, ml):
    rows, cols = x.shape
    blk = x.reshape(rows, cols // 32, 32)
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(blk), axis=-1).astype(F32)  # NaN propagates
    amax = np.where(np.isnan(blk).any(axis=-1), F32(np.nan), amax)
    max_pos = F32(ELEM[elem][2])
    with np.errstate(all="ignore"):
        if mode == "mx_rceil":
            e, factor = scale_rceil(amax, elem, runtime)
            y = (blk * factor[..., None]).astype(F32)
        else:
            e, scale = scale_floor_ceil_even(amax, elem, mode)
            y = (blk / scale[..., None]).astype(F32)
        y = np.where(np.isnan(y), y, np.clip(y, -max_pos, max_pos))
    return cast(y.reshape(rows, cols), elem, ml), e, ~np.isnan(y.reshape(rows, cols))


def sample(rng, rows, elem):
    max_pos = ELEM[elem][2]
    x = np.zeros((rows, 32), F32)
    for r in range(rows):
        k = int(rng.integers(-130, 120))
        v = (rng.standard_normal(32) * 2.0 ** k).astype(F32)
        cls = rng.integers(0, 10)
        if cls == 1:
            v[:] = 0
        elif cls == 2:
            v = (rng.standard_normal(32) * 2.0 ** -140).astype(F32)
        elif cls == 3:
            v = (np.sign(rng.standard_normal(32)) * 2.0 ** rng.integers(-20, 20, 32)).astype(F32)
        elif cls == 4:  # amax at max_pos·2^k and one ulp either side
            top = F32(max_pos * 2.0 ** int(rng.integers(-100, 100)))
            v = (rng.random(32) * top).astype(F32)
            v[rng.integers(0, 32)] = f32_of(bits(top) + np.uint32(rng.integers(-1, 2)))
        elif cls == 5:  # element ties: grid values plus half steps
            v = (rng.integers(-60, 61, 32) * 0.25 * 2.0 ** int(rng.integers(-10, 10))).astype(F32)
        elif cls == 6:
            v = (rng.standard_normal(32) * 2.0 ** 125).astype(F32)
        elif cls == 7:
            v[rng.integers(0, 32)] = np.nan
        elif cls == 8:
            v[rng.integers(0, 32)] = np.inf if rng.random() < 0.5 else -np.inf
        x[r] = v
    return x.reshape(-1, 128)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--rows", type=int, default=2000, help="32-element blocks per configuration")
    ap.add_argument("--seed", type=int, default=20261125)
    a = ap.parse_args()
    try:
        import ml_dtypes as ml
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    configs = [(el, mode, rt) for el in ELEM for mode in ("mx_floor", "mx_ceil", "mx_even")
               for rt in ("torch_cpu", "torch_cuda")]
    configs += [(el, "mx_rceil", rt) for el in ELEM for rt in ("torch_cpu", "torch_cuda", "cuda_kernel")]
    bad_total, elements = 0, 0
    with tempfile.TemporaryDirectory(prefix="fp8ref_mxsub_") as wd:
        for el, mode, rt in configs:
            x = sample(rng, a.rows, el)
            inp, out = os.path.join(wd, "x.bin"), os.path.join(wd, "q.bin")
            x.astype("<f4").tofile(inp)
            r = subprocess.run([a.dump, el, mode, rt, str(x.shape[0]), str(x.shape[1]), inp, out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"error: {el} {mode} {rt}: {r.stderr.strip()}", file=sys.stderr)
                return 2
            got = np.fromfile(out, np.uint8)
            got_codes, got_scales = got[:x.size].reshape(x.shape), got[x.size:].reshape(x.shape[0], -1)
            ref_codes, ref_scales, keep = reference(x, el, mode, rt, ml)
            bad = int(((got_codes != ref_codes) & keep).sum()) + int((got_scales != ref_scales).sum())
            print(f"{el} {mode:<9} {rt:<12} {x.size:>7} elements, {ref_scales.size:>5} scales, "
                  f"{bad} mismatches")
            if bad:
                i = np.argwhere((got_scales != ref_scales))[:3].tolist()
                j = np.argwhere((got_codes != ref_codes) & keep)[:3].tolist()
                print(f"   scales at {i}, codes at {j}: x {[float(x[tuple(q)]) for q in j]}, "
                      f"got {[int(got_codes[tuple(q)]) for q in j]}, want {[int(ref_codes[tuple(q)]) for q in j]}")
            bad_total += bad
            elements += x.size
    print(f"{len(configs)} configurations, {elements} elements;", "PASS" if bad_total == 0 else
          f"FAIL ({bad_total} mismatches)")
    return 0 if bad_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
