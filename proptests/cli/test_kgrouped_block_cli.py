#!/usr/bin/env python3
"""`fp8-check oracle|verify grouped-gemm --grouping k` with blockwise (1x128) and mx (1x32) scales
along K, restarting at each group start, against numpy: A (M, K_total), B (N, K_total) `nk` or
(K_total, N) `kn`, offs the cumulative K ends (an empty group, a partial last block and columns
past offs[-1] included), scale_a (M, R), scale_b (N, R). Codes are small integers and scales
powers of two, so the exact model's output is exactly
out[g, m, n] = sum over the group's blocks j of sa[m, j] sb[n, j] sum_{k in j} a[m, k] b[n, k]
computed here in float64 (and exact in f32); an empty group is +0. Then verify passes numpy's
output under exact and under hopper_promoted_blockwise (small integers: every partial is exact),
fails it with one element changed, and refuses a scale tensor of the wrong shape with one line
(exit 2). Exit 0 iff every check holds.
Usage: test_kgrouped_block_cli.py --fp8-check PATH --workdir DIR
"""
import argparse
import os
import sys

import ml_dtypes
import numpy as np

from kernel_cases import load_tensor_bytes, run, save_safetensors

M, N = 5, 7
OFFS = [300, 300, 450, 520]  # group 1 empty; 300 = 2*128 + 44 (partial block); 520..599 in no group
K = 600


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    o = ap.parse_args()
    os.makedirs(o.workdir, exist_ok=True)
    rng = np.random.default_rng(11)
    fails, checks = [], 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            fails.append(what)

    av = rng.integers(-4, 5, (M, K)).astype(np.float64)
    bv = rng.integers(-4, 5, (N, K)).astype(np.float64)
    e4 = lambda x: x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    for scaling, blk in (("blockwise", 128), ("mx", 32)):
        starts, s = [], 0  # (group, first column, end column) of every block, in scale order
        for g, e in enumerate(OFFS):
            starts += [(g, c, min(c + blk, e)) for c in range(s, e, blk)]
            s = e
        starts += [(-1, c, min(c + blk, K)) for c in range(s, K, blk)]
        R = len(starts)
        sa = 2.0 ** rng.integers(-3, 4, (M, R))
        sb = 2.0 ** rng.integers(-3, 4, (N, R))
        want = np.zeros((len(OFFS), M, N))
        for j, (g, c0, c1) in enumerate(starts):
            if g >= 0:
                want[g] += (av[:, c0:c1] @ bv[:, c0:c1].T) * sa[:, j:j + 1] * sb[None, :, j]
        want = want.astype(np.float32)
        for layout in ("nk", "kn"):
            b = bv if layout == "nk" else bv.T
            path = os.path.join(o.workdir, f"{scaling}_{layout}.safetensors")
            save_safetensors(path, {"a": ("F8_E4M3", e4(av)), "b": ("F8_E4M3", e4(b)),
                                    "sa": ("F32", sa.astype(np.float32)), "sb": ("F32", sb.astype(np.float32)),
                                    "offs": ("I64", np.array(OFFS, np.int64)), "got": ("F32", want),
                                    "sa_bad": ("F32", sa.T.copy().astype(np.float32))})
            base = ["grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--scale-a", "sa", "--scale-b", "sb",
                    "--offs", "offs", "--grouping", "k", "--b-layout", layout, "--scaling", scaling]
            out = os.path.join(o.workdir, f"{scaling}_{layout}_out.safetensors")
            rc, so, se = run(o.fp8_check, "oracle", *base, "--model", "exact", "--out", out)
            ok = rc == 0 and load_tensor_bytes(out, "out") == ("F32", [len(OFFS), M, N], want.tobytes())
            check(ok, f"{scaling} {layout}: oracle exact differs from numpy: {so}{se}")
            for model in ("exact", "hopper_promoted_blockwise"):
                rc, so, se = run(o.fp8_check, "verify", *base, "--model", model, "--got", "got")
                check(rc == 0, f"{scaling} {layout} {model}: verify of numpy's output: exit {rc}\n{so}{se}")
            bad = want.copy()
            bad[2, 1, 3] = np.nextafter(bad[2, 1, 3], np.float32(np.inf))
            bad_path = os.path.join(o.workdir, f"{scaling}_{layout}_bad.safetensors")
            save_safetensors(bad_path, {"got": ("F32", bad)})
            rc, so, se = run(o.fp8_check, "verify", *base, "--model", "exact", "--got", "got",
                             "--got-file", bad_path)
            # Element (2, 1, 3) is row 2*M + 1 = 11 of the stacked (G*M, N) comparison.
            check(rc == 1 and "[11, 3] group 2" in so and "(1 element failing)" in so,
                  f"{scaling} {layout}: a changed element was not found: exit {rc}\n{so}")
            rc, so, se = run(o.fp8_check, "verify", *base[:8], "sa_bad", *base[9:], "--model", "exact",
                             "--got", "got")
            check(rc == 2 and "--scale-a" in se and se.count("\n") == 1,
                  f"{scaling} {layout}: transposed scales not refused: exit {rc} {se}")
    print(f"{checks - len(fails)}/{checks} checks passed")
    for f in fails:
        print("FAIL:", f)
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
