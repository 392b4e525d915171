#!/usr/bin/env python3
"""NVFP4 recipes (numerics/nvfp4_recipe.h) against an independent numpy + ml_dtypes implementation
written from docs/recipes.md "NVFP4": codes, UE4M3 block scales and the per-tensor scale, bitwise.

  nvfp4_recipes_xcheck.py --dump BUILD/proptests/numerics/scale/fp8ref_nvfp4_dump [--cases N] [--seed S]

Each case is a matrix whose 16-element blocks are drawn from classes: ordinary, all zero, subnormal
amax, tiny, powers of two, e2m1 values times a power of two (exact ties of the element cast),
amax near 448·6·2^k, huge, one +-Inf (nvfp4_te only: torchao's per-tensor scale turns an Inf amax
into NaN everywhere). Recipes: nvfp4_te (cuda_kernel; 1x16 and 16x16 blocks), nvfp4_torchao and
nvfp4_torchao_single_level (torch_cpu, torch_cuda), and nvfp4_torchao under its versioned name
nvfp4_torchao_0.16 (torch_cpu). Exit 0 iff 0 mismatches, 2 on a setup error.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

F32 = np.float32
FLT_MAX = np.finfo(np.float32).max


def e4m3(x, ml):  # RNE to e4m3 of non-negative, non-overflowing f32 values
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(ml.float8_e4m3fn).view(np.uint8)


def e4m3_value(code, ml):
    return code.view(ml.float8_e4m3fn).astype(F32)


def e2m1(x, ml):  # RNE to e2m1, saturating at +-6 (ml_dtypes float4_e2m1fn)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(ml.float4_e2m1fn).view(np.uint8)


def div_scalar(a, b, runtime):  # torch tensor / python scalar
    return a * F32(1.0 / b) if runtime == "torch_cuda" else a / F32(b)


def blocks(x, block_rows):
    rows, cols = x.shape
    return np.abs(x).reshape(rows // block_rows, block_rows, cols // 16, 16)


def ref_te(x, block_rows, ml):
    with np.errstate(all="ignore"):
        amax = F32(np.nanmax(np.abs(x))) if not np.all(np.isnan(x)) else F32(0)
        g = F32(F32(448.0 * 6.0) / amax) if amax != 0 else F32(np.inf)
        g = F32(min(g, FLT_MAX))
        if amax == 0 or g == 0:
            g = F32(1)
        bamax = np.nanmax(blocks(x, block_rows), axis=(1, 3)).astype(F32)  # (R, C)
        s_dec_b = bamax * (g * (F32(1) / F32(6)))
        code = e4m3(np.minimum(s_dec_b, F32(448)), ml)
        factor = np.minimum(F32(1) / (e4m3_value(code, ml) * (F32(1) / g)), FLT_MAX)
        code_rows = np.repeat(code, block_rows, axis=0)
        f = np.repeat(np.repeat(factor, block_rows, axis=0), 16, axis=1)
        return e2m1(x * f, ml), code_rows, F32(1) / g


def ref_torchao(x, runtime, two_level, ml):
    with np.errstate(all="ignore"):
        bamax = np.max(blocks(x, 1), axis=(1, 3)).astype(F32)
        s = div_scalar(bamax, 6.0, runtime)
        if two_level:
            pts = div_scalar(F32(np.max(np.abs(x))), 6.0 * 448.0, runtime)
            code = e4m3(np.clip(s / pts, F32(2**-6), F32(448)), ml)
            total = pts * e4m3_value(code, ml)
        else:
            pts = F32(1)
            code = e4m3(np.clip(s, F32(2**-6), F32(448)), ml)
            total = e4m3_value(code, ml)
        y = np.clip(x / np.repeat(total, 16, axis=1), F32(-6), F32(6))
        return e2m1(y, ml), code, pts


CLASSES = ("ordinary", "zero", "subnormal", "tiny", "pow2", "ties", "near_max", "huge", "inf")


def block_values(rng, cls, n):
    if cls == "zero":
        return np.where(rng.random(n) < 0.5, F32(0), F32(-0.0)).astype(F32)
    if cls == "subnormal":
        return (rng.integers(-(1 << 23) + 1, 1 << 23, n).astype(np.int64) * 2.0**-149).astype(F32)
    sign = np.where(rng.random(n) < 0.5, -1, 1).astype(F32)
    if cls == "tiny":
        return (sign * np.ldexp(rng.random(n) + 1, rng.integers(-125, -100, n))).astype(F32)
    if cls == "pow2":
        return (sign * np.ldexp(F32(1), rng.integers(-20, 20, n))).astype(F32)
    if cls == "ties":  # e2m1 midpoints times one power of two: exact ties of the element cast
        mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 3.0], F32)
        return (sign * rng.choice(mids, n) * F32(2.0 ** int(rng.integers(-4, 5)))).astype(F32)
    if cls == "near_max":
        v = (sign * F32(2688.0) * np.ldexp(F32(1), int(rng.integers(-6, 6)))).astype(F32)
        return (v.view(np.uint32) + rng.integers(-2, 3, n).astype(np.uint32)).view(F32)
    if cls == "huge":
        return (sign * np.ldexp(rng.random(n) + 1, rng.integers(100, 126, n))).astype(F32)
    v = (sign * rng.standard_normal(n).astype(F32) * F32(2.0 ** int(rng.integers(-8, 9)))).astype(F32)
    if cls == "inf":
        v[rng.integers(0, n)] = np.inf if rng.random() < 0.5 else -np.inf
    return v


def make_case(rng, rows, cols, block_rows, allow_inf):
    x = np.empty((rows, cols), F32)
    names = [c for c in CLASSES if allow_inf or c != "inf"]
    w = np.array([4 if c == "ordinary" else 1 for c in names], float)
    counts = {}
    for r0 in range(0, rows, block_rows):
        for c0 in range(0, cols, 16):
            cls = names[rng.choice(len(names), p=w / w.sum())]
            counts[cls] = counts.get(cls, 0) + 1
            x[r0:r0 + block_rows, c0:c0 + 16] = block_values(rng, cls, block_rows * 16).reshape(block_rows, 16)
    return x, counts


def run_dump(exe, wd, recipe, runtime, block_rows, x):
    inp, out = os.path.join(wd, "x.bin"), os.path.join(wd, "q.bin")
    x.astype("<f4").tofile(inp)
    subprocess.run([exe, recipe, runtime, str(block_rows), str(x.shape[0]), str(x.shape[1]), inp, out],
                   check=True)
    raw = np.fromfile(out, np.uint8)
    n, nb = x.size, x.shape[0] * (x.shape[1] // 16)
    return raw[:n].reshape(x.shape), raw[n:n + nb].reshape(x.shape[0], -1), raw[n + nb:].view(F32)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args()
    try:
        import ml_dtypes as ml
    except ImportError as e:
        print(f"error: cannot import ml_dtypes: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    configs = [("nvfp4_te", "cuda_kernel", 1), ("nvfp4_te", "cuda_kernel", 16),
               ("nvfp4_torchao", "torch_cpu", 1), ("nvfp4_torchao", "torch_cuda", 1),
               ("nvfp4_torchao_single_level", "torch_cpu", 1), ("nvfp4_torchao_single_level", "torch_cuda", 1),
               ("nvfp4_torchao_0.16", "torch_cpu", 1)]  # last: nvfp4_torchao's versioned name
    bad = 0
    with tempfile.TemporaryDirectory(prefix="fp8ref_nvfp4_") as wd:
        for recipe, runtime, block_rows in configs:
            seen, elems, blocks_n, mism = {}, 0, 0, 0
            for _ in range(args.cases):
                rows = 16 * int(rng.integers(1, 5))
                cols = 16 * int(rng.integers(1, 9))
                x, counts = make_case(rng, rows, cols, block_rows, recipe == "nvfp4_te")
                two_level = recipe in ("nvfp4_torchao", "nvfp4_torchao_0.16")
                if two_level and not np.any(x != 0):
                    continue  # all-zero tensor: pts = 0, every block 0/0 = NaN (torchao leaves it undefined)
                for k, v in counts.items():
                    seen[k] = seen.get(k, 0) + v
                got = run_dump(args.dump, wd, recipe, runtime, block_rows, x)
                if recipe == "nvfp4_te":
                    ref = ref_te(x, block_rows, ml)
                else:
                    ref = ref_torchao(x, runtime, two_level, ml)
                n = int(np.count_nonzero(ref[0] != got[0]) + np.count_nonzero(ref[1] != got[1]) +
                        (np.float32(ref[2]).view(np.uint32) != np.float32(got[2]).view(np.uint32)))
                if n and mism == 0:
                    i = np.argwhere(ref[1] != got[1])[:3]
                    print(f"  first scale mismatches at {i.tolist()}; element mismatches "
                          f"{int(np.count_nonzero(ref[0] != got[0]))}; global {ref[2]} vs {got[2]}")
                mism += n
                elems += x.size
                blocks_n += ref[1].size
            missing = [c for c in CLASSES if c not in seen and (recipe == "nvfp4_te" or c != "inf")]
            print(f"{recipe:<28}{runtime:<12}{block_rows:>3}x16: {elems} elements, {blocks_n} block scales, "
                  f"{mism} mismatches; blocks per class {dict(sorted(seen.items()))}")
            if missing:
                print(f"  classes never drawn: {missing}")
                mism += 1
            bad += mism
    print("RESULT:", "PASS" if bad == 0 else f"FAIL ({bad})")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
