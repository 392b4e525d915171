#!/usr/bin/env python3
"""torch eager and torch.compile baselines for fp8ref_gpu_quantize_bench (same shapes and byte
counts, measured in the same device session): the DeepGEMM 1x128 per-token cast and torchao's
MX FLOOR 1x32 cast as torch expressions. With the bench's CSV (argument 1) prints each fp8ref
kernel's ratio to them."""
import csv
import sys

import torch

M, K = 32768, 7168


def per_token_1x128(x):
    xv = x.view(M, K // 128, 128)
    amax = xv.abs().float().amax(dim=2).clamp(1e-4)
    sf = amax / 448.0
    q = (xv * (1.0 / sf.unsqueeze(2))).to(torch.float8_e4m3fn)
    return q.view(M, K), sf


def mx_floor_1x32(x):
    xv = x.view(M, K // 32, 32).float()
    amax = xv.abs().amax(dim=2)
    e = torch.floor(torch.log2(amax.clamp(min=2.0**-126))) - 8
    scale = torch.exp2(e.clamp(-127, 127))
    q = (xv / scale.unsqueeze(2)).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.view(M, K), (e + 127).to(torch.uint8)


def time_ms(fn, x):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(20):
        fn(x)
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 20


def main():
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    ours = {}
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            ours = {r["kernel"]: float(r["gbs"]) for r in csv.DictReader(f)}
    rows = [("1x128 per-token cast", per_token_1x128, M * K * 3 + M * K // 128 * 4,
             ["1x128 te e4m3", "1x128 deepgemm ue8m0"]),
            ("1x32 MX floor cast", mx_floor_1x32, M * K * 3 + M * K // 32,
             ["1x32 mx_rceil (TE)", "1x32 mx_floor"])]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'torch baseline':28} {'eager GB/s':>11} {'compile GB/s':>13}   fp8ref kernel: x eager, x compile")
    for name, fn, nbytes, mine in rows:
        eager = nbytes / time_ms(fn, x) / 1e6
        compiled = nbytes / time_ms(torch.compile(fn), x) / 1e6
        ratios = ", ".join(f"{k}: {ours[k] / eager:.2f}x, {ours[k] / compiled:.2f}x"
                           for k in mine if k in ours)
        print(f"{name:28} {eager:11.1f} {compiled:13.1f}   {ratios}")


if __name__ == "__main__":
    main()
