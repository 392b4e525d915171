#!/usr/bin/env python3
"""`fp8-check oracle|verify grouped-gemm --grouping k` (K-grouped, torch `_scaled_grouped_mm`
2d x 2d) against numpy: A (M, K_total), B (N, K_total) `nk` or (K_total, N) `kn`, offs the
cumulative K ends (an empty group and columns past offs[-1] included), rowwise scales (G*M) and
(G*N). Codes are small integers and scales powers of two, so every output of the exact model is
exactly out[g] = sa[g, m] * sb[g, n] * sum_{k in g} a[m, k] b[n, k], computed here in float64;
an empty group is +0. Then verify passes numpy's output, fails it with one element changed, and
refuses bad shapes with one line (exit 2). Exit 0 iff every check holds.
Usage: test_kgrouped_cli.py --fp8-check PATH --workdir DIR
"""

import argparse
import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np

M, N, G = 5, 7, 4
OFFS = [100, 100, 260, 300]  # group 1 empty; columns 300..319 belong to no group
K = 320


def save_safetensors(path, tensors):
    """A safetensors file written from the format's definition (8-byte header length, JSON)."""
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_out(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    e = h["out"]
    s, t = e["data_offsets"]
    return e["shape"], np.frombuffer(data[s:t], np.float32).reshape(e["shape"])


def run(exe, *args):
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    rng = np.random.default_rng(20261125)
    av = rng.integers(-4, 5, (M, K)).astype(np.float32)
    bv = rng.integers(-4, 5, (N, K)).astype(np.float32)
    sa = (2.0 ** rng.integers(-3, 4, G * M)).astype(np.float32)
    sb = (2.0 ** rng.integers(-3, 4, G * N)).astype(np.float32)
    want = np.zeros((G, M, N))
    s = 0
    for g, e in enumerate(OFFS):
        acc = av[:, s:e].astype(np.float64) @ bv[:, s:e].T.astype(np.float64)
        want[g] = acc * sa[g * M:(g + 1) * M, None] * sb[None, g * N:(g + 1) * N]
        s = e
    want = want.astype(np.float32)
    e4 = lambda x: x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    fails, checks = [], 0
    for layout in ("nk", "kn"):
        b = bv if layout == "nk" else bv.T
        path = os.path.join(a.workdir, f"case_{layout}.safetensors")
        save_safetensors(path, {"a": ("F8_E4M3", e4(av)), "b": ("F8_E4M3", e4(b)),
                                "sa": ("F32", sa), "sb": ("F32", sb),
                                "offs": ("I32", np.array(OFFS, np.int32)), "got": ("F32", want)})
        common = ["grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--b-layout", layout,
                  "--grouping", "k", "--offs", "offs", "--scaling", "rowwise", "--scale-a", "sa",
                  "--scale-b", "sb", "--model", "exact"]
        out = os.path.join(a.workdir, f"out_{layout}.safetensors")
        rc, text = run(a.fp8_check, "oracle", *common, "--out", out)
        checks += 1
        if rc != 0:
            fails.append(f"oracle {layout}: exit {rc}: {text}")
        else:
            shape, got = load_out(out)
            bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
            if shape != [G, M, N] or bad.size:
                fails.append(f"oracle {layout}: shape {shape}, {bad.size} elements differ")
        for model in ("exact", "hopper_promoted_rowwise"):  # exact integers: every model agrees
            rc, text = run(a.fp8_check, "verify", *common[:-1], model, "--got", "got")
            checks += 1
            if rc != 0 or "result: PASS" not in text:
                fails.append(f"verify {layout} {model}: exit {rc}: {text}")
        # --device auto: the GPU oracle where a device is present (else the CPU), the same PASS.
        rc, text = run(a.fp8_check, "verify", *common, "--got", "got", "--device", "auto")
        checks += 1
        if rc != 0 or "result: PASS" not in text:
            fails.append(f"verify {layout} --device auto: exit {rc}: {text}")
    wrong = want.copy()
    wrong[2, 1, 3] += 1
    path = os.path.join(a.workdir, "wrong.safetensors")
    save_safetensors(path, {"a": ("F8_E4M3", e4(av)), "b": ("F8_E4M3", e4(bv)),
                            "sa": ("F32", sa), "sb": ("F32", sb),
                            "offs": ("I64", np.array(OFFS, np.int64)), "got": ("F32", wrong),
                            "got2d": ("F32", wrong[0])})
    base = ["verify", "grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--grouping", "k",
            "--offs", "offs", "--scaling", "rowwise", "--scale-a", "sa", "--scale-b", "sb",
            "--model", "exact"]
    rc, text = run(a.fp8_check, *base, "--got", "got")
    checks += 1
    if rc != 1 or "[11, 3] group 2" not in text:  # stacked row g*M + m = 2*5 + 1
        fails.append(f"verify of a changed element: exit {rc}: {text}")
    for bad in (["--got", "got2d"], ["--got", "got", "--b-layout", "kn"],
                ["--got", "got", "--scaling", "blockwise"], ["--got", "got", "--grouping", "x"]):
        rc, text = run(a.fp8_check, *base, *bad)
        checks += 1
        if rc != 2 or len(text.strip().split("\n")) != 1:
            fails.append(f"{bad}: exit {rc} (want 2, one line): {text}")
    for f in fails:
        print("FAIL:", f)
    print(f"{checks - len(fails)}/{checks} checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
