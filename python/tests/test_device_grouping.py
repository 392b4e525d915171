# grouped_gemm / verify_grouped_gemm with device="cuda" (the GPU oracle: the CPU oracle's bits,
# no bound) and grouping="k" (torch's 2d x 2d K-grouped product, fp8-check --grouping k) against
# numpy's exact sums and the CLI (docs/python.md "Devices and K-grouped"). The CUDA tests skip
# without a device; without one, device="cuda" must raise RuntimeError with one line.
import ml_dtypes
import numpy as np
import pytest

import fp8ref
from fp8ref import _core
from fp8ref.testing import assert_bitwise_equal

NO_CUDA = _core.cuda_unavailable()
needs_cuda = pytest.mark.skipif(bool(NO_CUDA), reason=f"device='cuda': {NO_CUDA}")

M, N, G = 5, 7, 4
OFFS = np.array([100, 100, 260, 300], np.int32)  # group 1 empty; K columns 300..319 in no group
K = 320


def small_codes(rng, shape):
    """Small integers as e4m3: exact products and sums, so the exact result is numpy's."""
    return rng.integers(-4, 5, shape).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)


def k_case(rng):
    a, b = small_codes(rng, (M, K)), small_codes(rng, (N, K))
    sa = np.exp2(rng.integers(-3, 4, G * M)).astype(np.float32)
    sb = np.exp2(rng.integers(-3, 4, G * N)).astype(np.float32)
    want = np.zeros((G, M, N), np.float64)
    start = 0
    for g, end in enumerate(OFFS):
        acc = a[:, start:end].astype(np.float64) @ b[:, start:end].astype(np.float64).T
        want[g] = acc * sa[g * M:(g + 1) * M, None] * sb[None, g * N:(g + 1) * N]
        start = end
    return {"a": a, "b": b, "scale_a": sa, "scale_b": sb, "offs": OFFS}, want.astype(np.float32)


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_k_grouped_exact_equals_numpy(rng, b_layout):
    t, want = k_case(rng)
    if b_layout == "kn":
        t["b"] = np.ascontiguousarray(t["b"].T)
    y = fp8ref.grouped_gemm(**t, model="exact", scaling="rowwise", b_layout=b_layout,
                            grouping="k")
    assert y.shape == (G, M, N)
    assert_bitwise_equal(y, want)
    assert not y[1].any() and not np.signbit(y[1]).any()  # the empty group: +0


def test_k_grouped_equals_cli_oracle(fp8_check, tmp_path, rng):
    t, _ = k_case(rng)
    fp8ref.save(tmp_path / "in.safetensors", t)
    rc, _, err = fp8_check("oracle", "grouped-gemm", "--in", str(tmp_path / "in.safetensors"),
                           "--a", "a", "--b", "b", "--offs", "offs", "--grouping", "k",
                           "--scaling", "rowwise", "--scale-a", "scale_a", "--scale-b",
                           "scale_b", "--model", "hopper_promoted_rowwise", "--out-dtype",
                           "bf16", "--out", str(tmp_path / "y.safetensors"))
    assert rc == 0, err
    y = fp8ref.grouped_gemm(**t, model="hopper_promoted_rowwise", scaling="rowwise",
                            out_dtype="bf16", grouping="k")
    assert_bitwise_equal(y, fp8ref.load(tmp_path / "y.safetensors")["out"])


def test_k_grouped_verify_names_the_group(rng):
    t, want = k_case(rng)
    kw = dict(model="exact", scaling="rowwise", grouping="k")
    assert fp8ref.verify_grouped_gemm(want, **t, **kw).ok
    wrong = want.copy()
    wrong[2, 1, 3] += 1
    rep = fp8ref.verify_grouped_gemm(wrong, **t, **kw)
    assert not rep.ok and rep.failures == 1
    assert [g.mismatches for g in rep.groups] == [0, 0, 1, 0]
    f = rep.first_failures[0]
    assert (f.row, f.col, f.group) == (2 * M + 1, 3, 2)  # the (G·M, N) stacking, as the CLI
    assert fp8ref.verify_grouped_gemm(wrong, **t, **kw, within_bound=True).failures == 1


@pytest.mark.parametrize("call,message", [
    (lambda t: fp8ref.grouped_gemm(**t, model="exact", scaling="blockwise", grouping="k"),
     "--scale-a: 'scale_a' has shape"),
    (lambda t: fp8ref.grouped_gemm(**t, model="exact", scaling="nvfp4", grouping="k"),
     "--grouping k takes --scaling"),
    (lambda t: fp8ref.grouped_gemm(**t, model="exact", scaling="rowwise", grouping="x"),
     "grouping"),
    (lambda t: fp8ref.grouped_gemm(**t, model="exact", scaling="rowwise", device="tpu"),
     "device"),
])
def test_bad_grouping_or_device_is_one_line_value_error(rng, call, message):
    t, _ = k_case(rng)
    with pytest.raises(ValueError, match=message) as e:
        call(t)
    assert "\n" not in str(e.value)


@pytest.mark.skipif(not NO_CUDA, reason="a CUDA device is present")
def test_cuda_without_a_device_raises_runtime_error(rng):
    t, _ = k_case(rng)
    for grouping in ("m", "k"):
        with pytest.raises(RuntimeError, match="device='cuda'") as e:
            fp8ref.grouped_gemm(**t, model="exact", scaling="rowwise", grouping=grouping,
                                device="cuda")
        assert "\n" not in str(e.value)


def m_case(rng, scaling):
    m, n, k, g = 300, 40, 384, 3
    t = {"a": small_codes(rng, (m, k)), "b": small_codes(rng, (g, n, k)),
         "offs": np.array([128, 128, 290], np.int32)}  # exactly 128 rows, an empty group
    if scaling == "rowwise":
        t["scale_a"] = rng.uniform(0.5, 2, m).astype(np.float32)
        t["scale_b"] = rng.uniform(0.5, 2, (g, n)).astype(np.float32)
    if scaling == "blockwise":
        t["scale_a"] = rng.uniform(0.5, 2, (m, k // 128)).astype(np.float32)
        t["scale_b"] = rng.uniform(0.5, 2, (g, 1, k // 128)).astype(np.float32)
    return t


@needs_cuda
@pytest.mark.parametrize("model,scaling,out_dtype", [
    ("exact", "none", "f32"), ("hopper_promoted_blockwise", "blockwise", "bf16"),
    ("hopper_promoted_rowwise", "rowwise", "bf16"), ("fp32_sequential", "rowwise", "f16"),
    ("hopper_mma_sync", "none", "f32"), ("hopper_unpromoted", "none", "bf16")])
def test_cuda_equals_cpu_bitwise(rng, model, scaling, out_dtype):
    t = m_case(rng, scaling)
    kw = dict(model=model, scaling=scaling, out_dtype=out_dtype)
    y = fp8ref.grouped_gemm(**t, **kw, device="cuda")
    assert_bitwise_equal(y, fp8ref.grouped_gemm(**t, **kw))
    assert fp8ref.verify_grouped_gemm(y, **t, **kw, device="cuda").ok


@needs_cuda
def test_cuda_k_grouped_equals_numpy_and_refuses_a_bound(rng):
    t, want = k_case(rng)
    kw = dict(model="exact", scaling="rowwise", grouping="k")
    assert_bitwise_equal(fp8ref.grouped_gemm(**t, **kw, device="cuda"), want)
    assert fp8ref.verify_grouped_gemm(want, **t, **kw, device="cuda").ok
    with pytest.raises(ValueError, match="CPU oracle"):
        fp8ref.grouped_gemm(**t, **kw, device="cuda", bound=True)


@needs_cuda
@pytest.mark.parametrize("model", ["exact", "hopper_promoted_blockwise", "fp32_sequential"])
def test_cuda_k_grouped_blockwise_equals_cpu(rng, model):
    t, _ = k_case(rng)
    r = 5  # 1x128 blocks along K restarting at each group: 1 + 0 + 2 + 1, and 1 past offs[-1]
    t["scale_a"] = rng.uniform(0.5, 2, (M, r)).astype(np.float32)
    t["scale_b"] = rng.uniform(0.5, 2, (N, r)).astype(np.float32)
    kw = dict(model=model, scaling="blockwise", grouping="k", out_dtype="bf16")
    y = fp8ref.grouped_gemm(**t, **kw, device="cuda")
    assert_bitwise_equal(y, fp8ref.grouped_gemm(**t, **kw))
    assert not y[1].view(np.uint16).any()  # the empty group: +0
