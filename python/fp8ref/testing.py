"""pytest helpers (docs/python.md "Testing"): exact comparisons that name the first differing
element, and the grouped-GEMM check against the oracle. Failures raise AssertionError, so pytest
prints the message as the reason.
"""

import numpy as np

from ._arrays import as_array, dtype_name
from ._ops import verify_grouped_gemm

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _value(arr, i):
    try:
        return float(arr.reshape(-1)[i].astype(np.float64))
    except (TypeError, ValueError):
        return float("nan")


def _group_of_row(offs, row):
    if offs is None:
        return None
    ends = np.asarray(as_array(offs, what="offs")[0], dtype=np.int64).reshape(-1)
    g = int(np.searchsorted(ends, row, side="right"))
    return g if g < ends.size else -1


def assert_bitwise_equal(got, want, *, format=None, offs=None, name="tensor"):
    """got and want hold the same dtype, shape and bit patterns (NaN payloads and signed zeros
    included). On failure names the first differing element: flat and multi-index, group (from
    `offs`, torch-style cumulative end rows over dim 0), both bit patterns in hex, both values,
    and how many elements differ."""
    g = as_array(got, format, "got")[0]
    w = as_array(want, format, "want")[0]
    gn, wn = dtype_name(g, "got"), dtype_name(w, "want")
    if gn != wn:
        raise AssertionError(f"{name}: dtype {gn} (got) != {wn} (want)")
    if g.shape != w.shape:
        raise AssertionError(f"{name}: shape {tuple(g.shape)} (got) != {tuple(w.shape)} (want)")
    bits = _UNSIGNED[g.dtype.itemsize]
    gb, wb = g.reshape(-1).view(bits), w.reshape(-1).view(bits)
    differ = np.flatnonzero(gb != wb)
    if differ.size == 0:
        return
    i = int(differ[0])
    idx = tuple(int(v) for v in np.unravel_index(i, g.shape)) if g.ndim else ()
    digits = 2 * g.dtype.itemsize
    group = _group_of_row(offs, idx[0]) if idx else None
    where = f" group {group}" if group is not None else ""
    raise AssertionError(
        f"{name}: {differ.size} of {gb.size} elements differ; first at index {i} {list(idx)}"
        f"{where}: got 0x{int(gb[i]):0{digits}x} ({_value(g, i):.9g}) want "
        f"0x{int(wb[i]):0{digits}x} ({_value(w, i):.9g}) [{gn}]")


def assert_grouped_gemm_matches(out, a, b, scale_a=None, scale_b=None, offs=None, *,
                                model=None, kernel=None, **options):
    """`out` (M, N) equals the oracle's grouped GEMM of (a, b, scales, offs) under `model`, or
    under some member of kernel= (a preset, docs/presets.md) (bitwise; within_bound=True accepts the model's bound of the exact value). Options are
    verify_grouped_gemm's (scaling, b_layout, split_k, epilogue, out_dtype, ...)."""
    if model is None and kernel is None:
        raise ValueError("assert_grouped_gemm_matches: model= or kernel= is required")
    report = verify_grouped_gemm(out, a, b, scale_a, scale_b, offs, model=model, kernel=kernel,
                                 **options)
    if not report.ok:
        raise AssertionError(str(report))
    return report
