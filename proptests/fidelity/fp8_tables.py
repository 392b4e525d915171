"""FP8 code tables and an e4m3 encoder in plain numpy, shared by the device cross-check scripts
(mmasim_step_xcheck.py, scaled_mm_predict.py). Written from the OCP FP8 definitions
(docs/design.md §4), not from fp8ref's codec: e4m3fn bias 7, no Inf, NaN S.1111.111, max 448;
e5m2 bias 15, IEEE-like."""
import numpy as np

FORMAT_ID = {"e4m3": 0, "e5m2": 1}
FORMATS = ("e4m3", "e5m2")
MAN_BITS = {"e4m3": 3, "e5m2": 2}
BIAS = {"e4m3": 7, "e5m2": 15}
EMIN = {"e4m3": -6, "e5m2": -14}


def decode_table(fmt):
    """float64[256]: the value of every code (NaN for NaN codes, +-Inf for e5m2 Inf)."""
    p, bias = MAN_BITS[fmt], BIAS[fmt]
    out = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        field, man = (code & 0x7F) >> p, code & ((1 << p) - 1)
        if fmt == "e4m3" and (code & 0x7F) == 0x7F:
            out[code] = np.nan
        elif fmt == "e5m2" and field == 31:
            out[code] = sign * np.inf if man == 0 else np.nan
        elif field == 0:
            out[code] = sign * man * 2.0 ** (1 - bias - p)
        else:
            out[code] = sign * (1 + man / (1 << p)) * 2.0 ** (field - bias)
    return out


DECODE = {f: decode_table(f) for f in FORMATS}


def finite_codes(fmt):
    return np.flatnonzero(np.isfinite(DECODE[fmt])).astype(np.uint8)


def subnormal_codes(fmt):
    p = MAN_BITS[fmt]
    return np.array([s | m for s in (0, 0x80) for m in range(1, 1 << p)], dtype=np.uint8)


def special_codes(fmt):
    return np.flatnonzero(~np.isfinite(DECODE[fmt])).astype(np.uint8)


def encode_e4m3_sat(x):
    """float64 array -> e4m3fn codes, round to nearest even, saturating to +-448 (finite input)."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    e = np.frexp(np.where(mag > 0, mag, 1.0))[1] - 1  # exact: mag in [2^e, 2^(e+1))
    e = np.clip(e, EMIN["e4m3"], 8)
    quantum = np.exp2(e - 3)
    r = np.minimum(np.round(mag / quantum) * quantum, 448.0)  # np.round: half to even
    # Value -> code through the sorted table of non-negative finite values (codes 0x00..0x7E).
    table = DECODE["e4m3"][:0x7F]
    code = np.searchsorted(table, r).astype(np.uint8)
    assert np.array_equal(table[code], r), "e4m3 encoder produced a value off the grid"
    return np.where((x < 0) & (code != 0), code | 0x80, code).astype(np.uint8)
