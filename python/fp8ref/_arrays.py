"""Array adapters (docs/python.md "Arrays"): any caller array -- numpy, ml_dtypes, torch (CPU or
CUDA), JAX, or anything with __dlpack__ / the buffer protocol -- as a C-contiguous numpy view
typed with the ml_dtypes dtype of its elements, and results handed back in the caller's kind.
CPU inputs that are already contiguous are never copied; CUDA tensors are copied to the host
once (the oracle runs on the CPU).
"""

import numpy as np
import ml_dtypes

_NAME_TO_NP = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U8": np.dtype(np.uint8),
    "U16": np.dtype(np.uint16),
    "U32": np.dtype(np.uint32),
    "U64": np.dtype(np.uint64),
    "BOOL": np.dtype(np.bool_),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "F8_E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "F8_E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
}
_NP_TO_NAME = {v: k for k, v in _NAME_TO_NP.items()}

# Code formats (the CLI's --format tokens) -> the ml_dtypes dtype of one code per byte.
FORMAT_DTYPES = {
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "e8m0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "e2m1": np.dtype(ml_dtypes.float4_e2m1fn),
    "e2m3": np.dtype(ml_dtypes.float6_e2m3fn),
    "e3m2": np.dtype(ml_dtypes.float6_e3m2fn),
    "ue4m3": np.dtype(np.uint8),
}
_DTYPE_FORMATS = {v: k for k, v in FORMAT_DTYPES.items() if k != "ue4m3"}

# Source element dtypes of encode -> (CLI --from token, unsigned view of the same width).
SOURCES = {
    np.dtype(np.float32): ("f32", np.uint32),
    np.dtype(np.float64): ("f64", np.uint64),
    np.dtype(ml_dtypes.bfloat16): ("bf16", np.uint16),
    np.dtype(np.float16): ("f16", np.uint16),
}
_SOURCE_BITS = {"f32": np.dtype(np.uint32), "f64": np.dtype(np.uint64),
                "bf16": np.dtype(np.uint16), "f16": np.dtype(np.uint16)}

# torch dtype names (without "torch.") -> tensor_io names; torch is only imported by the caller.
_TORCH_TO_NAME = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
    "bool": "BOOL", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
    "float8_e8m0fnu": "F8_E8M0", "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
}
_NAME_TO_TORCH = {v: k for k, v in _TORCH_TO_NAME.items()}


class Like:
    """Where a result goes: a numpy array, or a torch tensor on `device`."""

    __slots__ = ("torch", "device")

    def __init__(self, torch=None, device=None):
        self.torch = torch
        self.device = device


NUMPY = Like()


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "dtype") and hasattr(x, "device")


def _from_torch(t):
    import torch

    name = _TORCH_TO_NAME.get(str(t.dtype).replace("torch.", ""))
    if name is None:
        raise ValueError(f"torch dtype {t.dtype} is not supported")
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    raw = t.reshape(-1).view(torch.uint8).numpy()
    return raw.view(_NAME_TO_NP[name]).reshape(tuple(t.shape)), torch


def as_array(x, format=None, what="x"):
    """(numpy view of x, where results go). `format` (a code format token) types a uint8 /
    int8 view as that format's codes."""
    like = NUMPY
    if _is_torch(x):
        arr, torch = _from_torch(x)
        like = Like(torch, x.device)
    elif isinstance(x, np.ndarray):
        arr = x if x.flags.c_contiguous else np.ascontiguousarray(x)
    elif hasattr(x, "__dlpack__") and not hasattr(x, "__array__"):
        arr = np.ascontiguousarray(np.from_dlpack(x))
    else:
        arr = np.ascontiguousarray(np.asarray(x))
    if format is not None:
        want = FORMAT_DTYPES.get(format)
        if want is None:
            raise ValueError(f"{what}: unknown format '{format}' (expected one of: "
                             + ", ".join(FORMAT_DTYPES) + ")")
        if arr.dtype in (np.dtype(np.uint8), np.dtype(np.int8)):
            arr = arr.view(want)
        elif arr.dtype != want:
            raise ValueError(f"{what}: dtype {arr.dtype} is not {format} codes "
                             f"(pass a uint8 view with format=, or {want} codes)")
    return arr, like


def dtype_name(arr, what="x"):
    name = _NP_TO_NAME.get(arr.dtype)
    if name is None:
        raise ValueError(f"{what}: dtype {arr.dtype} is not supported")
    return name


def triple(arr, what="x"):
    """The (dtype name, shape, uint8 bytes) triple fp8ref._core takes."""
    return dtype_name(arr, what), list(arr.shape), arr.reshape(-1).view(np.uint8)


def from_triple(name, shape, data):
    dt = _NAME_TO_NP.get(name)
    if dt is None or data.size != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
        return data  # packed F4 and the like: raw bytes
    return data.view(dt).reshape(shape)


def format_of(arr, what="codes"):
    f = _DTYPE_FORMATS.get(arr.dtype)
    if f is None:
        raise ValueError(f"{what}: dtype {arr.dtype} carries no code format; "
                         "pass format= (e4m3, e5m2, e8m0, ...) with a uint8 view")
    return f


def source_bits(arr, source, what="x"):
    """(CLI --from token, unsigned view of the source bit patterns)."""
    if source is not None:
        bits = _SOURCE_BITS.get(source)
        if bits is None:
            raise ValueError(f"unknown source '{source}' (expected f32, f64, bf16 or f16)")
        if arr.dtype.itemsize != bits.itemsize:
            raise ValueError(f"{what}: {arr.dtype.itemsize * 8}-bit elements for a {source} source")
        return source, arr.view(bits)
    s = SOURCES.get(arr.dtype)
    if s is None:
        raise ValueError(f"{what}: dtype {arr.dtype} cannot be encoded (float32, float64, "
                         "bfloat16 or float16; or bit patterns with source=)")
    return s[0], arr.view(s[1])


def give_back(out, like):
    """`out` (numpy) as the caller's kind: unchanged, or a torch tensor on the input's device."""
    if like.torch is None:
        return out
    torch = like.torch
    name = _NP_TO_NAME.get(out.dtype)
    tname = _NAME_TO_TORCH.get(name) if name else None
    if tname is None:  # FP6 / FP4 / ue4m3 codes: one byte each, as uint8
        tname, out = "uint8", out.view(np.uint8)
    t = torch.from_numpy(out.reshape(-1).view(np.uint8)).view(getattr(torch, tname))
    t = t.reshape(out.shape)
    return t if like.device is None or like.device.type == "cpu" else t.to(like.device)
