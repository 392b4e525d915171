"""Writes torch.save-format zip archives without torch: a stand-in `torch` module supplies
_rebuild_tensor_v2 / _rebuild_tensor_v3 (UntypedStorage + explicit dtype, as torch 2.11 writes the
float8 dtypes), *Storage and dtype globals, and CPython's own pickler (protocol 2, persistent ids)
produces data.pkl byte for byte the way torch/serialization.py does. Used by the interop test."""
import collections
import pickle
import sys
import types
import zipfile

import numpy as np

_torch = types.ModuleType("torch")
_utils = types.ModuleType("torch._utils")


def _rebuild_tensor_v2(*args):  # never called: only pickled by reference
    raise NotImplementedError


_rebuild_tensor_v2.__module__ = "torch._utils"
_utils._rebuild_tensor_v2 = _rebuild_tensor_v2
_torch._utils = _utils
for _name in ("FloatStorage", "Float8_e4m3fnStorage"):
    setattr(_torch, _name, type(_name, (), {"__module__": "torch"}))


def _rebuild_tensor_v3(*args):  # never called: only pickled by reference
    raise NotImplementedError


_rebuild_tensor_v3.__module__ = "torch._utils"
_utils._rebuild_tensor_v3 = _rebuild_tensor_v3
_storage_mod = types.ModuleType("torch.storage")
_storage_mod.UntypedStorage = type("UntypedStorage", (), {"__module__": "torch.storage"})
_torch.storage = _storage_mod
_torch.float8_e4m3fn = type("float8_e4m3fn", (), {"__module__": "torch"})  # pickles as a global
sys.modules.setdefault("torch", _torch)
sys.modules.setdefault("torch._utils", _utils)
sys.modules.setdefault("torch.storage", _storage_mod)


class _Storage:
    def __init__(self, key, type_name, array):
        holder = _storage_mod if type_name == "UntypedStorage" else _torch
        self.key, self.type, self.array = key, getattr(holder, type_name), np.ascontiguousarray(array).reshape(-1)


class _View:
    """A strided view of a storage, pickled like torch.Tensor.__reduce_ex__."""

    def __init__(self, storage, offset, shape, strides):
        self.storage, self.offset, self.shape, self.strides = storage, offset, shape, strides

    def __reduce__(self):
        return (_rebuild_tensor_v2, (self.storage, self.offset, tuple(self.shape), tuple(self.strides), False,
                                     collections.OrderedDict()))


class _ViewV3(_View):
    """A view pickled the torch 2.11 way for float8: UntypedStorage and an explicit dtype."""

    def __reduce__(self):
        return (_rebuild_tensor_v3, (self.storage, self.offset, tuple(self.shape), tuple(self.strides), False,
                                     collections.OrderedDict(), _torch.float8_e4m3fn))


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.type, obj.key, "cpu", obj.array.size)
        return None


def write_fake_torch_zip(path, base_f32, fp8_2d):
    s0 = _Storage("0", "FloatStorage", base_f32)
    s1 = _Storage("1", "Float8_e4m3fnStorage", fp8_2d)
    s2 = _Storage("2", "UntypedStorage", fp8_2d.view(np.uint8))  # numel counts bytes
    r, c = base_f32.shape
    fr, fc = fp8_2d.shape
    obj = {"model": collections.OrderedDict([("w", _View(s0, 0, (r, c), (c, 1))),
                                             ("w_t", _View(s0, 0, (c, r), (1, c))),
                                             ("row2", _View(s0, 2 * c, (c,), (1,)))]),
           "fp8": [_View(s1, 0, (fr, fc), (fc, 1)), _View(s1, fc, (fr - 1, (fc + 1) // 2), (fc, 2))],
           "fp8v3": _ViewV3(s2, 1, (fr, fc - 1), (fc, 1))}
    import io
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("fake_torch/data.pkl", buf.getvalue())
        z.writestr("fake_torch/byteorder", "little")
        z.writestr("fake_torch/data/0", s0.array.tobytes())
        z.writestr("fake_torch/data/1", s1.array.view(np.uint8).tobytes())
        z.writestr("fake_torch/data/2", s2.array.tobytes())
        z.writestr("fake_torch/version", "3\n")
