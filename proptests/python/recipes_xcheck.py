#!/usr/bin/env python3
"""Independent numpy + ml_dtypes implementation of the scale recipes (docs/recipes.md, written from
the libraries' published formulas, not from the C++), compared bitwise with fp8ref's quantize.
Usage: recipes_xcheck.py PATH/TO/fp8ref_recipes_dump   (exit 0 = all equal, 1 = mismatch)."""
import subprocess, sys, tempfile, os
import numpy as np
import ml_dtypes

F32 = np.float32
MAXPOS = {"e4m3": 448.0, "e5m2": 57344.0}
EMAX = {"e4m3": 8, "e5m2": 15}
DT = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
SRC_MAX = {"f32": np.finfo(np.float32).max, "bf16": np.uint32(0x7F7F0000).view(F32)}


def bits(a):
    return np.asarray(a, dtype=F32).view(np.uint32)


def from_bits(b):
    return np.asarray(b, dtype=np.uint32).view(F32)


def torch_div_scalar(a, b, runtime):
    # torch CUDA: tensor / scalar = tensor * f32(1 / scalar); CPU: a true division
    return a * F32(1.0 / b) if runtime == "torch_cuda" else a / F32(b)


def amax(block, runtime):
    a = np.abs(block)
    if runtime == "cuda_kernel":
        return F32(np.fmax.reduce(a, initial=F32(0)))
    return F32(np.nan) if np.isnan(a).any() else F32(a.max(initial=F32(0)))


def scale_of(kind, elem, runtime, pow2, eps, src, a):
    """Returns (decode scale s, element factor, divide?, e8m0 code or None)."""
    mp = MAXPOS[elem]
    if kind == "deepgemm":
        a = a if np.isnan(a) else max(a, F32(1e-4))
        sf = torch_div_scalar(F32(a), mp, runtime)
        if pow2:  # ceil_to_ue8m0 on the bits, exponent clamped to [1, 254]
            b = int(bits(sf)) & 0x7FFFFFFF
            e = min(max(((b >> 23) & 0xFF) + int((b & 0x7FFFFF) != 0), 1), 254)
            sf = from_bits(e << 23)
        return F32(sf), F32(F32(1) / sf), False, None
    if kind == "torchao":
        a64 = np.float64(a)
        if not np.isnan(a64):
            a64 = max(a64, 1e-12)
        with np.errstate(divide="ignore"):
            sc = F32((np.float64(1) / a64) * mp)
            if pow2:
                sc = F32(np.exp2(np.floor(np.log2(sc))))
            inv = F32(F32(1) / sc)
        return inv, sc, False, None
    if kind == "te":
        a = eps if a < eps else a
        sc = F32(1)
        if not (np.isinf(a) or a == 0 or np.isnan(a)):
            with np.errstate(over="ignore"):
                sc = F32(mp) / F32(a)
            if np.isinf(sc):
                sc = F32(SRC_MAX[src])
            if pow2:
                sc = from_bits(int(bits(sc)) & 0xFF800000)
        return F32(np.float64(1) / np.float64(sc)), sc, False, None
    if kind == "mx_rceil":
        if runtime == "cuda_kernel":  # TE float_to_e8m0(amax * max_norm_rcp), exp2f_rcp
            v = F32(a) * F32(1.0 / mp)
            b = int(bits(v))
            e, man = b >> 23, b & 0x7FFFFF
            if np.isinf(v):
                e = 0xFE
            elif v != 0 and man > 0 and e != 0xFE and not (e == 0 and man <= 0x400000):
                e += 1
            f = F32(1) if e == 0 else from_bits((254 - e) << 23)
        else:  # torchao 0.18 _to_mx_rceil: max_abs already cast to f32, so descale is an f32
            d = torch_div_scalar(F32(a), mp, runtime)
            with np.errstate(divide="ignore"):
                e = 0xFF if np.isnan(d) else int(np.clip(np.ceil(np.log2(d)), -127, 127)) + 127
            f = d if e == 0xFF else (F32(1) if e == 0 else F32(np.exp2(np.float32(127 - e))))
        return e8m0_value(e), f, False, e
    # torchao to_mx FLOOR / CEIL / EVEN
    b = int(bits(a if a != 0 else from_bits(0x00800000)))
    if kind == "mx_even" and not np.isnan(a):
        b = (b + (1 << (23 - (3 if elem == "e4m3" else 2) - 1))) & 0xFF800000
    p = ((b >> 23) & 0xFF) - 127
    if kind == "mx_ceil":
        p += int((b & 0x7FFFFF) > 0)
    e = 255 if np.isnan(a) else min(max(p - EMAX[elem], -127), 128) + 127
    sc = max(from_bits(e << 23), from_bits(0x00800000))
    return e8m0_value(e), F32(sc), True, e


def e8m0_value(e):
    return F32(np.nan) if e == 255 else F32(np.ldexp(1.0, e - 127))


def cast(kind, elem, runtime, y, x, f):
    sat = kind != "deepgemm"
    z = np.clip(y, -MAXPOS[elem], MAXPOS[elem]) if sat else y
    codes = z.astype(DT[elem]).view(np.uint8).copy()
    nan = np.isnan(y)
    if runtime == "torch_cpu":
        # torch 2.11 on x86: a NaN factor gives its NaN, else a NaN x keeps its sign, else an
        # invalid operation gives the negative default NaN.
        if np.isnan(f):
            sign = np.full(x.shape, (int(bits(f)) >> 24) & 0x80, dtype=np.uint8)
        else:
            sign = np.where(np.isnan(x), (bits(x) >> 24) & 0x80, 0x80).astype(np.uint8)
        codes[nan] = 0x7F | sign[nan]
    else:
        codes[nan] = 0x7F
    return codes


def main():
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([dump, d], check=True)
        cases = [l.split() for l in open(os.path.join(d, "manifest.txt"))]
        bad = checked = elems = 0
        for name, kind, elem, runtime, pow2, eps_bits, src, m, k, bc in cases:
            m, k, bc, pow2 = int(m), int(k), int(bc), pow2 == "1"
            eps = from_bits(int(eps_bits))
            ld = lambda ext, dt: np.fromfile(os.path.join(d, f"{name}.{ext}"), dtype=dt)
            x = ld("x.f32", np.float32).reshape(m, k)
            q, s, e8 = ld("q.u8", np.uint8).reshape(m, -1), ld("s.f32", np.float32), ld("e8.u8", np.uint8)
            nb = (k + bc - 1) // bc
            for i in range(m):
                for c in range(nb):
                    blk = x[i, c * bc:(c + 1) * bc]
                    sv, f, div, e = scale_of(kind, elem, runtime, pow2, eps, src, amax(blk, runtime))
                    with np.errstate(all="ignore"):
                        y = (blk / f) if div else (blk * f)
                    want = cast(kind, elem, runtime, y.astype(F32), blk, F32(f))
                    got_s = s[i * nb + c]
                    ok = np.array_equal(want, q[i, c * bc:(c + 1) * bc])
                    ok &= (np.isnan(sv) and np.isnan(got_s)) or bits(sv) == bits(got_s)
                    if e is not None:
                        ok &= int(e8[i * nb + c]) == e
                    checked += 1
                    elems += blk.size
                    if not ok:
                        bad += 1
                        if bad <= 5:
                            print(f"MISMATCH {name} {kind} {elem} {runtime} pow2={pow2} src={src} row {i} block {c}: "
                                  f"scale want {float(sv)!r} got {float(got_s)!r}")
        print(f"recipes_xcheck: {len(cases)} cases, {checked} blocks, {elems} elements, {bad} mismatching blocks")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
