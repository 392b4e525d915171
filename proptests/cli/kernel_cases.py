"""Shared case builders for the --kernel / --strength / explain CLI tests: safetensors written from
the format's definition, e4m3 codes whose exponent depends on the 128-K block (partial sums of
different blocks differ in magnitude, so split-K and promotion orders change f32 results), general
f32 scales, and `fp8-check oracle` runs with explicit model flags as the planted outputs."""
import json
import struct
import subprocess

import numpy as np


def save_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_tensor_bytes(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    s, t = h[name]["data_offsets"]
    return h[name]["dtype"], h[name]["shape"], data[s:t]


def block_codes(rng, rows, k):
    nb = -(-k // 128)
    base = rng.integers(1, 15, nb)
    e = np.clip(np.repeat(base, 128)[:k][None, :] + rng.integers(-1, 2, (rows, k)), 1, 15)
    c = (rng.integers(0, 2, (rows, k)) << 7) | (e << 3) | rng.integers(0, 8, (rows, k))
    c[(c & 0x7F) == 0x7F] = 0x7E
    return c.astype(np.uint8)


def scales(rng, *shape):
    return rng.uniform(1e-3, 3e-3, shape).astype(np.float32)


def run(exe, *args):
    r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


OPERANDS = ["--a", "a", "--b", "b", "--scale-a", "sa", "--scale-b", "sb"]


def plant(exe, case, out, model, split_k=1, split_blocks=0, epilogue="model", extra=()):
    """The oracle's output under one explicit configuration, written as `got` into `out`."""
    args = ["oracle", "grouped-gemm", "--in", case, *OPERANDS, "--model", model, "--epilogue",
            epilogue, "--out", out, "--out-name", "got", *extra]
    args += ["--split-k-blocks", split_blocks] if split_blocks else ["--split-k", split_k]
    rc, so, se = run(exe, *args)
    if rc != 0:
        raise RuntimeError(f"oracle failed: {so}{se}")


def rewrite_got(path, fn):
    """Applies fn to the f32 `got` tensor of a planted file, in place."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = f.read(n)
        data = bytearray(f.read())
    h = json.loads(head)
    s, t = h["got"]["data_offsets"]
    bits = np.frombuffer(bytes(data[s:t]), np.uint32).reshape(h["got"]["shape"]).copy()
    fn(bits)
    data[s:t] = bits.tobytes()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + head + bytes(data))


def explain(exe, case, got, *args):
    rc, so, se = run(exe, "explain", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got",
                     "--got-file", got, "--json", *args)
    try:
        return rc, json.loads(so), se
    except json.JSONDecodeError:
        return rc, {}, so + se
