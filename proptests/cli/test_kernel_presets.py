#!/usr/bin/env python3
"""`fp8-check verify|oracle grouped-gemm --kernel NAME` (docs/presets.md) against outputs planted by
`fp8-check oracle` under one explicit configuration: each preset must name exactly the planted
member (text and --json) with no model flag, and must reject an output planted by a configuration
outside the preset (another epilogue order, another split-K family, another model). Then
`oracle --kernel`, explicit overrides, `--strength` (other matching configurations, vacuous data),
the screen (`--screen 64`, 4096 and 0 give the same result, also for a member that passes the
screen and differs outside it) and bad input (one line, exit 2). Exit 0 iff every check holds.
Usage: test_kernel_presets.py --fp8-check PATH --workdir DIR
"""
import argparse
import json
import os
import sys

import numpy as np

from kernel_cases import (OPERANDS, block_codes, load_tensor_bytes, plant, rewrite_got, run,
                          save_safetensors, scales)

M, N = 32, 40


def case_scaled_mm(rng, path, scaling, k):
    a, bt = block_codes(rng, M, k), block_codes(rng, N, k)
    if scaling == "tensorwise":
        sa, sb = scales(rng, 1).reshape(()), scales(rng, 1).reshape(())
    elif scaling == "rowwise":
        sa, sb = scales(rng, M, 1), scales(rng, 1, N)
    else:
        sa, sb = scales(rng, M, k // 128), scales(rng, 1, k // 128)  # N = 48: one 128-row block
    save_safetensors(path, {"a": ("F8_E4M3", a), "b": ("F8_E4M3", bt.T.copy()),
                            "sa": ("F32", sa), "sb": ("F32", sb)})


def case_grouped_m(rng, path, k):
    g = 3
    a, b = block_codes(rng, M, k), block_codes(rng, g * N, k).reshape(g, N, k)
    save_safetensors(path, {"a": ("F8_E4M3", a), "b": ("F8_E4M3", b), "sa": ("F32", scales(rng, M)),
                            "sb": ("F32", scales(rng, g, N)),
                            "offs": ("I32", np.array([10, 10, 28], np.int32))})


def case_grouped_k(rng, path):
    ends = [256, 256, 1024]
    a, bt = block_codes(rng, M, ends[-1]), block_codes(rng, N, ends[-1])
    save_safetensors(path, {"a": ("F8_E4M3", a), "b": ("F8_E4M3", bt.T.copy()),
                            "sa": ("F32", scales(rng, 3 * M)), "sb": ("F32", scales(rng, 3 * N)),
                            "offs": ("I32", np.array(ends, np.int32))})


# (name, kernel, fast, case builder, explicit flags for planting, planted member, rejected member)
# A member is (model, split_k, split_blocks, epilogue); describe() gives verify's spelling.
def describe(m):
    model, s, l, e = m
    return f"{model} split_blocks={l} epilogue={e}" if l else f"{model} split_k={s} epilogue={e}"


CASES = [
    ("scaled_mm_tensorwise", "torch._scaled_mm", False, ("mm", "tensorwise", 2048),
     ("hopper_promoted_tensorwise", 3, 0, "scale_product"), ("hopper_unpromoted", 3, 0, "scale_product")),
    ("scaled_mm_tensorwise_fast", "torch._scaled_mm", True, ("mm", "tensorwise", 2048),
     ("hopper_unpromoted", 2, 0, "scale_product"), ("hopper_promoted_tensorwise", 2, 0, "scale_product")),
    ("scaled_mm_rowwise", "torch._scaled_mm", False, ("mm", "rowwise", 1024),
     ("hopper_promoted_rowwise", 1, 0, "b_then_a"), ("hopper_promoted_rowwise", 1, 0, "a_then_b")),
    ("scaled_mm_blockwise", "torch._scaled_mm", False, ("mm", "blockwise", 4096),
     ("hopper_promoted_blockwise", 1, 24, "model"), ("hopper_promoted_blockwise", 2, 0, "model")),
    ("deep_gemm_blockwise", "deep_gemm.fp8_gemm_nt", False, ("mm", "blockwise", 4096),
     ("hopper_promoted_blockwise", 1, 0, "model"), ("hopper_promoted_blockwise", 1, 24, "model")),
    ("scaled_grouped_mm_m", "torch._scaled_grouped_mm", False, ("gm", "rowwise", 1024),
     ("hopper_promoted_rowwise", 1, 0, "a_then_b"), ("hopper_promoted_rowwise", 1, 0, "b_then_a")),
    ("scaled_grouped_mm_m_fast", "torch._scaled_grouped_mm", True, ("gm", "rowwise", 1024),
     ("hopper_unpromoted", 1, 0, "a_then_b"), ("hopper_promoted_rowwise", 1, 0, "a_then_b")),
    ("scaled_grouped_mm_k", "torch._scaled_grouped_mm", False, ("gk", "rowwise", 1024),
     ("hopper_promoted_rowwise", 1, 0, "a_then_b"), ("hopper_promoted_rowwise", 1, 0, "b_then_a")),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    o = ap.parse_args()
    exe, wd = o.fp8_check, o.workdir
    os.makedirs(wd, exist_ok=True)
    rng = np.random.default_rng(20261125)
    fails, checks = [], 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            fails.append(what)

    for name, kernel, fast, (kind, scaling, k), good, bad in CASES:
        case = os.path.join(wd, f"{name}.safetensors")
        if kind == "mm":
            case_scaled_mm(rng, case, scaling, k)
            layout, extra = "kn", []
        elif kind == "gm":
            case_grouped_m(rng, case, k)
            layout, extra = "nk", ["--offs", "offs"]
        else:
            case_grouped_k(rng, case)
            layout, extra = "kn", ["--offs", "offs", "--grouping", "k"]
        out_dtype = "f32"  # f32 separates epilogue orders that a bf16 rounding can hide
        flags = ["--scaling", scaling, "--b-layout", layout, "--out-dtype", out_dtype, *extra]
        verify = ["verify", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got", *extra,
                  "--kernel", kernel] + (["--fast-accum"] if fast else [])
        for member, want_rc in ((good, 0), (bad, 1)):
            got = os.path.join(wd, f"{name}_{want_rc}.safetensors")
            plant(exe, case, got, member[0], member[1], member[2], member[3], flags)
            rc, so, se = run(exe, *verify, "--got-file", got)
            check(rc == want_rc, f"{name}: planted {describe(member)}: exit {rc}, want {want_rc}\n{so}{se}")
            if want_rc == 0:
                check(f"matched: {describe(member)}\n" in so, f"{name}: text names another member:\n{so}")
                rc, so, se = run(exe, *verify, "--got-file", got, "--json")
                j = json.loads(so) if rc == 0 else {}
                check(j.get("matched") == describe(member) and j.get("result") == "PASS",
                      f"{name}: --json: {so}{se}")
            else:
                check("matched: none" in so, f"{name}: a non-member output was not refused:\n{so}")
        # oracle --kernel writes the first member (no split): equal to the explicit configuration.
        first = (good[0], 1, 0, good[3])
        want = os.path.join(wd, f"{name}_first.safetensors")
        plant(exe, case, want, *first, flags)
        mine = os.path.join(wd, f"{name}_oracle_kernel.safetensors")
        rc, so, se = run(exe, "oracle", "grouped-gemm", "--in", case, *OPERANDS, *extra, "--kernel",
                         kernel, *(["--fast-accum"] if fast else []), "--out-dtype", out_dtype,
                         "--out", mine, "--out-name", "got")
        check(rc == 0 and load_tensor_bytes(mine, "got") == load_tensor_bytes(want, "got"),
              f"{name}: oracle --kernel differs from {describe(first)}: {so}{se}")

    # Explicit --split-k overrides the preset's family: one member.
    case = os.path.join(wd, "scaled_mm_tensorwise.safetensors")
    got = os.path.join(wd, "scaled_mm_tensorwise_0.safetensors")
    rc, so, se = run(exe, "verify", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got",
                     "--got-file", got, "--kernel", "torch._scaled_mm", "--split-k", "3", "--json")
    j = json.loads(so) if rc == 0 else {}
    check(rc == 0 and len(j.get("members", [])) == 1, f"--split-k override: {so}{se}")

    # --strength: an all-zero A passes every configuration and is called vacuous.
    zero = os.path.join(wd, "zero_a.safetensors")
    save_safetensors(zero, {"a": ("F8_E4M3", np.zeros((M, 256), np.uint8)),
                            "b": ("F8_E4M3", block_codes(rng, 256, N)),
                            "sa": ("F32", scales(rng, 1).reshape(())), "sb": ("F32", scales(rng, 1).reshape(())),
                            "got": ("F32", np.zeros((M, N), np.float32))})
    rc, so, se = run(exe, "verify", "grouped-gemm", "--in", zero, *OPERANDS, "--got", "got",
                     "--kernel", "torch._scaled_mm", "--strength")
    check(rc == 0 and "warning: A is all zeros" in so and "also matches" in so
          and "warning: the exact model reproduces every output too" in so, f"--strength vacuous: {so}{se}")
    rc, so, se = run(exe, "verify", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got",
                     "--got-file", got, "--kernel", "torch._scaled_mm", "--strength", "--json")
    j = json.loads(so) if rc == 0 else {}
    check(rc == 0 and j.get("strength", {}).get("warnings") == [], f"--strength strong data: {so}{se}")

    # The screen (docs/cli.md "The screen"): the same result with and without it, on an output
    # large enough to be screened (21760 elements; --screen 64: an 8 x 8 grid and 10 whole rows),
    # also when the planted member differs from got on one element outside both stages.
    m2, n2, k2 = 160, 136, 2048
    big = os.path.join(wd, "screen.safetensors")
    save_safetensors(big, {"a": ("F8_E4M3", block_codes(rng, m2, k2)),
                           "b": ("F8_E4M3", block_codes(rng, n2, k2).T.copy()),
                           "sa": ("F32", scales(rng, 1).reshape(())), "sb": ("F32", scales(rng, 1).reshape(()))})
    big_got = os.path.join(wd, "screen_got.safetensors")
    plant(exe, big, big_got, "hopper_promoted_tensorwise", 3, 0, "scale_product",
          ["--scaling", "tensorwise", "--b-layout", "kn"])
    base = ["verify", "grouped-gemm", "--in", big, *OPERANDS, "--got", "got", "--got-file", big_got,
            "--kernel", "torch._scaled_mm", "--json"]
    planted = describe(("hopper_promoted_tensorwise", 3, 0, "scale_product"))

    def screened(extra):
        rc, so, se = run(exe, *base, *extra)
        return rc, (json.loads(so) if rc in (0, 1) else {"error": se})

    def full_counts(j):
        return {m["configuration"]: m["mismatches"] for m in j.get("members", []) if not m["screened_out"]}

    for flip in (False, True):
        if flip:  # element (1, 1): row 1 and column 1 are in neither stage of --screen 64
            rewrite_got(big_got, lambda bits: bits.__setitem__((1, 1), bits[1, 1] ^ 1))
        want = 1 if flip else 0
        runs = {s: screened(["--screen", s]) for s in ("64", "4096", "0")}
        for s, (rc, j) in runs.items():
            check(rc == want and j.get("matched") == (None if flip else planted),
                  f"--screen {s} (flip {flip}): exit {rc}: {j}")
        j0, j64 = runs["0"][1], runs["64"][1]
        check(j64.get("screen") == {"elements": 64, "rows": 10} and j0.get("screen") == {"elements": 0, "rows": 0},
              f"--screen sizes: {j64.get('screen')} {j0.get('screen')}")
        check(all(j0.get(key) == j64.get(key) for key in ("result", "failures", "configuration", "groups")),
              f"--screen 64 vs 0 (flip {flip}): {j64} {j0}")
        counts0 = full_counts(j0)
        check(all(counts0.get(c) == n for c, n in full_counts(j64).items()) and
              full_counts(j64).get(planted) == (1 if flip else 0),
              f"--screen 64: members compared in full differ from --screen 0 (flip {flip}): {j64}")

    # Bad input: one line on stderr, exit 2.
    base = ["verify", "grouped-gemm", "--in", case, *OPERANDS, "--got", "got", "--got-file", got]
    bad = [(base + ["--kernel", "torch._scaled_nope"], "unknown kernel"),
           (base, "--model or --kernel is required"),
           (["verify", "grouped-gemm", "--in", os.path.join(wd, "scaled_mm_blockwise.safetensors"),
             *OPERANDS, "--got", "got", "--got-file", os.path.join(wd, "scaled_mm_blockwise_0.safetensors"),
             "--kernel", "torch._scaled_mm", "--fast-accum"], "has no blockwise kernel with fast accumulation"),
           (base + ["--kernel", "deep_gemm.fp8_gemm_nt", "--grouping", "k", "--offs", "sa"], "M-grouped only")]
    for args, text in bad:
        rc, so, se = run(exe, *args)
        check(rc == 2 and text in se and se.count("\n") == 1, f"bad input '{text}': exit {rc}: {se}")

    print(f"{checks - len(fails)}/{checks} checks passed")
    for f in fails:
        print("FAIL:", f)
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
