"""`fp8-check quantize ... --out X.pt` writes a torch.save archive (tools/tensor_io/torch_save_writer.h):
the FP4 codes as torch.float4_e2m1fn_x2 (element 0 in the low nibble, last dimension halved), E8M0
scales as float8_e8m0fnu, F32 as float32. Checked against the same quantization written as
.safetensors by two independent readers: Python's own pickle machinery (a restricted Unpickler
whose globals are stand-ins: always), and torch.load (when torch imports; else that part is
reported as not run).
Usage: test_torch_save_writer.py --fp8-check EXE --work DIR"""
import argparse
import collections
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile

import numpy as np


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
    return {k: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]])
            for k, e in h.items() if k != "__metadata__"}


class Rebuilt:
    def __init__(self, storage, offset, size, stride, grad, hooks, dtype):
        self.storage, self.offset, self.size, self.stride, self.dtype = storage, offset, size, stride, dtype


class StandIn(pickle.Unpickler):
    ALLOWED = {("torch._utils", "_rebuild_tensor_v3"), ("torch.storage", "UntypedStorage"),
               ("collections", "OrderedDict")}

    def __init__(self, f, archive, prefix):
        super().__init__(f)
        self.archive, self.prefix = archive, prefix

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v3"):
            return Rebuilt
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch":
            return f"torch.{name}"
        if (module, name) in self.ALLOWED:
            return name
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        tag, kind, key, location, nbytes = pid
        assert (tag, kind, location) == ("storage", "UntypedStorage", "cpu"), pid
        data = self.archive.read(f"{self.prefix}/data/{key}")
        assert len(data) == nbytes, (len(data), nbytes)
        return data


TORCH_NAME = {"F4": "torch.float4_e2m1fn_x2", "F8_E8M0": "torch.float8_e8m0fnu", "U8": "torch.uint8",
              "F32": "torch.float32", "F8_E4M3": "torch.float8_e4m3fn"}


def check_pickle(pt, st):
    z = zipfile.ZipFile(pt)
    prefix = z.namelist()[0].split("/")[0]
    assert z.read(f"{prefix}/version") == b"3\n" and z.read(f"{prefix}/byteorder") == b"little"
    with z.open(f"{prefix}/data.pkl") as f:
        obj = StandIn(f, z, prefix).load()
    assert list(obj) == list(st), (list(obj), list(st))
    for name, (dtype, shape, raw) in st.items():
        t = obj[name]
        size = list(shape[:-1]) + [shape[-1] // 2] if dtype == "F4" else list(shape)
        stride = [int(np.prod(size[i + 1:])) for i in range(len(size))]
        assert t.dtype == TORCH_NAME[dtype], (name, t.dtype)
        assert list(t.size) == size and list(t.stride) == stride and t.offset == 0, name
        assert t.storage == raw, f"{name}: storage bytes differ"
    return len(st)


def check_torch(pt, st):
    try:
        import torch
    except ImportError:
        return None
    obj = torch.load(pt, weights_only=True)
    for name, (dtype, shape, raw) in st.items():
        t = obj[name]
        assert str(t.dtype) == TORCH_NAME[dtype], (name, t.dtype)
        size = list(shape[:-1]) + [shape[-1] // 2] if dtype == "F4" else list(shape)
        assert list(t.shape) == size, (name, t.shape)
        assert t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() == raw, f"{name}: bytes differ"
    return torch.__version__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--work", required=True)
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    rng = np.random.default_rng(7)
    inp = os.path.join(o.work, "x.safetensors")
    cases = [("mxfp4", "1x32", "e8m0_row_major", (48, 96)), ("mxfp4_rceil", "1x32", "e8m0_blocked_128x4", (3, 16, 64)),
             ("nvfp4_te", "1x16", "ue4m3_row_major", (32, 64)), ("mxfp6", "1x32", "e8m0_row_major", (8, 64)),
             ("te", "1x128", "row_major", (4, 256))]
    for recipe, block, layout, shape in cases:
        write_safetensors(inp, "x", (rng.standard_normal(shape) * 3).astype(np.float32))
        outs = [os.path.join(o.work, "q" + ext) for ext in (".pt", ".safetensors")]
        for out in outs:
            cmd = [o.fp8_check, "quantize", "--recipe", recipe, "--block", block, "--layout", layout,
                   "--in", inp, "--out", out]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
        st = read_safetensors(outs[1])
        n = check_pickle(outs[0], st)
        tv = check_torch(outs[0], st)
        print(f"{recipe} {layout} {shape}: {n} tensors ({', '.join(d for d, _, _ in st.values())}) equal "
              f"through pickle; torch.load: {'torch ' + tv if tv else 'not run (torch does not import)'}")
    bad = subprocess.run([o.fp8_check, "quantize", "--recipe", "mxfp4", "--block", "1x32", "--layout",
                          "e8m0_row_major", "--in", inp, "--out", os.path.join(o.work, "q.pkl")],
                         capture_output=True, text=True, timeout=60)
    if bad.returncode != 2 or bad.stderr.strip().count("\n"):
        sys.exit(f"unknown extension: exit {bad.returncode}, stderr {bad.stderr!r}")
    print("PASS")


if __name__ == "__main__":
    main()
