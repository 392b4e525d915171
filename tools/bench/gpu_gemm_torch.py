#!/usr/bin/env python3
"""torch peers of fp8ref_gpu_gemm_bench, timed in the same device session on the same MoE shape
(M = 32768, E = 8, N = 2048, K = 7168, each expert load of the bench's CSV, argument 1): FP8
rowwise torch._scaled_grouped_mm (forward, and dgrad on the (M, N) x (E, N, K) problem), the dense
cuBLASLt blockwise 1x128 x 128x128 torch._scaled_mm of the whole 32768x2048x7168 product, bf16
torch._grouped_mm (and its K-grouped form for wgrad) and a per-expert loop of rowwise
torch._scaled_mm. Prints each fp8ref kernel's
TFLOP/s and its ratios to them (docs/benchmarks.md)."""
import csv
import sys

import torch

M, E, N, K = 32768, 8, 2048, 7168
FLOP = 2.0 * M * N * K


def time_ms(fn):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(10):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 10


def tflops(fn):
    return FLOP / (time_ms(fn) * 1e-3) / 1e12


def fp8(rows, cols, *lead):
    return (torch.randn(*lead, rows, cols, device="cuda") * 0.5).to(torch.float8_e4m3fn)


def peers(offs_list, wgrad_offs):
    """TFLOP/s of each torch peer; grouped ones per expert load (offs as a tuple)."""
    bf = torch.bfloat16
    a, b_nk = fp8(M, K), fp8(N, K, E)
    dy, w_kn = fp8(M, N), fp8(K, N, E)
    sa, sb = torch.rand(M, device="cuda") + 0.5, torch.rand(E, N, device="cuda") + 0.5
    sw = torch.rand(E, K, device="cuda") + 0.5
    out = {}
    # dense blockwise: scale_a (M, K/128) column-major, scale_b (N/128, K/128) transposed
    bsa = (torch.rand(M, K // 128, device="cuda") + 0.5).t().contiguous().t()
    bsb = (torch.rand(N // 128, K // 128, device="cuda") + 0.5).t()
    out["dense blockwise _scaled_mm"] = tflops(
        lambda: torch._scaled_mm(a, b_nk[0].t(), scale_a=bsa, scale_b=bsb, out_dtype=bf))
    a16, b16 = a.to(bf), b_nk.to(bf)
    dyt16 = torch.randn(N, M, device="cuda", dtype=bf)
    xt16 = torch.randn(K, M, device="cuda", dtype=bf)
    for offs in wgrad_offs:  # K-grouped (2d x 2d): dW[g] = dY_g^T X_g, offs along M (16-aligned)
        o = torch.tensor(offs, dtype=torch.int32, device="cuda")
        out[("bf16 _grouped_mm wgrad", offs)] = tflops(
            lambda: torch._grouped_mm(dyt16, xt16.t(), offs=o, out_dtype=bf))
    for offs in offs_list:
        o = torch.tensor(offs, dtype=torch.int32, device="cuda")
        out[("_scaled_grouped_mm rowwise", offs)] = tflops(
            lambda: torch._scaled_grouped_mm(a, b_nk.transpose(-2, -1), sa, sb, offs=o, out_dtype=bf))
        out[("_scaled_grouped_mm rowwise dgrad", offs)] = tflops(
            lambda: torch._scaled_grouped_mm(dy, w_kn.transpose(-2, -1), sa, sw, offs=o, out_dtype=bf))
        out[("bf16 _grouped_mm", offs)] = tflops(
            lambda: torch._grouped_mm(a16, b16.transpose(-2, -1), offs=o, out_dtype=bf))
        bounds = [0] + list(offs)
        # per-expert scale slices in their own allocations: cuBLASLt needs 16-byte aligned scales
        sa_g = [sa[bounds[g]:bounds[g + 1]].reshape(-1, 1).clone() for g in range(E)]
        sb_g = [sb[g].reshape(1, N).clone() for g in range(E)]

        def loop():
            for g in range(E):
                s, e = bounds[g], bounds[g + 1]
                if e > s:
                    torch._scaled_mm(a[s:e], b_nk[g].t(), scale_a=sa_g[g], scale_b=sb_g[g],
                                     out_dtype=bf)
        try:
            out[("per-expert _scaled_mm loop", offs)] = tflops(loop)
        except RuntimeError as e:  # cuBLASLt refuses some expert sizes: report, keep the rest
            print(f"per-expert _scaled_mm loop on {offs}: {str(e).splitlines()[0]}")
            out[("per-expert _scaled_mm loop", offs)] = float("nan")
    return out


def main():
    with open(sys.argv[1]) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["offs"] = tuple(int(x) for x in r["offs"].split())
    p = peers(sorted({r["offs"] for r in rows if r["op"] != "wgrad"}),
              sorted({r["offs"] for r in rows if r["op"] == "wgrad"}))
    fwd = {r["load"]: float(r["tflops"]) for r in rows
           if r["op"] == "forward" and r["scaling"] == "blockwise"}
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"dense blockwise _scaled_mm {M}x{N}x{K}: {p['dense blockwise _scaled_mm']:.1f} TFLOP/s")
    print(f"{'fp8ref kernel':24} {'load':10} {'TF/s':>7}  peer TF/s (fp8ref / peer)")
    for r in rows:
        offs, tf = r["offs"], float(r["tflops"])
        name = f"{r['op']} {r['scaling']}"
        if r["op"] == "dgrad":
            cmp = ["_scaled_grouped_mm rowwise dgrad"]
        elif r["op"] == "wgrad":
            cmp = ["bf16 _grouped_mm wgrad"]
        else:
            cmp = ["_scaled_grouped_mm rowwise", "bf16 _grouped_mm", "per-expert _scaled_mm loop"]
        parts = [f"{c}: {p[(c, offs)]:.0f} ({tf / p[(c, offs)]:.2f}x)" for c in cmp]
        if r["op"] == "forward" and r["scaling"].startswith("blockwise"):
            d = p["dense blockwise _scaled_mm"]
            parts.append(f"dense blockwise _scaled_mm: {d:.0f} ({tf / d:.2f}x)")
        if r["op"] == "wgrad" and r["load"] in fwd:
            # three decimals: the target ratio is 0.75
            parts.append(f"fp8ref forward blockwise: {fwd[r['load']]:.0f} ({tf / fwd[r['load']]:.3f}x)")
        print(f"{name:24} {r['load']:10} {tf:7.1f}  " + "; ".join(parts))


if __name__ == "__main__":
    main()
