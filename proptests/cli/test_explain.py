#!/usr/bin/env python3
"""`fp8-check explain grouped-gemm` (docs/cli.md "explain") on outputs planted by `fp8-check oracle`
under known configurations, and on deliberately broken outputs: explain must rank the planted
configuration first with 0 mismatches (exit 0), and for a non-member or a broken output (exit 1)
name the cause of the first failing element: another epilogue order, another split-K (whose
partial sums agree with the best member's before the first slice boundary), a zeroed group, rows
computed with another group's weights (offsets off by some rows), or a one-ulp change no
configuration gives. Exit 0 iff every check holds.
Usage: test_explain.py --fp8-check PATH --workdir DIR
"""
import argparse
import json
import os
import sys

import numpy as np

from kernel_cases import OPERANDS, block_codes, explain, plant, rewrite_got, run, save_safetensors, scales

M, N = 64, 48
MS = 16  # rows of the non-grouped cases (kept small: explain scores about 50 configurations)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    o = ap.parse_args()
    exe, wd = o.fp8_check, o.workdir
    os.makedirs(wd, exist_ok=True)
    rng = np.random.default_rng(7)
    fails, checks = [], 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            fails.append(what)

    p = lambda name: os.path.join(wd, name)
    # Rowwise _scaled_mm case; tensorwise case for a planted split-K.
    k = 1024
    save_safetensors(p("rw.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, MS, k)), "b": ("F8_E4M3", block_codes(rng, N, k).T.copy()),
        "sa": ("F32", scales(rng, MS, 1)), "sb": ("F32", scales(rng, 1, N))})
    rw = ["--scaling", "rowwise", "--b-layout", "kn", "--out-dtype", "f32"]
    k = 2048
    save_safetensors(p("tw.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, MS, k)), "b": ("F8_E4M3", block_codes(rng, N, k).T.copy()),
        "sa": ("F32", scales(rng, 1).reshape(())), "sb": ("F32", scales(rng, 1).reshape(()))})
    tw = ["--scaling", "tensorwise", "--b-layout", "kn", "--out-dtype", "f32"]

    # 1. No preset: the planted configuration is ranked first with 0 mismatches, exit 0.
    plant(exe, p("tw.safetensors"), p("tw_s3.safetensors"), "hopper_unpromoted", 3, 0, "scale_product", tw)
    rc, j, err = explain(exe, p("tw.safetensors"), p("tw_s3.safetensors"), "--scaling", "tensorwise",
                         "--b-layout", "kn")
    r = j.get("ranking", [{}])
    check(rc == 0 and j.get("exact_match") and r[0].get("configuration") ==
          "hopper_unpromoted split_k=3 epilogue=scale_product" and r[0].get("mismatches") == 0
          and r[1].get("mismatches", 0) > 0, f"planted unpromoted S=3 not named: {j or err}")

    # 2. Another epilogue order than the preset's: kind epilogue, exit 1.
    plant(exe, p("rw.safetensors"), p("rw_ab.safetensors"), "hopper_promoted_rowwise", 1, 0, "a_then_b", rw)
    rc, j, err = explain(exe, p("rw.safetensors"), p("rw_ab.safetensors"), "--kernel", "torch._scaled_mm")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "epilogue" and j["ranking"][0]["mismatches"] == 0
          and "a_then_b" in j["ranking"][0]["configuration"], f"epilogue story: {j or err}")

    # 3. Split-K outside the preset (DeepGEMM: no split) planted as 24-block slices at K = 4096.
    k = 4096
    save_safetensors(p("bw.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, MS, k)), "b": ("F8_E4M3", block_codes(rng, N, k)),
        "sa": ("F32", scales(rng, MS, k // 128)), "sb": ("F32", scales(rng, 1, k // 128))})
    bw = ["--scaling", "blockwise", "--b-layout", "nk", "--out-dtype", "f32"]
    plant(exe, p("bw.safetensors"), p("bw_l24.safetensors"), "hopper_promoted_blockwise", 1, 24, "model", bw)
    rc, j, err = explain(exe, p("bw.safetensors"), p("bw_l24.safetensors"), "--kernel", "deep_gemm.fp8_gemm_nt")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "split_k" and (f.get("diverged_chunk") or 0) >= 24
          and "split_blocks=24" in j["ranking"][0]["configuration"], f"split-K story: {j or err}")

    # 4. M-grouped: a zeroed group, then rows computed with another group's weights.
    k = 512
    g = 3
    save_safetensors(p("gm.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, M, k)), "b": ("F8_E4M3", block_codes(rng, g * N, k).reshape(g, N, k)),
        "sa": ("F32", scales(rng, M)), "sb": ("F32", scales(rng, g, N)),
        "offs": ("I32", np.array([20, 20, 56], np.int32)), "offs_shift": ("I32", np.array([16, 16, 56], np.int32))})
    gm = ["--scaling", "rowwise", "--b-layout", "nk", "--out-dtype", "f32"]
    plant(exe, p("gm.safetensors"), p("gm_lost.safetensors"), "hopper_promoted_rowwise", 1, 0, "a_then_b", gm + ["--offs", "offs"])

    def zero_group2(bits):
        bits[20:56] = 0
    rewrite_got(p("gm_lost.safetensors"), zero_group2)
    ex = ["--offs", "offs", "--kernel", "torch._scaled_grouped_mm"]
    rc, j, err = explain(exe, p("gm.safetensors"), p("gm_lost.safetensors"), *ex)
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "lost_group" and f.get("row") == 20 and f.get("group") == 2,
          f"lost group story: {j or err}")
    plant(exe, p("gm.safetensors"), p("gm_shift.safetensors"), "hopper_promoted_rowwise", 1, 0, "a_then_b",
          gm + ["--offs", "offs_shift"])
    rc, j, err = explain(exe, p("gm.safetensors"), p("gm_shift.safetensors"), *ex)
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "wrong_group" and f.get("row") == 16 and f.get("wrong_group") == 2,
          f"wrong group story: {j or err}")

    # 5. One element one ulp up: one mismatch, kind one_ulp.
    plant(exe, p("tw.safetensors"), p("tw_ulp.safetensors"), "hopper_promoted_tensorwise", 1, 0, "scale_product", tw)

    def one_ulp(bits):
        bits[5, 7] += 1
    rewrite_got(p("tw_ulp.safetensors"), one_ulp)
    rc, j, err = explain(exe, p("tw.safetensors"), p("tw_ulp.safetensors"), "--kernel", "torch._scaled_mm")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "one_ulp" and abs(f.get("ulps", 0)) == 1 and [f.get("row"), f.get("col")] == [5, 7]
          and j["ranking"][0]["mismatches"] == 1, f"one-ulp story: {j or err}")

    # 6. K-grouped (2d x 2d) with another epilogue order than _scaled_grouped_mm's.
    ends = [256, 256, 768]
    save_safetensors(p("gk.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, M, ends[-1])), "b": ("F8_E4M3", block_codes(rng, N, ends[-1]).T.copy()),
        "sa": ("F32", scales(rng, 3 * M)), "sb": ("F32", scales(rng, 3 * N)),
        "offs": ("I32", np.array(ends, np.int32))})
    gk = ["--scaling", "rowwise", "--b-layout", "kn", "--out-dtype", "f32", "--offs", "offs", "--grouping", "k"]
    plant(exe, p("gk.safetensors"), p("gk_ba.safetensors"), "hopper_promoted_rowwise", 1, 0, "b_then_a", gk)
    rc, j, err = explain(exe, p("gk.safetensors"), p("gk_ba.safetensors"), "--offs", "offs", "--grouping", "k",
                         "--kernel", "torch._scaled_grouped_mm")
    f = j.get("first") or {}
    check(rc == 1 and f.get("kind") == "epilogue" and f.get("group") in (0, 2), f"K-grouped story: {j or err}")

    # 7. Text: one summary line first; bad input: one line, exit 2.
    rc, so, se = run(exe, "explain", "grouped-gemm", "--in", p("tw.safetensors"), *OPERANDS, "--got", "got",
                     "--got-file", p("tw_ulp.safetensors"), "--kernel", "torch._scaled_mm")
    check(rc == 1 and so.startswith("explain grouped-gemm: DIFFERS: best preset member ") and "one_ulp" in so.splitlines()[0],
          f"text summary: {so}{se}")
    rc, so, se = run(exe, "explain", "grouped-gemm", "--in", p("tw.safetensors"), *OPERANDS, "--got", "got",
                     "--got-file", p("gk_ba.safetensors"), "--kernel", "torch._scaled_mm", "--out-dtype", "f32")
    check(rc == 2 and se.count("\n") == 1, f"shape mismatch must be one line, exit 2: {rc} {se}")

    # 8. The screen (docs/cli.md "explain") on an output large enough for verify's default screen
    # (17280 compared elements > 4 x 4096: a grid of 64 rows x the 16 columns; 1080 compared rows
    # >= 16 x 64, so its second stage runs on 67 whole rows),
    # against --screen 0 (every configuration compared in full): the same verdict, best
    # configuration and first failing element, and every count reported in full equal; the
    # planted configuration ranked first. K = 512, N = 16 keep the 29 full runs of --screen 0 cheap.
    k, mb, g = 512, 1088, 4
    save_safetensors(p("big.safetensors"), {
        "a": ("F8_E4M3", block_codes(rng, mb, k)), "b": ("F8_E4M3", block_codes(rng, g * 16, k).reshape(g, 16, k)),
        "sa": ("F32", scales(rng, 1).reshape(())), "sb": ("F32", scales(rng, g)),
        "offs": ("I32", np.array([272, 544, 816, 1080], np.int32))})
    big = ["--scaling", "tensorwise", "--b-layout", "nk", "--out-dtype", "f32", "--offs", "offs"]
    plant(exe, p("big.safetensors"), p("big_s2.safetensors"), "hopper_unpromoted", 2, 0, "b_then_a", big)
    planted = "hopper_unpromoted split_k=2 epilogue=b_then_a"
    with open(p("big_s2.safetensors"), "rb") as fh:
        raw = bytearray(fh.read())
    hl = int.from_bytes(raw[:8], "little")
    off = 8 + hl + json.loads(raw[8:8 + hl])["got"]["data_offsets"][0]
    raw[off + 4 * (1078 * 16 + 5)] ^= 1  # element [1078, 5]: in no row of either screen stage
    with open(p("big_flip.safetensors"), "wb") as fh:
        fh.write(raw)
    for got, want_rc in (("big_s2", 0), ("big_flip", 1)):
        args = ["--scaling", "tensorwise", "--offs", "offs"]
        rc, j, err = explain(exe, p("big.safetensors"), p(got + ".safetensors"), *args)
        rc0, j0, err0 = explain(exe, p("big.safetensors"), p(got + ".safetensors"), *args,
                                "--screen", "0", "--top", "1000")
        full0 = {r["configuration"]: r["mismatches"] for r in j0.get("ranking", [])}
        r, f, f0 = j.get("ranking", [{}]), j.get("first") or {}, j0.get("first") or {}
        check(rc == rc0 == want_rc and j.get("exact_match") == j0.get("exact_match")
              and j.get("screen") == {"elements": 1024, "rows": 67} and j0.get("screen") == {"elements": 0, "rows": 0}
              and r[0].get("configuration") == j0["ranking"][0]["configuration"] == planted
              and r[0].get("mismatches") == (1 if want_rc else 0)
              and (f.get("row"), f.get("col"), f.get("best")) == (f0.get("row"), f0.get("col"), f0.get("best"))
              and len(full0) >= 20, f"screened explain {got}: {j or err} / {j0 or err0}")
        check(all("screened_out" not in x and x["mismatches"] == full0.get(x["configuration"]) for x in r),
              f"screened explain {got}: full counts {r} vs {full0}")
    rc, so, se = run(exe, "explain", "grouped-gemm", "--in", p("big.safetensors"), *OPERANDS, "--got", "got",
                     "--got-file", p("big_flip.safetensors"), "--scaling", "tensorwise", "--offs", "offs")
    line = [x for x in so.splitlines() if x.startswith("screen: ")]
    check(rc == 1 and line and "1024 sampled elements and 67 whole rows" in line[0]
          and f"of {len(full0)} compared on every element" in line[0], f"screen line: {so}{se}")

    print(f"{checks - len(fails)}/{checks} checks passed")
    for x in fails:
        print("FAIL:", x)
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
