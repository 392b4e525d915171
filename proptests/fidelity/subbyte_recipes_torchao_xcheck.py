#!/usr/bin/env python3
"""fp8ref's NVFP4 / MX recipes (`fp8-check quantize`, docs/recipes.md) against torchao's own CPU
quantizers, bitwise: codes, block-scale codes and the NVFP4 per-tensor scale.

  subbyte_recipes_torchao_xcheck.py --fp8-check BUILD/tools/fp8-check [--repeat N] [--seed S]
      [--golden-out FILE] [--release-source RECIPE=FILE ...]

torchao (prototype/mx_formats, pure torch, run on CPU tensors: fp8ref runtime torch_cpu):
  nvfp4_torchao_rcp  per_tensor_amax_to_scale(amax(|x|)) then nvfp4_quantize(x, 16, pts)
                     (torchao 0.17.0-0.18.0 multiply x by (1 / pts) / s)
  nvfp4_torchao      the same torchao call against fp8ref's x / (pts·s) form (torchao
                     0.13.0-0.16.0): reported, not counted in the result (it differs on purpose)
  --release-source RECIPE=FILE  RECIPE (an NVFP4 recipe name) against per_tensor_amax_to_scale and
                     nvfp4_quantize as FILE (nvfp4_tensor.py of another torchao release, e.g.
                     `git show v0.16.0:torchao/prototype/mx_formats/nvfp4_tensor.py`) defines them,
                     run with the installed torchao's FP4 packing helpers; counted
  mxfp4_<mode>       to_mx(x, torch.float4_e2m1fn_x2, 32, mode), mode FLOOR / CEIL / EVEN / RCEIL
  mxfp6_<mode>       to_mx(x, "fp6_e2m3" / "fp6_e3m2", 32, mode) (fp8ref --format e2m3 / e3m2)
  mx_<mode> e4m3/e5m2 to_mx(x, torch.float8_e4m3fn / float8_e5m2, 32, mode) (MXFP8)
Inputs: f32 matrices whose blocks (16 or 32 elements) are drawn from classes: ordinary N(0,1)·2^k,
all zero, subnormal amax, tiny, huge, powers of two, element ties times 2^k, amax at the element
format's max·2^k and one ulp either side, one NaN, one ±Inf (MX only: torchao's nvfp4_quantize
takes one per-tensor amax, so a NaN or Inf anywhere poisons the whole tensor). FP4 codes: torchao
packs element 2i in the low nibble (pack_uint4), as fp8ref's F4 does. Codes of elements whose
scaled value is NaN are not compared (FP4 / FP6 have no NaN; torchao's casts map it to a code of
their own), their scales are. Exit 0 iff 0 mismatches. --golden-out writes a small file of torchao
outputs (proptests/cli/data/torchao_recipes_golden.npz: per configuration the inputs of two
shapes and torchao's codes, scale codes and per-tensor scale) that CI re-checks without torch
(cli.torchao_recipes_golden, proptests/cli/test_torchao_recipes_golden.py).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

F32_TINY = np.float32(2.0**-130)


def block_values(rng, cls, n, emax):
    """One block of n f32 values of class cls; emax: the element format's max (6, 7.5, 28, ...)."""
    k = int(rng.integers(-30, 30))
    x = rng.standard_normal(n).astype(np.float64) * 2.0**k
    if cls == "zero":
        x[:] = 0.0
    elif cls == "subnormal":
        x = rng.integers(-(1 << 20), 1 << 20, n).astype(np.float64) * 2.0**-149
    elif cls == "tiny":
        x = rng.standard_normal(n) * 2.0**-120
    elif cls == "huge":
        x = rng.standard_normal(n) * 2.0**120
    elif cls == "pow2":
        x = np.sign(rng.standard_normal(n)) * 2.0 ** rng.integers(-20, 20, n).astype(np.float64)
    elif cls == "ties":  # midpoints of e2m1 / e2m3 codes times one power of two
        x = rng.choice([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.125, 1.0625, 3.25], n) * 2.0**k
        x *= np.sign(rng.standard_normal(n))
    elif cls == "at_max":
        amax = np.float32(emax * 2.0**k)
        x[int(rng.integers(n))] = float(
            [amax, np.nextafter(amax, np.float32(np.inf)), np.nextafter(amax, np.float32(0))][
                int(rng.integers(3))])
    elif cls == "nan":
        x[int(rng.integers(n))] = np.nan
    elif cls == "inf":
        x[int(rng.integers(n))] = np.inf if rng.integers(2) else -np.inf
    return x.astype(np.float32)


def make_input(rng, rows, cols, block, emax, classes):
    x = np.empty((rows, cols), np.float32)
    for r in range(rows):
        for c0 in range(0, cols, block):
            x[r, c0:c0 + block] = block_values(rng, classes[int(rng.integers(len(classes)))],
                                               block, emax)
    return x


def fp8check(exe, x, wd, args):
    inp, out = os.path.join(wd, "x.npy"), os.path.join(wd, "y.npz")
    np.save(inp, x)
    subprocess.run([exe, "quantize", "--in", inp, "--out", out, "--runtime", "torch_cpu"] + args,
                   check=True, stdout=subprocess.DEVNULL)
    d = np.load(out)
    u8 = lambda a: a.view(np.uint8) if a.dtype.kind == "V" else a
    return {k: u8(d[k]) for k in d.files}


def unpack_f4(p):
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), np.uint8)
    out[..., 0::2], out[..., 1::2] = p & 15, p >> 4
    return out


# ---- the configurations --------------------------------------------------------------------------

def nvfp4_input(rng, rows, cols):
    """NVFP4 matrices: the classes, plus "boundary" blocks whose elements are e2m1 rounding
    midpoints times the block's total scale, as either torchao form computes it (x / (pts·s) or
    x·((1/pts)/s), f32), and one f32 ulp either side; the tensor amax is pinned by x[0, 0]."""
    x = make_input(rng, rows, cols, 16, 6.0, FINITE)
    big = np.float32(2.0 ** int(rng.integers(-10, 20)) * 2688.0 * float(rng.uniform(1, 2)))
    x[np.abs(x) > big] = 0.0
    x[0, 0] = big
    pts = np.float32(big / np.float32(2688.0))
    e4m3 = [np.float32(m * 2.0**e) for e in range(-6, 8) for m in (1, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875)]
    for r in range(rows):
        for c0 in range(0, cols, 16):
            if (r, c0) == (0, 0) or rng.random() > 0.4:
                continue
            sv = e4m3[int(rng.integers(len(e4m3)))]
            t_div = np.float32(pts * sv)
            t_mul = np.float32(1.0) / np.float32(np.float32(np.float32(1.0) / pts) / sv)
            mids = rng.choice([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], 16)
            v = np.float32(mids) * np.where(rng.random(16) < 0.5, t_div, t_mul).astype(np.float32)
            v = np.where(rng.random(16) < 0.3, np.nextafter(v, np.float32(np.inf)), v)
            v = np.where(rng.random(16) < 0.3, np.nextafter(v, np.float32(0)), v)
            v[0] = np.float32(6.0) * t_div  # the block amax: s / pts lands on sv
            x[r, c0:c0 + 16] = v * np.sign(rng.standard_normal(16)).astype(np.float32)
    return x


def torchao_nvfp4(x, fns=None):
    import torch
    if fns is None:
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    else:
        nvfp4_quantize = fns["nvfp4_quantize"]
        per_tensor_amax_to_scale = fns["per_tensor_amax_to_scale"]
    t = torch.from_numpy(x)
    pts = per_tensor_amax_to_scale(torch.amax(torch.abs(t)))
    scales, data = nvfp4_quantize(t, 16, pts)
    return (unpack_f4(data.view(torch.uint8).numpy()), scales.view(torch.uint8).numpy(),
            np.float32(pts.item()))


def release_nvfp4(path):
    """per_tensor_amax_to_scale and nvfp4_quantize (with the _nvfp4_quantize / _Float8Round it
    calls) as another torchao release's nvfp4_tensor.py defines them: that file's own source, its
    module imports replaced by the installed torchao's constants and FP4 packing helpers."""
    import ast
    from typing import Optional

    import torch
    from torchao.prototype.mx_formats.constants import F4_E2M1_MAX, F8E4M3_MAX
    from torchao.prototype.mx_formats.kernels import f32_to_f4_unpacked, pack_uint4
    with open(path) as f:
        tree = ast.parse(f.read())
    names = ("per_tensor_amax_to_scale", "nvfp4_quantize", "_nvfp4_quantize", "_Float8Round")
    body = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    ns = {"torch": torch, "Optional": Optional, "F4_E2M1_MAX": F4_E2M1_MAX, "F8E4M3_MAX": F8E4M3_MAX,
          "E4M3_EPS": torch.finfo(torch.float8_e4m3fn).tiny, "f32_to_f4_unpacked": f32_to_f4_unpacked,
          "pack_uint4": pack_uint4}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    return ns


def torchao_mx(x, elem, mode):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    dt = {"e2m1": torch.float4_e2m1fn_x2, "e2m3": "fp6_e2m3", "e3m2": "fp6_e3m2",
          "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[elem]
    scale, data = to_mx(torch.from_numpy(x), dt, 32, ScaleCalculationMode[mode.upper()])
    data = data.view(torch.uint8).numpy()
    return (unpack_f4(data) if elem == "e2m1" else data), scale.view(torch.uint8).numpy(), None


EMAX = {"e2m1": 6.0, "e2m3": 7.5, "e3m2": 28.0, "e4m3": 448.0, "e5m2": 57344.0}
FINITE = ["ordinary"] * 4 + ["zero", "subnormal", "tiny", "huge", "pow2", "ties", "at_max"]


def configurations(release_sources=()):
    """(name, block, element, classes, torchao function, fp8-check arguments)."""
    for recipe in ("nvfp4_torchao_rcp", "nvfp4_torchao"):
        yield (recipe, 16, "e2m1", FINITE, torchao_nvfp4,
               ["--recipe", recipe, "--block", "1x16", "--layout", "ue4m3_row_major"])
    for mode in ("floor", "ceil", "even", "rceil"):
        for elem in ("e2m1", "e2m3", "e3m2", "e4m3", "e5m2"):
            recipe = {"e2m1": f"mxfp4_{mode}", "e2m3": f"mxfp6_{mode}", "e3m2": f"mxfp6_{mode}"}.get(
                elem, f"mx_{mode}")
            yield (f"{recipe} {elem}", 32, elem, FINITE + ["nan", "inf"],
                   lambda x, e=elem, m=mode: torchao_mx(x, e, m),
                   ["--recipe", recipe, "--block", "1x32", "--layout", "e8m0_row_major"] +
                   ([] if elem == "e2m1" else ["--format", elem]))
    for spec in release_sources:  # last: the draws of the configurations above stay the same
        recipe, path = spec.split("=", 1)
        fns = release_nvfp4(path)
        yield (f"{recipe} @{os.path.basename(path)}", 16, "e2m1", FINITE,
               lambda x, fns=fns: torchao_nvfp4(x, fns),
               ["--recipe", recipe, "--block", "1x16", "--layout", "ue4m3_row_major"])


SHAPES = ((4, 64), (16, 96), (33, 128), (7, 320))


def compare(name, block, elem, ref, got):
    """Mismatch counts (codes, scales, global scale) and the compared code count."""
    ref_codes, ref_scales, ref_pts = ref
    codes, scales = got["codes"], got["scales"]  # .npz: F4 one code per byte (tools/tensor_io/npy.cpp)
    keep = np.ones(ref_codes.shape, bool)
    if elem in ("e2m1", "e2m3", "e3m2"):  # no NaN code: NaN-scaled elements are not compared
        keep &= ~np.repeat(ref_scales == 0xFF, block, axis=-1)[..., :ref_codes.shape[-1]]
    bad_c = int(((codes != ref_codes) & keep).sum())
    bad_s = int((scales != ref_scales).sum())
    bad_g = 0
    if ref_pts is not None:
        bad_g = int(np.float32(got["global_scale"]).view(np.uint32) != np.float32(ref_pts).view(np.uint32))
    return bad_c, bad_s, bad_g, int(keep.sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--repeat", type=int, default=6, help="input draws per configuration and shape")
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--golden-out", default=None, help="write torchao's outputs for CI (small)")
    ap.add_argument("--release-source", action="append", default=[], metavar="RECIPE=FILE",
                    help="also compare RECIPE with another torchao release's nvfp4_tensor.py")
    args = ap.parse_args()
    try:
        import torch
        import torchao
    except ImportError as e:
        print(f"error: cannot import torch / torchao: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    print(f"torch {torch.__version__}, torchao {torchao.__version__}, CPU tensors (fp8ref runtime "
          f"torch_cpu), seed {args.seed}")
    print(f"{'configuration':<22}{'tensors':>8}{'codes':>10}{'scales':>8}{'code mism.':>11}"
          f"{'scale mism.':>12}{'pts mism.':>10}")
    total_bad, golden = 0, {}
    with tempfile.TemporaryDirectory(prefix="fp8ref_ao_") as wd:
        for name, block, elem, classes, ref_fn, cli_args in configurations(args.release_source):
            row = np.zeros(6, np.int64)
            for rep in range(args.repeat):
                for rows, cols in SHAPES:
                    x = (nvfp4_input(rng, rows, cols) if name.startswith("nvfp4") else
                         make_input(rng, rows, cols, block, EMAX[elem], classes))
                    ref = ref_fn(x)
                    got = fp8check(args.fp8_check, x, wd, cli_args)
                    bad_c, bad_s, bad_g, n_codes = compare(name, block, elem, ref, got)
                    row += (1, n_codes, ref[1].size, bad_c, bad_s, bad_g)

                    golden_case = name != "nvfp4_torchao" and "@" not in name  # torchao 0.18 only
                    if rep == 0 and (rows, cols) in SHAPES[:2] and golden_case:
                        key = f"{name.replace(' ', ':')}/{rows}x{cols}"
                        golden[key + "/x"] = x
                        golden[key + "/codes"], golden[key + "/scales"] = ref[0], ref[1]
                        if ref[2] is not None:
                            golden[key + "/global_scale"] = np.float32(ref[2])
            informational = name == "nvfp4_torchao"
            print(f"{name:<22}{row[0]:>8}{row[1]:>10}{row[2]:>8}{row[3]:>11}{row[4]:>12}{row[5]:>10}"
                  + ("  (x / (pts·s): torchao 0.13-0.16's form, not 0.18's; not counted)"
                     if informational else ""))
            total_bad += 0 if informational else int(row[3] + row[4] + row[5])
    if args.golden_out:  # provenance first (meta/...), then per case x, codes, scales[, pts]
        meta = {"meta/generator": np.array(" ".join(["subbyte_recipes_torchao_xcheck.py"] + sys.argv[1:])),
                "meta/versions": np.array(f"torch {torch.__version__}, torchao {torchao.__version__}"),
                "meta/seed": np.array(args.seed)}
        np.savez_compressed(args.golden_out, **meta, **golden)
        print(f"wrote {len(golden)} arrays to {args.golden_out}")
    print("RESULT:", "PASS" if total_bad == 0 else f"FAIL ({total_bad} mismatches)")
    return 0 if total_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
