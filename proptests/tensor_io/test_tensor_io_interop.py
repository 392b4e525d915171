#!/usr/bin/env python3
"""Interop test for tools/tensor_io: files written by numpy, ml_dtypes and the
safetensors package are read bitwise by fp8ref (via tensor_io_roundtrip, which rewrites them), and
the files fp8ref writes (.safetensors, .npy, .npz) load back in Python bitwise.
Usage: test_tensor_io_interop.py --roundtrip PATH/tensor_io_roundtrip --workdir DIR"""
import argparse
import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import load_file, save_file

from torch_pickle_writer import write_fake_torch_zip

ST_NAMES = {np.float64: "F64", np.float32: "F32", np.float16: "F16", np.int64: "I64", np.int32: "I32",
            np.int16: "I16", np.int8: "I8", np.uint8: "U8", np.uint16: "U16", np.uint32: "U32",
            np.uint64: "U64", np.bool_: "BOOL", ml_dtypes.bfloat16: "BF16", ml_dtypes.float8_e4m3fn: "F8_E4M3",
            ml_dtypes.float8_e5m2: "F8_E5M2", ml_dtypes.float8_e8m0fnu: "F8_E8M0",
            ml_dtypes.float8_e4m3fnuz: "F8_E4M3FNUZ", ml_dtypes.float8_e5m2fnuz: "F8_E5M2FNUZ",
            ml_dtypes.float4_e2m1fn: "F4", ml_dtypes.float6_e2m3fn: "F6_E2M3",
            ml_dtypes.float6_e3m2fn: "F6_E3M2"}
FLOAT6 = (ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn)
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def read_safetensors_raw(path):
    """Independent minimal safetensors reader: {name: (dtype, shape, bytes)}, metadata."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    return {k: (v["dtype"], tuple(v["shape"]), data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}, meta


def raw_bytes(a):
    """Little-endian C-order bytes as fp8ref stores them (fp4 packed two per byte)."""
    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.float4_e2m1fn:
        codes = a.view(np.uint8).reshape(-1) & 0xF
        if codes.size % 2:
            codes = np.concatenate([codes, np.zeros(1, np.uint8)])
        return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()
    if a.dtype in FLOAT6:  # 6 bits each, one little-endian bit stream: element i at bits [6i, 6i+6)
        codes = a.view(np.uint8).reshape(-1) & 0x3F
        bits = ((codes[:, None] >> np.arange(6)) & 1).reshape(-1)
        bits = np.concatenate([bits, np.zeros(-len(bits) % 8, np.uint8)])
        return np.packbits(bits.reshape(-1, 8), axis=1, bitorder="little").tobytes()
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def roundtrip(exe, src, dst, as_dtype=None):
    cmd = [exe, src, dst] + (["--as", as_dtype] if as_dtype else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} -> {r.returncode}: {r.stderr.strip()}")


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    itemsize = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, n * itemsize, dtype=np.uint8)
    if dtype == ml_dtypes.float4_e2m1fn:
        raw &= 0xF
    if dtype in FLOAT6:
        raw &= 0x3F
    return raw.view(dtype).reshape(shape)


def numpy_cases(exe, wd):
    arrays = {"f64": sample(np.float64, (3, 4), 1), "f32_0d": sample(np.float32, (), 2),
              "f16_empty": sample(np.float16, (0, 5), 3), "i8": sample(np.int8, (7,), 4),
              "u64": sample(np.uint64, (2, 2), 5), "bool": sample(np.bool_, (9,), 6),
              "i32_fortran": np.asfortranarray(sample(np.int32, (3, 5, 2), 7)),
              "f32_bigendian": sample(np.float32, (4, 3), 8).astype(">f4")}
    for name, a in arrays.items():
        src = os.path.join(wd, name + ".npy")
        np.save(src, a)
        for ext in (".safetensors", ".npy"):
            dst = os.path.join(wd, name + ".out" + ext)
            roundtrip(exe, src, dst)
            if ext == ".npy":
                b = np.load(dst)
                ok = b.shape == a.shape and raw_bytes(b) == raw_bytes(a)
            else:
                (dt, shape, data), = read_safetensors_raw(dst)[0].values()
                ok = shape == a.shape and data == raw_bytes(a) and dt == ST_NAMES[a.dtype.type]
            check(f"numpy {name} -> {ext}", ok)


def ml_dtypes_cases(exe, wd):
    ml = [(d, n) for d, n in ST_NAMES.items() if d.__module__.startswith("ml_dtypes")]
    for seed, (dtype, name) in enumerate(ml):
        a = sample(dtype, (5, 3), 100 + seed)
        src = os.path.join(wd, f"ml_{name}.npy")
        np.save(src, a)
        dst = os.path.join(wd, f"ml_{name}.out.safetensors")
        roundtrip(exe, src, dst, name)
        (dt, shape, data), = read_safetensors_raw(dst)[0].values()
        check(f"ml_dtypes {name} npy --as -> safetensors", dt == name and shape == a.shape and data == raw_bytes(a))
        back = os.path.join(wd, f"ml_{name}.out.npy")
        roundtrip(exe, dst, back)
        b = np.load(back).view(dtype)
        check(f"ml_dtypes {name} safetensors -> npy loads with .view()", raw_bytes(b) == raw_bytes(a))


def safetensors_cases(exe, wd):
    tensors = {"w": sample(np.float32, (4, 8), 11), "offs": np.array([3, 3, 8], np.int64),
               "scalar": sample(np.float16, (), 12), "empty": np.zeros((0, 3), np.int32),
               "mask": sample(np.bool_, (5,), 13)}
    src = os.path.join(wd, "st.safetensors")
    save_file(tensors, src, metadata={"producer": "interop", "seed": "11"})
    dst = os.path.join(wd, "st.out.safetensors")
    roundtrip(exe, src, dst)
    back = load_file(dst)
    ok = all(back[k].shape == v.shape and raw_bytes(back[k]) == raw_bytes(v) for k, v in tensors.items())
    check("safetensors -> safetensors (python load_file)", ok and set(back) == set(tensors))
    check("safetensors metadata kept", read_safetensors_raw(dst)[1] == {"producer": "interop", "seed": "11"})
    npz = os.path.join(wd, "st.out.npz")
    roundtrip(exe, src, npz)
    z = np.load(npz)
    check("safetensors -> npz (np.load)", all(raw_bytes(z[k]) == raw_bytes(v) for k, v in tensors.items()))
    comp = os.path.join(wd, "compressed.npz")
    np.savez_compressed(comp, **tensors)
    dst2 = os.path.join(wd, "compressed.out.safetensors")
    roundtrip(exe, comp, dst2)
    back2 = load_file(dst2)
    check("np.savez_compressed (deflated) -> safetensors",
          all(raw_bytes(back2[k]) == raw_bytes(v) for k, v in tensors.items()))


def torch_cases(exe, wd):
    base = sample(np.float32, (4, 6), 21)
    fp8 = sample(ml_dtypes.float8_e4m3fn, (3, 5), 22)
    src = os.path.join(wd, "fake_torch.pt")
    write_fake_torch_zip(src, base, fp8)
    dst = os.path.join(wd, "fake_torch.out.safetensors")
    roundtrip(exe, src, dst)
    got = read_safetensors_raw(dst)[0]
    want = {"model.w": base, "model.w_t": base.T, "model.row2": base[2], "fp8.0": fp8, "fp8.1": fp8[1:, ::2],
            "fp8v3": fp8[:, 1:]}  # offset 1, row stride 5, in an UntypedStorage
    ok = set(got) == set(want) and all(got[k][1] == v.shape and got[k][2] == raw_bytes(v) for k, v in want.items())
    check("torch.save-format zip (pickled by CPython) -> safetensors", ok, str(sorted(got)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--roundtrip", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for group in (numpy_cases, ml_dtypes_cases, safetensors_cases, torch_cases):
        try:
            group(args.roundtrip, args.workdir)
        except Exception as e:  # a crash of one group is a failure, not a skip
            check(group.__name__, False, repr(e))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
