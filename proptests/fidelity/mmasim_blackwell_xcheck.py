#!/usr/bin/env python3
"""fp8ref's Blackwell step models (numerics/models/blackwell_step.h) against MMA-Sim 2.1.1, bitwise.

  mmasim_blackwell_xcheck.py --driver BUILD/proptests/fidelity/blackwell_step_driver
      [--cases N] [--seed S] [--emit-golden N] [--speed]

Kinds (each >= N class-weighted steps; MMA-Sim's classes, in the order its ISA lists them):
  0 f8f6f4      TCGen05MMA("Blackwell", m64n8k32.kind::f8f6f4.f32.A.B) and, for every other case,
                MMA("RTX Blackwell", m16n8k32.kind::f8f6f4.f32.A.B.f32) (sm_120 mma.sync)
  1 f8f6f4_f16  the same with f16 C / D (tcgen05 .f16, sm_120 .f16)
  2 mxf8f6f4    TCGen05MMABlockScale(m128n8k32.kind::mxf8f6f4.block32.f32.A.B.ue8m0) / sm_120
                MMABlockScale(m16n8k32.kind::mxf8f6f4.block32.f32.A.B.f32.ue8m0)
  3 mxf4        k64 e2m1: kind::mxf4 block32 ue8m0, kind::mxf4nvf4 block32 ue8m0, block16 ue8m0,
                block16 ue4m3 (tcgen05 and sm_120 by turns)
A, B range over e4m3 e5m2 e3m2 e2m3 e2m1. Operands, scales and C are drawn from weighted classes
(NaN / Inf operands, NaN and zero scales, extreme scale exponents, C across the f32 range).
fp8ref keeps FP6 / FP4 codes in the low bits of a byte; MMA-Sim's kind::f8f6f4 wants FP6 in bits
5:0 and FP4 in bits 5:2, and its k64 kinds take FP4 packed two per byte with element 2i in the
HIGH nibble (unpack_uint8_to_fp4) -- the opposite of torch float4_e2m1fn_x2 / DLPack, whose
element 0 is the low nibble. This script converts. Exit 0 iff 0 mismatches.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

FMT_ID = {"e4m3": 0, "e5m2": 1, "e8m0": 2, "e2m1": 3, "e2m3": 4, "e3m2": 5, "ue4m3": 6}
ID_FMT = {v: k for k, v in FMT_ID.items()}
ELEM = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
BITS = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}
KIND_NAMES = ("f8f6f4", "f8f6f4_f16", "mxf8f6f4", "mxf4")
MXF4_FORMS = (("mxf4", 32, "ue8m0"), ("mxf4nvf4", 32, "ue8m0"), ("mxf4nvf4", 16, "ue8m0"),
              ("mxf4nvf4", 16, "ue4m3"))
REC = np.dtype([("kind", "u1"), ("fa", "u1"), ("fb", "u1"), ("sf", "u1"), ("block", "u1"),
                ("pad", "u1", 3), ("a", "u1", 64), ("b", "u1", 64), ("sa", "u1", 4), ("sb", "u1", 4),
                ("c", "<u4")])
assert REC.itemsize == 148


# ---- classes --------------------------------------------------------------------------------------

def specials(fmt):
    return {"e4m3": [0x7F, 0xFF], "e5m2": [0x7C, 0xFC, 0x7D, 0xFE]}.get(fmt, [])


def finite_codes(fmt):
    n = 1 << BITS[fmt]
    return np.array([c for c in range(n) if c not in specials(fmt)], np.uint8)


def subnormal_codes(fmt):
    man = {"e4m3": 3, "e5m2": 2, "e3m2": 2, "e2m3": 3, "e2m1": 1}[fmt]
    sign = 1 << (BITS[fmt] - 1)
    sub = np.arange(1, 1 << man)
    return np.concatenate([sub, sub | sign]).astype(np.uint8)


OPERAND_CLASSES = (("uniform", 30), ("subnormal", 12), ("zeros", 12), ("cancel", 12), ("top", 8),
                   ("special", 3), ("all_zero", 3), ("tiny", 6))
C_CLASSES = (("zero", 20), ("near", 35), ("subnormal", 8), ("large", 10), ("any", 22), ("special", 5))


def pick(rng, classes):
    w = np.array([c[1] for c in classes], float)
    return classes[rng.choice(len(classes), p=w / w.sum())][0]


def operand(rng, fmt, cls, k):
    fin = finite_codes(fmt)
    v = rng.choice(fin, k)
    sign = 1 << (BITS[fmt] - 1)
    if cls == "subnormal":
        m = rng.random(k) < 0.6
        v[m] = rng.choice(subnormal_codes(fmt), m.sum())
    elif cls == "zeros":
        m = rng.random(k) < 0.7
        v[m] = rng.choice(np.array([0, sign], np.uint8), m.sum())
    elif cls == "cancel":
        v[1::2] = v[0::2] ^ sign
    elif cls == "top":
        big = fin[(fin & (sign - 1)) >= (sign - 1) * 3 // 4]
        v = rng.choice(big, k)
    elif cls == "special" and specials(fmt):
        v[rng.integers(0, k)] = rng.choice(specials(fmt))
    elif cls == "all_zero":
        v = rng.choice(np.array([0, sign], np.uint8), k)
    elif cls == "tiny":
        v = rng.choice(np.concatenate([subnormal_codes(fmt), [0, sign]]).astype(np.uint8), k)
    return v.astype(np.uint8)


def c_value(rng, cls, f16):
    if f16:
        if cls == "zero":
            return int(rng.choice([0, 0x8000]))
        if cls == "special":
            return int(rng.choice([0x7C00, 0xFC00, 0x7E00]))
        if cls == "subnormal":
            return int(rng.integers(1, 0x400) | (rng.integers(0, 2) << 15))
        while True:
            u = int(rng.integers(0, 1 << 16))
            if (u & 0x7C00) != 0x7C00:
                return u
    if cls == "zero":
        return int(rng.choice([0, 0x80000000]))
    if cls == "special":
        return int(rng.choice([0x7F800000, 0xFF800000, 0x7FC00000]))
    if cls == "subnormal":
        return int(rng.integers(1, 1 << 23) | (rng.integers(0, 2) << 31))
    if cls == "near":
        e = int(rng.integers(-30, 14))
        return int((rng.integers(0, 2) << 31) | ((e + 127) << 23) | rng.integers(0, 1 << 23))
    if cls == "large":
        e = int(rng.integers(20, 128))
        return int((rng.integers(0, 2) << 31) | ((e + 127) << 23) | rng.integers(0, 1 << 23))
    while True:
        u = int(rng.integers(0, 1 << 32))
        if (u & 0x7F800000) != 0x7F800000:
            return u


def e8m0_scale(rng):
    r = rng.random()
    if r < 0.5:
        return int(rng.integers(117, 138))
    if r < 0.62:
        return int(rng.integers(0, 8))
    if r < 0.74:
        return int(rng.integers(247, 255))
    if r < 0.77:
        return 0xFF
    return int(rng.integers(0, 255))


def ue4m3_scale(rng):
    r = rng.random()
    if r < 0.55:
        v = int(rng.integers(0x08, 0x7F))
    elif r < 0.7:
        v = int(rng.integers(1, 8))
    elif r < 0.8:
        v = 0
    elif r < 0.83:
        v = 0x7F
    else:
        v = int(rng.integers(0, 0x7F))
    return v | (0x80 if rng.random() < 0.3 else 0)  # the sign bit is ignored


def generate(rng, n_per_kind):
    recs = np.zeros(4 * n_per_kind, REC)
    labels = []
    i = 0
    for kind in range(4):
        for j in range(n_per_kind):
            r = recs[i]
            if kind == 3:
                fa = fb = "e2m1"
                form = MXF4_FORMS[j % 4]
                k, r["block"], sfmt = 64, form[1], form[2]
                r["sf"] = FMT_ID["e8m0" if sfmt == "ue8m0" else "ue4m3"]
                draw = e8m0_scale if sfmt == "ue8m0" else ue4m3_scale
                for q in range(64 // form[1]):
                    r["sa"][q], r["sb"][q] = draw(rng), draw(rng)
            else:
                fa, fb = ELEM[rng.integers(0, 5)], ELEM[rng.integers(0, 5)]
                k = 32
                if kind == 2:
                    r["sa"][0], r["sb"][0] = e8m0_scale(rng), e8m0_scale(rng)
                    r["sf"], r["block"] = FMT_ID["e8m0"], 32
            ca, cb = pick(rng, OPERAND_CLASSES), pick(rng, OPERAND_CLASSES)
            r["kind"], r["fa"], r["fb"] = kind, FMT_ID[fa], FMT_ID[fb]
            r["a"][:k] = operand(rng, fa, ca, k)
            r["b"][:k] = operand(rng, fb, "uniform" if ca == "cancel" else cb, k)
            if ca == "cancel":
                r["b"][1:k:2] = r["b"][0:k:2]
            cc = pick(rng, C_CLASSES)
            r["c"] = c_value(rng, cc, kind == 1)
            labels.append(f"{KIND_NAMES[kind]}/{ca}/{cb}/c_{cc}")
            recs[i] = r
            i += 1
    return recs, np.array(labels)


# ---- MMA-Sim -------------------------------------------------------------------------------------

def mmasim_eval(recs, threads):
    import torch
    from mmasim.nv_ptx import MMA, MMABlockScale, TCGen05MMA, TCGen05MMABlockScale

    torch.set_num_threads(threads)
    tdt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    z = np.zeros(len(recs), np.uint32)

    def operand_tensor(codes, fmt):  # (n, k) codes in fp8ref's layout -> MMA-Sim's
        if fmt in tdt:
            return torch.from_numpy(np.ascontiguousarray(codes)).view(tdt[fmt])
        shift = 2 if fmt == "e2m1" else 0  # FP4 sits in bits 5:2, FP6 in bits 5:0
        return torch.from_numpy(np.ascontiguousarray(codes << shift))

    def f32(bits):
        return torch.from_numpy(np.ascontiguousarray(bits.astype(np.uint32)).view(np.float32))

    def out_bits(d):
        if d.dtype == torch.float16:
            return d.contiguous().view(torch.int16).numpy().view(np.uint16).astype(np.uint32)
        return d.contiguous().view(torch.int32).numpy().view(np.uint32)

    groups = {}
    for i, r in enumerate(recs):
        form = (int(r["sf"]), int(r["block"])) if r["kind"] == 3 else (0, 0)
        key = (int(r["kind"]), int(r["fa"]), int(r["fb"]), form, i % 2)
        groups.setdefault(key, []).append(i)
    t0 = time.thread_time()
    per_kind = {}
    for (kind, fa_id, fb_id, form, alt), idx in sorted(groups.items()):
        tk = time.thread_time()
        idx = np.array(idx)
        sel = recs[idx]
        fa, fb = ID_FMT[fa_id], ID_FMT[fb_id]
        if kind in (0, 1):
            d = "f16" if kind == 1 else "f32"
            op = (TCGen05MMA("Blackwell", f"m64n8k32.kind::f8f6f4.{d}.{fa}.{fb}") if alt == 0 else
                  MMA("RTX Blackwell", f"m16n8k32.kind::f8f6f4.{d}.{fa}.{fb}.{d}"))
            c = (torch.from_numpy(sel["c"].astype(np.uint16)).view(torch.float16) if kind == 1
                 else f32(sel["c"]))
            D = op.dpa(operand_tensor(sel["a"][:, :32], fa), operand_tensor(sel["b"][:, :32], fb), c)
        elif kind == 2:
            op = (TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.ue8m0")
                  if alt == 0 else
                  MMABlockScale("RTX Blackwell", f"m16n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.f32.ue8m0"))
            al = torch.from_numpy(np.ascontiguousarray(sel["sa"][:, :1])).view(torch.float8_e8m0fnu)
            be = torch.from_numpy(np.ascontiguousarray(sel["sb"][:, :1])).view(torch.float8_e8m0fnu)
            D = op.dpa(operand_tensor(sel["a"][:, :32], fa), operand_tensor(sel["b"][:, :32], fb),
                       f32(sel["c"]), al, be)
        else:
            sf, block = form
            kind_name = "mxf4" if (block == 32 and sf == FMT_ID["e8m0"] and alt == 0) else "mxf4nvf4"
            s_name = "ue8m0" if sf == FMT_ID["e8m0"] else "ue4m3"
            if alt == 0:
                op = TCGen05MMABlockScale("Blackwell", f"m128n8k64.kind::{kind_name}.block{block}.f32.e2m1.e2m1.{s_name}")
            else:
                op = MMABlockScale("RTX Blackwell", f"m16n8k64.kind::{kind_name}.block{block}.f32.e2m1.e2m1.f32.{s_name}")
            pack = lambda c: ((c[:, 0::2] << 4) | c[:, 1::2]).astype(np.uint8)  # element 2i high
            sdt = torch.float8_e8m0fnu if s_name == "ue8m0" else torch.float8_e4m3fn
            ns = 64 // block
            al = torch.from_numpy(np.ascontiguousarray(sel["sa"][:, :ns])).view(sdt)
            be = torch.from_numpy(np.ascontiguousarray(sel["sb"][:, :ns])).view(sdt)
            D = op.dpa(torch.from_numpy(pack(sel["a"])), torch.from_numpy(pack(sel["b"])), f32(sel["c"]), al, be)
        z[idx] = out_bits(D)
        per_kind[kind] = per_kind.get(kind, 0.0) + time.thread_time() - tk
    return z, time.thread_time() - t0, per_kind


# ---- driver, report, golden ----------------------------------------------------------------------

def driver_eval(driver, recs, wd, repeat):
    inp, out = os.path.join(wd, "cases.bin"), os.path.join(wd, "model.bin")
    recs.tofile(inp)
    res = subprocess.run([driver, inp, out, "--repeat", str(repeat)], check=True, stderr=subprocess.PIPE,
                         text=True)
    timing = {}
    for line in res.stderr.splitlines():
        if line.startswith("STEP_TIMING"):
            kv = dict(x.split("=") for x in line.split()[1:])
            timing[int(kv["kind"])] = (int(kv["steps"]), float(kv["seconds"]))
        else:
            print(line, file=sys.stderr)
    return np.fromfile(out, dtype="<u4").astype(np.uint32), timing


def case_line(r, z):
    k = 64 if r["kind"] == 3 else 32
    ns = 64 // int(r["block"]) if r["kind"] == 3 else 1
    return (f"{KIND_NAMES[r['kind']]} {ID_FMT[int(r['fa'])]} {ID_FMT[int(r['fb'])]} "
            f"{ID_FMT[int(r['sf'])] if r['kind'] >= 2 else '-'} {int(r['block']) if r['kind'] >= 2 else 0} "
            f"{bytes(r['a'][:k]).hex()} {bytes(r['b'][:k]).hex()} {bytes(r['sa'][:ns]).hex() or '-'} "
            f"{bytes(r['sb'][:ns]).hex() or '-'} {int(r['c']):08x} {int(z):08x}")


def golden_groups(recs):
    """The line groups of the golden file, n lines each: kinds 0-2, and kind 3 split by PTX kind:
    block32 (kind::mxf4, and kind::mxf4nvf4 .block32 with ue8m0, the same rule) and block16
    (kind::mxf4nvf4, ue8m0 and ue4m3 scales)."""
    for kind in range(3):
        yield recs["kind"] == kind
    for block in (32, 16):
        yield (recs["kind"] == 3) & (recs["block"] == block)


def write_golden(path, recs, z, n, seed, source, argv):
    rng = np.random.default_rng(seed + 1)
    pick_idx = []
    for group in golden_groups(recs):
        sel = np.flatnonzero(group)
        pick_idx.extend(rng.choice(sel, min(len(sel), n), replace=False))
    body = "".join(case_line(recs[i], z[i]) + "\n" for i in sorted(pick_idx))
    head = ("# fp8ref golden vectors: one Blackwell tensor-core step per line, outputs of MMA-Sim\n"
            "# (checked by proptests/numerics/models/blackwell_golden_test.cpp; docs/models.md \"Blackwell\")\n"
            f"# source: {source}\n# generator: {' '.join(argv)}\n"
            f"# seed: {seed}; lines: {len(pick_idx)}; sha256 of the lines below: "
            f"{hashlib.sha256(body.encode()).hexdigest()}\n"
            "# line: kind fa fb scale_format block a b sa sb c z (codes hex, FP4 / FP6 in the low bits,\n"
            "# element k = byte k; kind f8f6f4_f16: c, z f16 bits; others f32 bits)\n")
    with open(path, "w") as f:
        f.write(head + body)
    print(f"wrote {len(pick_idx)} golden lines to {path}")


def report(recs, labels, ref_z, got_z):
    bad_total = 0
    print(f"{'kind':<12}{'steps':>9}{'mismatches':>12}")
    for kind in range(4):
        sel = recs["kind"] == kind
        bad = np.flatnonzero(sel & (ref_z != got_z))
        print(f"{KIND_NAMES[kind]:<12}{int(sel.sum()):>9}{len(bad):>12}")
        for block, sf in (((32, FMT_ID["e8m0"]), (16, FMT_ID["e8m0"]), (16, FMT_ID["ue4m3"]))
                          if kind == 3 else ()):  # kind::mxf4 / mxf4nvf4 .block32, mxf4nvf4 .block16
            form = sel & (recs["block"] == block) & (recs["sf"] == sf)
            print(f"  block{block} {ID_FMT[sf]:<5}{int(form.sum()):>9}"
                  f"{int((form & (ref_z != got_z)).sum()):>12}")
        for i in bad[:5]:
            print(f"   [{labels[i]}] {case_line(recs[i], ref_z[i])}  got {int(got_z[i]):08x}")
        bad_total += len(bad)
    return bad_total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--cases", type=int, default=100000, help="steps per kind")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--emit-golden", type=int, default=0, metavar="N",
                    help="N lines per kind (kind 3: N block32 and N block16 lines)")
    ap.add_argument("--golden-out", default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch threads for MMA-Sim")
    ap.add_argument("--repeat", type=int, default=3, help="driver timing passes")
    args = ap.parse_args()
    try:
        import mmasim  # noqa: F401
        import torch
    except ImportError as e:
        print(f"error: cannot import mmasim / torch: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    recs, labels = generate(rng, args.cases)
    print(f"{len(recs)} steps ({args.cases} per kind), seed {args.seed}; torch {torch.__version__}, "
          f"mmasim 2.1.1, {args.threads} torch thread(s)")
    with tempfile.TemporaryDirectory(prefix="fp8ref_bw_") as wd:
        got_z, timing = driver_eval(args.driver, recs, wd, args.repeat)
    ref_z, t_mm, t_kind = mmasim_eval(recs, args.threads)
    bad = report(recs, labels, ref_z, got_z)
    for kind in sorted(t_kind):
        n_steps = int((recs["kind"] == kind).sum())
        ns_ours = timing[kind][1] / timing[kind][0] * 1e9
        ns_mm = t_kind[kind] / n_steps * 1e9
        print(f"speed {KIND_NAMES[kind]:<12} MMA-Sim {ns_mm:10.1f} ns/step, fp8ref {ns_ours:7.1f} "
              f"ns/step: {ns_mm / ns_ours:.0f}x")
    ours = sum(t for _, t in timing.values()) / sum(n for n, _ in timing.values())
    theirs = t_mm / len(recs)
    print(f"speed, single steps: MMA-Sim (batched, {args.threads} thread) {theirs * 1e6:.2f} us/step, "
          f"fp8ref (one thread) {ours * 1e9:.1f} ns/step: {theirs / ours:.0f}x")
    if args.emit_golden:
        path = args.golden_out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                               "numerics", "models", "data", "blackwell_step_mmasim.hex")
        write_golden(os.path.normpath(path), recs, ref_z, args.emit_golden, args.seed,
                     f"mmasim 2.1.1 on CPU, torch {torch.__version__}", sys.argv)
    print("RESULT:", "PASS" if bad == 0 else f"FAIL ({bad} mismatches)")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
