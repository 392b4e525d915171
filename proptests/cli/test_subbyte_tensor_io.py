"""F6_E2M3 / F6_E3M2 / F4 tensors through every fp8-check path that reads or writes FP8 tensors
(docs/cli.md "File formats"): safetensors (packed: F4 two codes per byte, element 0 low; F6 6 bits
each, LSB first) and ml_dtypes' one-code-per-byte npy read with --as, through `inspect` (every
code's count and value against ml_dtypes), `diff` (equal; one changed code found at its index with
both codes), `golden accept` (the stored regression file holds the same codes), `explain
grouped-gemm` with F6 / F4 operands (the story told, the exact column the exact sum; without a
model ranked against `exact`, the one configuration of its list that takes them), `quantize
--f6-codes packed` to .safetensors / .npz (the same codes) and to .pt (refused: torch has no
float6 dtype; nothing written), and an .npz of ml_dtypes float6 codes and float8_e8m0fnu scales
(both opaque '|V1') read with one --as NAME=DTYPE per tensor (inspect's values against
ml_dtypes; diff against the safetensors; unknown names and a second plain --as refused with
exit 2), and GEMM operands of one F6 code per byte (U8 with --as NAME=e2m3:unpacked, npz with
--as NAME=e2m3) giving the packed file's oracle output.
Usage: test_subbyte_tensor_io.py --fp8-check EXE --work DIR"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli_blackwell_gemm as bw  # noqa: E402  (safetensors writer, FP4 / FP6 packing, GEMM cases)

FMTS = {"F6_E2M3": (ml_dtypes.float6_e2m3fn, 64, "e2m3"), "F6_E3M2": (ml_dtypes.float6_e3m2fn, 64, "e3m2"),
        "F4": (ml_dtypes.float4_e2m1fn, 16, "fp4")}


def run(exe, args, want, capture=True):
    r = subprocess.run([exe] + args, capture_output=capture, text=True, timeout=120)
    if r.returncode != want:
        sys.exit(f"fp8-check {' '.join(args)}: exit {r.returncode}, want {want}\n{r.stdout}\n{r.stderr}")
    return r


def packed(codes, dtype):
    vals = codes.view(FMTS[dtype][0]).astype(np.float64)
    return bw.pack_f4(vals) if dtype == "F4" else bw.pack_f6(vals, FMTS[dtype][0])


def check_inspect(exe, path, codes, dtype, extra=()):
    j = json.loads(run(exe, ["inspect", path, "--json", "--top", "64"] + list(extra), 0).stdout)
    t = j["tensors"][0]
    if t["dtype"] != dtype or t["numel"] != codes.size:
        sys.exit(f"{path}: inspect says {t['dtype']} {t['numel']}, want {dtype} {codes.size}")
    want = {int(c): int(n) for c, n in zip(*np.unique(codes, return_counts=True))}
    got = {int(e["code"], 16): int(e["count"]) for e in t["top_codes"]}
    if got != want:
        sys.exit(f"{path}: code counts {got} != {want}")
    for e in t["top_codes"]:
        v = float(np.uint8(int(e["code"], 16)).view(FMTS[dtype][0]))
        if e["value"] != v:
            sys.exit(f"{path}: code {e['code']} reads as {e['value']}, ml_dtypes {v}")


def check_file_paths(exe, work, rng, dtype):
    n_codes = FMTS[dtype][1]
    codes = np.concatenate([np.arange(n_codes), rng.integers(0, n_codes, 3 * n_codes + 5)]).astype(np.uint8)
    codes = codes[: (codes.size // 7) * 7].reshape(7, -1)  # 7 rows: the packing tail is partial
    if dtype == "F4" and codes.shape[1] % 2:
        codes = codes[:, :-1]
    st = os.path.join(work, f"{dtype}.safetensors")
    bw.write_safetensors(st, {"t": (dtype, codes.shape, packed(codes, dtype))})
    check_inspect(exe, st, codes, dtype)
    run(exe, ["diff", st, st], 0)
    bad = codes.copy()
    bad[3, 5] ^= 1
    st2 = os.path.join(work, f"{dtype}_bad.safetensors")
    bw.write_safetensors(st2, {"t": (dtype, bad.shape, packed(bad, dtype))})
    j = json.loads(run(exe, ["diff", st, st2, "--json"], 1).stdout)
    m = j["tensors"][0]
    first = m["first_mismatches"][0]
    if m["bitwise_mismatches"] != 1 or first["index"] != [3, 5] or \
            int(first["a_hex"], 16) != codes[3, 5] or int(first["b_hex"], 16) != bad[3, 5]:
        sys.exit(f"{dtype}: diff reports {m['bitwise_mismatches']} mismatches, first {first}")
    npy = os.path.join(work, f"{dtype}.npy")  # ml_dtypes: one code per byte, opaque '|V1'
    np.save(npy, codes.view(FMTS[dtype][0]))
    check_inspect(exe, npy, codes, dtype, ["--as", FMTS[dtype][2]])
    run(exe, ["diff", npy, st, "--as", FMTS[dtype][2]], 0)
    repo = os.path.join(work, f"golden_{dtype}")
    shutil.rmtree(repo, ignore_errors=True)  # a fresh golden set on every run
    os.makedirs(repo)
    subprocess.run(["git", "init", "-q", repo], check=True)
    r = subprocess.run([exe, "golden", "accept", st, "--as", f"case_{dtype.lower()}"], cwd=repo,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"golden accept {dtype}: exit {r.returncode}\n{r.stderr}")
    stored = os.path.join(repo, "golden", "regressions", f"case_{dtype.lower()}.safetensors")
    run(exe, ["diff", st, stored], 0)
    print(f"{dtype}: {codes.size} codes through safetensors / npy --as, inspect, diff, golden accept")


def check_explain(exe, work, rng):
    for fp in ("f6", "f4"):
        path, common, want = bw.case(rng, work, exe, "blackwell_f8f6f4", "none", fp, 64)
        out = path.replace(".safetensors", "_out.safetensors")
        z = bw.read_f32(out, "out")
        z[1, 1] = np.nextafter(z[1, 1], np.float32(np.inf))
        nudged = os.path.join(work, f"explain_{fp}_bad.safetensors")
        bw.write_safetensors(nudged, {"out": ("F32", z.shape, z.astype(np.float32).tobytes())})
        args = ["explain", "grouped-gemm"] + common + ["--got", "out", "--got-file", nudged]
        j = json.loads(run(exe, args + ["--json"], 1).stdout)
        first = j["first"]
        # K = 64: the one chunk's exact partial sum is the element's exact value
        if [first["row"], first["col"]] != [1, 1] or \
                first["chain"][0]["exact"] != float(np.float32(want[1, 1])):
            sys.exit(f"explain {fp}: first failing element {first['row']}, {first['col']}, chain "
                     f"{first['chain']}, exact {want[1, 1]}")
        # without a model: ranked against `exact` (the one configuration taking FP6 / FP4)
        no_model = [a for a in args if a != "blackwell_f8f6f4" and a != "--model"]
        j = json.loads(run(exe, no_model + ["--json"], 1).stdout)
        if [r["configuration"].split()[0] for r in j["ranking"]] != ["exact"]:
            sys.exit(f"explain {fp} without a model: {j['ranking']}")
    print("explain grouped-gemm: F6 and F4 operands explained, the exact column the exact sum; "
          "without a model ranked against exact")


def check_quantize(exe, work, rng):
    x = (rng.standard_normal((6, 96)) * 2.0 ** rng.integers(-8, 8, (6, 1))).astype(np.float32)
    inp = os.path.join(work, "x.npy")
    np.save(inp, x)
    for fmt in ("e2m3", "e3m2"):
        q = ["quantize", "--recipe", "mxfp6", "--format", fmt, "--f6-codes", "packed", "--block",
             "1x32", "--layout", "e8m0_row_major", "--in", inp, "--out"]
        st, npz, pt = (os.path.join(work, f"q_{fmt}.{e}") for e in ("safetensors", "npz", "pt"))
        run(exe, q + [st], 0)
        run(exe, q + [npz], 0)
        # the .npz's codes and scales are both '|V1': one --as per tensor reads them back
        run(exe, ["diff", st, npz, "--as", f"codes={fmt}", "--as", "scales=e8m0"], 0)
        codes_npz = np.load(npz)["codes"].view(np.uint8)
        if codes_npz.shape != x.shape or codes_npz.max() > 63:
            sys.exit(f"{npz}: codes {codes_npz.shape}, max {codes_npz.max()}")
        check_inspect(exe, st, codes_npz, "F6_" + fmt.upper())
        r = run(exe, q + [pt], 2)
        if os.path.exists(pt) or len(r.stderr.strip().splitlines()) != 1:
            sys.exit(f"{pt}: F6 to torch.save: {r.stderr!r}, written {os.path.exists(pt)}")
    print("quantize --f6-codes packed: .safetensors and .npz hold the same codes; .pt refused")


def check_per_tensor_as(exe, work, rng):
    """np.savez of float6_e2m3fn codes and float8_e8m0fnu scales, read with --as NAME=DTYPE."""
    codes = rng.integers(0, 64, (4, 64)).astype(np.uint8)
    scales = rng.integers(100, 160, (4, 2)).astype(np.uint8)
    scales[0, 0] = 0xFF  # E8M0 NaN
    npz = os.path.join(work, "mixed.npz")
    np.savez(npz, codes=codes.view(ml_dtypes.float6_e2m3fn), scales=scales.view(ml_dtypes.float8_e8m0fnu))
    as_args = ["--as", "codes=e2m3", "--as", "scales=e8m0"]
    j = json.loads(run(exe, ["inspect", npz, "--json", "--top", "64"] + as_args, 0).stdout)
    by_name = {t["name"]: t for t in j["tensors"]}
    for name, arr, dt, dtype in (("codes", codes, ml_dtypes.float6_e2m3fn, "F6_E2M3"),
                                 ("scales", scales, ml_dtypes.float8_e8m0fnu, "F8_E8M0")):
        t = by_name[name]
        vals = arr.view(dt).astype(np.float64)
        fin = vals[np.isfinite(vals)]
        if t["dtype"] != dtype or t["numel"] != arr.size or t["nan"] != int(np.isnan(vals).sum()) or \
                t["min"] != fin.min() or t["max"] != fin.max():
            sys.exit(f"{npz}:{name}: inspect {t['dtype']} numel {t['numel']} nan {t['nan']} "
                     f"[{t['min']}, {t['max']}], ml_dtypes {dtype} [{fin.min()}, {fin.max()}]")
    st = os.path.join(work, "mixed.safetensors")
    bw.write_safetensors(st, {"codes": ("F6_E2M3", codes.shape, packed(codes, "F6_E2M3")),
                              "scales": ("F8_E8M0", scales.shape, scales.tobytes())})
    run(exe, ["diff", npz, st] + as_args, 0)
    for bad in (["--as", "codes=e2m3"],  # scales stay opaque
                as_args + ["--as", "nosuch=e8m0"], ["--as", "e2m3", "--as", "e8m0"],
                ["--as", "=e8m0"], ["--as", "codes=e2m3", "--as", "codes=e3m2"]):
        r = run(exe, ["inspect", npz] + bad, 2)
        names_it = bad != ["--as", "codes=e2m3"] or "--as scales=" in r.stderr  # the opaque one
        if len(r.stderr.strip().splitlines()) != 1 or not names_it:
            sys.exit(f"inspect {bad}: {r.stderr!r}")
    print("npz of float6 codes and e8m0 scales: --as NAME=DTYPE per tensor (inspect, diff); "
          "bad --as refused")


def check_unpacked_operands(exe, work, rng):
    """GEMM operands of one FP6 code per byte: a U8 tensor read with --as NAME=e2m3:unpacked
    (torchao's f32_to_f6_*_unpacked, quantize --f6-codes u8) and ml_dtypes' '|V1' npz members
    read with --as NAME=e2m3 give the packed F6 file's output, and --model exact the exact sum
    (float64 in numpy: products are multiples of 2^-7 below 2^8, so the sums are exact)."""
    M, N, K, G = 5, 3, 40, 2
    ca = rng.integers(0, 64, (M, K), dtype=np.uint8)
    cb = rng.integers(0, 64, (G, N, K), dtype=np.uint8)
    va = ca.view(ml_dtypes.float6_e2m3fn).astype(np.float64)
    vb = cb.view(ml_dtypes.float6_e3m2fn).astype(np.float64)
    offs = np.array([2, 5], dtype=np.int64)
    files = {"packed": os.path.join(work, "f6_packed.safetensors"),
             "u8": os.path.join(work, "f6_u8.safetensors"), "npz": os.path.join(work, "f6.npz")}
    bw.write_safetensors(files["packed"], {
        "a": ("F6_E2M3", ca.shape, packed(ca, "F6_E2M3")),
        "b": ("F6_E3M2", cb.shape, packed(cb, "F6_E3M2")), "offs": ("I64", (G,), offs.tobytes())})
    bw.write_safetensors(files["u8"], {
        "a": ("U8", ca.shape, ca.tobytes()), "b": ("U8", cb.shape, cb.tobytes()),
        "offs": ("I64", (G,), offs.tobytes())})
    np.savez(files["npz"], a=ca.view(ml_dtypes.float6_e2m3fn),
             b=cb.view(ml_dtypes.float6_e3m2fn), offs=offs)
    as_of = {"packed": [], "u8": ["--as", "a=e2m3:unpacked", "--as", "b=e3m2:unpacked"],
             "npz": ["--as", "a=e2m3", "--as", "b=e3m2"]}
    want = np.array([[np.sum(va[r] * vb[0 if r < 2 else 1, n]) for n in range(N)]
                     for r in range(M)]).astype(np.float32)
    for model in ("exact", "blackwell_f8f6f4"):
        outs = []
        for kind, path in files.items():
            out = os.path.join(work, f"f6_{kind}_{model}_out.safetensors")
            run(exe, ["oracle", "grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--offs",
                      "offs", "--model", model, "--out", out] + as_of[kind], 0)
            outs.append(bw.read_f32(out, "out"))
        if not all(np.array_equal(x, outs[0]) for x in outs):
            sys.exit(f"{model}: packed / U8 / npz operands give {outs}")
        if model == "exact" and not np.array_equal(outs[0], want):
            sys.exit(f"exact on F6 operands: {outs[0]} != {want}")
    common = ["oracle", "grouped-gemm", "--a", "a", "--b", "b", "--offs", "offs", "--model",
              "exact", "--out", os.path.join(work, "x.safetensors")]
    bad = ca.copy()
    bad[1, 2] = 0x40  # bit 6: no e2m3 code
    bad_file = os.path.join(work, "f6_u8_bad.safetensors")
    bw.write_safetensors(bad_file, {"a": ("U8", bad.shape, bad.tobytes()),
                                    "b": ("U8", cb.shape, cb.tobytes()),
                                    "offs": ("I64", (G,), offs.tobytes())})
    for path, extra in [(files["packed"], as_of["u8"]),  # F6, not U8
                        (bad_file, as_of["u8"]),
                        (files["u8"], ["--as", "a=e4m3:unpacked", "--as", "b=e3m2:unpacked"]),
                        (files["u8"], ["--as", "e2m3"]),
                        (files["u8"], ["--as", "c=e2m3:unpacked"]),
                        (files["u8"], ["--as", "a=e2m3:unpacked", "--as", "a=e2m3"]),
                        (files["u8"], [])]:  # U8 without --as: not an operand dtype
        r = run(exe, common[:2] + ["--in", path] + common[2:] + extra, 2)
        if len(r.stderr.strip().splitlines()) != 1:
            sys.exit(f"{extra}: {r.stderr!r}")
    # FP4 one code per byte (low nibble) against the packed F4 file
    c4 = rng.integers(0, 16, (M, K), dtype=np.uint8)
    d4 = rng.integers(0, 16, (G, N, K), dtype=np.uint8)
    f4 = {"packed": os.path.join(work, "f4_packed.safetensors"),
          "u8": os.path.join(work, "f4_u8.safetensors")}
    bw.write_safetensors(f4["packed"], {"a": ("F4", c4.shape, packed(c4, "F4")),
                                        "b": ("F4", d4.shape, packed(d4, "F4")),
                                        "offs": ("I64", (G,), offs.tobytes())})
    bw.write_safetensors(f4["u8"], {"a": ("U8", c4.shape, c4.tobytes()),
                                    "b": ("U8", d4.shape, d4.tobytes()),
                                    "offs": ("I64", (G,), offs.tobytes())})
    outs = []
    for kind, extra in (("packed", []),
                        ("u8", ["--as", "a=e2m1:unpacked", "--as", "b=fp4:unpacked"])):
        out = os.path.join(work, f"f4_{kind}_out.safetensors")
        run(exe, ["oracle", "grouped-gemm", "--in", f4[kind], "--a", "a", "--b", "b", "--offs",
                  "offs", "--model", "exact", "--out", out] + extra, 0)
        outs.append(bw.read_f32(out, "out"))
    if not np.array_equal(outs[0], outs[1]):
        sys.exit(f"F4 one code per byte: {outs[1]} != packed {outs[0]}")
    print("F6 / F4 operands one code per byte: U8 with --as NAME=e2m3|e2m1:unpacked and npz with "
          "--as NAME=e2m3 equal the packed file (exact, blackwell_f8f6f4); exact == numpy; "
          "7 refusals")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--work", required=True)
    o = ap.parse_args()
    o.fp8_check, o.work = os.path.abspath(o.fp8_check), os.path.abspath(o.work)
    os.makedirs(o.work, exist_ok=True)
    rng = np.random.default_rng(20261128)
    for dtype in FMTS:
        check_file_paths(o.fp8_check, o.work, rng, dtype)
    check_explain(o.fp8_check, o.work, rng)
    check_quantize(o.fp8_check, o.work, rng)
    check_per_tensor_as(o.fp8_check, o.work, rng)
    check_unpacked_operands(o.fp8_check, o.work, rng)


if __name__ == "__main__":
    main()
