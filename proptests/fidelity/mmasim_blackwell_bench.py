#!/usr/bin/env python3
"""Speed of fp8ref's Blackwell step models against MMA-Sim 2.1.1, measured in one run, one thread each.

  mmasim_blackwell_bench.py --tile-driver BUILD/proptests/fidelity/blackwell_tile_driver
      [--step-driver BUILD/proptests/fidelity/blackwell_step_driver] [--calls N] [--seed S]

Workload: per kind, N instruction calls of MMA-Sim (tcgen05.mma with M=128, N=256, and the sm_120
mma.sync shape m16n8; K = 32, or 64 for kind::mxf4) on the same random operands (finite codes of
the five element formats, a tenth of them zero; ue8m0 / ue4m3 scales around 1; C ~ N(0, 1)).
MMA-Sim evaluates each call with torch on one thread (`MMA(...)(A, B, C)`); fp8ref evaluates the
same tiles with numerics/models/blackwell_step_tile.h. Times are thread CPU times (time.thread_time,
CLOCK_THREAD_CPUTIME_ID), so the ratio does not depend on other load of the machine. The outputs are
compared bitwise; the script fails on any mismatch. With --step-driver, the single-step API on the
same steps (one independent step per call, decoded each time) is timed as well.
FP6 codes go to MMA-Sim in bits 5:0, FP4 in bits 5:2 (kind::f8f6f4) or packed two per byte with
element 2i in the HIGH nibble (k64 kinds); fp8ref keeps one code per byte in the low bits.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

FMT_ID = {"e4m3": 0, "e5m2": 1, "e8m0": 2, "e2m1": 3, "e2m3": 4, "e3m2": 5, "ue4m3": 6}
BITS = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}
ELEM = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
KIND_NAMES = ("f8f6f4", "f8f6f4_f16", "mxf8f6f4", "mxf4")
SPECIALS = {"e4m3": (0x7F, 0xFF), "e5m2": (0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF)}


def codes(rng, fmt, shape):
    fin = np.array([c for c in range(1 << BITS[fmt]) if c not in SPECIALS.get(fmt, ())], np.uint8)
    v = rng.choice(fin, shape)
    v[rng.random(shape) < 0.1] = 0
    return v.astype(np.uint8)


def make_tile(rng, kind, m, n, call):
    k = 64 if kind == 3 else 32
    fa, fb = ("e2m1", "e2m1") if kind == 3 else (ELEM[call % 5], ELEM[(call // 5 + call) % 5])
    t = {"kind": kind, "fa": fa, "fb": fb, "m": m, "n": n, "k": k, "sf": "e8m0", "block": 32}
    t["a"], t["bt"] = codes(rng, fa, (m, k)), codes(rng, fb, (n, k))
    ns = 0
    if kind == 2:
        ns = 1
    if kind == 3:
        t["block"], t["sf"] = ((32, "e8m0"), (16, "e8m0"), (16, "ue4m3"))[call % 3]
        ns = 64 // t["block"]
    if t["sf"] == "e8m0":
        t["sa"], t["sb"] = (rng.integers(120, 135, (r, ns)).astype(np.uint8) for r in (m, n))
    else:
        t["sa"], t["sb"] = (rng.integers(0x30, 0x48, (r, ns)).astype(np.uint8) for r in (m, n))
    c = rng.standard_normal((m, n))
    t["c"] = (np.float16(c).view(np.uint16).astype(np.uint32) if kind == 1
              else np.float32(c).view(np.uint32))
    return t


def tile_bytes(t):
    head = np.array([t["kind"], FMT_ID[t["fa"]], FMT_ID[t["fb"]], FMT_ID[t["sf"]], t["block"], 0, 0, 0],
                    np.uint8).tobytes() + np.array([t["m"], t["n"], t["k"]], "<u4").tobytes()
    return b"".join([head, t["a"].tobytes(), t["bt"].tobytes(), t["sa"].tobytes(), t["sb"].tobytes(),
                     t["c"].astype("<u4").tobytes()])


def mmasim_call(t, sm120):
    import torch
    from mmasim.nv_ptx import MMA, MMABlockScale, TCGen05MMA, TCGen05MMABlockScale
    kind, fa, fb, m, n, k = t["kind"], t["fa"], t["fb"], t["m"], t["n"], t["k"]
    tdt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}

    def operand(c, fmt):  # (rows, k) codes -> MMA-Sim's layout
        if fmt in tdt:
            return torch.from_numpy(np.ascontiguousarray(c)).view(tdt[fmt])
        return torch.from_numpy(np.ascontiguousarray(c << (2 if fmt == "e2m1" else 0)))

    if kind in (0, 1):
        d = "f16" if kind == 1 else "f32"
        op = (MMA("RTX Blackwell", f"m{m}n{n}k32.kind::f8f6f4.{d}.{fa}.{fb}.{d}") if sm120 else
              TCGen05MMA("Blackwell", f"m{m}n{n}k32.kind::f8f6f4.{d}.{fa}.{fb}"))
        c = (torch.from_numpy(t["c"].astype(np.uint16)).view(torch.float16) if kind == 1
             else torch.from_numpy(t["c"].copy()).view(torch.float32))
        args = (operand(t["a"], fa), operand(t["bt"], fb).T, c)
    else:
        c = torch.from_numpy(t["c"].copy()).view(torch.float32)
        if kind == 2:
            shape = f"m{m}n{n}k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}"
            a, b = operand(t["a"], fa), operand(t["bt"], fb).T
        else:
            name = "mxf4" if t["block"] == 32 else "mxf4nvf4"
            s_name = "ue8m0" if t["sf"] == "e8m0" else "ue4m3"
            shape = f"m{m}n{n}k64.kind::{name}.block{t['block']}.f32.e2m1.e2m1"
            pack = lambda x: torch.from_numpy(((x[:, 0::2] << 4) | x[:, 1::2]).astype(np.uint8))
            a, b = pack(t["a"]), pack(t["bt"]).T
        s_name = "ue8m0" if t["sf"] == "e8m0" else "ue4m3"
        op = (MMABlockScale("RTX Blackwell", f"{shape}.f32.{s_name}") if sm120 else
              TCGen05MMABlockScale("Blackwell", f"{shape}.{s_name}"))
        sdt = torch.float8_e8m0fnu if s_name == "ue8m0" else torch.float8_e4m3fn
        alpha = torch.from_numpy(np.ascontiguousarray(t["sa"])).view(sdt)
        beta = torch.from_numpy(np.ascontiguousarray(t["sb"].T)).view(sdt)
        args = (a, b, c, alpha, beta)
    t0 = time.thread_time()
    d = op(*args)
    seconds = time.thread_time() - t0
    bits = (d.contiguous().view(torch.int16).numpy().view(np.uint16).astype(np.uint32) if kind == 1
            else d.contiguous().view(torch.int32).numpy().view(np.uint32))
    return bits.reshape(-1), seconds


def run_driver(driver, blob, wd, repeat, tag):
    inp, out = os.path.join(wd, "tiles.bin"), os.path.join(wd, "out.bin")
    with open(inp, "wb") as f:
        f.write(blob)
    res = subprocess.run([driver, inp, out, "--repeat", str(repeat)], check=True,
                         stderr=subprocess.PIPE, text=True)
    timing = {}
    for line in res.stderr.splitlines():
        if line.startswith(tag):
            kv = dict(x.split("=") for x in line.split()[1:])
            timing[int(kv["kind"])] = (int(kv["steps"]), float(kv["seconds"]))
    return np.fromfile(out, "<u4").astype(np.uint32), timing


def step_records(tiles):
    """The tiles' steps as blackwell_step_driver records (148 bytes each)."""
    rec = np.dtype([("kind", "u1"), ("fa", "u1"), ("fb", "u1"), ("sf", "u1"), ("block", "u1"),
                    ("pad", "u1", 3), ("a", "u1", 64), ("b", "u1", 64), ("sa", "u1", 4),
                    ("sb", "u1", 4), ("c", "<u4")])
    out = []
    for t in tiles:
        m, n, k = t["m"], t["n"], t["k"]
        r = np.zeros(m * n, rec)
        r["kind"], r["fa"], r["fb"] = t["kind"], FMT_ID[t["fa"]], FMT_ID[t["fb"]]
        r["sf"], r["block"] = FMT_ID[t["sf"]], t["block"]
        r["a"][:, :k] = np.repeat(t["a"], n, axis=0)
        r["b"][:, :k] = np.tile(t["bt"], (m, 1))
        ns = t["sa"].shape[1]
        if ns:
            r["sa"][:, :ns] = np.repeat(t["sa"], n, axis=0)
            r["sb"][:, :ns] = np.tile(t["sb"], (m, 1))
        r["c"] = t["c"].reshape(-1)
        out.append(r)
    return np.concatenate(out).tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tile-driver", required=True)
    ap.add_argument("--step-driver", default=None)
    ap.add_argument("--calls", type=int, default=6, help="tcgen05 calls (M=128, N=256) per kind")
    ap.add_argument("--sm120-calls", type=int, default=60, help="mma.sync calls (m16n8) per kind")
    ap.add_argument("--repeat", type=int, default=5, help="fp8ref timing passes")
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args()
    try:
        import mmasim  # noqa: F401
        import torch
    except ImportError as e:
        print(f"error: cannot import mmasim / torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    print(f"torch {torch.__version__}, mmasim 2.1.1, one thread each, thread CPU time, seed {args.seed}")
    print(f"{'kind':<12}{'instruction':<12}{'steps':>9}{'MMA-Sim ns/step':>17}{'fp8ref tile':>13}"
          f"{'ratio':>8}{'fp8ref step':>13}{'ratio':>8}")
    bad_total = 0
    for form, (m, n, calls) in (("tcgen05", (128, 256, args.calls)), ("mma.sync", (16, 8, args.sm120_calls))):
        tiles = [make_tile(rng, kind, m, n, call) for kind in range(4) for call in range(calls)]
        ref, mm_time = [], {}
        for t in tiles:
            z, s = mmasim_call(t, form == "mma.sync")
            ref.append(z)
            mm_time[t["kind"]] = mm_time.get(t["kind"], 0.0) + s
        ref = np.concatenate(ref)
        with tempfile.TemporaryDirectory(prefix="fp8ref_bwb_") as wd:
            got, tile_t = run_driver(args.tile_driver, b"".join(tile_bytes(t) for t in tiles), wd,
                                     args.repeat, "TILE_TIMING")
            step_t = {}
            if args.step_driver:
                got_s, step_t = run_driver(args.step_driver, step_records(tiles), wd, args.repeat,
                                           "STEP_TIMING")
                bad_total += int((got_s != ref).sum())
        bad = int((got != ref).sum())
        bad_total += bad
        for kind in range(4):
            steps = sum(t["m"] * t["n"] for t in tiles if t["kind"] == kind)
            ns_mm = mm_time[kind] / steps * 1e9
            ns_tile = tile_t[kind][1] / tile_t[kind][0] * 1e9
            line = (f"{KIND_NAMES[kind]:<12}{form:<12}{steps:>9}{ns_mm:>17.0f}{ns_tile:>13.1f}"
                    f"{ns_mm / ns_tile:>7.0f}x")
            if kind in step_t:
                ns_step = step_t[kind][1] / step_t[kind][0] * 1e9
                line += f"{ns_step:>13.1f}{ns_mm / ns_step:>7.0f}x"
            print(line)
        print(f"{form}: {len(ref)} steps, {bad} mismatches (tile models vs MMA-Sim)")
    print("RESULT:", "PASS" if bad_total == 0 else f"FAIL ({bad_total} mismatches)")
    return 0 if bad_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
