# fp8ref.testing.assert_bitwise_equal: passes on identical bits (NaN payloads included), and a
# failure names the first differing element (index, group, hex, decoded value, count).
import ml_dtypes
import numpy as np
import pytest

from fp8ref.testing import assert_bitwise_equal


def test_equal_bits_pass_including_nan_and_signed_zero():
    x = np.array([0.0, -0.0, np.nan, np.inf, 1.5], np.float32)
    assert_bitwise_equal(x, x.copy())


def test_negative_zero_against_zero_fails():
    with pytest.raises(AssertionError, match="0x80000000"):
        assert_bitwise_equal(np.array([-0.0], np.float32), np.array([0.0], np.float32))


def test_message_names_first_element_group_hex_and_value():
    want = np.arange(12, dtype=np.float32).reshape(6, 2).astype(ml_dtypes.float8_e4m3fn)
    got = want.copy()
    got[4, 1] = 448
    got[5, 0] = 1
    with pytest.raises(AssertionError) as e:
        assert_bitwise_equal(got, want, offs=np.array([2, 4, 6]))
    msg = str(e.value)
    assert "2 of 12 elements differ" in msg
    assert "index 9 [4, 1] group 2" in msg
    assert "got 0x7e (448) want 0x51 (9)" in msg and "F8_E4M3" in msg


def test_dtype_and_shape_mismatch_are_named():
    with pytest.raises(AssertionError, match="dtype F32 .* F16"):
        assert_bitwise_equal(np.zeros(2, np.float32), np.zeros(2, np.float16))
    with pytest.raises(AssertionError, match=r"shape \(2,\) .* \(3,\)"):
        assert_bitwise_equal(np.zeros(2, np.float32), np.zeros(3, np.float32))


def test_uint8_views_with_format():
    codes = np.array([0x38, 0x7F], np.uint8)
    assert_bitwise_equal(codes, codes.view(ml_dtypes.float8_e4m3fn), format="e4m3")
