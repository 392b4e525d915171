#!/usr/bin/env python3
"""Kernel-preset survey on a GPU machine (docs/presets.md "Survey"): runs torch's FP8 GEMMs over a
grid of shapes, scalings, accumulation modes and output dtypes, records the kernels the profiler
names, dumps each call as safetensors and asks `fp8-check verify grouped-gemm --kernel NAME`
(no other model flag) which member of the preset reproduces every output bit.

  kernel_survey.py --fp8-check PATH --out DIR [--budget-s 110] [--device cuda|cpu|auto]
                   [--new-first] [--priority CELLS.txt] [--skip-matched PREV/survey.json]
                   [--merge PREV/survey.json --call 2] [--no-md] [--jobs 3] [--keep-cases 4]
                   [--search] [--time-old OTHER-fp8-check --time-cell label@M,N,K]
  kernel_survey.py --render survey.json     (the table of docs/survey.md; no GPU, no torch)

Operands are e4m3 (or e5m2) codes whose exponents depend on the 128-K block (so partial sums of
different blocks differ in magnitude and split-K slicing changes the f32 result), with general
(not power-of-two) f32 scales. Cells are run cheapest first; --new-first runs the cells of the
grid no earlier survey ran (NEW_SHAPES, NEW_PATHS) before the others. Verification runs in
--jobs worker processes beside the next torch call. A cell no preset member reproduces gets an
`fp8-check explain` ranking and (--search) a scan of other split families; up to --keep-cases
such cases under 15 MiB are kept in DIR for `explain` off the machine. Writes DIR/survey.json and
DIR/survey.md (the table); exit 0 iff every call that ran was matched by its preset.
--skip-matched and --merge continue an earlier call: the cells it matched are not run again, and
DIR/survey.json then holds its rows with this call's in their place (each row names its `call`).
Each row records the verify's seconds, the screen's size and how many members it compared in full.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import time

try:  # --render needs no torch
    import torch
except ImportError:
    torch = None

OLD_SHAPES = [(1, 4096, 8192), (33, 144, 6144), (64, 128, 8192), (96, 256, 12288),
              (128, 256, 16384), (256, 512, 14336), (1024, 1024, 7168), (2048, 4096, 4096),
              (8192, 2048, 2048)]
NEW_SHAPES = [(4096, 4096, 16384), (8192, 4096, 16384)]
SHAPES = OLD_SHAPES + NEW_SHAPES
# (label, scaling, fast accumulation, output dtype, A format, B format)
OLD_PATHS = [("tw", "tensorwise", False, "f32", "e4m3", "e4m3"),
             ("tw", "tensorwise", False, "bf16", "e4m3", "e4m3"),
             ("tw_fast", "tensorwise", True, "f32", "e4m3", "e4m3"),
             ("tw_fast", "tensorwise", True, "bf16", "e4m3", "e4m3"),
             ("rw", "rowwise", False, "bf16", "e4m3", "e4m3"),
             ("rw", "rowwise", False, "f32", "e4m3", "e4m3"),
             ("rw_fast", "rowwise", True, "bf16", "e4m3", "e4m3"),
             ("bw", "blockwise", False, "f32", "e4m3", "e4m3"),
             ("bw", "blockwise", False, "bf16", "e4m3", "e4m3")]
# f16 outputs and e5m2 operands (A e5m2 x B e4m3, and the reverse): first surveyed on the H200.
NEW_PATHS = [("tw", "tensorwise", False, "f16", "e4m3", "e4m3"),
             ("tw_fast", "tensorwise", True, "f16", "e4m3", "e4m3"),
             ("rw", "rowwise", False, "f16", "e4m3", "e4m3"),
             ("bw", "blockwise", False, "f16", "e4m3", "e4m3"),
             ("tw_e5m2a", "tensorwise", False, "f32", "e5m2", "e4m3"),
             ("tw_e5m2b", "tensorwise", False, "bf16", "e4m3", "e5m2"),
             ("tw_fast_e5m2a", "tensorwise", True, "f32", "e5m2", "e4m3"),
             ("rw_e5m2a", "rowwise", False, "bf16", "e5m2", "e4m3"),
             ("bw_e5m2a", "blockwise", False, "f32", "e5m2", "e4m3")]
PATHS = OLD_PATHS + NEW_PATHS
# Operands are drawn on the GPU: the large cells' 10^8 codes cost milliseconds there (cpu: a dry run).
DEV = os.environ.get("KERNEL_SURVEY_DEVICE", "cuda")
if torch is not None:
    DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    ST = {torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2", torch.float32: "F32",
          torch.bfloat16: "BF16", torch.float16: "F16", torch.int32: "I32"}


def save_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": ST[t.dtype], "shape": list(t.shape),
                        "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def block_codes(g, rows, k, fmt="e4m3"):
    """FP8 codes, exponent field = a per-128-K-block base +-1, random sign/mantissa: e4m3 base in
    [1, 14] (2^-6 .. 2^7), e5m2 base in [9, 22] (the same binades); no NaN or Inf code."""
    nb = -(-k // 128)
    lo, hi, mbits = (1, 15, 3) if fmt == "e4m3" else (9, 23, 2)
    base = torch.randint(lo, hi, (nb,), generator=g, device=DEV).repeat_interleave(128)[:k]
    e = (base[None, :] + torch.randint(-1, 2, (rows, k), generator=g, device=DEV)).clamp(lo, hi)
    c = ((torch.randint(0, 2, (rows, k), generator=g, device=DEV) << 7) | (e << mbits)
         | torch.randint(0, 1 << mbits, (rows, k), generator=g, device=DEV))
    c = torch.where((c & 0x7F) == 0x7F, c - 1, c)
    return c.to(torch.uint8).view(FP8[fmt])


def scales(g, *shape):
    return (torch.rand(*shape, generator=g, device=DEV) * 2e-3 + 1e-3).float()


def profiled(fn):
    out = fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out2 = fn()
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")})
    same = torch.equal(out.reshape(-1).view(torch.uint8), out2.reshape(-1).view(torch.uint8))
    return out, [n[:90] for n in names], same


def scaled_mm_case(g, m, n, k, scaling, fast, dt, fa="e4m3", fb="e4m3"):
    a, bt = block_codes(g, m, k, fa), block_codes(g, n, k, fb)  # bt (N, K): mat2 = bt.t() column-major
    if scaling == "tensorwise":
        sa, sb = scales(g, 1).reshape(()), scales(g, 1).reshape(())
        fn = lambda: torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb, out_dtype=DT[dt], use_fast_accum=fast)
        dump = {"scale_a": sa.reshape(()), "scale_b": sb.reshape(())}
    elif scaling == "rowwise":
        sa, sb = scales(g, m, 1), scales(g, 1, n)
        fn = lambda: torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb, out_dtype=DT[dt], use_fast_accum=fast)
        dump = {"scale_a": sa, "scale_b": sb}
    else:  # 1x128 x 128x128, the layouts torch checks (proptests/fidelity/scaled_mm_predict.py)
        nbk, nbn = k // 128, n // 128
        nbk4 = -(-nbk // 4) * 4
        sa_rm = scales(g, m, nbk)
        sb_rm = scales(g, nbn, nbk)
        pad = torch.ones(nbn, nbk4, device="cuda")
        pad[:, :nbk] = sb_rm
        sa, sb = sa_rm.t().contiguous().t(), pad.t()
        F = torch.nn.functional
        if nbk4 == nbk:
            fn = lambda: torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb, out_dtype=DT[dt])
        else:
            fn = lambda: F.scaled_mm(a, bt.t(), scale_a=sa, scale_recipe_a=F.ScalingType.BlockWise1x128,
                                     scale_b=sb, scale_recipe_b=F.ScalingType.BlockWise128x128, output_dtype=DT[dt])
        dump = {"scale_a": sa_rm, "scale_b": sb_rm}
    out, kernels, same = profiled(fn)
    return {"a": a, "b": bt.t().contiguous(), **dump, "out": out}, kernels, same


def grouped_m_case(g, fast):
    m, n, k, sizes = 1536, 512, 4096, [0, 256, 0, 517, 131, 500, 0]
    a, b = block_codes(g, m, k), block_codes(g, len(sizes) * n, k).view(len(sizes), n, k)
    sa, sb = scales(g, m), scales(g, len(sizes), n)
    offs = torch.tensor(sizes).cumsum(0).to(torch.int32).cuda()
    fn = lambda: torch._scaled_grouped_mm(a, b.transpose(-2, -1), sa, sb, offs=offs,
                                          out_dtype=torch.bfloat16, use_fast_accum=fast)
    out, kernels, same = profiled(fn)
    return {"a": a, "b": b, "scale_a": sa, "scale_b": sb, "offs": offs, "out": out}, kernels, same


def grouped_k_case(g, fast):
    m, n, ends = 256, 512, [1024, 1024, 3072, 4096]
    k = ends[-1]
    a, bt = block_codes(g, m, k), block_codes(g, n, k)
    sa, sb = scales(g, len(ends) * m), scales(g, len(ends) * n)
    offs = torch.tensor(ends, dtype=torch.int32).cuda()
    fn = lambda: torch._scaled_grouped_mm(a, bt.t(), sa, sb, offs=offs, out_dtype=torch.bfloat16,
                                          use_fast_accum=fast)
    out, kernels, same = profiled(fn)
    return {"a": a, "b": bt.t().contiguous(), "scale_a": sa, "scale_b": sb, "offs": offs, "out": out}, kernels, same


def fp8_check(exe, sub, path, kernel, fast, device, extra, timeout=300):
    cmd = [exe, sub, "grouped-gemm", "--in", path, "--a", "a", "--b", "b", "--scale-a", "scale_a",
           "--scale-b", "scale_b", "--got", "out", "--kernel", kernel, "--device", device] + extra
    if fast:
        cmd.append("--fast-accum")
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", "timed out")


def verify(exe, path, kernel, fast, device, extra):
    r = fp8_check(exe, "verify", path, kernel, fast, device, extra + ["--json"])
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.returncode, {"error": (r.stdout + r.stderr).strip()[-300:]}


def search_overrides(scaling, k):
    """Split families outside the presets, tried one by one on a cell no member reproduces:
    slices of L 128-blocks (L beside the presets' 24), and for blockwise S equal slices."""
    nb = -(-k // 128)
    ls = [l for l in (4, 8, 12, 16, 20, 28, 32, 36, 40, 48, 56, 64) if l < nb]
    out = [["--split-k-blocks", str(l)] for l in ls]
    if scaling == "blockwise":
        out += [["--split-k", str(s)] for s in range(2, 9) if s < nb]
    return out


def diagnose(o, row, path, kernel, fast, scaling, k, extra):
    """explain's ranking and first-element story, then (--search) other split families."""
    m, n, kk = row["shape"]
    if m * n * kk <= 1 << 33:  # explain scores every candidate on every element, on the CPU
        r = fp8_check(o.fp8_check, "explain", path, kernel, fast, o.device, extra + ["--top", "8"])
        row["explain"] = (r.stdout + r.stderr)[-2500:]
    else:
        row["explain"] = "skipped: explain runs on the CPU, too slow at this size"
    if not o.search:
        return
    t0 = time.time()
    for ov in search_overrides(scaling, k):
        if time.time() - t0 > o.search_s:
            row["search"] = "stopped (time)"
            return
        rc, js = verify(o.fp8_check, path, kernel, fast, o.device, extra + ov)
        if rc == 0 and js.get("matched"):
            row["search"] = "reproduced by " + js["matched"] + " (" + " ".join(ov) + ")"
            return
    row["search"] = "no override reproduced it"


def plan(new_first):
    """Every cell of the grid; each marked new when no earlier survey ran it."""
    items = []
    for m, n, k in sorted(SHAPES, key=lambda s: s[0] * s[1] * s[2]):
        for label, scaling, fast, dt, fa, fb in PATHS:
            if scaling == "blockwise" and (n % 128 or k % 128):
                continue
            new = (m, n, k) in NEW_SHAPES or (label, scaling, fast, dt, fa, fb) in NEW_PATHS
            items.append(("torch._scaled_mm", f"{label}_{dt}", (m, n, k), scaling, fast, dt, fa, fb, new))
    items.insert(8, ("torch._scaled_grouped_mm", "grouped_m_bf16", (1536, 512, 4096), "rowwise", False, "bf16", "e4m3", "e4m3", False))
    items.insert(9, ("torch._scaled_grouped_mm", "grouped_m_fast_bf16", (1536, 512, 4096), "rowwise", True, "bf16", "e4m3", "e4m3", False))
    items.insert(10, ("torch._scaled_grouped_mm", "grouped_k_bf16", (256, 512, 4096), "rowwise", False, "bf16", "e4m3", "e4m3", False))
    if new_first:
        items = [x for x in items if x[-1]] + [x for x in items if not x[-1]]
    return items


def check_cell(o, i, row, path, kernel, fast, scaling, k, extra):
    """Worker: verify one dumped cell, diagnose it when no member reproduces it."""
    t1 = time.time()
    rc, js = verify(o.fp8_check, path, kernel, fast, o.device, extra)
    members = js.get("members", [])
    row.update({"rc": rc, "matched": js.get("matched"), "members": len(members) or 1,
                "mismatches_best": min([x["mismatches"] for x in members if x["mismatches"] is not None] or [0]),
                "screen": js.get("screen", {}).get("elements", 0),
                "compared_in_full": sum(1 for x in members if x["mismatches"] is not None
                                        and not x.get("screened_out"))})
    row["verify_s"] = round(time.time() - t1, 2)
    if o.time_old and (row["path"], tuple(row["shape"])) == o.time_cell:
        t2 = time.time()  # the same dump through the other fp8-check (e.g. the build before the screen)
        rc2, js2 = verify(o.time_old, path, kernel, fast, o.device, extra)
        row["old_verify"] = {"s": round(time.time() - t2, 2), "rc": rc2, "matched": js2.get("matched")}
    if "error" in js:
        row["error"] = js["error"]
    if rc != 0:
        diagnose(o, row, path, kernel, fast, scaling, k, extra)
        if o.keep_cases > 0 and os.path.getsize(path) < 15 << 20:
            o.keep_cases -= 1
            row["case"] = f"unmatched_{i}.safetensors"
            shutil.copy(path, os.path.join(o.out, row["case"]))
    os.remove(path)
    print(json.dumps({x: row[x] for x in row if x != "explain"}), flush=True)
    return row


def run_cell(o, g, cell, work, i):
    """Runs one torch call; returns (row, path, extra) or (row, None, None) when refused."""
    kernel, label, (m, n, k), scaling, fast, dt, fa, fb, new = cell
    row = {"kernel": kernel, "path": label, "shape": [m, n, k], "a": fa, "b": fb, "new": new}
    extra = []
    try:
        if label.startswith("grouped_m"):
            tensors, kernels, same = grouped_m_case(g, fast)
            extra = ["--offs", "offs"]
        elif label.startswith("grouped_k"):
            tensors, kernels, same = grouped_k_case(g, fast)
            extra = ["--offs", "offs", "--grouping", "k"]
        else:
            tensors, kernels, same = scaled_mm_case(g, m, n, k, scaling, fast, dt, fa, fb)
    except (RuntimeError, ValueError, NotImplementedError) as e:  # torch refused: recorded
        row["status"] = "torch refused: " + str(e).splitlines()[0][:100]
        return row, None, None
    row.update({"kernels": kernels, "run_to_run_identical": same})
    path = os.path.join(work, f"case_{i}.safetensors")
    save_safetensors(path, tensors)
    del tensors
    return row, path, extra


def cell_key(r):
    return r["path"], tuple(r["shape"])


def merged(prev_path, rows, call):
    """The rows of an earlier survey.json with this call's rows in place of theirs (each row keeps
    the call that produced it), in the grid's plan order."""
    with open(prev_path) as f:
        prev = json.load(f)
    for r in rows:
        r["call"] = call
    mine = {cell_key(r): r for r in rows}
    out = [mine.pop(cell_key(r), None) or dict(r, call=r.get("call", call - 1)) for r in prev["rows"]]
    out += list(mine.values())
    order = {(c[1], c[2]): i for i, c in enumerate(plan(False))}
    out.sort(key=lambda r: order.get(cell_key(r), len(order)))
    return out


def write_outputs(o, head, rows, t0):
    ran = [r for r in rows if "rc" in r]
    ok = [r for r in ran if r["rc"] == 0 and r["matched"]]
    if o.merge:
        rows = merged(o.merge, rows, o.call)
    with open(os.path.join(o.out, "survey.json"), "w") as f:
        json.dump({"platform": head, "rows": rows}, f, indent=1)
    if o.no_md:
        print(f"{len(ok)}/{len(ran)} matched in {time.time() - t0:.1f} s", flush=True)
        return 0 if len(ok) == len(ran) else 1
    with open(os.path.join(o.out, "survey.md"), "w") as f:
        f.write(f"{head}: {len(ok)}/{len(ran)} calls matched by their preset, "
                f"{len(rows) - len(ran)} not run or refused\n\n")
        f.write("| kernel | path | A×B | M×N×K | matched member | members | kernels (profiler) |\n"
                "|---|---|---|---|---|---|---|\n")
        for r in rows:
            mm = r.get("matched") or r.get("status") or \
                f"NOT REPRODUCED (best {r.get('mismatches_best')} mismatches; {r.get('search', '')}) {r.get('error', '')}"
            f.write(f"| {r['kernel']} | {r['path']} | {r.get('a', 'e4m3')}×{r.get('b', 'e4m3')} | "
                    f"{'×'.join(map(str, r['shape']))} | {mm} | {r.get('members', '')} | "
                    f"{'; '.join(r.get('kernels', []))} |\n")
    print(f"{len(ok)}/{len(ran)} matched in {time.time() - t0:.1f} s", flush=True)
    return 0 if len(ok) == len(ran) else 1


def parse_cell(c):
    label, mnk = c.split("@")
    return label, tuple(map(int, mnk.split(",")))


def render(path):
    """The table of docs/survey.md from a (merged) survey.json."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    print("| # | kernel | path | A×B | M×N×K | call | result: matched member (`verify --kernel`, no "
          "other model flag) | members | compared in full | verify s | kernel that ran (profiler) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(rows, 1):
        if r.get("matched"):
            res = r["matched"]
        elif "rc" in r:
            res = f"**NOT REPRODUCED** (best {r.get('mismatches_best')} mismatches; {r.get('search', '')})"
        elif r.get("status", "").startswith("torch refused"):
            res = "torch refused (cuBLASLt `CUBLAS_STATUS_NOT_SUPPORTED` for M = 1)"
        else:
            res = "**not run** (" + r.get("status", "") + ")"
        ks = [k for k in r.get("kernels", []) if not k.startswith("Memset")]
        red = [k for k in ks if "splitKreduce" in k]
        ks = [k for k in ks if "splitKreduce" not in k]
        kern = " ; ".join(f"`{k}`" for k in ks) + (" + splitKreduce" if red else "")
        full = r.get("compared_in_full", "") if r.get("screen") else ("all" if "rc" in r else "")
        print(f"| {i} | `{r['kernel']}` | {r['path']} | {r.get('a', 'e4m3')}×{r.get('b', 'e4m3')} | "
              f"{'×'.join(map(str, r['shape']))} | {r.get('call', '')} | {res} | "
              f"{r.get('members', '') if 'rc' in r else ''} | {full} | {r.get('verify_s', '')} | {kern} |")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fp8-check", default="", help="the fp8-check to verify with (required to run)")
    p.add_argument("--out", default="", help="output folder (required to run)")
    p.add_argument("--budget-s", type=float, default=110)
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", default="", help="comma-separated path labels to run (default all)")
    p.add_argument("--skip-shapes", default="", help="M,N,K;M,N,K shapes surveyed already")
    p.add_argument("--cells", default="", help="only these cells: label@M,N,K;label@M,N,K")
    p.add_argument("--new-first", action="store_true", help="cells no earlier survey ran first")
    p.add_argument("--skip-matched", default="",
                   help="survey.json of an earlier run: the cells it matched are not run again")
    p.add_argument("--jobs", type=int, default=3, help="verify processes beside the torch calls")
    p.add_argument("--keep-cases", type=int, default=4, help="unmatched cases kept in --out")
    p.add_argument("--search", action="store_true", help="scan other split families when unmatched")
    p.add_argument("--search-s", type=float, default=20, help="time per cell for --search")
    p.add_argument("--deadline-s", type=float, default=0,
                   help="write what has been verified by then and stop (0: wait for every cell)")
    p.add_argument("--priority", default="", help="file of cells (label@M,N,K a line) run first")
    p.add_argument("--merge", default="", help="survey.json of earlier calls: DIR/survey.json "
                   "holds its rows with this call's in place of theirs")
    p.add_argument("--call", type=int, default=2, help="--merge: this call's number")
    p.add_argument("--no-md", action="store_true", help="write survey.json only")
    p.add_argument("--time-old", default="", help="another fp8-check timed on --time-cell's dump")
    p.add_argument("--time-cell", default="", help="label@M,N,K")
    p.add_argument("--render", default="", help="print the table of a survey.json (docs/survey.md)"
                   " and exit; needs no GPU")
    o = p.parse_args()
    if o.render:
        return render(o.render)
    if not o.fp8_check or not o.out:
        p.error("--fp8-check and --out are required (or --render)")
    o.time_cell = parse_cell(o.time_cell) if o.time_cell else None
    os.makedirs(o.out, exist_ok=True)
    work = "/tmp/kernel_survey"
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    head = f"torch {torch.__version__}, CUDA {torch.version.cuda}, {props.name}"
    print(head, flush=True)
    rows, futures = [], []
    only = set(filter(None, o.only.split(",")))
    skip = {tuple(map(int, x.split(","))) for x in filter(None, o.skip_shapes.split(";"))}
    cells = {parse_cell(c) for c in filter(None, o.cells.split(";"))}
    prio = set()
    if o.priority:
        with open(o.priority) as f:
            prio = {parse_cell(c) for c in f.read().split() if c.strip()}
    if o.skip_matched:
        with open(o.skip_matched) as f:
            skip_cells = {(r["path"], tuple(r["shape"])) for r in json.load(f)["rows"] if r.get("matched")}
        cells_done = len(skip_cells)
        print(f"{cells_done} cells matched in {o.skip_matched}: not run again", flush=True)
    else:
        skip_cells = set()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=o.jobs)
    items = list(enumerate(plan(o.new_first)))  # i: the cell's seed, whatever the order
    items = [x for x in items if (x[1][1], x[1][2]) in prio] + \
        [x for x in items if (x[1][1], x[1][2]) not in prio]
    for i, cell in items:
        kernel, label, mnk, scaling, fast = cell[:5]
        if ((only and label not in only) or mnk in skip or (cells and (label, mnk) not in cells)
                or (label, mnk) in skip_cells):
            continue
        if time.time() - t0 > o.budget_s:
            rows.append({"kernel": kernel, "path": label, "shape": list(mnk), "a": cell[6],
                         "b": cell[7], "new": cell[-1], "status": "not run (budget)"})
            continue
        while sum(not f.done() for f in futures) >= 2 * o.jobs:  # bound the dumps waiting on disk
            time.sleep(0.05)
        row, path, extra = run_cell(o, torch.Generator(device=DEV).manual_seed(1000 + i), cell, work, i)
        rows.append(row)
        if path is None:
            print(json.dumps(row), flush=True)
            continue
        futures.append(pool.submit(check_cell, o, i, row, path, kernel, fast, scaling, mnk[2], extra))
    left = o.deadline_s - (time.time() - t0) if o.deadline_s else None
    concurrent.futures.wait(futures, timeout=max(left, 1) if left is not None else None)
    for r in rows:  # rows are filled in place by the workers
        if "kernels" in r and "rc" not in r:
            r["status"] = "verify unfinished (deadline)"
    rc = write_outputs(o, head, rows, t0)
    for f in futures:
        if f.done() and f.exception():
            print("worker failed:", repr(f.exception()), flush=True)
    os._exit(rc)  # verifies still running past the deadline are not waited for


if __name__ == "__main__":
    raise SystemExit(main())
