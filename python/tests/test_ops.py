# quantize / dequantize, the grouped-GEMM oracle, verify_grouped_gemm and diff against the
# fp8-check subcommands on the same tensors (files written by fp8ref.save), against a numpy
# exact-arithmetic oracle, and their bad-input errors.
import json

import ml_dtypes
import numpy as np
import pytest

import fp8ref
from fp8ref.testing import assert_bitwise_equal, assert_grouped_gemm_matches

E4M3 = ml_dtypes.float8_e4m3fn


def codes(rng, shape):
    return rng.normal(scale=4, size=shape).astype(E4M3)


@pytest.mark.parametrize("recipe,block,layout", [
    ("deepgemm", "1x128", "row_major"), ("torchao", "rowwise", "row_major"),
    ("mx_rceil", "1x32", "e8m0_row_major"), ("te", "128x128", "col_major")])
def test_quantize_equals_cli_quantize(fp8_check, tmp_path, rng, recipe, block, layout):
    x = rng.normal(scale=3, size=(256, 256)).astype(np.float32)
    fp8ref.save(tmp_path / "x.safetensors", {"x": x})
    rc, _, err = fp8_check("quantize", "--recipe", recipe, "--block", block, "--layout", layout,
                           "--in", f"{tmp_path}/x.safetensors:x",
                           "--out", str(tmp_path / "q.safetensors"))
    assert rc == 0, err
    want = fp8ref.load(tmp_path / "q.safetensors")
    got_codes, got_scales = fp8ref.quantize(x, recipe=recipe, block=block, layout=layout)
    assert_bitwise_equal(got_codes, want["codes"], name="codes")
    assert_bitwise_equal(got_scales, want["scales"], name="scales")


def test_dequantize_is_code_times_block_scale(rng):
    x = rng.normal(scale=3, size=(4, 256)).astype(np.float32)
    c, s = fp8ref.quantize(x, recipe="deepgemm", block="1x128", layout="row_major")
    z = fp8ref.dequantize(c, s, block="1x128", to="f64")
    v = c.astype(np.float64)
    for r in range(4):
        for k in range(256):
            assert z[r, k] == v[r, k] * float(s[r, k // 128])
    # e4m3 keeps 3 fraction bits: |x - q| <= 2^-4 |x| for normal values (no clamping here)
    big = np.abs(x) > 2.0**-6 * np.repeat(s, 128, axis=1)
    assert (np.abs(z - x)[big] <= np.ldexp(np.abs(x[big]), -4)).all()


def test_quantize_bad_tokens_are_cli_messages():
    x = np.zeros((4, 128), np.float32)
    with pytest.raises(ValueError, match="unknown recipe 'nope'"):
        fp8ref.quantize(x, recipe="nope", block="1x128", layout="row_major")
    with pytest.raises(ValueError, match="not 2-D"):
        fp8ref.quantize(np.zeros(8, np.float32), recipe="deepgemm", block="1x128",
                        layout="row_major")


def gemm_case(rng, m=40, n=24, k=256, g=3, scaling="none"):
    a, b = codes(rng, (m, k)), codes(rng, (g, n, k))
    offs = np.array([7, 7, 33], np.int32)[:g]  # an empty group and 7 rows past the last end
    t = {"a": a, "b": b, "offs": offs}
    if scaling == "rowwise":
        t["scale_a"] = np.exp2(rng.integers(-3, 3, m)).astype(np.float32) * 1.25
        t["scale_b"] = rng.uniform(0.5, 2, (g, n)).astype(np.float32)
    if scaling == "blockwise":
        t["scale_a"] = rng.uniform(0.5, 2, (m, k // 128)).astype(np.float32)
        t["scale_b"] = rng.uniform(0.5, 2, (g, (n + 127) // 128, k // 128)).astype(np.float32)
    return t


def test_exact_model_equals_numpy_exact_sum(rng):
    t = gemm_case(rng, k=64)
    y = fp8ref.grouped_gemm(t["a"], t["b"], offs=t["offs"], model="exact")
    a, b = t["a"].astype(np.float64), t["b"].astype(np.float64)
    want = np.zeros(y.shape, np.float32)
    start = 0
    for g, end in enumerate(t["offs"]):
        # |products| <= 448^2 and >= 2^-18: every partial sum of 64 is exact in f64
        want[start:end] = (a[start:end] @ b[g].T).astype(np.float32)
        start = end
    assert_bitwise_equal(y, want, offs=t["offs"])


@pytest.mark.parametrize("model,scaling,extra", [
    ("hopper_promoted_rowwise", "rowwise", ["--epilogue", "a_then_b"]),
    ("hopper_promoted_blockwise", "blockwise", ["--split-k", "2"]),
    ("hopper_unpromoted", "none", ["--out-dtype", "bf16"]),
    ("fp32_sequential", "rowwise", [])])
def test_grouped_gemm_equals_cli_oracle(fp8_check, tmp_path, rng, model, scaling, extra):
    t = gemm_case(rng, scaling=scaling)
    fp8ref.save(tmp_path / "in.safetensors", t)
    args = ["oracle", "grouped-gemm", "--in", str(tmp_path / "in.safetensors"), "--a", "a",
            "--b", "b", "--offs", "offs", "--model", model, "--scaling", scaling,
            "--out", str(tmp_path / "y.safetensors"), *extra]
    if scaling != "none":
        args += ["--scale-a", "scale_a", "--scale-b", "scale_b"]
    rc, _, err = fp8_check(*args)
    assert rc == 0, err
    want = fp8ref.load(tmp_path / "y.safetensors")["out"]
    opts = dict(zip(extra[::2], extra[1::2]))
    y = fp8ref.grouped_gemm(**t, model=model, scaling=scaling,
                            epilogue=opts.get("--epilogue", "model"),
                            split_k=int(opts.get("--split-k", 1)),
                            out_dtype=opts.get("--out-dtype", "f32"))
    assert_bitwise_equal(y, want, offs=t["offs"])
    assert_grouped_gemm_matches(y, **t, model=model, scaling=scaling,
                                epilogue=opts.get("--epilogue", "model"),
                                split_k=int(opts.get("--split-k", 1)),
                                out_dtype=opts.get("--out-dtype", "f32"))


def test_verify_names_group_and_counts_like_the_cli(fp8_check, tmp_path, rng):
    t = gemm_case(rng, scaling="rowwise")
    kw = dict(model="hopper_promoted_rowwise", scaling="rowwise")
    y = fp8ref.grouped_gemm(**t, **kw)
    y[20, 3] = np.nextafter(y[20, 3], np.float32(np.inf))
    y[35, 0] = 12345.0  # past offs[-1]: not compared
    rep = fp8ref.verify_grouped_gemm(y, **t, **kw)
    assert not rep.ok and rep.failures == 1 and rep.padding_rows == 7
    assert [g.mismatches for g in rep.groups] == [0, 0, 1]
    f = rep.first_failures[0]
    assert (f.row, f.col, f.group) == (20, 3, 2) and abs(f.got_bits - f.ref_bits) == 1
    assert rep.config["model"] == "hopper_promoted_rowwise"
    within = fp8ref.verify_grouped_gemm(y, **t, **kw, within_bound=True)
    fp8ref.save(tmp_path / "in.safetensors", {**t, "got": y})
    rc, out, _ = fp8_check("verify", "grouped-gemm", "--in", str(tmp_path / "in.safetensors"),
                           "--a", "a", "--b", "b", "--offs", "offs", "--scale-a", "scale_a",
                           "--scale-b", "scale_b", "--scaling", "rowwise", "--model",
                           "hopper_promoted_rowwise", "--got", "got", "--within-bound")
    assert (rc == 0) == within.ok, out
    with pytest.raises(AssertionError, match=r"\[20, 3\] group 2"):
        assert_grouped_gemm_matches(y, **t, **kw)


def test_diff_equals_cli_diff_json(fp8_check, tmp_path, rng):
    want = rng.normal(size=(30, 16)).astype(np.float32)
    got = want.copy()
    got[3, 4] = np.nextafter(got[3, 4], np.float32(10))
    got[20, 1] *= 1.5
    offs = np.array([10, 30], np.int64)
    fp8ref.save(tmp_path / "d.safetensors", {"got": got, "want": want, "offs": offs})
    f = str(tmp_path / "d.safetensors")
    rc, out, err = fp8_check("diff", f + ":got", f + ":want", "--metric", "ulp:1", "--json",
                             "--groups", f + ":offs")
    assert rc == 1, err
    cli = json.loads(out)
    cli_t = cli["tensors"][0] if "tensors" in cli else cli
    d = fp8ref.diff(got, want, "ulp:1", offs=offs)
    assert d.status == "differs" and not d.passes
    assert d.bitwise_mismatches == 2 and d.metric_failures == 1
    assert d.max_ulp == cli_t["max_ulp"] and d.metric_failures == cli_t["metric_failures"]
    assert [g["mismatches"] for g in d.groups if g["group"] >= 0] == [1, 1]
    assert fp8ref.diff(got, want, bound=np.full(got.shape, 10.0)).passes


# fp8ref.diff/1 keys that DiffReport spells otherwise (docs/python.md §3); the rest are equal.
DIFF_RENAMED = {"ulp_histogram": "ulp_hist", "first_mismatches": "first"}
MISMATCH_RENAMED = {"index": "multi_index", "flat": "index", "a_hex": "a_bits", "b_hex": "b_bits"}


def json_value(key, v):
    """A value of the CLI's JSON as DiffReport holds it: non-finite numbers are strings there,
    bit patterns hex strings, an ULP distance across NaN / Inf classes "class"."""
    if key in ("a_hex", "b_hex"):
        return int(v, 16)
    if key == "ulp" and v == "class":
        return -1
    if v in ("nan", "inf", "-inf"):
        return float(v)
    return v


def same(x, y):
    return x == y or (isinstance(x, float) and np.isnan(x) and np.isnan(y))


def test_diff_report_holds_every_field_of_cli_diff_json(fp8_check, tmp_path, rng):
    """Both are written from one field list (tools/cli/diff_fields.h): every key of
    `fp8-check diff --json` is a DiffReport field with the same value, nested ones included."""
    want = rng.normal(size=(24, 8)).astype(np.float32)
    got = want.copy()
    got[2, 3] = np.nextafter(got[2, 3], np.float32(10))
    got[9, 0], got[15, 7], want[20, 2] = np.nan, got[15, 7] * 3, np.inf
    offs = np.array([8, 16, 24], np.int64)
    fp8ref.save(tmp_path / "d.safetensors", {"got": got, "want": want, "offs": offs})
    f = str(tmp_path / "d.safetensors")
    rc, out, err = fp8_check("diff", f + ":got", f + ":want", "--metric", "ulp:2", "--json",
                             "--groups", f + ":offs")
    assert rc == 1, err
    cli = json.loads(out)["tensors"][0]
    d = fp8ref.diff(got, want, "ulp:2", offs=offs)
    assert len(cli["first_mismatches"]) == 4 and len(cli["groups"]) >= 3  # nested lists compared
    for key, v in cli.items():
        mine = getattr(d, DIFF_RENAMED.get(key, key))
        if key == "name":  # the pair's name: the CLI's tensor name, "tensor" for arrays
            assert mine == "tensor" and v == "got"
        elif key == "ulp_histogram":
            assert mine == {int(k): n for k, n in v.items()}
        elif key in ("first_mismatches", "groups"):
            renamed = MISMATCH_RENAMED if key == "first_mismatches" else {}
            assert len(mine) == len(v)
            for m, c in zip(mine, v):
                for k, cv in c.items():
                    assert same(m[renamed.get(k, k)], json_value(k, cv)), (key, k, m, c)
        else:
            assert same(mine, json_value(key, v)), (key, mine, v)


@pytest.mark.parametrize("call,error,message", [
    (lambda t: fp8ref.grouped_gemm(t["a"], t["b"][:, :, :64], offs=t["offs"], model="exact"),
     ValueError, "--b: 'b' has shape"),
    (lambda t: fp8ref.grouped_gemm(t["a"], t["b"], model="exact"), ValueError,
     "--offs is required"),
    (lambda t: fp8ref.grouped_gemm(t["a"].view(np.uint8), t["b"], offs=t["offs"],
                                   model="exact"), ValueError, "expected F8_E4M3, F8_E5M2"),
    (lambda t: fp8ref.grouped_gemm(t["a"], t["b"], offs=np.array([5, 3, 40]), model="exact"),
     ValueError, "--offs"),
    (lambda t: fp8ref.grouped_gemm(t["a"], t["b"], offs=t["offs"], model="exact",
                                   kernel="deepgemm"), ValueError, "--kernel: unknown kernel"),
    (lambda t: fp8ref.explain(t["a"], t["a"], t["b"], offs=t["offs"]), ValueError, "got: shape"),
    (lambda t: fp8ref.grouped_gemm(t["a"], t["b"], offs=t["offs"], grouping="k",
                                   kernel="deep_gemm.fp8_gemm_nt"), ValueError, "M-grouped only"),
])
def test_gemm_bad_input_errors(rng, call, error, message):
    with pytest.raises(error, match=message) as e:
        call(gemm_case(rng))
    assert "\n" not in str(e.value)


def test_torch_cpu_operands_give_a_torch_result(rng):
    torch = pytest.importorskip("torch")
    t = gemm_case(rng)
    ta = torch.from_numpy(t["a"].view(np.uint8)).view(torch.float8_e4m3fn)
    tb = torch.from_numpy(t["b"].view(np.uint8)).view(torch.float8_e4m3fn)
    y = fp8ref.grouped_gemm(ta, tb, offs=torch.from_numpy(t["offs"]), model="exact")
    assert isinstance(y, torch.Tensor)
    assert_bitwise_equal(y, fp8ref.grouped_gemm(**t, model="exact"))


@pytest.mark.parametrize("recipe,block,layout", [
    ("deepgemm", "tensorwise", "row_major"), ("deepgemm", "128x128", "row_major"),
    ("torchao", "rowwise", "row_major"), ("mx_rceil", "1x32", "e8m0_row_major")])
def test_dequantize_of_3d_quantize_is_within_half_an_e4m3_ulp(rng, recipe, block, layout):
    x = rng.normal(size=(2, 64, 256)).astype(np.float32)
    c, s = fp8ref.quantize(x, recipe=recipe, block=block, layout=layout)
    z = fp8ref.dequantize(c, s, block=block, to="f64")
    # |x| >= 1e-2 lies far above every block's FP8 subnormal range (scale ~ amax / 448 < 0.02):
    # round to nearest with 3 fraction bits errs by at most 2^-4 |x|
    big = np.abs(x) >= 1e-2
    assert (np.abs(z - x)[big] <= np.ldexp(np.abs(x[big]), -4)).all()
