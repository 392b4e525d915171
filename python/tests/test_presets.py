# kernel= presets and explain in Python (docs/python.md, docs/presets.md): each against outputs
# planted by the oracle under one explicit configuration, and against fp8-check's --kernel /
# explain on the same arrays written to a file.
import json

import ml_dtypes
import numpy as np
import pytest

import fp8ref

M, N = 32, 40


def block_codes(rng, rows, k):
    """e4m3 codes whose exponent depends on the 128-K block, so split-K and scale orders show."""
    base = rng.integers(1, 15, -(-k // 128))
    e = np.clip(np.repeat(base, 128)[:k][None, :] + rng.integers(-1, 2, (rows, k)), 1, 15)
    c = (rng.integers(0, 2, (rows, k)) << 7) | (e << 3) | rng.integers(0, 8, (rows, k))
    c[(c & 0x7F) == 0x7F] = 0x7E
    return c.astype(np.uint8).view(ml_dtypes.float8_e4m3fn)


def tensorwise_case(rng, k=2048):
    return dict(a=block_codes(rng, M, k), b=np.ascontiguousarray(block_codes(rng, N, k).T),
                scale_a=rng.uniform(1e-3, 3e-3, ()).astype(np.float32),
                scale_b=rng.uniform(1e-3, 3e-3, ()).astype(np.float32))


def rowwise_case(rng, k=1024):
    return dict(a=block_codes(rng, M, k), b=np.ascontiguousarray(block_codes(rng, N, k).T),
                scale_a=rng.uniform(1e-3, 3e-3, (M, 1)).astype(np.float32),
                scale_b=rng.uniform(1e-3, 3e-3, (1, N)).astype(np.float32))


def plant(t, scaling, **model):
    return fp8ref.grouped_gemm(**t, scaling=scaling, b_layout="kn", **model)


def test_kernel_presets_table_lists_the_torch_kernels():
    aliases = {row["alias"] for row in fp8ref.kernel_presets()}
    assert {"torch._scaled_mm", "torch._scaled_grouped_mm", "deep_gemm.fp8_gemm_nt"} <= aliases


def test_verify_kernel_names_the_planted_member(rng):
    t = tensorwise_case(rng)
    got = plant(t, "tensorwise", model="hopper_promoted_tensorwise", split_k=3, epilogue="scale_product")
    r = fp8ref.verify_grouped_gemm(got, **t, kernel="torch._scaled_mm")
    assert r.ok and r.matched == "hopper_promoted_tensorwise split_k=3 epilogue=scale_product"
    assert [f for _, f in r.members][:2] != [0, 0] and r.members[-1][1] == 0


def test_verify_kernel_refuses_a_non_member(rng):
    t = tensorwise_case(rng)
    got = plant(t, "tensorwise", model="hopper_unpromoted", split_k=3, epilogue="scale_product")
    r = fp8ref.verify_grouped_gemm(got, **t, kernel="torch._scaled_mm")
    assert not r.ok and r.matched is None and r.failures > 0
    with pytest.raises(AssertionError):
        fp8ref.testing.assert_grouped_gemm_matches(got, **t, kernel="torch._scaled_mm")
    fp8ref.testing.assert_grouped_gemm_matches(got, **t, kernel="torch._scaled_mm", fast_accum=True)


def test_grouped_gemm_kernel_is_the_first_member(rng):
    t = tensorwise_case(rng, 1024)
    y = fp8ref.grouped_gemm(**t, kernel="torch._scaled_mm", fast_accum=True)
    want = plant(t, "tensorwise", model="hopper_unpromoted", epilogue="scale_product")
    fp8ref.testing.assert_bitwise_equal(y, want)


def test_explain_tells_an_epilogue_story_as_the_cli_does(rng, fp8_check, tmp_path):
    t = rowwise_case(rng)
    got = plant(t, "rowwise", model="hopper_promoted_rowwise", epilogue="a_then_b")
    r = fp8ref.explain(got, **t, kernel="torch._scaled_mm")
    assert not r.exact_match and r.first["kind"] == "epilogue"
    assert r.ranking[0]["mismatches"] == 0 and "a_then_b" in r.ranking[0]["configuration"]
    path = tmp_path / "case.safetensors"
    fp8ref.save(path, {"a": t["a"], "b": t["b"], "sa": t["scale_a"], "sb": t["scale_b"], "got": got})
    rc, out, err = fp8_check("explain", "grouped-gemm", "--in", str(path), "--a", "a", "--b", "b",
                             "--scale-a", "sa", "--scale-b", "sb", "--got", "got",
                             "--kernel", "torch._scaled_mm", "--json")
    assert rc == 1, err
    cli = json.loads(out)
    assert cli["summary"] == r.summary and cli["first"] == r.first


def test_explain_without_a_preset_ranks_the_planted_configuration_first(rng):
    t = tensorwise_case(rng)
    got = plant(t, "tensorwise", model="hopper_unpromoted", split_k=2, epilogue="scale_product")
    r = fp8ref.explain(got, **t, scaling="tensorwise", b_layout="kn")
    assert r.exact_match and r.ranking[0] == {
        "configuration": "hopper_unpromoted split_k=2 epilogue=scale_product", "mismatches": 0}
    assert r.ranking[1]["mismatches"] > 0


def test_kernel_bad_input_is_one_line(rng):
    t = tensorwise_case(rng, 256)
    got = plant(t, "tensorwise", model="exact")
    with pytest.raises(ValueError, match="unknown kernel") as e:
        fp8ref.verify_grouped_gemm(got, **t, kernel="torch.nope")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="model= or kernel= is required"):
        fp8ref.grouped_gemm(**t, scaling="tensorwise")


def test_kernel_with_k_grouping_names_the_member_and_refuses_an_m_only_kernel(rng):
    ends = np.array([256, 256, 640], np.int64)
    t = dict(a=block_codes(rng, M, 640), b=np.ascontiguousarray(block_codes(rng, N, 640).T),
             scale_a=rng.uniform(1e-3, 3e-3, 3 * M).astype(np.float32),
             scale_b=rng.uniform(1e-3, 3e-3, 3 * N).astype(np.float32), offs=ends)
    got = fp8ref.grouped_gemm(**t, grouping="k", scaling="rowwise", b_layout="kn",
                              model="hopper_promoted_rowwise", epilogue="a_then_b")
    r = fp8ref.verify_grouped_gemm(got, **t, grouping="k", kernel="torch._scaled_grouped_mm")
    assert r.ok and r.matched == "hopper_promoted_rowwise split_k=1 epilogue=a_then_b"
    other = fp8ref.grouped_gemm(**t, grouping="k", scaling="rowwise", b_layout="kn",
                                model="hopper_promoted_rowwise", epilogue="b_then_a")
    assert not fp8ref.verify_grouped_gemm(other, **t, grouping="k",
                                          kernel="torch._scaled_grouped_mm").ok
    with pytest.raises(ValueError, match="M-grouped only"):
        fp8ref.verify_grouped_gemm(got, **t, grouping="k", kernel="deep_gemm.fp8_gemm_nt")
