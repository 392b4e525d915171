"""`fp8-check quantize` against torchao's own outputs kept as golden data (no torch needed):
proptests/cli/data/torchao_recipes_golden.npz, written by
proptests/fidelity/subbyte_recipes_torchao_xcheck.py --golden-out (torchao 0.18.0 on CPU tensors,
fp8ref runtime torch_cpu; docs/recipes.md "torchao cross-check"). Per configuration (nvfp4_torchao_rcp;
mxfp4 / mxfp6 e2m3 / e3m2 / MXFP8 e4m3 / e5m2 in the FLOOR, CEIL, EVEN and RCEIL modes) the
inputs of two shapes; codes, block scale codes and the NVFP4 per-tensor scale must be equal bit
for bit (FP4 / FP6 codes of blocks whose scale is NaN excepted: those formats have no NaN).
Usage: test_torchao_recipes_golden.py --fp8-check EXE --work DIR"""
import argparse
import os
import subprocess
import sys

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torchao_recipes_golden.npz")


def cli_args(config):
    recipe, _, elem = config.partition(":")
    if recipe.startswith("nvfp4"):
        return ["--recipe", recipe, "--block", "1x16", "--layout", "ue4m3_row_major"], 16, "e2m1"
    fmt = [] if elem == "e2m1" else ["--format", elem]
    return ["--recipe", recipe, "--block", "1x32", "--layout", "e8m0_row_major"] + fmt, 32, elem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--work", required=True)
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    g = np.load(GOLDEN)
    cases = sorted({k.rsplit("/", 1)[0] for k in g.files if not k.startswith("meta/")})
    print(f"{GOLDEN}: {g['meta/versions']}; generator: {g['meta/generator']}")
    configs, codes_checked = set(), 0
    for case in cases:
        config = case.split("/")[0]
        args, block, elem = cli_args(config)
        x = g[case + "/x"]
        if not x.size or not (np.abs(x[np.isfinite(x)]) > 0).any():
            sys.exit(f"{case}: an empty or all-zero input checks nothing")
        inp, out = os.path.join(o.work, "x.npy"), os.path.join(o.work, "y.npz")
        np.save(inp, x)
        cmd = [o.fp8_check, "quantize", "--in", inp, "--out", out, "--runtime", "torch_cpu"] + args
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
        y = np.load(out)
        got_c, got_s = y["codes"].view(np.uint8), y["scales"].view(np.uint8)
        want_c, want_s = g[case + "/codes"], g[case + "/scales"]
        keep = np.ones(want_c.shape, bool)
        if elem in ("e2m1", "e2m3", "e3m2"):
            keep &= ~np.repeat(want_s == 0xFF, block, axis=-1)[..., :want_c.shape[-1]]
        bad = np.argwhere((got_c != want_c) & keep)
        if len(bad):
            i = tuple(bad[0])
            sys.exit(f"{case}: code at {i}: got {got_c[i]:#x}, torchao {want_c[i]:#x} (x = {x[i]!r})")
        if not np.array_equal(got_s, want_s):
            i = tuple(np.argwhere(got_s != want_s)[0])
            sys.exit(f"{case}: scale code at {i}: got {got_s[i]:#x}, torchao {want_s[i]:#x}")
        if case + "/global_scale" in g.files:
            gs, ws = np.float32(y["global_scale"]), np.float32(g[case + "/global_scale"])
            if gs.view(np.uint32) != ws.view(np.uint32):
                sys.exit(f"{case}: global scale {gs!r}, torchao {ws!r}")
        configs.add(config)
        codes_checked += int(keep.sum())
    if len(configs) < 21:
        sys.exit(f"only {len(configs)} configurations in {GOLDEN}")
    print(f"{len(cases)} cases, {len(configs)} configurations, {codes_checked} codes bitwise equal "
          "to torchao 0.18.0")


if __name__ == "__main__":
    main()
