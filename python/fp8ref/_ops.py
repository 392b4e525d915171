"""The fp8-check operations on arrays (docs/python.md): encode / decode, quantize / dequantize,
the grouped-GEMM oracle and its verifier, diff, tensor files. Each mirrors a CLI subcommand
(docs/cli.md) and raises ValueError with the CLI's one-line message on bad input.
"""

from dataclasses import dataclass, field

import numpy as np

from . import _core
from ._arrays import (NUMPY, FORMAT_DTYPES, as_array, format_of, from_triple, give_back,
                      source_bits, triple)


def encode(x, format, *, profile, rounding=None, source=None, sr_bits=32, rand=None):
    """`fp8-check encode`: x (float32 / float64 / bfloat16 / float16, or raw bit patterns with
    source=) cast to `format` codes as `profile` casts (rounding: the profile's own when None).
    Returns the codes as the format's ml_dtypes dtype (torch: the torch dtype, same device)."""
    arr, like = as_array(x)
    src, bits = source_bits(arr, source)
    r = None
    if rand is not None:
        r = as_array(rand, what="rand")[0]
        if r.dtype != np.uint32:
            raise ValueError(f"rand: expected uint32 values, got {r.dtype}")
    codes = _core.encode(bits, src, format, profile, rounding or "", sr_bits, r)
    return give_back(codes.view(FORMAT_DTYPES[format]), like)


def decode(codes, format=None, *, to="f32"):
    """`fp8-check decode`: codes (an ml_dtypes / torch FP8 array, or uint8 with format=) to
    float32 (to="f32") or float64 values, exactly."""
    arr, like = as_array(codes, format, "codes")
    fmt = format or format_of(arr)
    return give_back(_core.decode(arr.view(np.uint8), fmt, to), like)


class Quantized(tuple):
    """(codes, scales), with the recipe as `metadata` (the CLI's safetensors metadata)."""

    metadata: dict

    def __new__(cls, codes, scales, metadata):
        obj = super().__new__(cls, (codes, scales))
        obj.metadata = metadata
        return obj


def quantize(x, *, recipe, block, layout, format="e4m3", runtime=None, pow2=False, epsilon=0.0,
             nan="propagate", allow_partial_blocks=False):
    """`fp8-check quantize`: x (M, K) or (G, N, K), float32 / bfloat16 / float16, quantized under
    `recipe` with `block` geometry; scales serialised in `layout`. Returns (codes, scales)."""
    arr, like = as_array(x)
    o = _core.QuantizeOptions()
    o.recipe, o.block, o.layout, o.format = recipe, block, layout, format
    o.runtime, o.pow2, o.epsilon, o.nan = runtime or "", pow2, epsilon, nan
    o.allow_partial_blocks = allow_partial_blocks
    tensors, meta = _core.quantize(triple(arr), o)
    out = {name: from_triple(*t) for name, t in tensors}
    return Quantized(give_back(out["codes"], like), give_back(out["scales"], like), meta)


_BLOCKS = {"rowwise": (1, None), "per_channel": (None, 1), "1x128": (1, 128),
           "128x1": (128, 1), "128x128": (128, 128), "1x32": (1, 32), "32x1": (32, 1)}


def dequantize(codes, scales, *, block, format=None, to="f32"):
    """codes * scale of each element's block, computed in float64 (exact for FP8 codes and f32
    or E8M0 scales) and rounded once to `to`. Scales as quantize's row_major / e8m0_row_major
    layouts give them: (R, C) per plane, or (G, R, C) for (G, N, K) codes."""
    c, like = as_array(codes, format, "codes")
    s = as_array(scales, what="scales")[0]
    values = np.asarray(decode(c, format, to="f64"))
    s = s.astype(np.float64)
    if c.ndim not in (2, 3) or s.ndim != c.ndim - (0 if s.ndim == c.ndim else 1):
        if not (block == "tensorwise" and s.size == (1 if c.ndim == 2 else c.shape[0])):
            raise ValueError(f"dequantize: codes {c.shape} with scales {s.shape}")
    m, k = c.shape[-2:]
    if block == "tensorwise":
        expanded = s.reshape(s.shape[:-2] + (1, 1) if s.ndim >= 2 else (-1, 1, 1)[3 - c.ndim:])
    elif block in _BLOCKS:
        br, bc = _BLOCKS[block]
        br, bc = br or m, bc or k
        expanded = np.repeat(np.repeat(s, br, axis=-2), bc, axis=-1)[..., :m, :k]
        if expanded.shape[-2:] != (m, k):
            raise ValueError(f"dequantize: scales {s.shape} do not cover codes {c.shape} "
                             f"with {block} blocks")
    else:
        raise ValueError(f"dequantize: unknown block '{block}' (one of: tensorwise, "
                         + ", ".join(_BLOCKS) + ")")
    z = values * expanded
    if to == "f32":
        z = z.astype(np.float32)
    elif to != "f64":
        raise ValueError(f"unknown target '{to}' (expected f32 or f64)")
    return give_back(z, like)


def _gemm_inputs(a, b, scale_a, scale_b, offs):
    named = {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b, "offs": offs}
    tensors, like = {}, None
    for name, x in named.items():
        if x is None:
            continue
        arr, l = as_array(x, what=name)
        like = like or l
        tensors[name] = triple(arr, name)
    return tensors, like


def _gemm_options(tensors, model, scaling, b_layout, split_k, split_k_blocks, epilogue,
                  out_dtype, kernel, device, grouping):
    if kernel is not None:
        raise NotImplementedError("grouped_gemm: kernel= presets are not in fp8ref yet; name "
                                  "the accumulation model with model=")
    o = _core.GemmOptions()
    o.in_ = "<arrays>"
    o.a, o.b = "a", "b"
    o.scale_a = "scale_a" if "scale_a" in tensors else ""
    o.scale_b = "scale_b" if "scale_b" in tensors else ""
    o.offs = "offs" if "offs" in tensors else ""
    o.scaling = scaling or ("none" if not (o.scale_a or o.scale_b) else "")
    if not o.scaling:
        raise ValueError("scaling= is required with scales (tensorwise, rowwise, blockwise, mx)")
    o.model, o.b_layout, o.split_k, o.split_blocks = model, b_layout, split_k, split_k_blocks
    o.epilogue, o.out_dtype = epilogue, out_dtype
    return o


def _run_oracle(tensors, o, bound, device, grouping):
    """The CPU forward, or the oracle on `device` (cpu | cuda: the GPU oracle, same bits, no
    bound) with `grouping` (m | k: torch's 2d x 2d K-grouped product, out (G, M, N))."""
    if device == "cpu" and grouping == "m":
        return _core.grouped_gemm(tensors, o, bound)
    return _core.grouped_gemm_on(tensors, o, bound, device, grouping)


def grouped_gemm(a, b, scale_a=None, scale_b=None, offs=None, *, model=None, scaling=None,
                 b_layout="nk", split_k=1, split_k_blocks=0, epilogue="model", out_dtype="f32",
                 bound=False, kernel=None, device="cpu", grouping="m", fast_accum=False):
    """`fp8-check oracle grouped-gemm`: Y[r] = A[r]·B[g(r)]^T under accumulation `model`, or
    kernel= a preset (docs/presets.md: its first member); rows past offs[-1] are +0. Returns
    Y (M, N) (and the per-element bound with bound=True).
    device='cuda': the GPU oracle (the same bits; no bound; RuntimeError without a device).
    grouping='k': torch's 2d x 2d product, A (M, K), B (N, K) or (K, N), offs the K ends: out
    (G, M, N), an empty group +0 (fp8-check --grouping k)."""
    if kernel is not None:  # the preset says whether it takes grouping='k'
        from ._presets import grouped_gemm_kernel

        return grouped_gemm_kernel(a, b, scale_a, scale_b, offs, kernel=kernel,
                                   fast_accum=fast_accum, bound=bound, device=device,
                                   grouping=grouping, model=model,
                                   scaling=scaling, b_layout=b_layout, split_k=split_k,
                                   split_k_blocks=split_k_blocks, epilogue=epilogue,
                                   out_dtype=out_dtype)
    if model is None:
        raise ValueError("grouped_gemm: model= or kernel= is required")
    tensors, like = _gemm_inputs(a, b, scale_a, scale_b, offs)
    o = _gemm_options(tensors, model, scaling, b_layout, split_k, split_k_blocks, epilogue,
                      out_dtype, kernel, device, grouping)
    y, bnd, _ = _run_oracle(tensors, o, bound, device, grouping)
    y = give_back(from_triple(*y), like)
    return (y, bnd) if bound else y


@dataclass
class GroupResult:
    group: int
    rows: int
    elements: int
    mismatches: int
    max_abs: float


@dataclass
class Failure:
    row: int
    col: int
    group: int
    got_bits: int
    ref_bits: int
    got: float
    ref: float
    bound: float

    def __str__(self):
        w = 8 if self.got_bits > 0xFFFF or self.ref_bits > 0xFFFF else 4
        return (f"[{self.row}, {self.col}] group {self.group}: got 0x{self.got_bits:0{w}x} "
                f"({self.got:.9g})  ref 0x{self.ref_bits:0{w}x} ({self.ref:.9g})  "
                f"bound {self.bound:.3g}")


@dataclass
class VerifyReport:
    """`fp8-check verify grouped-gemm` as an object: ok, per-group counts, the first failing
    elements, and the configuration the oracle ran (canonical model name, split, epilogue...)."""

    ok: bool
    failures: int
    groups: list
    first_failures: list
    padding_rows: int
    config: dict = field(default_factory=dict)

    def __str__(self):
        c = self.config
        lines = [f"verify grouped-gemm: {c.get('model')} (split-K {c.get('split')}, epilogue "
                 f"{c.get('epilogue')}), {c.get('scaling')} scaling, {c.get('out_dtype')}, "
                 f"M={c.get('M')} N={c.get('N')} K={c.get('K')} G={c.get('G')}",
                 "  group      rows  elements  mismatches  max |got-ref|"]
        lines += [f"  {g.group:5d}  {g.rows:8d}  {g.elements:8d}  {g.mismatches:10d}  "
                  f"{g.max_abs:.6g}" for g in self.groups]
        lines += [f"  {f}" for f in self.first_failures]
        if self.padding_rows:
            lines.append(f"  rows outside every group: {self.padding_rows} (not compared)")
        lines.append(f"result: {'PASS' if self.ok else 'DIFFERS'} ({self.failures} element"
                     f"{'' if self.failures == 1 else 's'} failing)")
        return "\n".join(lines)


_OUT_BITS = {"f32": (np.uint32, np.float32), "bf16": (np.uint16, None), "f16": (np.uint16, None)}


def _values(bits, out_dtype):
    import ml_dtypes

    dt = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[out_dtype]
    return bits.view(dt).astype(np.float64)


def _failing(got_bits, ref_bits, bound, exact, out_dtype, within):
    """The CLI's element rule: bitwise equal, or (within) inside the bound of exact plus the
    half-ulp f32 rounding of the exact value."""
    fail = got_bits != ref_bits
    if not within:
        return fail
    g = _values(got_bits, out_dtype)
    finite = np.isfinite(g) & np.isfinite(exact)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(g - exact) <= bound + np.ldexp(np.abs(exact), -24) + 2.0**-150
        other = np.where(np.isnan(g), np.isnan(exact), g == exact)
    return fail & ~np.where(finite, near, other)


def verify_grouped_gemm(got, a, b, scale_a=None, scale_b=None, offs=None, *, model=None,
                        scaling=None, b_layout="nk", split_k=1, split_k_blocks=0,
                        epilogue="model", out_dtype="f32", within_bound=False, max_report=10,
                        kernel=None, device="cpu", grouping="m", fast_accum=False):
    """`fp8-check verify grouped-gemm`: compares `got` (M, N) with the oracle per group, under
    `model` or each member of kernel= (docs/presets.md; the report's `matched` names the member).
    Rows past offs[-1] are not compared. Returns a VerifyReport."""
    if kernel is not None:  # the preset says whether it takes grouping='k'
        from ._presets import verify_kernel

        return verify_kernel(got, a, b, scale_a, scale_b, offs, kernel=kernel,
                             fast_accum=fast_accum, within_bound=within_bound, device=device,
                             grouping=grouping,
                             max_report=max_report, model=model, scaling=scaling,
                             b_layout=b_layout, split_k=split_k, split_k_blocks=split_k_blocks,
                             epilogue=epilogue, out_dtype=out_dtype)
    if model is None:
        raise ValueError("verify_grouped_gemm: model= or kernel= is required")
    tensors, _ = _gemm_inputs(a, b, scale_a, scale_b, offs)
    o = _gemm_options(tensors, model, scaling, b_layout, split_k, split_k_blocks, epilogue,
                      out_dtype, kernel, device, grouping)
    g_arr = as_array(got, what="got")[0]
    ref, bnd, config = _run_oracle(tensors, o, device == "cpu" or within_bound, device, grouping)
    ref_arr = from_triple(*ref)
    if bnd is None:  # the GPU oracle computes no bound
        bnd = np.full(ref_arr.shape, np.nan)
    if g_arr.dtype != ref_arr.dtype:
        raise ValueError(f"--got: 'got' is {g_arr.dtype} but --out-dtype is {out_dtype}")
    if g_arr.shape != ref_arr.shape:
        raise ValueError(f"--got: 'got' has shape {tuple(g_arr.shape)}, expected "
                         f"{tuple(ref_arr.shape)}")
    exact = None
    if within_bound:
        o_exact = _gemm_options(tensors, "exact", o.scaling, b_layout, 1, 0, "model", "f32",
                                None, "cpu", "m")
        exact = from_triple(*_run_oracle(tensors, o_exact, False, "cpu", grouping)[0])
        exact = exact.astype(np.float64)
    if grouping == "k":  # (G, M, N) compared as the (G·M, N) stacking: group g = rows g·M..
        g_count, m = int(config["G"]), int(config["M"])
        stacked = np.arange(1, g_count + 1, dtype=np.int64) * m
        tensors = {"offs": triple(stacked, "offs")}
        config = dict(config, M=str(g_count * m))
        g_arr, ref_arr, bnd = (x.reshape(g_count * m, -1) for x in (g_arr, ref_arr, bnd))
        exact = None if exact is None else exact.reshape(g_count * m, -1)
    return _report(g_arr, ref_arr, bnd, exact, tensors, config, out_dtype, within_bound,
                   max_report)


def _group_of_rows(tensors, m, g_count):
    if "offs" in tensors:
        offs = from_triple(*tensors["offs"]).astype(np.int64)
    else:
        offs = np.array([m], dtype=np.int64)
    group = np.searchsorted(offs, np.arange(m), side="right")
    return np.where(group < g_count, group, -1)


def _report(got, ref, bound, exact, tensors, config, out_dtype, within, max_report):
    bits = _OUT_BITS[out_dtype][0]
    gb, rb = got.view(bits), ref.view(bits)
    m, n = ref.shape
    g_count = int(config["G"])
    row_group = _group_of_rows(tensors, m, g_count)
    fail = _failing(gb, rb, bound, exact, out_dtype, within)
    fail &= (row_group >= 0)[:, None]
    mism = (gb != rb) & (row_group >= 0)[:, None]
    gv, rv = _values(gb, out_dtype), _values(rb, out_dtype)
    with np.errstate(invalid="ignore"):
        absdiff = np.where(mism, np.abs(gv - rv), 0.0)
    groups = []
    for g in range(g_count):
        rows = row_group == g
        groups.append(GroupResult(g, int(rows.sum()), int(rows.sum()) * n,
                                  int(mism[rows].sum()),
                                  float(np.nanmax(absdiff[rows], initial=0.0))))
    first = []
    for i in np.flatnonzero(fail)[:max_report]:
        r, c = divmod(int(i), n)
        first.append(Failure(r, c, int(row_group[r]), int(gb[r, c]), int(rb[r, c]),
                             float(gv[r, c]), float(rv[r, c]), float(bound[r, c])))
    nfail = int(fail.sum())
    return VerifyReport(nfail == 0, nfail, groups, first, int((row_group < 0).sum()), config)


class DiffReport:
    """`fp8-check diff` for one tensor pair: the fields of the CLI's JSON ("fp8ref.diff/1"),
    as attributes (status, passes, bitwise_mismatches, max_ulp, first, groups, ...)."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return (f"DiffReport(status={self.status!r}, bitwise_mismatches="
                f"{self.bitwise_mismatches}, max_ulp={self.max_ulp}, max_abs={self.max_abs})")


def diff(got, want, metric="bitwise", *, offs=None, bound=None, max_report=10, format=None):
    """`fp8-check diff`: got (the result under test) against want (the reference). metric:
    bitwise | ulp:N | tol:ATOL,RTOL, or an array `bound` (per element, or one value)."""
    a = as_array(got, format, "got")[0]
    b = as_array(want, format, "want")[0]
    o = None if offs is None else [int(v) for v in as_array(offs, what="offs")[0].reshape(-1)]
    bt = None
    if bound is not None:
        barr = np.ascontiguousarray(as_array(bound, what="bound")[0], dtype=np.float64)
        if (barr < 0).any():
            raise ValueError("--metric bound: a bound element is negative")
        bt = triple(barr, "bound")
    return DiffReport(_core.diff(triple(a, "got"), triple(b, "want"), metric, o, bt, max_report))


def load(path, *, metadata=False):
    """Tensors of a safetensors / npy / npz / torch.save zip file, by name (numpy arrays with
    ml_dtypes dtypes; packed FP4 as raw bytes). metadata=True: (tensors, metadata)."""
    tensors, meta = _core.read_tensor_file(str(path))
    out = {name: from_triple(*t) for name, t in tensors}
    return (out, meta) if metadata else out


def save(path, tensors, metadata=None):
    """Writes `tensors` (name -> array) by extension: .safetensors, .npz or .npy (one tensor)."""
    items = [(name, triple(as_array(x, what=name)[0], name)) for name, x in tensors.items()]
    _core.write_tensor_file(str(path), items, dict(metadata or {}))

