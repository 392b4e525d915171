"""`fp8-check oracle` -> `verify grouped-gemm` with the Blackwell models (docs/models.md
"Blackwell models"): FP4 operands packed two per byte (element 0 in the low nibble) in a
safetensors file written here by hand, E8M0 (mx per 32, mx16 per 16), ue4m3 (nvfp4, as F8_E4M3) and
F32 tensor scales.
Operands and scales are chosen so that no step truncates (every term within 25 / 35 fraction bits
of the largest, every sum within 24 bits): the oracle's output must then equal the exact sum
computed here in float64 (independent of the models), and `verify` on it must PASS; one element
nudged by one ulp must fail (exit 1); `--model exact` on the same case must give that exact sum
too, and `verify --within-bound` must PASS the model's output; mismatched model / scaling /
operand dtype and an E8M0 0xFF (NaN) scale exit 2.
Usage: test_cli_blackwell_gemm.py --fp8-check EXE --work DIR"""
import argparse
import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np

F4 = ml_dtypes.float4_e2m1fn


def write_safetensors(path, tensors, meta=None):
    """tensors: name -> (dtype string, shape, raw bytes)."""
    header, blobs, at = {}, [], 0
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_f32(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    e = h[name]
    a, b = e["data_offsets"]
    return np.frombuffer(data[a:b], dtype=np.float32).reshape(e["shape"]).copy()


def pack_f4(values):
    """float values (exact e2m1) -> packed bytes, element 2i in the low nibble."""
    codes = np.asarray(values, dtype=np.float32).astype(F4).view(np.uint8).reshape(-1) & 0xF
    if codes.size % 2:
        codes = np.append(codes, 0)
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()


def pack_f6(values, dtype):
    """float values (exact in `dtype`, an ml_dtypes float6) -> the LSB-first 6-bit stream of
    safetensors F6_E2M3 / F6_E3M2 (element i at bits 6i .. 6i+5)."""
    codes = np.asarray(values, dtype=np.float32).astype(dtype).view(np.uint8).reshape(-1) & 0x3F
    bits = np.zeros(codes.size * 6, dtype=np.uint8)
    for j in range(6):
        bits[j::6] = (codes >> j) & 1
    bits = np.append(bits, np.zeros(-bits.size % 8, dtype=np.uint8))
    return np.packbits(bits, bitorder="little").tobytes()


def run(exe, args, want):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=60)
    if r.returncode != want:
        sys.exit(f"exit {r.returncode} (want {want}): {' '.join(args)}\n{r.stdout}\n{r.stderr}")
    if want == 2 and r.stderr.strip().count("\n") != 0:
        sys.exit(f"stderr is not one line: {r.stderr!r}")
    return r


def case(rng, work, exe, model, scaling, fp4, K):
    M, N, G = 5, 3, 2
    offs = np.array([2, 5], dtype=np.int64)
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)
    if fp4 == "f6":  # A e2m3, B e3m2 (kind::f8f6f4): F6 tensors
        v23 = np.arange(0, 16) / 8.0; v32 = np.array([0, 0.0625, 0.125, 0.25, 0.5, 1, 1.5, 2, 3, 4])
        a = rng.choice(v23, (M, K)) * rng.choice([-1, 1], (M, K))
        b = rng.choice(v32, (G, N, K)) * rng.choice([-1, 1], (G, N, K))
        ta = {"a": ("F6_E2M3", a.shape, pack_f6(a, ml_dtypes.float6_e2m3fn)),
              "b": ("F6_E3M2", b.shape, pack_f6(b, ml_dtypes.float6_e3m2fn))}
    elif fp4:
        a = rng.choice(e2m1, (M, K)) * rng.choice([-1, 1], (M, K))
        b = rng.choice(e2m1, (G, N, K)) * rng.choice([-1, 1], (G, N, K))
        ta = {"a": ("F4", a.shape, pack_f4(a)), "b": ("F4", b.shape, pack_f4(b))}
    else:  # small e4m3 integers
        a = rng.integers(-8, 9, (M, K)).astype(np.float64)
        b = rng.integers(-8, 9, (G, N, K)).astype(np.float64)
        enc = lambda x: x.astype(ml_dtypes.float8_e4m3fn).tobytes()
        ta = {"a": ("F8_E4M3", a.shape, enc(a)), "b": ("F8_E4M3", b.shape, enc(b))}
    args = []
    blk = 16 if scaling in ("nvfp4", "mx16") else 32
    nb = -(-K // blk)
    sa = np.ones((M, nb)); sb = np.ones((G, N, nb)); t_a, t_b = 1.0, np.ones(G)
    if scaling in ("mx", "mx16"):
        sa = 2.0 ** rng.integers(-2, 3, (M, nb)); sb = 2.0 ** rng.integers(-2, 3, (G, N, nb))
        if scaling == "mx16":  # outside ue4m3's range: read as ue4m3 they would be refused
            sa *= 2.0 ** 40; sb *= 2.0 ** -30
        e8 = lambda x: (np.log2(x) + 127).astype(np.uint8).tobytes()
        ta["sa"] = ("F8_E8M0", sa.shape, e8(sa)); ta["sb"] = ("F8_E8M0", sb.shape, e8(sb))
        args = ["--scaling", scaling, "--scale-a", "sa", "--scale-b", "sb"]
    elif scaling == "nvfp4":
        q = np.array([0.5, 1.0, 1.5, 2.0])
        sa = rng.choice(q, (M, nb)); sb = rng.choice(q, (G, N, nb))
        e43 = lambda x: x.astype(ml_dtypes.float8_e4m3fn).tobytes()
        ta["sa"] = ("F8_E4M3", sa.shape, e43(sa)); ta["sb"] = ("F8_E4M3", sb.shape, e43(sb))
        t_a, t_b = 0.25, np.array([2.0, 0.5])
        ta["ta"] = ("F32", (), np.float32(t_a).tobytes())
        ta["tb"] = ("F32", (G,), t_b.astype(np.float32).tobytes())
        args = ["--scaling", "nvfp4", "--scale-a", "sa", "--scale-b", "sb",
                "--tensor-scale-a", "ta", "--tensor-scale-b", "tb"]
    ta["offs"] = ("I64", (G,), offs.tobytes())
    path = os.path.join(work, f"{model}_{scaling}_{fp4}.safetensors")
    write_safetensors(path, ta)
    out = os.path.join(work, f"{model}_{scaling}_{fp4}_out.safetensors")
    common = ["--in", path, "--a", "a", "--b", "b", "--offs", "offs", "--model", model] + args
    run(exe, ["oracle", "grouped-gemm"] + common + ["--out", out], 0)
    # expected: the exact sum (no step truncates here), per row's group
    want = np.zeros((M, N))
    for r in range(M):
        g = 0 if r < offs[0] else 1
        for n in range(N):
            ks = np.arange(K)
            want[r, n] = np.sum(a[r] * b[g, n] * sa[r, ks // blk] * sb[g, n, ks // blk]) \
                * t_a * t_b[g]
    got = read_f32(out, "out")
    if not np.array_equal(got.astype(np.float64), want.astype(np.float32).astype(np.float64)):
        sys.exit(f"{model} {scaling}: oracle output {got} != exact {want}")
    run(exe, ["verify", "grouped-gemm"] + common + ["--got", "out", "--got-file", out], 0)
    bad = got.copy()
    bad[1, 1] = np.nextafter(bad[1, 1], np.float32(np.inf))
    nudged = os.path.join(work, f"{model}_{scaling}_bad.safetensors")
    write_safetensors(nudged, {"out": ("F32", bad.shape, bad.astype(np.float32).tobytes())})
    run(exe, ["verify", "grouped-gemm"] + common + ["--got", "out", "--got-file", nudged], 1)
    # `exact` takes the same operands and scales: the exact sum rounded once, and the model's
    # output lies within the model's bound of it
    exact = os.path.join(work, f"{model}_{scaling}_{fp4}_exact.safetensors")
    exact_args = [x if x != model else "exact" for x in common]
    run(exe, ["oracle", "grouped-gemm"] + exact_args + ["--out", exact], 0)
    if not np.array_equal(read_f32(exact, "out"), want.astype(np.float32)):
        sys.exit(f"exact {scaling} {fp4}: oracle output {read_f32(exact, 'out')} != exact {want}")
    run(exe, ["verify", "grouped-gemm"] + common + ["--got", "out", "--got-file", out,
                                                    "--within-bound"], 0)
    return path, common, want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--work", required=True)
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    rng = np.random.default_rng(20)
    exe = o.fp8_check
    for model, scaling, fp4, K in [
        ("blackwell_f8f6f4", "none", False, 70),
        ("rtx_blackwell_f8f6f4", "none", True, 33),
        ("blackwell_mxf8f6f4", "mx", False, 96),
        ("blackwell_f8f6f4", "none", "f6", 64),
        ("rtx_blackwell_mxf8f6f4", "mx", "f6", 45),
        ("rtx_blackwell_mxf8f6f4", "mx", True, 40),
        ("blackwell_mxf4", "mx", True, 128),
        ("rtx_blackwell_mxf4", "mx", True, 70),
        ("rtx_blackwell_mxf4nvf4", "mx", True, 64),
        ("blackwell_mxf4nvf4", "nvfp4", True, 96),
        ("rtx_blackwell_mxf4nvf4", "mx16", True, 80),
        ("blackwell_mxf4nvf4", "mx16", True, 96),
    ]:
        path, common, _ = case(rng, o.work, exe, model, scaling, fp4, K)
        print(f"{model} --scaling {scaling}: oracle == exact, verify PASS, nudge DIFFERS; "
              f"--model exact == exact, verify --within-bound PASS")
    # refusals: one line, exit 2
    bad_model = [x if x != "blackwell_mxf4nvf4" else "blackwell_mxf4" for x in common]
    run(exe, ["oracle", "grouped-gemm"] + bad_model + ["--out", os.path.join(o.work, "x.st")], 2)
    run(exe, ["oracle", "grouped-gemm"] + [x if x != "blackwell_mxf4nvf4" else "hopper_mma_sync"
                                           for x in common] + ["--out", os.path.join(o.work, "x.st")], 2)
    # mx16 is kind::mxf4nvf4 only; its scales are powers of two
    mx16 = case(rng, o.work, exe, "blackwell_mxf4nvf4", "mx16", True, 32)[1]
    run(exe, ["oracle", "grouped-gemm"] + [x if x != "blackwell_mxf4nvf4" else "blackwell_mxf4"
                                           for x in mx16] + ["--out", os.path.join(o.work, "x.st")], 2)
    check_nan_scale(o.work, exe)
    print("refusals: exit 2, one line")


def check_nan_scale(work, exe):
    """An E8M0 0xFF (NaN) scale read by a valid row: exact refuses it as the Blackwell models do;
    FP6 operands under nvfp4 scaling: refused by exact (e2m1 only, as kind::mxf4nvf4)."""
    a = np.full((1, 32), 1.5); b = np.full((1, 1, 32), 3.0)
    path = os.path.join(work, "nan_scale.safetensors")
    write_safetensors(path, {
        "a": ("F4", a.shape, pack_f4(a)), "b": ("F4", b.shape, pack_f4(b)),
        "a6": ("F6_E2M3", a.shape, pack_f6(a, ml_dtypes.float6_e2m3fn)),
        "sa": ("F8_E8M0", (1, 1), bytes([0xFF])), "sb": ("F8_E8M0", (1, 1, 1), bytes([127])),
        "s16": ("F8_E4M3", (1, 2), bytes([0x38, 0x38])),
        "s16b": ("F8_E4M3", (1, 1, 2), bytes([0x38, 0x38]))})
    for model in ("exact", "blackwell_mxf8f6f4", "blackwell_mxf4"):
        run(exe, ["oracle", "grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--model", model,
                  "--scaling", "mx", "--scale-a", "sa", "--scale-b", "sb",
                  "--out", os.path.join(work, "x.st")], 2)
    for model, want in (("exact", 0), ("blackwell_mxf4nvf4", 0)):
        r = run(exe, ["oracle", "grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--model",
                      model, "--scaling", "nvfp4", "--scale-a", "s16", "--scale-b", "s16b",
                      "--out", os.path.join(work, "y.safetensors")], want)
        if read_f32(os.path.join(work, "y.safetensors"), "out")[0, 0] != 144.0:
            sys.exit(f"{model} nvfp4: {read_f32(os.path.join(work, 'y.st'), 'out')} != 144")
    run(exe, ["oracle", "grouped-gemm", "--in", path, "--a", "a6", "--b", "b", "--model", "exact",
              "--scaling", "nvfp4", "--scale-a", "s16", "--scale-b", "s16b",
              "--out", os.path.join(work, "x.st")], 2)


if __name__ == "__main__":
    main()
