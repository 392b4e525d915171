# encode / decode against ml_dtypes (its own casts, a second implementation) and against the
# fp8-check encode / decode filters; zero-copy input kinds; errors as ValueError.
import ml_dtypes
import numpy as np
import pytest

import fp8ref

ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
      "e8m0": ml_dtypes.float8_e8m0fnu}


def every_bf16():
    return np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e8m0"])
def test_encode_every_bf16_equals_ml_dtypes_astype(fmt):
    x = every_bf16()
    got = fp8ref.encode(x, fmt, profile="ml_dtypes_0_6")
    assert got.dtype == ML[fmt]
    fp8ref.testing.assert_bitwise_equal(got, x.astype(ML[fmt]))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_encode_f32_classes_equal_ml_dtypes_astype(fmt, rng):
    # ties, subnormal boundaries, max +- ulp, overflow, NaN / Inf, signed zero: every f32 with
    # low 16 bits in a few classes around every bf16 pattern
    hi = np.arange(1 << 16, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    bits = (hi[:, None] | lows[None, :]).reshape(-1)
    bits = np.concatenate([bits, rng.integers(0, 1 << 32, 200_000, dtype=np.uint32)])
    x = bits.view(np.float32)
    fp8ref.testing.assert_bitwise_equal(fp8ref.encode(x, fmt, profile="ml_dtypes_0_6"),
                                        x.astype(ML[fmt]))


def test_encode_f64_equals_ml_dtypes_double_rounding(rng):
    x = rng.normal(scale=100, size=100_000)
    fp8ref.testing.assert_bitwise_equal(fp8ref.encode(x, "e4m3", profile="ml_dtypes_0_6"),
                                        x.astype(ml_dtypes.float8_e4m3fn))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e8m0"])
def test_decode_every_code_equals_ml_dtypes(fmt):
    codes = np.arange(256, dtype=np.uint8)
    got = fp8ref.decode(codes, fmt, to="f64")
    want = codes.view(ML[fmt]).astype(np.float64)
    np.testing.assert_array_equal(got, want)


def test_decode_infers_format_and_keeps_shape():
    c = np.arange(256, dtype=np.uint8).reshape(16, 16).view(ml_dtypes.float8_e5m2)
    got = fp8ref.decode(c)
    assert got.dtype == np.float32 and got.shape == (16, 16)
    np.testing.assert_array_equal(got, c.astype(np.float32))


def hex_lines(bits, digits):
    return "".join(f"{int(b):0{digits}x}\n" for b in bits)


@pytest.mark.parametrize("profile,fmt,rounding",
                         [("ocp_sat", "e4m3", None), ("cuda_satfinite", "e5m2", None),
                          ("torch_2_11", "e8m0", None), ("ocp_nosat", "e4m3", "rtz"),
                          ("ocp_sat", "e8m0", "rup")])
def test_encode_equals_cli_encode(fp8_check, profile, fmt, rounding, rng):
    bits = rng.integers(0, 1 << 32, 3000, dtype=np.uint32)
    args = ["encode", "--format", fmt, "--profile", profile, "--from", "f32"]
    if rounding:
        args += ["--rounding", rounding]
    rc, out, err = fp8_check(*args, stdin=hex_lines(bits, 8))
    assert rc == 0, err
    want = np.array([int(t, 16) for t in out.split()], dtype=np.uint8)
    got = fp8ref.encode(bits.view(np.float32), fmt, profile=profile, rounding=rounding)
    fp8ref.testing.assert_bitwise_equal(got.view(np.uint8), want)


def test_encode_sr_equals_cli(fp8_check, rng):
    x = rng.normal(size=500).astype(np.float32)
    rand = rng.integers(0, 1 << 32, 500, dtype=np.uint32)
    lines = "".join(f"{int(b):08x} {int(r):08x}\n" for b, r in zip(x.view(np.uint32), rand))
    rc, out, err = fp8_check("encode", "--format", "e4m3", "--profile", "ocp_sat",
                             "--rounding", "sr", stdin=lines)
    assert rc == 0, err
    want = np.array([int(t, 16) for t in out.split()], dtype=np.uint8)
    got = fp8ref.encode(x, "e4m3", profile="ocp_sat", rounding="sr", rand=rand)
    fp8ref.testing.assert_bitwise_equal(got.view(np.uint8), want)


def test_decode_equals_cli_decode(fp8_check):
    codes = np.arange(256, dtype=np.uint8)
    rc, out, err = fp8_check("decode", "--format", "e4m3", "--to", "f32",
                             stdin=hex_lines(codes, 2))
    assert rc == 0, err
    want = np.array([int(t, 16) for t in out.split()], dtype=np.uint32)
    got = fp8ref.decode(codes, "e4m3")
    fp8ref.testing.assert_bitwise_equal(got.view(np.uint32), want)


def test_bit_pattern_sources_and_uint8_views():
    x = every_bf16()
    a = fp8ref.encode(x.view(np.uint16), "e4m3", profile="ocp_sat", source="bf16")
    b = fp8ref.encode(x, "e4m3", profile="ocp_sat")
    fp8ref.testing.assert_bitwise_equal(a, b)
    np.testing.assert_array_equal(fp8ref.decode(a.view(np.uint8), "e4m3"), fp8ref.decode(a))


def test_encode_reads_the_caller_buffer_without_copy():
    # a strided view is copied once; a contiguous one is read in place (same result either way)
    x = np.linspace(-500, 500, 4001, dtype=np.float32)
    fp8ref.testing.assert_bitwise_equal(fp8ref.encode(x[::2], "e4m3", profile="ocp_sat"),
                                        fp8ref.encode(x[::2].copy(), "e4m3", profile="ocp_sat"))


def test_torch_cpu_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(64, 32, dtype=torch.bfloat16)
    got = fp8ref.encode(x, "e4m3", profile="torch_2_11")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float8_e4m3fn
    fp8ref.testing.assert_bitwise_equal(got, x.to(torch.float8_e4m3fn))
    back = fp8ref.decode(got)
    assert back.dtype == torch.float32
    assert torch.equal(back, got.float())


@pytest.mark.parametrize("call,message", [
    (lambda: fp8ref.encode(np.zeros(3, np.int32), "e4m3", profile="ocp_sat"), "cannot be encoded"),
    (lambda: fp8ref.encode(np.zeros(3, np.float32), "e4m3", profile="nope"), "nope"),
    (lambda: fp8ref.encode(np.zeros(3, np.float32), "e4m3", profile="torch_2_11",
                           rounding="rtz"), "torch_2_11 has no rtz"),
    (lambda: fp8ref.encode(np.zeros(3, np.float32), "e4m3", profile="ocp_sat",
                           rounding="sr"), "needs rand="),
    (lambda: fp8ref.decode(np.zeros(3, np.uint8)), "format="),
    (lambda: fp8ref.decode(np.zeros(3, np.float32), "e4m3"), "not e4m3 codes"),
    (lambda: fp8ref.decode(np.zeros(3, np.uint8), "e4m3", to="f16"), "f16"),
])
def test_bad_input_is_one_line_value_error(call, message):
    with pytest.raises(ValueError, match=message) as e:
        call()
    assert "\n" not in str(e.value)


def test_gil_is_released_during_encode():
    """With a switch interval far longer than the test, the GIL changes hands only when its holder
    gives it up: a thread that ticks between short sleeps can tick while encode runs only if
    encode releases it (nothing else in the call blocks). Held, no tick falls inside the call."""
    import sys
    import threading
    import time
    x = np.ones(20_000_000, np.float32)
    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    saved = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    th = threading.Thread(target=ticker)
    th.start()
    try:
        inside = 0
        for _ in range(5):  # a loaded machine may not schedule the ticker during one call
            t0 = time.perf_counter()
            out = fp8ref.encode(x, "e4m3", profile="ocp_sat")
            t1 = time.perf_counter()
            inside = sum(t0 < t < t1 for t in list(ticks))
            if inside:
                break
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(saved)
    assert (out.view(np.uint8) == 0x38).all()
    assert inside > 0, "no other thread ran during encode: the GIL was held"


class DLPackOnly:
    """An array known only through the DLPack protocol (as a framework tensor would be)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_only_input_is_accepted():
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    fp8ref.testing.assert_bitwise_equal(fp8ref.encode(DLPackOnly(x), "e5m2", profile="ocp_sat"),
                                        fp8ref.encode(x, "e5m2", profile="ocp_sat"))


def test_import_needs_neither_torch_nor_jax():
    import subprocess
    import sys
    code = "import sys, fp8ref, fp8ref.testing; print(sorted({'torch', 'jax'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
