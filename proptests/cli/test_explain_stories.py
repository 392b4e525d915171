#!/usr/bin/env python3
"""`fp8-check explain grouped-gemm` element stories for block scalings and K-grouped (wgrad-form)
outputs (docs/cli.md "explain"): one element of a correct output replaced by a known wrong value,
computed by `fp8-check oracle` on operands broken the way a kernel breaks them, and explain must
name the element, the kind and the 128-K chunk:
  - M-grouped blockwise (DeepGEMM preset), the products of one 128-K chunk of a row left out:
    lost_chunk at that chunk;
  - K-grouped blockwise, a chunk of one group left out: lost_chunk at the chunk counted from the
    group's start; the chain of partial sums has one entry per 128-K chunk of that group and ends
    at the best configuration's value;
  - K-grouped mx, A's 1x32 scale of one block taken from the block before: chunk_scale at the
    128-K chunk holding that block;
  - K-grouped blockwise, a whole group zeroed: lost_group; one element one ulp up (mx): one_ulp.
Exit 0 iff every check holds.
Usage: test_explain_stories.py --fp8-check PATH --workdir DIR
"""
import argparse
import os
import struct
import sys

import numpy as np

from kernel_cases import (OPERANDS, block_codes, explain, load_tensor_bytes, plant, rewrite_got, run,
                          save_safetensors, scales)

M, N = 16, 32
OFFS = [256, 256, 768]  # K-grouped: group 0 K 0..255, group 1 empty, group 2 K 256..767


def read_tensor(path, name):
    _, shape, data = load_tensor_bytes(path, name)
    return np.frombuffer(data, np.uint32).reshape(shape).copy()


def f32(hexbits):
    return struct.unpack("<f", struct.pack("<I", int(hexbits, 16)))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    o = ap.parse_args()
    exe, wd = o.fp8_check, o.workdir
    os.makedirs(wd, exist_ok=True)
    rng = np.random.default_rng(11)
    fails, checks = [], 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            fails.append(what)

    p = lambda name: os.path.join(wd, name)

    def planted_with(case, tensors, broken, flags, model, idx, split_k=1):
        """Writes `case` (the tensors), the correct output as got in case + '_got', and the same
        output with element idx replaced by the oracle's value on the broken tensors."""
        save_safetensors(p(case), tensors)
        save_safetensors(p("broken_" + case), {**tensors, **broken})
        plant(exe, p(case), p("got_" + case), model, split_k, 0, "model", flags)
        plant(exe, p("broken_" + case), p("bad_" + case), model, split_k, 0, "model", flags)
        wrong = read_tensor(p("bad_" + case), "got")[idx]

        def put(bits):
            check(bits[idx] != wrong, f"{case}: the broken operands do not change element {idx}")
            bits[idx] = wrong
        rewrite_got(p("got_" + case), put)
        return p(case), p("got_" + case)

    # 1. M-grouped blockwise, DeepGEMM preset: row 5, chunk 3 of 8 left out; element (5, 9).
    k = 1024
    a = block_codes(rng, M, k)
    t = {"a": ("F8_E4M3", a), "b": ("F8_E4M3", block_codes(rng, N, k)),
         "sa": ("F32", scales(rng, M, k // 128)), "sb": ("F32", scales(rng, 1, k // 128))}
    a_bad = a.copy()
    a_bad[5, 3 * 128:4 * 128] = 0
    bw = ["--scaling", "blockwise", "--b-layout", "nk", "--out-dtype", "f32"]
    case, got = planted_with("bw.safetensors", t, {"a": ("F8_E4M3", a_bad)}, bw,
                             "hopper_promoted_blockwise", (5, 9))
    rc, j, err = explain(exe, case, got, "--kernel", "deep_gemm.fp8_gemm_nt")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "lost_chunk" and [f.get("row"), f.get("col")] == [5, 9]
          and f.get("diverged_chunk") == 3 and len(f.get("chain", [])) == 8
          and "chunk 3" in f.get("because", ""), f"M-grouped blockwise lost chunk: {j or err}")
    rc, so, se = run(exe, "explain", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got",
                     "--got-file", got, "--kernel", "deep_gemm.fp8_gemm_nt")
    line3 = [x for x in so.splitlines() if x.strip().startswith("3 ")]
    check(rc == 1 and "why: lost_chunk" in so and line3 and line3[0].endswith("<- diverges"),
          f"text story names chunk 3: {so}{se}")

    # K-grouped operands: A (M, 768), B (N, 768) nk; blocks restart at each group start.
    K = OFFS[-1]
    ak, bk = block_codes(rng, M, K), block_codes(rng, N, K)
    kflags = ["--grouping", "k", "--offs", "offs", "--b-layout", "nk", "--out-dtype", "f32"]
    offs = ("I64", np.array(OFFS, np.int64))

    def kgrouped(blk):
        r = sum(-(-(e - s) // blk) for s, e in zip([0] + OFFS[:-1], OFFS))
        return (2.0 ** rng.integers(-3, 4, (M, r))).astype(np.float32), \
               (2.0 ** rng.integers(-3, 4, (N, r))).astype(np.float32)

    # 2. K-grouped blockwise: group 2 (K 256..767, 4 chunks), row 3, its chunk 2 left out.
    sa, sb = kgrouped(128)
    tk = {"a": ("F8_E4M3", ak), "b": ("F8_E4M3", bk), "sa": ("F32", sa), "sb": ("F32", sb), "offs": offs}
    a_bad = ak.copy()
    a_bad[3, 256 + 2 * 128:256 + 3 * 128] = 0
    kb = kflags + ["--scaling", "blockwise"]
    case, got = planted_with("kbw.safetensors", tk, {"a": ("F8_E4M3", a_bad)}, kb,
                             "hopper_promoted_blockwise", (2, 3, 7))
    rc, j, err = explain(exe, case, got, *kb, "--model", "hopper_promoted_blockwise")
    f = j.get("first") or {}
    chain = f.get("chain", [])
    check(rc == 1 and f.get("kind") == "lost_chunk" and [f.get("group"), f.get("row"), f.get("col")] == [2, 3, 7]
          and f.get("diverged_chunk") == 2 and len(chain) == 4 and chain[-1]["k_end"] == 512
          and chain[-1]["best"] == f32(f.get("best", "0x0")), f"K-grouped blockwise lost chunk: {j or err}")

    # 3. K-grouped mx: group 2's 1x32 scale block kb of row 4 read from block kb - 1; element
    #    (2, 4, 11): chunk_scale at 128-K chunk kb // 4.
    sa, sb = kgrouped(32)
    first = 256 // 32  # group 2's first scale block
    kb_ = next(x for x in range(5, 16) if sa[4, first + x] != sa[4, first + x - 1]
               and sb[11, first + x] != sb[11, first + x - 1])
    sa_bad = sa.copy()
    sa_bad[4, first + kb_] = sa[4, first + kb_ - 1]
    tk = {"a": ("F8_E4M3", ak), "b": ("F8_E4M3", bk), "sa": ("F32", sa), "sb": ("F32", sb), "offs": offs}
    km = kflags + ["--scaling", "mx"]
    case, got = planted_with("kmx.safetensors", tk, {"sa": ("F32", sa_bad)}, km,
                             "hopper_promoted_blockwise", (2, 4, 11))
    rc, j, err = explain(exe, case, got, *km, "--model", "hopper_promoted_blockwise")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "chunk_scale" and [f.get("group"), f.get("row"), f.get("col")] == [2, 4, 11]
          and f.get("diverged_chunk") == kb_ // 4 and f"A's scale of scale block {kb_} " in f.get("because", "")
          and len(f.get("chain", [])) == 4, f"K-grouped mx scale block {kb_}: {j or err}")

    # 4. K-grouped mx, one element one ulp up: one_ulp. 5. K-grouped blockwise, group 0 zeroed.
    plant(exe, case, p("kmx_ulp.safetensors"), "hopper_promoted_blockwise", 1, 0, "model", km)

    def one_ulp(bits):  # an element whose neighbour no configuration gives (fixed seed)
        bits[2, 1, 5] -= 1
    rewrite_got(p("kmx_ulp.safetensors"), one_ulp)
    rc, j, err = explain(exe, case, p("kmx_ulp.safetensors"), *km, "--model", "hopper_promoted_blockwise")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "one_ulp" and abs(f.get("ulps", 0)) == 1 and not f.get("reproduced_by")
          and [f.get("group"), f.get("row"), f.get("col")] == [2, 1, 5], f"K-grouped one ulp: {j or err}")
    kcase = p("kbw.safetensors")
    plant(exe, kcase, p("kbw_lost.safetensors"), "hopper_promoted_blockwise", 1, 0, "model", kb)

    def zero_group0(bits):
        bits[0] = 0
    rewrite_got(p("kbw_lost.safetensors"), zero_group0)
    rc, j, err = explain(exe, kcase, p("kbw_lost.safetensors"), *kb, "--model", "hopper_promoted_blockwise")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "lost_group" and [f.get("group"), f.get("row"), f.get("col")] == [0, 0, 0],
          f"K-grouped lost group: {j or err}")

    print(f"{checks - len(fails)}/{checks} checks passed")
    for x in fails:
        print("FAIL:", x)
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
