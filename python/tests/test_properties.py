# Property tests driven by fp8ref.strategies: encode against ml_dtypes on the class-weighted f32
# inputs, and the documented pytest pattern for a user's kernel -- a small pure-numpy grouped
# GEMM checked against the oracle, with a planted group-boundary bug that the suite must catch.
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

import fp8ref
from fp8ref.strategies import encode_inputs, grouped_gemm_cases
from fp8ref.testing import assert_bitwise_equal, assert_grouped_gemm_matches

CI = settings(max_examples=60, deadline=None, derandomize=True, database=None)


@CI
@given(x=encode_inputs("e4m3"))
def test_encode_class_inputs_equal_ml_dtypes(x):
    x = np.array([x], np.float32)
    assert_bitwise_equal(fp8ref.encode(x, "e4m3", profile="ml_dtypes_0_6"),
                         x.astype(ml_dtypes.float8_e4m3fn))


def numpy_grouped_gemm(a, b, offs):
    """A user's 'kernel': Y[r] = A[r]·B[g(r)]^T summed exactly in f64 (FP8 products and sums of
    up to 256 of them are exact there), rounded once to f32 -- the `exact` model."""
    m = a.shape[0]
    group = np.searchsorted(offs, np.arange(m), side="right")
    y = np.zeros((m, b.shape[1]), np.float32)
    for r in range(m):
        if group[r] < len(offs):
            y[r] = (b[group[r]].astype(np.float64) @ a[r].astype(np.float64)).astype(np.float32)
    return y


def numpy_grouped_gemm_planted_bug(a, b, offs):
    """The same with side="left": the first row of every group after the first uses the
    previous group's weights."""
    m = a.shape[0]
    group = np.searchsorted(offs, np.arange(m), side="left")
    y = np.zeros((m, b.shape[1]), np.float32)
    for r in range(m):
        if group[r] < len(offs):
            y[r] = (b[group[r]].astype(np.float64) @ a[r].astype(np.float64)).astype(np.float32)
    return y


def check_kernel(kernel):
    @CI
    @given(case=grouped_gemm_cases(max_m=24, max_n=8, k_blocks=(1,)))
    def kernel_matches_oracle(case):
        out = kernel(case["a"], case["b"], case["offs"])
        assert_grouped_gemm_matches(out, **case, model="exact")

    kernel_matches_oracle()


def test_numpy_kernel_matches_the_exact_oracle():
    check_kernel(numpy_grouped_gemm)


def test_planted_group_boundary_bug_is_caught():
    with pytest.raises(AssertionError, match=r"result: DIFFERS") as e:
        check_kernel(numpy_grouped_gemm_planted_bug)
    assert "group" in str(e.value)
