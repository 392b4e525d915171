#!/usr/bin/env python3
"""Independent numpy + ml_dtypes implementation of the scale recipes (docs/recipes.md,
written from the libraries' published formulas, not from the C++), compared bitwise with fp8ref's
quantize on every recipe, the block geometries its library uses (tensorwise, rowwise, per-channel,
1x128, 128x1, 128x128, 1x32, 32x1) and f32 / bf16 / f16 sources. Every block is classified from
its own data (CLASSES below); the script prints the block count per class for each recipe and
geometry and fails when any recipe or geometry saw no block of some class, so a pass proves what
was covered. Usage: recipes_xcheck.py PATH/TO/fp8ref_recipes_dump (exit 0 = all equal and every
class covered, 1 otherwise)."""
import collections, math, os, subprocess, sys, tempfile
import numpy as np
import ml_dtypes

F32 = np.float32
MAXPOS = {"e4m3": 448.0, "e5m2": 57344.0}
EMAX = {"e4m3": 8, "e5m2": 15}
DT = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
# Largest finite value and smallest normal of each source type (IEEE binary32 / binary16; bfloat16
# is the top half of a binary32).
SRC_MAX = {"f32": float(np.finfo(np.float32).max), "bf16": float(np.uint32(0x7F7F0000).view(F32)),
           "f16": 65504.0}
SRC_MIN_NORMAL = {"f32": 2.0 ** -126, "bf16": 2.0 ** -126, "f16": 2.0 ** -14}
# A block is "tiny" when its amax is normal but below this (DeepGEMM's 1e-4 clamp applies, and for
# f32 / bf16 TE's 448 / amax can overflow).
TINY_BELOW = {"f32": 2.0 ** -100, "bf16": 2.0 ** -100, "f16": 2.0 ** -10}
CLAMPS = (1e-4, 1e-6, 1e-12)  # DeepGEMM amax clamp, the te epsilon used here, torchao EPS
CLASSES = ["ordinary", "zero", "subnormal", "tiny", "pow2", "maxpos_pow2", "threshold",
           "near_max", "nan", "inf"]


def bits(a):
    return np.asarray(a, dtype=F32).view(np.uint32)


def from_bits(b):
    return np.asarray(b, dtype=np.uint32).view(F32)


# ---- source types ------------------------------------------------------------------------------

def decode_source(src, raw):
    """Raw little-endian source patterns -> exact f32 values."""
    if src == "f32":
        return np.frombuffer(raw, dtype=np.uint32).view(F32)
    h = np.frombuffer(raw, dtype=np.uint16)
    if src == "bf16":
        return (h.astype(np.uint32) << 16).view(F32)
    return h.view(np.float16).astype(F32)


def pattern_of(src, v):
    """The source pattern of a non-negative value exactly representable in src."""
    if src == "f32":
        return int(bits(v))
    if src == "bf16":
        return int(bits(v)) >> 16
    return int(np.float16(v).view(np.uint16))


def value_of(src, p):
    if src == "f32":
        return float(from_bits(p))
    if src == "bf16":
        return float(from_bits(p << 16))
    return float(np.uint16(p).view(np.float16))


def nearest(src, c):
    """The source value nearest to the real c (ties to even pattern), by search over patterns."""
    if src == "f32":
        return float(F32(c))
    top = pattern_of(src, SRC_MAX[src])
    vals = np.array([value_of(src, p) for p in range(top + 1)])
    p = int(np.searchsorted(vals, c, side="right")) - 1
    lo, hi = c - vals[p], vals[p + 1] - c
    return float(vals[p] if lo < hi or (lo == hi and p % 2 == 0) else vals[p + 1])


CLAMP_VALUES = {s: {nearest(s, c) for c in CLAMPS} for s in SRC_MAX}


# ---- block classes -----------------------------------------------------------------------------

def significand(v):
    """v = significand * 2^e with significand in [1, 2) (v > 0 finite); 0 otherwise."""
    m, _ = math.frexp(v)
    return 2.0 * m if v > 0 and math.isfinite(v) else 0.0


def classify(blk, src):
    """The class of a block from its data (the amax the recipe sees is not needed for this)."""
    if np.isnan(blk).any():
        return "nan"
    if np.isinf(blk).any():
        return "inf"
    a = float(np.abs(blk).max())
    if a == 0:
        return "zero"
    if a < SRC_MIN_NORMAL[src]:
        return "subnormal"
    sig = significand(a)
    if sig == 1.0:
        return "pow2"
    if sig == 1.75:  # max_pos * 2^k for both e4m3 (1.75 * 2^8) and e5m2 (1.75 * 2^15)
        return "maxpos_pow2"
    p = pattern_of(src, a)
    for q in (p - 1, p, p + 1):  # one source pattern from a threshold, or at MX EVEN's carry
        w = value_of(src, q)
        s = significand(w)
        if (q != p and s in (1.0, 1.75)) or s in (1.875, 1.9375) or w in CLAMP_VALUES[src]:
            return "threshold"
    if a >= SRC_MAX[src] / 2:
        return "near_max"
    if a < TINY_BELOW[src]:
        return "tiny"
    return "ordinary"


# ---- recipes -----------------------------------------------------------------------------------

def torch_div_scalar(a, b, runtime):
    # torch CUDA: tensor / scalar = tensor * f32(1 / scalar); CPU: a true division
    return a * F32(1.0 / b) if runtime == "torch_cuda" else a / F32(b)


def amax(block, runtime):
    a = np.abs(block).ravel()
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
    """Element codes of y (f32 array); x and f are the elements and their factors (same shape)."""
    sat = kind != "deepgemm"
    z = np.clip(y, -MAXPOS[elem], MAXPOS[elem]) if sat else y
    codes = z.astype(DT[elem]).view(np.uint8).copy()
    nan = np.isnan(y)
    if runtime == "torch_cpu":
        # torch 2.11 on x86: a NaN factor gives its NaN, else a NaN x keeps its sign, else an
        # invalid operation gives the negative default NaN.
        sign_f = ((bits(f) >> 24) & 0x80).astype(np.uint8)
        sign_x = ((bits(x) >> 24) & 0x80).astype(np.uint8)
        sign = np.where(np.isnan(f), sign_f, np.where(np.isnan(x), sign_x, np.uint8(0x80)))
        codes[nan] = 0x7F | sign[nan]
    else:
        codes[nan] = 0x7F
    return codes


# ---- one case ----------------------------------------------------------------------------------

def block_extent(geometry, m, k):
    return {"tensorwise": (m, k), "rowwise": (1, k), "per_channel": (m, 1), "1x128": (1, 128),
            "128x1": (128, 1), "128x128": (128, 128), "1x32": (1, 32), "32x1": (32, 1)}[geometry]


def check_case(data, line, counts, report):
    """Checks one manifest case (its bytes start at data[0]); returns (blocks, elements, mismatching
    blocks)."""
    name, kind, elem, runtime, pow2, eps_bits, src, geometry, m, k = line[:10]
    m, k, pow2 = int(m), int(k), pow2 == "1"
    eps = from_bits(int(eps_bits))
    parts, at = [], 0
    for n in map(int, line[10:]):
        parts.append(data[at:at + n])
        at += n
    x = decode_source(src, parts[0]).reshape(m, k)
    q = np.frombuffer(parts[1], dtype=np.uint8)
    s, e8 = np.frombuffer(parts[2], dtype=F32), np.frombuffer(parts[3], dtype=np.uint8)
    br, bc = block_extent(geometry, m, k)
    nbr, nbc = -(-m // br), -(-k // bc)
    mx = kind.startswith("mx_")
    if q.size != m * k or s.size != nbr * nbc or e8.size != (nbr * nbc if mx else 0):
        report(f"{name}: output sizes {q.size}, {s.size}, {e8.size} for ({m}, {k}) {geometry}")
        return nbr * nbc, m * k, nbr * nbc
    label = f"{kind} {elem} {runtime}" + (" pow2" if pow2 else "") + (f" eps={eps:g}" if eps else "")
    fac = np.empty((nbr, nbc), dtype=F32)
    bad_scale = np.zeros((nbr, nbc), dtype=bool)
    divide = False
    for i in range(nbr):
        for c in range(nbc):
            blk = x[i * br:(i + 1) * br, c * bc:(c + 1) * bc]
            cls = classify(blk, src)
            counts[label][cls] += 1
            counts["geometry " + geometry][cls] += 1
            sv, f, divide, e = scale_of(kind, elem, runtime, pow2, eps, src, amax(blk, runtime))
            fac[i, c] = f
            got = s[i * nbc + c]
            ok = (np.isnan(sv) and np.isnan(got)) or bits(sv) == bits(got)
            if e is not None:
                ok &= int(e8[i * nbc + c]) == e
            bad_scale[i, c] = not ok
    f = np.repeat(np.repeat(fac, br, axis=0), bc, axis=1)[:m, :k]
    with np.errstate(all="ignore"):
        y = (x / f) if divide else (x * f)
    want = cast(kind, elem, runtime, y.astype(F32), x, f)
    diff = np.pad(want != q.reshape(m, k), ((0, nbr * br - m), (0, nbc * bc - k)))
    bad = bad_scale | diff.reshape(nbr, br, nbc, bc).any(axis=(1, 3))
    for i, c in zip(*np.nonzero(bad)):
        blk = x[i * br:(i + 1) * br, c * bc:(c + 1) * bc]
        want_s = scale_of(kind, elem, runtime, pow2, eps, src, amax(blk, runtime))[0]
        codes = int(diff[i * br:(i + 1) * br, c * bc:(c + 1) * bc].sum())
        report(f"MISMATCH {name} {label} src={src} {geometry} block ({i}, {c}) class "
               f"{classify(blk, src)}: scale want {float(want_s)!r} got {float(s[i * nbc + c])!r}, "
               f"{codes} codes differ")
    return nbr * nbc, m * k, int(bad.sum())


def main():
    dump = sys.argv[1]
    counts = collections.defaultdict(collections.Counter)
    messages = []
    report = lambda msg: messages.append(msg) if len(messages) < 10 else None
    with tempfile.TemporaryDirectory() as d:
        # One OpenMP thread: the bits do not depend on it (Quantize.ResultIndependentOfThreadCount)
        # and on a busy 2-core machine spinning threads cost seconds for 0.2 s of work.
        subprocess.run([dump, d], check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        cases = [l.split() for l in open(os.path.join(d, "manifest.txt"))]
        data = open(os.path.join(d, "cases.bin"), "rb").read()
    blocks = elems = bad = at = 0
    for line in cases:
        nb, ne, nbad = check_case(memoryview(data)[at:], line, counts, report)
        blocks, elems, bad = blocks + nb, elems + ne, bad + nbad
        at += sum(map(int, line[10:]))
    if at != len(data):
        report(f"cases.bin holds {len(data)} bytes, the manifest names {at}")
        bad += 1
    for msg in messages:
        print(msg)
    width = max(len(label) for label in counts)
    print(f"{'blocks per class':<{width}} " + " ".join(f"{c:>9}" for c in CLASSES))
    uncovered = []
    for label in sorted(counts):
        print(f"{label:<{width}} " + " ".join(f"{counts[label][c]:>9}" for c in CLASSES))
        uncovered += [f"{label}: {c}" for c in CLASSES if counts[label][c] == 0]
    for u in uncovered:
        print(f"NOT COVERED {u}")
    print(f"recipes_xcheck: {len(cases)} cases, {blocks} blocks, {elems} elements, "
          f"{bad} mismatching blocks, {len(uncovered)} uncovered recipe/geometry classes")
    return 1 if bad or uncovered else 0


if __name__ == "__main__":
    sys.exit(main())
