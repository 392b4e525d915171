#!/usr/bin/env python3
"""Real torch.save files read by fp8ref's tensor I/O (docs/cli.md: the torch zip subset), on a
machine with torch: every tensor written by torch.save (fp8 dtypes, views with storage offsets and
strides, shared storages, nested dicts/lists/tuples) must come back bitwise through
`tensor_io_roundtrip FILE.pt OUT.safetensors`; the legacy (non-zip) format must be refused with
exit 2 and one line.

  python3 proptests/fidelity/torch_save_interop.py --roundtrip BUILD/proptests/tensor_io/tensor_io_roundtrip
"""
import argparse, json, os, struct, subprocess, sys, tempfile

import torch

SAFE = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
        "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
        "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
        "F8_E8M0": torch.float8_e8m0fnu}


def key(t):
    t = t.contiguous()
    return (str(t.dtype), tuple(t.shape), t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in hdr.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = (str(SAFE[e["dtype"]]), tuple(e["shape"]), data[a:b])
    return out


def cases():
    g = torch.Generator().manual_seed(20261122)
    base = torch.randn(64, 48, generator=g) * 100
    fp8 = base.to(torch.float8_e4m3fn)
    yield "flat", {"w": base, "bf16": base.to(torch.bfloat16), "f16": base.to(torch.float16),
                   "e4m3": fp8, "e5m2": base.to(torch.float8_e5m2),
                   "e8m0": base.abs().clamp_min(1e-3).to(torch.float8_e8m0fnu),
                   "i64": torch.arange(10), "b": base > 0, "scalar": torch.tensor(3.5)}
    yield "views", {"t": base.t(), "slice": base[5:17, 3:40], "e4m3_t": fp8.t(), "e4m3_step": fp8[::3, 1::2],
                    "shared_a": base, "shared_b": base[10:], "empty": base[:0]}
    yield "nested", {"layers": [{"w": base[:8], "s": torch.ones(8)}, (fp8[:4], fp8[4:8])]}
    yield "list_top", [base[:2], fp8[:2]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--roundtrip", required=True)
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as wd:
        for name, obj in cases():
            src, dst = os.path.join(wd, name + ".pt"), os.path.join(wd, name + ".safetensors")
            torch.save(obj, src)
            r = subprocess.run([args.roundtrip, src, dst], capture_output=True, text=True)
            want = []
            def walk(o):
                if isinstance(o, torch.Tensor):
                    want.append(key(o))
                elif isinstance(o, dict):
                    for v in o.values(): walk(v)
                elif isinstance(o, (list, tuple)):
                    for v in o: walk(v)
            walk(obj)
            if r.returncode != 0:
                print(f"FAIL {name}: exit {r.returncode}: {r.stderr.strip()}"); bad += 1; continue
            got = sorted(read_safetensors(dst).values())
            ok = got == sorted(want)
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(want)} tensors from torch.save, {len(got)} read back")
            bad += not ok
        legacy = os.path.join(wd, "legacy.pt")
        torch.save({"w": torch.ones(3)}, legacy, _use_new_zipfile_serialization=False)
        r = subprocess.run([args.roundtrip, legacy, os.path.join(wd, "x.safetensors")], capture_output=True, text=True)
        ok = r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        print(f"{'ok  ' if ok else 'FAIL'} legacy format refused: exit {r.returncode}: {r.stderr.strip()}")
        bad += not ok
    print(f"torch {torch.__version__}: {'PASS' if not bad else f'{bad} FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
