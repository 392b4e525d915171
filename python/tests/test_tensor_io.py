# fp8ref.load / fp8ref.save: round trips through safetensors / npz / npy with every FP8 dtype
# kept, files fp8-check reads, and the reader's one-line errors as ValueError.
import ml_dtypes
import numpy as np
import pytest

import fp8ref
from fp8ref.testing import assert_bitwise_equal


def tensors(rng):
    return {
        "a": rng.normal(size=(3, 5)).astype(ml_dtypes.float8_e4m3fn),
        "b": rng.normal(size=(2, 4)).astype(ml_dtypes.float8_e5m2),
        "s": np.exp2(rng.integers(-5, 5, (4,))).astype(ml_dtypes.float8_e8m0fnu),
        "h": rng.normal(size=(7,)).astype(ml_dtypes.bfloat16),
        "offs": np.array([1, 3], np.int32),
        "x": rng.normal(size=()).astype(np.float32),
    }


def test_safetensors_round_trip_keeps_dtype_shape_bits_and_metadata(tmp_path, rng):
    t = tensors(rng)
    fp8ref.save(tmp_path / "case.safetensors", t, {"op": "test"})
    back, meta = fp8ref.load(tmp_path / "case.safetensors", metadata=True)
    assert list(back) == list(t) and meta["op"] == "test"
    for name in t:
        assert_bitwise_equal(back[name], t[name], name=name)


def test_npz_round_trip_of_numpy_dtypes(tmp_path, rng):
    # npy has no FP8 descr: ml_dtypes arrays are stored opaque ('|V1'), read back with --as
    t = {k: v for k, v in tensors(rng).items() if k in ("offs", "x")}
    fp8ref.save(tmp_path / "case.npz", t)
    back = fp8ref.load(tmp_path / "case.npz")
    for name in t:
        assert_bitwise_equal(back[name], t[name], name=name)


def test_npy_holds_one_tensor(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    fp8ref.save(tmp_path / "x.npy", {"tensor": x})
    assert_bitwise_equal(fp8ref.load(tmp_path / "x.npy")["tensor"], x)


def test_file_read_by_fp8_check(fp8_check, tmp_path, rng):
    fp8ref.save(tmp_path / "c.safetensors", tensors(rng))
    rc, out, err = fp8_check("inspect", str(tmp_path / "c.safetensors"))
    assert rc == 0, err
    assert "F8_E4M3" in out and "F8_E8M0" in out


def test_missing_and_corrupt_files_are_value_errors(tmp_path):
    with pytest.raises(ValueError):
        fp8ref.load(tmp_path / "none.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 20)
    with pytest.raises(ValueError) as e:
        fp8ref.load(tmp_path / "bad.safetensors")
    assert "\n" not in str(e.value)
