"""`fp8-check quantize --recipe nvfp4_te|nvfp4_torchao[_rcp|_0.16|_0.18]|mxfp4|mxfp6` (mxfp6 codes as U8 and, with
--f6-codes packed, as F6_E2M3 / F6_E3M2) bitwise against independent
numpy implementations (docs/recipes.md "NVFP4", "MXFP4 / MXFP6"): f32 arithmetic in numpy
float32, element and scale casts by ml_dtypes 0.6 (float4_e2m1fn, float6_e2m3fn, float6_e3m2fn,
float8_e4m3fn), FP4 unpacked here from the low nibble first. Inputs: normal values with per-row
magnitudes over 2^-40 .. 2^40, zero blocks, outliers; 2-D and (G, N, K) 3-D.
Usage: test_quantize_subbyte.py --fp8-check EXE --work DIR"""
import argparse
import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics", "scale"))
import mx_subbyte_recipes_xcheck as mx_modes  # noqa: E402  (the scale modes' numpy oracle)

f32 = np.float32
FLT_MAX = f32(np.finfo(np.float32).max)


def write_safetensors(path, name, x):
    raw = x.astype(np.float32).tobytes()
    h = json.dumps({name: {"dtype": "F32", "shape": list(x.shape), "data_offsets": [0, len(raw)]}})
    h = h.encode() + b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + raw)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, e in h.items():
        if k == "__metadata__":
            continue
        a, b = e["data_offsets"]
        raw = np.frombuffer(data[a:b], dtype=np.uint8)
        if e["dtype"] == "F4":
            nib = np.stack([raw & 0xF, raw >> 4], axis=-1).reshape(-1)
            out[k] = nib[: int(np.prod(e["shape"]))].reshape(e["shape"])
        elif e["dtype"] in ("F6_E2M3", "F6_E3M2"):  # LSB-first 6-bit stream
            n = int(np.prod(e["shape"]))
            bits = np.unpackbits(raw, bitorder="little")[: 6 * n].reshape(n, 6)
            out[k] = (bits << np.arange(6)).sum(axis=1).astype(np.uint8).reshape(e["shape"])
            out[k + ".dtype"] = e["dtype"]
        elif e["dtype"] == "F32":
            out[k] = raw.view(np.float32).reshape(e["shape"])
        else:
            out[k] = raw.reshape(e["shape"])
    return out


def cast(x, dt, mask):
    return np.asarray(x, dtype=np.float32).astype(dt).view(np.uint8) & mask


def e2m1(y):
    return cast(np.clip(y, f32(-6), f32(6)), ml_dtypes.float4_e2m1fn, 0xF)


def e4m3_val(code):
    return code.view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def div_scalar(rt, a, b):
    return a / f32(b) if rt == "torch_cpu" else a * f32(1.0 / b)


def nvfp4_te(x, block_rows):
    amax = np.max(np.abs(x))
    with np.errstate(divide="ignore", over="ignore"):
        g = np.minimum(f32(2688) / amax, FLT_MAX)
    if amax == 0 or g == 0:
        g = f32(1)
    R, C = x.shape
    nb = -(-C // 16)
    codes = np.zeros((R, C), np.uint8)
    scales = np.zeros((R, nb), np.uint8)
    sdec = f32(1) / g
    for r0 in range(0, R, block_rows):
        for b in range(nb):
            blk = x[r0:r0 + block_rows, 16 * b:16 * b + 16]
            bam = np.max(np.abs(blk))
            code = cast(np.minimum(bam * (g * f32(1.0 / 6.0)), f32(448)), ml_dtypes.float8_e4m3fn, 0xFF)
            with np.errstate(divide="ignore", over="ignore"):
                factor = np.minimum(f32(1) / (e4m3_val(code) * sdec), FLT_MAX)
            with np.errstate(over="ignore", invalid="ignore"):
                codes[r0:r0 + block_rows, 16 * b:16 * b + 16] = e2m1(blk * factor)
            scales[r0:r0 + block_rows, b] = code
    return codes, scales, sdec


def nvfp4_torchao(x, rt, rcp=False):
    pts = div_scalar(rt, np.max(np.abs(x)), 2688.0)
    R, C = x.shape
    nb = -(-C // 16)
    codes = np.zeros((R, C), np.uint8)
    scales = np.zeros((R, nb), np.uint8)
    for r in range(R):
        for b in range(nb):
            blk = x[r, 16 * b:16 * b + 16]
            s = div_scalar(rt, np.max(np.abs(blk)), 6.0)
            code = cast(np.clip(s / pts, f32(2.0 ** -6), f32(448)), ml_dtypes.float8_e4m3fn, 0xFF)
            if rcp:  # nvfp4_torchao_rcp (torchao 0.18.0): x · ((1 / pts) / s)
                codes[r, 16 * b:16 * b + 16] = e2m1(blk * ((f32(1.0) / pts) / e4m3_val(code)))
            else:
                codes[r, 16 * b:16 * b + 16] = e2m1(blk / (pts * e4m3_val(code)))
            scales[r, b] = code
    return codes, scales, pts


MX = {"e2m1": (ml_dtypes.float4_e2m1fn, 0xF, 2, 6.0), "e2m3": (ml_dtypes.float6_e2m3fn, 0x3F, 2, 7.5),
      "e3m2": (ml_dtypes.float6_e3m2fn, 0x3F, 4, 28.0)}


def mx_floor(x, fmt):
    dt, mask, emax, mx = MX[fmt]
    R, C = x.shape
    nb = -(-C // 32)
    codes = np.zeros((R, C), np.uint8)
    scales = np.zeros((R, nb), np.uint8)
    for r in range(R):
        for b in range(nb):
            blk = x[r, 32 * b:32 * b + 32]
            m = np.max(np.abs(blk))
            if m == 0:
                m = f32(2.0 ** -126)
            p = int((np.array(m, np.float32).view(np.uint32) >> 23) & 0xFF) - 127
            biased = min(max(p - emax, -127), 128) + 127
            scale = max(np.array(biased << 23, np.uint32).view(np.float32), f32(2.0 ** -126))
            codes[r, 32 * b:32 * b + 32] = cast(np.clip(blk / scale, f32(-mx), f32(mx)), dt, mask)
            scales[r, b] = biased
    return codes, scales, None


def sample(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    rows = x.reshape(-1, shape[-1])
    rows *= (2.0 ** rng.integers(-40, 41, (rows.shape[0], 1))).astype(np.float32)
    rows[rng.random(rows.shape[0]) < 0.1, :16] = 0  # zero blocks
    k = rng.integers(0, rows.size, 4)
    rows.reshape(-1)[k] *= f32(1e3)  # outliers
    return rows.reshape(shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--work", required=True)
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    rng = np.random.default_rng(2026)
    cases = [("nvfp4_te", "1x16", None, None), ("nvfp4_te", "16x16", None, None),
             ("nvfp4_torchao", "1x16", "torch_cpu", None), ("nvfp4_torchao", "1x16", "torch_cuda", None),
             ("nvfp4_torchao_rcp", "1x16", "torch_cpu", None),
             ("nvfp4_torchao_rcp", "1x16", "torch_cuda", None),
             # the versioned names (docs/recipes.md "NVFP4"): 0.16 divides, 0.18 multiplies
             ("nvfp4_torchao_0.16", "1x16", "torch_cpu", None),
             ("nvfp4_torchao_0.18", "1x16", "torch_cuda", None),
             ("mxfp4", "1x32", None, "e2m1"), ("mxfp6", "1x32", None, "e2m3"),
             ("mxfp6", "1x32", None, "e3m2"), ("mxfp4_ceil", "1x32", "torch_cpu", "e2m1"),
             ("mxfp4_even", "1x32", "torch_cuda", "e2m1"), ("mxfp4_rceil", "1x32", "torch_cpu", "e2m1"),
             ("mxfp6_rceil", "1x32", "cuda_kernel", "e3m2"), ("mxfp6_even", "1x32", None, "e2m3")]
    total = {}
    for recipe, block, rt, fmt in cases:
        for shape in [(48, 96), (2, 32, 64), (17, 160), (64, 256), (1, 32), (3, 40, 128)]:
            x = sample(rng, shape)
            inp = os.path.join(o.work, "x.safetensors")
            out = os.path.join(o.work, "q.safetensors")
            write_safetensors(inp, "x", x)
            fam = "ue4m3" if recipe.startswith("nvfp4") else "e8m0"
            cmd = [o.fp8_check, "quantize", "--recipe", recipe, "--block", block, "--layout",
                   f"{fam}_row_major", "--in", inp, "--out", out]
            cmd += ["--runtime", rt] if rt else []
            cmd += ["--format", fmt] if fmt and recipe.startswith("mxfp6") else []
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
            got = read_safetensors(out)
            planes = x.reshape(-1, shape[-2], shape[-1])
            for g, p in enumerate(planes):
                if recipe == "nvfp4_te":
                    want = nvfp4_te(p, 16 if block == "16x16" else 1)
                elif recipe.startswith("nvfp4_torchao"):
                    want = nvfp4_torchao(p, rt, rcp=recipe.endswith(("_rcp", "_0.18")))
                elif recipe in ("mxfp4", "mxfp6"):
                    want = mx_floor(p, fmt)
                else:  # mxfp4_<mode> / mxfp6_<mode>: runtime torch_cuda unless given
                    mode = "mx_" + recipe.split("_", 1)[1]
                    codes, scales, _ = mx_modes.reference(p, fmt, mode, rt or "torch_cuda", ml_dtypes)
                    want = (codes, scales, None)
                gc = got["codes"].reshape(planes.shape)[g]
                gs = got["scales"].reshape(len(planes), shape[-2], -1)[g]
                if not np.array_equal(gc, want[0]):
                    i = np.argwhere(gc != want[0])[0]
                    sys.exit(f"{recipe} {block} {rt} {fmt} {shape}: code at {tuple(i)}: "
                             f"got {gc[tuple(i)]:#x} want {want[0][tuple(i)]:#x} (x = {p[tuple(i)]!r})")
                if not np.array_equal(gs, want[1]):
                    sys.exit(f"{recipe} {block} {rt} {fmt} {shape}: block scales differ")
                if want[2] is not None:
                    gg = got["global_scale"].reshape(-1)[g]
                    if gg.view(np.uint32) != np.float32(want[2]).view(np.uint32):
                        sys.exit(f"{recipe} {shape}: global scale {gg} != {want[2]}")
                key = f"{recipe} {block} {rt or ''} {fmt or ''}".strip()
                total[key] = total.get(key, 0) + p.size
    for k, n in total.items():
        print(f"{k}: {n} elements bitwise equal to numpy")
    # --f6-codes packed: the same codes as F6_E2M3 / F6_E3M2 (6 bits each, LSB first)
    for fmt, dt in (("e2m3", "F6_E2M3"), ("e3m2", "F6_E3M2")):
        for shape in [(48, 96), (2, 32, 64), (5, 160)]:
            x = sample(rng, shape)
            write_safetensors(inp, "x", x)
            cmd = [o.fp8_check, "quantize", "--recipe", "mxfp6", "--block", "1x32", "--layout",
                   "e8m0_row_major", "--format", fmt, "--f6-codes", "packed", "--in", inp, "--out", out]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
            got = read_safetensors(out)
            if got.get("codes.dtype") != dt:
                sys.exit(f"--f6-codes packed {fmt}: codes dtype {got.get('codes.dtype')}, want {dt}")
            planes = x.reshape(-1, shape[-2], shape[-1])
            for g, p in enumerate(planes):
                want = mx_floor(p, fmt)
                if not np.array_equal(got["codes"].reshape(planes.shape)[g], want[0]):
                    sys.exit(f"--f6-codes packed {fmt} {shape}: codes differ")
                if not np.array_equal(got["scales"].reshape(len(planes), shape[-2], -1)[g], want[1]):
                    sys.exit(f"--f6-codes packed {fmt} {shape}: scales differ")
        print(f"mxfp6 {fmt} --f6-codes packed: {dt} codes bitwise equal to numpy")
    # refusals: exit 2, one line
    for bad in [["--recipe", "mxfp4", "--block", "1x32", "--layout", "e8m0_row_major",
                 "--f6-codes", "packed"],
                ["--recipe", "mxfp6", "--block", "1x32", "--layout", "e8m0_row_major",
                 "--f6-codes", "bits"],
                ["--recipe", "deepgemm", "--block", "1x128", "--layout", "row_major",
                 "--f6-codes", "packed"],["--recipe", "mxfp4", "--block", "1x16", "--layout", "e8m0_row_major"],
                ["--recipe", "nvfp4_torchao", "--block", "16x16", "--layout", "ue4m3_row_major"],
                ["--recipe", "nvfp4_torchao_0.17", "--block", "1x16", "--layout", "ue4m3_row_major"],
                ["--recipe", "nvfp4_te", "--block", "1x16", "--layout", "e8m0_row_major"],
                ["--recipe", "mxfp6", "--block", "1x32", "--layout", "e8m0_row_major", "--format", "e5m2"]]:
        r = subprocess.run([o.fp8_check, "quantize", "--in", inp, "--out", out] + bad,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 2 or r.stderr.strip().count("\n"):
            sys.exit(f"{bad}: exit {r.returncode}, stderr {r.stderr!r}")
    print("refusals: exit 2, one line")


if __name__ == "__main__":
    main()
