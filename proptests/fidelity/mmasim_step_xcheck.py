#!/usr/bin/env python3
"""fp8ref's single-step tensor-core model `hopper_wgmma_step` (docs/design.md §10,
numerics/models/wgmma_step.h)
against mmasim's Hopper FP8 wgmma model (mmasim 2.1.1: nv_ptx.WGMMA("Hopper",
"m64nNk32.f32.<a>.<b>"), arithmetic MMA_T_FDPA with F=13, rho=RZ-E8M13) on random single k=32 steps
(part 7a of run_fidelity.sh). Bitwise compare; exit 1 on any mismatch, 2 on a setup error.

  mmasim_step_xcheck.py --driver /tmp/step_driver [--cases N] [--seed S] [--emit-golden G]
  mmasim_step_xcheck.py --dry-run ...   numpy transliteration of mmasim's t_fdpa instead of mmasim
                                        (no torch needed: checks the plumbing, and the model against
                                        that transliteration)

Cases: format pairs e4m3xe4m3, e5m2xe5m2, e4m3xe5m2, e5m2xe4m3; operands drawn from weighted classes
(uniform finite codes, subnormal-heavy, zero-heavy, all zero, wide exponent spread, one exponent
field, cancelling pairs, a NaN/Inf code); C from weighted classes (+-0, near the products, f32 subnormal,
large, any finite f32, NaN/Inf). Most cases go through WGMMA.dpa on independent vectors, the rest
through WGMMA(A, B, C) on whole m64nNk32 tiles (each output element is one case). With real mmasim
the numpy transliteration is run too and compared with mmasim, so a disagreement can be located.
"""
import argparse
import hashlib
import json
import os
import struct
import subprocess
import time
import sys
import tempfile
import types

import numpy as np

from fp8_tables import DECODE, FORMAT_ID, finite_codes, special_codes, subnormal_codes

K = 32
PAIRS = (("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3"))
OPERAND_CLASSES = (  # (name, weight)
    ("uniform", 30), ("subnormal", 12), ("zeros", 10), ("spread", 14), ("one_exponent", 12),
    ("cancel", 14), ("special", 2), ("tiny", 4), ("all_zero", 2))
C_CLASSES = (("zero", 15), ("near", 35), ("subnormal", 10), ("large", 10), ("any", 25),
             ("special", 3))


# ---- case generation ---------------------------------------------------------------------------

def _pick(rng, classes, n):
    names = [c[0] for c in classes]
    w = np.array([c[1] for c in classes], dtype=np.float64)
    return np.array(names)[rng.choice(len(names), size=n, p=w / w.sum())]


def _operand(rng, fmt, cls):
    fin = finite_codes(fmt)
    if cls == "uniform":
        return rng.choice(fin, K)
    if cls == "subnormal":
        v = rng.choice(fin, K)
        m = rng.random(K) < 0.6
        v[m] = rng.choice(subnormal_codes(fmt), m.sum())
        return v
    if cls == "zeros":
        v = rng.choice(fin, K)
        m = rng.random(K) < 0.7
        v[m] = rng.choice(np.array([0x00, 0x80], dtype=np.uint8), m.sum())
        return v
    if cls == "spread":  # the largest and smallest exponent fields mixed: most terms are cut
        p = 3 if fmt == "e4m3" else 2
        top = (0x7E >> p) if fmt == "e4m3" else 30
        field = np.where(rng.random(K) < 0.5, rng.integers(max(1, top - 2), top + 1, K),
                         rng.integers(0, 4, K))
        man = rng.integers(0, 1 << p, K)
        v = (field << p | man) | (rng.integers(0, 2, K) << 7)
        v = np.where((v & 0x7F) > (0x7E if fmt == "e4m3" else 0x7B), v - 1, v)
        return v.astype(np.uint8)
    if cls == "one_exponent":
        p = 3 if fmt == "e4m3" else 2
        field = rng.integers(1, (15 if fmt == "e4m3" else 31))
        v = (field << p | rng.integers(0, 1 << p, K)) | (rng.integers(0, 2, K) << 7)
        return np.where((v & 0x7F) == 0x7F, v - 1, v).astype(np.uint8)
    if cls == "cancel":  # x, -x pairs with a few leftovers: the exact sum is small
        v = rng.choice(fin, K)
        v[1::2] = v[0::2] ^ 0x80
        m = rng.random(K) < 0.1
        v[m] = rng.choice(fin, m.sum())
        return v
    if cls == "special":
        v = rng.choice(fin, K)
        v[rng.integers(0, K)] = rng.choice(special_codes(fmt))
        return v
    if cls == "all_zero":  # no product takes part: the step is C alone, truncated
        return rng.choice(np.array([0x00, 0x80], dtype=np.uint8), K)
    if cls == "tiny":  # everything subnormal or zero
        return rng.choice(np.concatenate([subnormal_codes(fmt), [0, 0x80]]).astype(np.uint8), K)
    raise ValueError(cls)


def _f32_bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def _c_value(rng, cls, a_vals, b_vals, cancel_pair):
    if cls == "zero":
        return np.uint32(0x80000000 if rng.random() < 0.5 else 0)
    if cls == "near":  # within a few binades of the products' scale, random mantissa bits
        with np.errstate(invalid="ignore", over="ignore"):
            p = np.abs(a_vals * b_vals)
        p = p[np.isfinite(p) & (p > 0)]
        e = int(np.floor(np.log2(p.max()))) if p.size else 0
        if cancel_pair and p.size and rng.random() < 0.5:  # C cancels most of the dot product
            s = float(np.nansum(a_vals * b_vals))
            return _f32_bits(-np.float32(s) if np.isfinite(s) else np.float32(0))
        e = int(np.clip(e + rng.integers(-16, 8), -125, 127))
        man = rng.integers(0, 1 << 23)
        return np.uint32((rng.integers(0, 2) << 31) | ((e + 127) << 23) | man)
    if cls == "subnormal":
        return np.uint32((rng.integers(0, 2) << 31) | rng.integers(1, 1 << 23))
    if cls == "large":
        e = int(rng.integers(20, 128))
        return np.uint32((rng.integers(0, 2) << 31) | ((e + 127) << 23) | rng.integers(0, 1 << 23))
    if cls == "any":
        while True:
            u = np.uint32(rng.integers(0, 1 << 32))
            if (u & 0x7F800000) != 0x7F800000:
                return u
    if cls == "special":
        return np.uint32(rng.choice([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001]))
    raise ValueError(cls)


def generate(rng, n_cases, tile_fraction):
    """Returns a dict of numpy arrays: fa, fb (ids), a, b (n, 32 uint8), c (uint32), cls labels,
    and `tiles`: list of (pair, rows) where rows index cases that came from one m64nNk32 tile."""
    fa = np.empty(n_cases, np.uint8)
    fb = np.empty(n_cases, np.uint8)
    a = np.empty((n_cases, K), np.uint8)
    b = np.empty((n_cases, K), np.uint8)
    c = np.empty(n_cases, np.uint32)
    labels = np.empty(n_cases, dtype=object)
    tiles = []
    n_tile = int(n_cases * tile_fraction)
    i = 0
    # Whole tiles: A (64, 32), B (32, N), C (64, N); cases (r, n) in row-major order. Tile k has
    # pair PAIRS[k % 4] and N = 8, 64, 256 by turns of four tiles.
    while True:
        k = len(tiles)
        pair, n = PAIRS[k % len(PAIRS)], (8, 64, 256)[(k // 4) % 3]
        if i + 64 * n > n_tile:
            break
        a_rows = [_operand(rng, pair[0], cl) for cl in _pick(rng, OPERAND_CLASSES, 64)]
        b_cols = [_operand(rng, pair[1], cl) for cl in _pick(rng, OPERAND_CLASSES, n)]
        c_cls = _pick(rng, C_CLASSES, 64 * n)
        idx = np.arange(i, i + 64 * n)
        for j, t in enumerate(idx):
            r, col = divmod(j, n)
            a[t], b[t] = a_rows[r], b_cols[col]
            c[t] = _c_value(rng, c_cls[j], DECODE[pair[0]][a[t]], DECODE[pair[1]][b[t]], False)
            labels[t] = f"tile_n{n}/c_{c_cls[j]}"
        fa[idx], fb[idx] = FORMAT_ID[pair[0]], FORMAT_ID[pair[1]]
        tiles.append((pair, n, idx))
        i += 64 * n
    op_cls = _pick(rng, OPERAND_CLASSES, n_cases)
    c_cls = _pick(rng, C_CLASSES, n_cases)
    for t in range(i, n_cases):
        pair = PAIRS[t % len(PAIRS)]
        fa[t], fb[t] = FORMAT_ID[pair[0]], FORMAT_ID[pair[1]]
        a[t] = _operand(rng, pair[0], op_cls[t])
        b_cls = op_cls[t] if rng.random() < 0.5 else _pick(rng, OPERAND_CLASSES, 1)[0]
        b[t] = _operand(rng, pair[1], b_cls if op_cls[t] != "cancel" else "uniform")
        if op_cls[t] == "cancel":  # make the products cancel, not just the a's
            b[t][1::2] = b[t][0::2]
        c[t] = _c_value(rng, c_cls[t], DECODE[pair[0]][a[t]], DECODE[pair[1]][b[t]],
                        op_cls[t] == "cancel")
        labels[t] = f"{op_cls[t]}/c_{c_cls[t]}"
    return {"fa": fa, "fb": fb, "a": a, "b": b, "c": c, "labels": labels, "tiles": tiles}


# ---- numpy transliteration of mmasim's t_fdpa (mmasim/arithmetic/fdpa.py, helper.py) --------------
# For --dry-run, and as a third opinion next to real mmasim. Mirrors frexp_and_normalize,
# truncated_fused_sum and ldexp_and_normalize(rho="RZ-E8M13") step by step, with mmasim's WGMMA
# parameters for FP8 inputs and f32 output: F = 13, e_zero = -133, L_max = 32.
F_BITS, E_ZERO = 13, -133
E_SUBNORMAL = {"e4m3": -6, "e5m2": -14}


def _frexp_and_normalize(x, e_sub):
    s, e = np.frexp(x)
    s, e = s * 2, e.astype(np.int64) - 1
    sub = e < e_sub
    s[sub] = s[sub] * np.ldexp(1.0, e[sub] - e_sub)  # stays in x's dtype, as the torch in-place op
    e[sub] = e_sub
    e[s == 0.0] = e_sub
    return s, e


def numpy_t_fdpa(fa, fb, a_codes, b_codes, c_bits):
    """One step per row: a_codes, b_codes (n, 32) uint8; c_bits (n,) uint32 -> (n,) uint32."""
    with np.errstate(invalid="ignore", over="ignore"):
        a = DECODE[fa][a_codes].astype(np.float32)
        b = DECODE[fb][b_codes].astype(np.float32)
        c = np.asarray(c_bits, dtype=np.uint32).view(np.float32)
        s_a, e_a = _frexp_and_normalize(a, E_SUBNORMAL[fa])
        s_b, e_b = _frexp_and_normalize(b, E_SUBNORMAL[fb])
        s_c, e_c = _frexp_and_normalize(c.copy(), -126)
        s = np.concatenate([s_a * s_b, s_c[:, None]], axis=1)
        e = np.concatenate([e_a + e_b, e_c[:, None]], axis=1)
        e[s == 0.0] = E_ZERO
        e_max = e.max(axis=1)
        t = np.trunc(s.astype(np.float64) * np.ldexp(1.0, e - e_max[:, None] + F_BITS)) * 2.0**-F_BITS
        total = t.sum(axis=1)
        v = total * np.ldexp(1.0, e_max)
        s2, e2 = _frexp_and_normalize(v, -126)
        s2 = np.trunc(s2 * 2.0**13) * 2.0**-13
        res = (s2 * np.ldexp(1.0, e2)).astype(np.float32)
        bits = res.view(np.uint32).copy()
        bits[np.isnan(res)] = 0x7FFFFFFF
        res = bits.view(np.float32) + np.float32(0.0)  # -0.0 to +0.0
    return res.view(np.uint32)


# ---- mmasim ----------------------------------------------------------------------------------------

def load_mmasim(stub_fma):
    import torch  # noqa: F401  (mmasim needs it; a clear ImportError here beats one inside mmasim)
    if stub_fma:
        # mmasim.nv_ptx.sim imports mmasim.arithmetic.fma, which JIT-compiles a C++ f64 FMA at import
        # time (torch.utils.cpp_extension.load, needs ninja and a writable cache) and is used only by
        # f64 MMA. The FP8 wgmma path (fdpa.MMA_T_FDPA) never touches it: replace it by a stub.
        import mmasim.arithmetic as arith
        stub = types.ModuleType("mmasim.arithmetic.fma")

        class MMA_FMA:  # noqa: N801  (mmasim's name)
            def __init__(self, *args, **kwargs):
                raise NotImplementedError("f64 MMA is stubbed out by mmasim_step_xcheck.py")

        stub.MMA_FMA = MMA_FMA
        sys.modules["mmasim.arithmetic.fma"] = stub
        arith.fma = stub
    from mmasim.nv_ptx import WGMMA
    return WGMMA


def mmasim_eval(WGMMA, cases):
    """Evaluates every case with mmasim: tiles through WGMMA(A, B, C), the rest through .dpa."""
    import torch
    tdt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    n_cases = len(cases["c"])
    z = np.zeros(n_cases, np.uint32)
    done = np.zeros(n_cases, bool)
    info = {}
    ids = {v: k for k, v in FORMAT_ID.items()}

    def fp8(codes, fmt):
        return torch.from_numpy(np.ascontiguousarray(codes)).view(tdt[fmt])

    def f32(bits):
        return torch.from_numpy(np.ascontiguousarray(bits, dtype=np.uint32).view(np.float32))

    for (fa, fb), n, idx in cases["tiles"]:
        op = WGMMA("Hopper", f"m64n{n}k32.f32.{fa}.{fb}")
        A = cases["a"][idx].reshape(64, n, K)[:, 0, :]
        B = cases["b"][idx].reshape(64, n, K)[0].T
        C = cases["c"][idx].reshape(64, n)
        D = op(fp8(A, fa), fp8(B, fb), f32(C))
        assert tuple(D.shape) == (64, n) and D.dtype == torch.float32, (D.shape, D.dtype)
        z[idx] = D.contiguous().view(torch.int32).numpy().view(np.uint32).reshape(-1)
        done[idx] = True
    for fa_id, fb_id in sorted({(int(x), int(y)) for x, y in zip(cases["fa"], cases["fb"])}):
        fa, fb = ids[fa_id], ids[fb_id]
        sel = np.flatnonzero(~done & (cases["fa"] == fa_id) & (cases["fb"] == fb_id))
        op = WGMMA("Hopper", f"m64n8k32.f32.{fa}.{fb}")
        ar = op.arithmetic_op
        info[f"{fa}x{fb}"] = (f"{type(ar).__name__}(F={getattr(ar, 'F', '?')}, "
                              f"rho={getattr(ar, 'rho', '?')}, L_max={getattr(ar, 'L_max', '?')}, "
                              f"e_zero={getattr(ar, 'e_zero', '?')})")
        for lo in range(0, len(sel), 20000):
            part = sel[lo:lo + 20000]
            D = op.dpa(fp8(cases["a"][part], fa), fp8(cases["b"][part], fb), f32(cases["c"][part]))
            assert tuple(D.shape) == (len(part),) and D.dtype == torch.float32, (D.shape, D.dtype)
            z[part] = D.contiguous().view(torch.int32).numpy().view(np.uint32)
        done[sel] = True
    assert done.all()
    return z, info


def transliteration_eval(cases):
    z = np.zeros(len(cases["c"]), np.uint32)
    ids = {v: k for k, v in FORMAT_ID.items()}
    for fa_id in (0, 1):
        for fb_id in (0, 1):
            sel = np.flatnonzero((cases["fa"] == fa_id) & (cases["fb"] == fb_id))
            if len(sel):
                z[sel] = numpy_t_fdpa(ids[fa_id], ids[fb_id], cases["a"][sel], cases["b"][sel],
                                      cases["c"][sel])
    return z


# ---- fp8ref's model through the step driver --------------------------------------------------------

def driver_eval(driver, cases, workdir):
    rec = np.concatenate([cases["fa"][:, None], cases["fb"][:, None], cases["a"], cases["b"],
                          cases["c"].astype("<u4").view(np.uint8).reshape(-1, 4)], axis=1)
    assert rec.shape[1] == 70 and rec.dtype == np.uint8
    inp, out = os.path.join(workdir, "step_cases.bin"), os.path.join(workdir, "step_model.bin")
    rec.tofile(inp)
    res = subprocess.run([driver, inp, out], check=True, stderr=subprocess.PIPE, text=True)
    z = np.fromfile(out, dtype="<u4").astype(np.uint32)
    assert len(z) == len(cases["c"]), f"driver wrote {len(z)} results for {len(cases['c'])} cases"
    timing = None
    for line in res.stderr.splitlines():
        if line.startswith("STEP_TIMING"):
            kv = dict(item.split("=") for item in line.split()[1:])
            timing = (int(kv["steps"]), float(kv["seconds"]))
        else:
            print(line, file=sys.stderr)
    return z, timing


# ---- speed on whole instructions ------------------------------------------------------------------

def speed_tiles(args, WGMMA, workdir):
    """Times N wgmma instructions m64n256k32 (e4m3 x e4m3, then e5m2 x e5m2 by turns; operands of the
    step classes, C near the products) in mmasim (per instruction, torch on 1 thread and on all) and
    in fp8ref's hopper_wgmma_tile (the step driver: 1 thread, and OpenMP over the instructions on
    the same number of threads as torch), compares every output bitwise, prints the ratios. Returns
    the number of mismatching outputs."""
    import torch
    rng = np.random.default_rng(args.seed + 7)
    n, count = 256, args.speed_tiles
    tiles, recs = [], []
    for t in range(count):
        fa, fb = PAIRS[t % 2]  # e4m3xe4m3, e5m2xe5m2
        A = np.stack([_operand(rng, fa, cl) for cl in _pick(rng, OPERAND_CLASSES[:-3], 64)])
        Bc = np.stack([_operand(rng, fb, cl) for cl in _pick(rng, OPERAND_CLASSES[:-3], n)])
        C = np.array([_c_value(rng, "near", DECODE[fa][A[i % 64]], DECODE[fb][Bc[i % n]], False)
                      for i in range(64 * n)], dtype=np.uint32).reshape(64, n)
        tiles.append((fa, fb, A, Bc, C))
        recs.append(bytes([FORMAT_ID[fa], FORMAT_ID[fb]]) + struct.pack("<H", n) + A.tobytes() +
                    Bc.tobytes() + C.astype("<u4").tobytes())
    tdt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    ops = {pair: WGMMA("Hopper", f"m64n{n}k32.f32.{pair[0]}.{pair[1]}") for pair in PAIRS[:2]}

    def mmasim_all():
        out = []
        for fa, fb, A, Bc, C in tiles:
            D = ops[(fa, fb)](torch.from_numpy(A).view(tdt[fa]),
                              torch.from_numpy(np.ascontiguousarray(Bc.T)).view(tdt[fb]),
                              torch.from_numpy(C.view(np.float32)))
            out.append(D.contiguous().view(torch.int32).numpy().view(np.uint32).reshape(-1))
        return np.concatenate(out)

    threads_default = torch.get_num_threads()
    timings = {}
    for threads in (1, threads_default):
        torch.set_num_threads(threads)
        mmasim_all()  # warm-up (first calls build mmasim's tables)
        t0 = time.perf_counter()
        ref_z = mmasim_all()
        timings[threads] = (time.perf_counter() - t0) / count
    torch.set_num_threads(threads_default)
    inp, out = os.path.join(workdir, "tiles.bin"), os.path.join(workdir, "tiles_model.bin")
    with open(inp, "wb") as f:
        f.write(b"".join(recs))
    env = dict(os.environ, OMP_NUM_THREADS=str(threads_default))
    res = subprocess.run([args.driver, "--tiles", inp, out], check=True, stderr=subprocess.PIPE,
                         text=True, env=env)
    got_z = np.fromfile(out, dtype="<u4").astype(np.uint32)
    kv = {}
    for line in res.stderr.splitlines():
        if line.startswith("TILE_TIMING"):
            kv = dict(item.split("=") for item in line.split()[1:])
        else:
            print(line, file=sys.stderr)
    bad = int((got_z != ref_z).sum()) if len(got_z) == len(ref_z) else len(ref_z)
    ours_1, ours_p, p = float(kv["seconds_1"]) / count, float(kv["seconds_p"]) / count, int(kv["threads"])
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               "unknown processor")
    print(f"== speed on the same instruction-level work: {count} wgmma m64n{n}k32 instructions "
          f"({64 * n} k=32 steps each), e4m3xe4m3 and e5m2xe5m2; {cpu}, {os.cpu_count()} CPUs ==")
    print(f"{'':44}{'per instruction':>18}{'per step':>12}")
    rows = [(f"mmasim 2.1.1 WGMMA, torch CPU, 1 thread", timings[1]),
            (f"mmasim 2.1.1 WGMMA, torch CPU, {threads_default} threads", timings[threads_default]),
            (f"fp8ref hopper_wgmma_tile ({kv['isa']}), 1 thread", ours_1),
            (f"fp8ref hopper_wgmma_tile ({kv['isa']}), {p} threads", ours_p)]
    for name, sec in rows:
        print(f"{name:44}{sec * 1e6:>15.1f} us{sec / (64 * n) * 1e9:>9.2f} ns")
    print(f"ratio, 1 thread each: fp8ref is {timings[1] / ours_1:.0f}x mmasim")
    print(f"ratio, {threads_default} threads each: fp8ref is {timings[threads_default] / ours_p:.0f}x mmasim "
          f"(target >= 1000x)")
    print(f"outputs compared bitwise: {len(ref_z)}, mismatches: {bad}")
    return bad


# ---- report, golden ---------------------------------------------------------------------------------

def case_line(cases, i, z):
    ids = {v: k for k, v in FORMAT_ID.items()}
    return " ".join([ids[int(cases["fa"][i])], ids[int(cases["fb"][i])]] +
                    [f"{int(v):02x}" for v in cases["a"][i]] + [f"{int(v):02x}" for v in cases["b"][i]] +
                    [f"{int(cases['c'][i]):08x}", f"{int(z):08x}"])


def report(cases, ref_z, got_z, ref_name, show):
    ids = {v: k for k, v in FORMAT_ID.items()}
    bad = ref_z != got_z
    print(f"{'pair':<12}{'cases':>9}{'mismatches':>12}")
    for fa_id in (0, 1):
        for fb_id in (0, 1):
            sel = (cases["fa"] == fa_id) & (cases["fb"] == fb_id)
            print(f"{ids[fa_id] + 'x' + ids[fb_id]:<12}{int(sel.sum()):>9}{int((bad & sel).sum()):>12}")
    print(f"{'all':<12}{len(bad):>9}{int(bad.sum()):>12}")
    if bad.any():
        by_class = {}
        for lab in cases["labels"][bad]:
            by_class[lab] = by_class.get(lab, 0) + 1
        print("mismatches by class:", ", ".join(f"{k}: {v}" for k, v in sorted(by_class.items())))
        print(f"first mismatches (fa fb a0..a31 b0..b31 c {ref_name}_z; then fp8ref got_z):")
        for i in np.flatnonzero(bad)[:show]:
            print(f"  #{i} [{cases['labels'][i]}] {case_line(cases, i, ref_z[i])}  got {int(got_z[i]):08x}")
    return int(bad.sum())


def write_golden(path, cases, z, n, seed, source, argv):
    rng = np.random.default_rng(seed + 1)
    pick = []
    for fa_id in (0, 1):
        for fb_id in (0, 1):
            sel = np.flatnonzero((cases["fa"] == fa_id) & (cases["fb"] == fb_id))
            pick.extend(rng.choice(sel, min(len(sel), n // 4), replace=False))
    pick = sorted(int(i) for i in pick)
    body = "".join(case_line(cases, i, z[i]) + "\n" for i in pick)
    head = ("# fp8ref golden vectors: one Hopper wgmma FP8 step z = sum_{k<32} a_k*b_k + c, f32 result\n"
            "# (docs/models.md; checked by proptests/numerics/models/golden_step_test.cpp)\n"
            f"# source: {source}\n"
            f"# generator: {' '.join(argv)}\n"
            f"# seed: {seed}; lines: {len(pick)}; sha256 of the lines below: "
            f"{hashlib.sha256(body.encode()).hexdigest()}\n"
            "# line: fa fb a0..a31 b0..b31 c z  (formats e4m3|e5m2; codes 2 hex digits; c, z f32 bits)\n")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(head + body)
    print(f"wrote {len(pick)} golden lines to {path}")
    return pick, {"source": source, "generator": " ".join(argv), "seed": seed,
                  "format":
                      "one wgmma FP8 step z = sum_k a_k*b_k + c (docs/models.md hopper_wgmma)"}


def write_safetensors(path, cases, z, pick, metadata):
    """The golden lines as a safetensors file (fa, fb U8 format ids 0 = e4m3 / 1 = e5m2; a, b U8
    (n, 32) codes; c, z F32 bit patterns), for `fp8-check golden accept` (a captured entry)."""
    idx = np.asarray(pick, dtype=np.int64)
    tensors = {"fa": ("U8", cases["fa"][idx]), "fb": ("U8", cases["fb"][idx]), "a": ("U8", cases["a"][idx]),
               "b": ("U8", cases["b"][idx]), "c": ("F32", cases["c"][idx].astype("<u4")),
               "z": ("F32", np.asarray(z, dtype=np.uint32)[idx].astype("<u4"))}
    header, blobs, off = {}, [], 0
    for name, (dt, arr) in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    print(f"wrote {len(idx)} golden vectors to {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", default="/tmp/step_driver", help="the built step_driver")
    ap.add_argument("--cases", type=int, default=120000)
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--tile-fraction", type=float, default=0.35,
                    help="share of the cases evaluated as whole m64nNk32 tiles")
    ap.add_argument("--emit-golden", type=int, default=0, metavar="N")
    ap.add_argument("--golden-out", default=None,
                    help="default: golden/reference/hopper_wgmma_step.hex (dry run: WORKDIR/...)")
    ap.add_argument("--golden-safetensors", default=None, metavar="PATH",
                    help="also write the golden vectors as safetensors")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--no-fma-stub", action="store_true", help="import mmasim unmodified")
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--speed-tiles", type=int, default=0, metavar="N",
                    help="also time N whole m64n256k32 instructions in mmasim and fp8ref (1 and all threads)")
    args = ap.parse_args()
    if not os.access(args.driver, os.X_OK):
        print(f"error: step driver {args.driver} not found or not executable", file=sys.stderr)
        return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="fp8ref_step_")
    os.makedirs(workdir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    cases = generate(rng, args.cases, args.tile_fraction)
    print(f"{len(cases['c'])} cases ({sum(len(t[2]) for t in cases['tiles'])} in "
          f"{len(cases['tiles'])} whole tiles), seed {args.seed}")
    got_z, step_timing = driver_eval(args.driver, cases, workdir)
    port_z = transliteration_eval(cases)
    if args.dry_run:
        print("DRY RUN: reference = numpy transliteration of mmasim's t_fdpa (not mmasim)")
        ref_z, ref_name, source = port_z, "numpy", "numpy transliteration of mmasim t_fdpa (DRY RUN)"
    else:
        try:
            WGMMA = load_mmasim(not args.no_fma_stub)
            import mmasim
            import torch
        except Exception as e:  # noqa: BLE001
            print(f"error: cannot import mmasim / torch: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
        t_mm = time.perf_counter()
        ref_z, info = mmasim_eval(WGMMA, cases)
        t_mm = time.perf_counter() - t_mm
        ver = getattr(mmasim, "__version__", "2.1.1 (wheel)")
        print(f"mmasim {ver}, torch {torch.__version__}, on CPU; arithmetic per pair:")
        for k, v in info.items():
            print(f"  {k}: {v}")
        ref_name = "mmasim"
        source = f"mmasim {ver} WGMMA('Hopper', m64nNk32.f32.<fa>.<fb>) on CPU, torch {torch.__version__}"
        n_port = int((port_z != ref_z).sum())
        print(f"numpy transliteration vs mmasim: {n_port} mismatches (0 expected)")
        if step_timing:
            n_steps, secs = step_timing
            ours = secs / n_steps
            theirs = t_mm / len(cases["c"])
            print("== speed on single steps (mmasim batched over the independent cases) ==")
            print(f"mmasim {ver} (torch CPU, batched): {len(cases['c'])} steps in {t_mm:.2f} s = "
                  f"{theirs * 1e6:.2f} us/step")
            print(f"fp8ref hopper_wgmma_step (one thread): {n_steps} steps in {secs:.3f} s = "
                  f"{ours * 1e9:.1f} ns/step")
            print(f"ratio: fp8ref is {theirs / ours:.0f}x mmasim per step")
    print(f"== fp8ref hopper_wgmma_step vs {ref_name} ==")
    n_bad = report(cases, ref_z, got_z, ref_name, args.show)
    if args.speed_tiles and not args.dry_run:
        n_bad += speed_tiles(args, WGMMA, workdir)
    if args.emit_golden:
        path = args.golden_out or (os.path.join(workdir, "hopper_wgmma_step.hex") if args.dry_run else
                                   os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                "golden", "reference", "hopper_wgmma_step.hex"))
        pick, meta = write_golden(os.path.normpath(path), cases, ref_z, args.emit_golden, args.seed, source,
                                  sys.argv)
        if args.golden_safetensors:
            write_safetensors(args.golden_safetensors, cases, ref_z, pick, meta)
    print("RESULT:", "PASS" if n_bad == 0 else f"FAIL ({n_bad} mismatches)")
    return 0 if n_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
