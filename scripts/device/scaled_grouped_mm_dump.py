#!/usr/bin/env python3
"""Dumps one torch._scaled_grouped_mm call (rowwise scales, bf16 out) at a MoE shape as safetensors
for `fp8-check verify grouped-gemm` (docs/gpu_oracle.md §7): a (M, K) and b (G, N, K) e4m3 codes,
scale_a (M) and scale_b (G, N) f32, offs (G) int32, out (M, N) bf16.

  scaled_grouped_mm_dump.py OUT.safetensors [--m 32768] [--experts 8] [--n 2048] [--k 7168]
"""
import argparse
import json
import struct
import time

import torch


def save_safetensors(path, tensors):
    names = {torch.float8_e4m3fn: "F8_E4M3", torch.float32: "F32", torch.bfloat16: "BF16",
             torch.int32: "I32"}
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().cpu().view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--m", type=int, default=32768)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--k", type=int, default=7168)
    o = p.parse_args()
    torch.manual_seed(1)
    dev = "cuda"
    a = (torch.randn(o.m, o.k, device=dev) * 64).clamp(-448, 448).to(torch.float8_e4m3fn)
    b = (torch.randn(o.experts, o.n, o.k, device=dev) * 64).clamp(-448, 448).to(torch.float8_e4m3fn)
    sa = torch.rand(o.m, device=dev) * 2e-3 + 1e-3
    sb = torch.rand(o.experts, o.n, device=dev) * 2e-3 + 1e-3
    # Balanced groups with one empty expert in the middle.
    sizes = [o.m // (o.experts - 1)] * (o.experts - 1)
    sizes[-1] += o.m - sum(sizes)
    sizes.insert(o.experts // 2, 0)
    offs = torch.tensor(sizes, device=dev, dtype=torch.int64).cumsum(0).to(torch.int32)
    t0 = time.time()
    out = torch._scaled_grouped_mm(a, b.transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print(f"_scaled_grouped_mm M={o.m} G={o.experts} N={o.n} K={o.k}: {time.time() - t0:.3f} s (first call)")
    save_safetensors(o.out, {"a": a, "b": b, "scale_a": sa, "scale_b": sb, "offs": offs, "out": out})


if __name__ == "__main__":
    main()
