#!/usr/bin/env python3
"""`fp8-check layout detect` on scale dumps built here with numpy, independently of
numerics/scale_layout.h: each layout is written from its definition (the consumers' index maps,
torchao's to_blocked reshape/permute for 128x4, DeepGEMM's int32 packing of four UE8M0 codes
along K), on a grid whose rows (6) and columns (3) are not multiples of 4, so the padded layouts
differ from the plain ones. Each dump must be named (exit 0), a corrupted scale located (exit 1),
bad usage refused with one line (exit 2). Exit 0 iff every check holds.
Usage: test_layout_detect.py --fp8-check PATH --workdir DIR
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

G, R, C = 2, 6, 3


def align(x, a):
    return (x + a - 1) // a * a


def to_blocked(m):
    """torchao.prototype.mx_formats.utils.to_blocked on one (rows, cols) grid, in numpy."""
    rows, cols = m.shape
    nrb, ncb = align(rows, 128) // 128, align(cols, 4) // 4
    padded = np.zeros((nrb * 128, ncb * 4), m.dtype)
    padded[:rows, :cols] = m
    blocks = padded.reshape(nrb, 128, ncb, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(-1, 32, 16).flatten()


def dumps(s):
    """Layout name -> the dump of the (G, R, C) f32 scales s in that layout."""
    t = s.transpose(0, 2, 1)
    tma = np.zeros((G, C, align(R, 4)), np.float32)
    tma[:, :, :R] = t
    pad4 = np.ones((G, R, align(C, 4)), np.float32)
    pad4[:, :, :C] = s
    codes = (s.view(np.uint32) >> 23).astype(np.uint8)
    packed = np.zeros((G, align(R, 4), align(C, 4)), np.uint8)
    packed[:, :R, :C] = codes
    kk = align(C, 4) // 4
    words = np.ascontiguousarray(packed.reshape(G, align(R, 4), kk, 4).transpose(0, 2, 1, 3))
    return {"row_major": s.copy(), "col_major": np.ascontiguousarray(t), "tma_mn_major": tma,
            "cublas_k_major_pad4": pad4, "col_major (reciprocals)": np.ascontiguousarray(1 / t),
            "e8m0_blocked_128x4": np.concatenate([to_blocked(codes[g]) for g in range(G)]),
            "deepgemm_packed_ue8m0": words.view("<i4").reshape(G, kk, align(R, 4)),
            "e8m0_row_major": codes}


def run(exe, *args):
    r = subprocess.run([exe, "layout", "detect", *args], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    w = lambda name: os.path.join(a.workdir, name)
    fails, checks = [], 0
    rng = np.random.default_rng(20261125)
    plain = rng.uniform(0.01, 3.0, (G, R, C)).astype(np.float32)  # distinct, not powers of 2
    pow2 = np.float32(2.0) ** -rng.permutation(np.arange(20, 20 + G * R * C)).reshape(G, R, C)
    for tag, s in (("plain", plain), ("pow2", pow2.astype(np.float32))):
        np.save(w(f"{tag}.npy"), s)
        for layout, d in dumps(s).items():
            if tag == "plain" and ("e8m0" in layout or "ue8m0" in layout):
                continue
            path = w(f"{tag}-{layout.split()[0]}{'-inv' if 'recip' in layout else ''}.npy")
            np.save(path, d)
            rc, out, err = run(a.fp8_check, path, "--canonical", w(f"{tag}.npy"), "--json")
            checks += 1
            got = json.loads(out)["matched"] if out else err
            names = [n.split(" (")[0] for m in got for n in m.split(" = ")] if rc == 0 else []
            want = layout.split(" (")[0] in names and ("recip" in str(got)) == ("recip" in layout)
            if rc != 0 or len(got) != 1 or not want:
                fails.append(f"{tag} {layout}: exit {rc}, matched {got}")

    # A corrupted scale: no match, the closest layout and the scale's place.
    d = dumps(plain)["tma_mn_major"]
    d[1, 1, 2] *= 2  # scale (g 1, r 2, c 1)
    np.save(w("corrupt.npy"), d)
    rc, out, _ = run(a.fp8_check, w("corrupt.npy"), "--canonical", w("plain.npy"))
    checks += 1
    if rc != 1 or "closest: tma_mn_major" not in out or "(g 1, r 2, c 1)" not in out:
        fails.append(f"corrupted tma dump: exit {rc}:\n{out}")

    # --like: the grid from the codes' shape and the block; sizes and padding only.
    np.save(w("codes.npy"), np.zeros((G, R, C * 128), np.uint8))
    for layout, want_rc, want in (("cublas_k_major_pad4", 0, "matched: cublas_k_major_pad4"),
                                  ("tma_mn_major", 0, "matched: tma_mn_major"),
                                  ("row_major", 1, "ambiguous")):
        np.save(w("like.npy"), dumps(plain)[layout])
        rc, out, _ = run(a.fp8_check, w("like.npy"), "--like", w("codes.npy"), "--block", "1x128")
        checks += 1
        if rc != want_rc or want not in out:
            fails.append(f"--like {layout}: exit {rc} (want {want_rc}, '{want}'):\n{out}")

    # --source: the canonical scales by quantizing; the dump written by numpy from quantize's
    # own row_major scales of the same source, transposed and padded as tma_mn_major.
    x = rng.standard_normal((10, 384)).astype(np.float32)
    np.save(w("x.npy"), x)
    q = w("q_row.safetensors")
    rc, _, err = (lambda r: (r.returncode, r.stdout, r.stderr))(subprocess.run(
        [a.fp8_check, "quantize", "--in", w("x.npy"), "--recipe", "deepgemm", "--block", "1x128",
         "--layout", "row_major", "--out", q], capture_output=True, text=True, timeout=60))
    rc2, out, _ = run(a.fp8_check, q + ":scales", "--canonical", q + ":scales", "--json")
    rows = json.loads(out)["grid"][1] if rc2 == 0 else 0
    checks += 1
    if rc != 0 or rows != 10:
        fails.append(f"quantize --layout row_major: exit {rc} {err}, grid rows {rows}")
    else:
        with open(q, "rb") as f:  # the scales' bytes, read from the safetensors header
            n = int.from_bytes(f.read(8), "little")
            h = json.loads(f.read(n))
            blob = f.read()
        e = h["scales"]
        s0, s1 = e["data_offsets"]
        sc = np.frombuffer(blob[s0:s1], np.float32).reshape(e["shape"])
        tma = np.zeros((sc.shape[1], align(sc.shape[0], 4)), np.float32)
        tma[:, :sc.shape[0]] = sc.T
        np.save(w("src_tma.npy"), tma)
        rc, out, _ = run(a.fp8_check, w("src_tma.npy"), "--source", w("x.npy"), "--recipe",
                         "deepgemm", "--block", "1x128")
        checks += 1
        if rc != 0 or "matched: tma_mn_major" not in out:
            fails.append(f"--source: exit {rc}:\n{out}")

    # --row-groups: token-grouped E8M0 scales, each group's rows to_blocked on their own (a new
    # 128-row tile per group, an empty group taking none), concatenated.
    ends = [100, 100, 250, 300]
    codes = rng.integers(100, 140, (300, 5)).astype(np.uint8)
    parts, st = [], 0
    for e in ends:
        parts.append(to_blocked(codes[st:e]))
        st = e
    np.save(w("rg_codes.npy"), codes)
    np.save(w("rg_offs.npy"), np.array(ends, np.int64))
    np.save(w("rg_dump.npy"), np.concatenate(parts))
    rc, out, err = run(a.fp8_check, w("rg_dump.npy"), "--canonical", w("rg_codes.npy"),
                       "--row-groups", w("rg_offs.npy"))
    checks += 1
    if rc != 0 or "matched: blocked_128x4_row_groups" not in out:
        fails.append(f"--row-groups: exit {rc}:\n{out}{err}")
    rc, out, err = run(a.fp8_check, w("rg_dump.npy"), "--canonical", w("rg_codes.npy"))
    checks += 1
    if rc != 1:
        fails.append(f"a row-grouped dump matched without --row-groups: exit {rc}:\n{out}{err}")

    # Bad usage: one line, exit 2.
    np.save(w("flat.npy"), plain.reshape(-1))
    for args in ((w("like.npy"),), (w("like.npy"), "--canonical", w("flat.npy")),
                 (w("like.npy"), "--like", w("codes.npy"), "--block", "1by128"),
                 (w("like.npy"), "--like", w("codes.npy")),
                 (w("like.npy"), "--source", w("x.npy"), "--block", "1x128"),
                 (w("like.npy"), "--source", w("x.npy"), "--canonical", w("plain.npy"))):
        rc, _, err = run(a.fp8_check, *args)
        checks += 1
        if rc != 2 or len(err.strip().split("\n")) != 1:
            fails.append(f"{args}: exit {rc} (want 2, one line): {err}")

    for f in fails:
        print("FAIL:", f)
    print(f"{checks - len(fails)}/{checks} checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
