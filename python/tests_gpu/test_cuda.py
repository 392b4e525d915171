# GPU paths of the Python package (docs/python.md "GPU"): torch CUDA tensors in and out of
# encode / decode / grouped_gemm, and assert_grouped_gemm_matches on torch._scaled_grouped_mm
# (rowwise scales, bf16 out: hopper_promoted_rowwise with the a_then_b epilogue). Every test
# SKIPS without torch or a CUDA device. Run by scripts/device/python.sh on the GPU machine.
import numpy as np
import pytest

import fp8ref
from fp8ref.testing import assert_bitwise_equal, assert_grouped_gemm_matches

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_encode_cuda_bf16_equals_torch_cast_on_the_device():
    x = torch.randn(1024, 256, dtype=torch.bfloat16, device="cuda") * 64
    got = fp8ref.encode(x, "e4m3", profile="torch_2_11")
    assert got.device.type == "cuda" and got.dtype == torch.float8_e4m3fn
    assert_bitwise_equal(got, x.to(torch.float8_e4m3fn))


def test_decode_cuda_codes_returns_cuda_f32():
    c = torch.arange(256, dtype=torch.uint8, device="cuda").view(torch.float8_e5m2)
    got = fp8ref.decode(c)
    assert got.device.type == "cuda"
    # NaN codes decode to a NaN whose sign and payload are not part of the contract
    torch.testing.assert_close(got, c.float(), rtol=0, atol=0, equal_nan=True)


def test_scaled_grouped_mm_matches_the_oracle():
    torch.manual_seed(0)
    m, n, k, g = 256, 128, 256, 4
    a = (torch.randn(m, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(g, n, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    scale_a = torch.rand(m, device="cuda", dtype=torch.float32) + 0.5
    scale_b = torch.rand(g, n, device="cuda", dtype=torch.float32) + 0.5
    offs = torch.tensor([64, 64, 192, 256], dtype=torch.int32, device="cuda")
    out = torch._scaled_grouped_mm(a, b.transpose(-2, -1), scale_a, scale_b, offs=offs,
                                   out_dtype=torch.bfloat16)
    assert out.shape == (m, n)
    report = fp8ref.verify_grouped_gemm(out, a, b, scale_a, scale_b, offs,
                                        model="hopper_promoted_rowwise", scaling="rowwise",
                                        epilogue="a_then_b", out_dtype="bf16",
                                        within_bound=True)
    print(report)
    assert_grouped_gemm_matches(out, a, b, scale_a, scale_b, offs,
                                model="hopper_promoted_rowwise", scaling="rowwise",
                                epilogue="a_then_b", out_dtype="bf16")


def test_grouped_gemm_of_cuda_operands_returns_cuda():
    a = (torch.randn(32, 128, device="cuda")).to(torch.float8_e4m3fn)
    b = (torch.randn(2, 16, 128, device="cuda")).to(torch.float8_e4m3fn)
    offs = torch.tensor([10, 32], dtype=torch.int32, device="cuda")
    y = fp8ref.grouped_gemm(a, b, offs=offs, model="exact")
    assert y.device.type == "cuda" and y.dtype == torch.float32
    want = fp8ref.grouped_gemm(a.cpu(), b.cpu(), offs=offs.cpu(), model="exact")
    assert_bitwise_equal(y.cpu(), want)
    assert np.isfinite(want.numpy()).all()
