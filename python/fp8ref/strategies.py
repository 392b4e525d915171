"""hypothesis generators (docs/python.md "Property tests"): the input classes of fp8ref's own
property suites -- group-size distributions and FP8 value classes -- for a pytest / hypothesis
suite that drives a user's kernel against the oracle. Each generator reports the class it drew
with hypothesis.event, so `pytest --hypothesis-show-statistics` proves the classes were hit.
Arrays are filled by numpy from a drawn seed (fast for GEMM-sized operands; shrinking acts on
the shape, the group sizes and the class mix).
"""

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from ._arrays import FORMAT_DTYPES

GROUP_DISTRIBUTIONS = ("uniform", "one_hot", "with_empty", "ragged", "single_row")

# Code classes of an FP8 format: (name, code picker over a numpy generator).
_MAX = {"e4m3": 0x7E, "e5m2": 0x7B}
_MIN_NORMAL = {"e4m3": 0x08, "e5m2": 0x04}


def _class_codes(fmt, cls, rng, n):
    sign = rng.integers(0, 2, n, dtype=np.uint8) << 7
    if cls == "zero":
        mag = np.zeros(n, np.uint8)
    elif cls == "subnormal":
        mag = rng.integers(1, _MIN_NORMAL[fmt], n, dtype=np.uint8)
    elif cls == "max":
        mag = _MAX[fmt] - rng.integers(0, 2, n, dtype=np.uint8)
    elif cls == "min_normal":
        mag = np.full(n, _MIN_NORMAL[fmt], np.uint8)
    else:  # "normal": every finite normal code
        mag = rng.integers(_MIN_NORMAL[fmt], _MAX[fmt] + 1, n, dtype=np.uint8)
    return sign | mag


VALUE_CLASSES = ("normal", "zero", "subnormal", "min_normal", "max")
# Class mixes a drawn operand uses: mostly normal values with a share of each edge class.
_MIXES = {
    "normal": {"normal": 1.0},
    "edges": {"normal": 0.6, "zero": 0.1, "subnormal": 0.1, "min_normal": 0.1, "max": 0.1},
    "subnormal_heavy": {"normal": 0.3, "subnormal": 0.6, "zero": 0.1},
    "overflow_heavy": {"normal": 0.5, "max": 0.5},
}


@st.composite
def fp8_arrays(draw, fmt, shape, mixes=tuple(_MIXES)):
    """An array of `fmt` codes (the format's ml_dtypes dtype) of `shape`: finite values only,
    drawn from one class mix (normal, edges, subnormal_heavy, overflow_heavy)."""
    mix = draw(st.sampled_from(list(mixes)))
    seed = draw(st.integers(0, 2**32 - 1))
    event(f"{fmt} mix: {mix}")
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    names, weights = zip(*_MIXES[mix].items())
    pick = rng.choice(len(names), size=n, p=np.array(weights) / sum(weights))
    out = np.zeros(n, np.uint8)
    for i, cls in enumerate(names):
        sel = pick == i
        out[sel] = _class_codes(fmt, cls, rng, int(sel.sum()))
    return out.view(FORMAT_DTYPES[fmt]).reshape(shape)


@st.composite
def offsets(draw, m, g, distributions=GROUP_DISTRIBUTIONS, padding=True):
    """torch `offs` (int32, length g, cumulative end rows) for m rows: group sizes from one of
    uniform, one_hot (every row in one expert), with_empty (some groups without rows), ragged,
    single_row; with padding, rows past offs[-1] belong to no group."""
    dist = draw(st.sampled_from(list(distributions)))
    used = m - (draw(st.integers(0, m // 4)) if padding else 0)
    event(f"groups: {dist}" + (", padded" if used < m else ""))
    if dist == "uniform":
        sizes = [used // g + (1 if i < used % g else 0) for i in range(g)]
    elif dist == "one_hot":
        hot = draw(st.integers(0, g - 1))
        sizes = [used if i == hot else 0 for i in range(g)]
    elif dist == "single_row":
        sizes = [1 if i < min(g, used) else 0 for i in range(g)]
    else:
        cuts = sorted(draw(st.lists(st.integers(0, used), min_size=g - 1, max_size=g - 1)))
        sizes = np.diff([0, *cuts, used]).tolist()
        if dist == "with_empty" and g > 1:
            empty = draw(st.integers(0, g - 1))
            sizes[(empty + 1) % g] += sizes[empty]
            sizes[empty] = 0
    return np.cumsum(sizes).astype(np.int32)


@st.composite
def grouped_gemm_cases(draw, max_m=48, max_n=32, k_blocks=(1, 2), max_g=4, fmt="e4m3",
                       scaling="none"):
    """Operands of an M-grouped forward: a (M, K), b (G, N, K) `nk`, offs, and (tensorwise /
    rowwise) power-of-two decode scales, as a dict of grouped_gemm's keyword names."""
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, max_n))
    k = 128 * draw(st.sampled_from(list(k_blocks)))
    g = draw(st.integers(1, max_g))
    case = {"a": draw(fp8_arrays(fmt, (m, k))), "b": draw(fp8_arrays(fmt, (g, n, k))),
            "offs": draw(offsets(m, g))}
    pow2 = st.integers(-4, 4).map(lambda e: np.float32(2.0**e))
    if scaling == "tensorwise":
        case["scale_a"] = np.array(draw(pow2), np.float32)
        case["scale_b"] = np.array(draw(st.lists(pow2, min_size=g, max_size=g)), np.float32)
    elif scaling == "rowwise":
        case["scale_a"] = np.array(draw(st.lists(pow2, min_size=m, max_size=m)), np.float32)
        case["scale_b"] = np.array(draw(st.lists(pow2, min_size=g * n, max_size=g * n)),
                                   np.float32).reshape(g, n)
    return case


def _f32(bits):
    return np.array(bits, np.uint32).view(np.float32)


@st.composite
def encode_inputs(draw, fmt="e4m3"):
    """One f32 value from the classes a cast to `fmt` decides differently: ties between two
    codes, the subnormal boundary, max +- ulp, overflow, NaN / Inf, signed zero, any pattern."""
    dt = FORMAT_DTYPES[fmt]
    finite = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
    finite = np.unique(finite[np.isfinite(finite)])
    cls = draw(st.sampled_from(["tie", "near_tie", "subnormal_boundary", "max_ulp", "overflow",
                                "special", "any"]))
    event(f"encode class: {cls}")
    if cls in ("tie", "near_tie"):
        i = draw(st.integers(0, finite.size - 2))
        mid = np.float32((finite[i] + finite[i + 1]) / 2)
        if cls == "near_tie":
            mid = np.nextafter(mid, np.float32(draw(st.sampled_from([-np.inf, np.inf]))))
        return np.float32(mid)
    if cls == "subnormal_boundary":
        b = float(np.arange(256, dtype=np.uint8).view(dt)[_MIN_NORMAL.get(fmt, 8)].astype(float))
        return np.float32(b * draw(st.sampled_from([0.5, 0.75, 1 - 2**-10, 1.0, 1 + 2**-10])))
    if cls == "max_ulp":
        top = np.float32(finite.max())
        return np.nextafter(top, np.float32(draw(st.sampled_from([-np.inf, np.inf]))))
    if cls == "overflow":
        return np.float32(finite.max() * draw(st.sampled_from([1.0625, 1.125, 2.0, 1e30])))
    if cls == "special":
        return _f32(draw(st.sampled_from([0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
                                          0x7FC00000, 0xFFC00001, 0x7F800001])))
    return _f32(draw(st.integers(0, 2**32 - 1)))


__all__ = ["fp8_arrays", "offsets", "grouped_gemm_cases", "encode_inputs",
           "GROUP_DISTRIBUTIONS", "VALUE_CLASSES"]
