"""Kernel presets and explain for arrays (docs/presets.md; docs/cli.md "explain"): kernel= in
grouped_gemm / verify_grouped_gemm resolves a preset on the arrays (the scaling, B layout and
output dtype read from them, as `fp8-check --kernel` does) and tries each member; explain()
returns fp8-check's explain report. Errors are ValueError with the CLI's one-line message.
"""

import json

from . import _core
from ._arrays import as_array, triple

# The signature defaults of grouped_gemm / verify_grouped_gemm: with kernel=, a value equal to its
# default counts as not given, so the preset (or the arrays) decide it.
_DEFAULTS = {"b_layout": "nk", "split_k": 1, "split_k_blocks": 0, "epilogue": "model",
             "out_dtype": "f32"}


def kernel_presets():
    """The preset table, one dict per (kernel, scaling, accumulation) row."""
    return _core.kernel_presets()


def _given(name, value):
    return value is not None and value != _DEFAULTS.get(name, object())


def _setup(got, a, b, scale_a, scale_b, offs, model, scaling, b_layout, split_k, split_k_blocks,
           epilogue, out_dtype):
    from ._ops import _gemm_inputs

    tensors, like = _gemm_inputs(a, b, scale_a, scale_b, offs)
    if got is not None:
        tensors["got"] = triple(as_array(got, what="got")[0], "got")
    o = _core.GemmOptions()
    o.in_, o.a, o.b = "<arrays>", "a", "b"
    o.scale_a = "scale_a" if "scale_a" in tensors else ""
    o.scale_b = "scale_b" if "scale_b" in tensors else ""
    o.offs = "offs" if "offs" in tensors else ""
    o.scaling = scaling or "none"
    o.model = model or ""
    o.b_layout = b_layout or "nk"
    o.split_k, o.split_blocks = split_k or 1, split_k_blocks or 0
    o.epilogue, o.out_dtype = epilogue or "model", out_dtype or "f32"
    given = (scaling is not None, _given("b_layout", b_layout), _given("out_dtype", out_dtype),
             model is not None, _given("split_k", split_k) or _given("split_k_blocks", split_k_blocks),
             _given("epilogue", epilogue))
    return tensors, like, o, given


def resolve_kernel(kernel, *, fast_accum=False, got=None, a, b, scale_a=None, scale_b=None,
                   offs=None, model=None, scaling=None, b_layout=None, split_k=None,
                   split_k_blocks=None, epilogue=None, out_dtype=None, grouping="m"):
    """(members, options): the preset's members as dicts (model, split_k, split_k_blocks,
    epilogue, configuration) and the scaling / b_layout / out_dtype read from the arrays."""
    tensors, _, o, given = _setup(got, a, b, scale_a, scale_b, offs, model, scaling, b_layout,
                                  split_k, split_k_blocks, epilogue, out_dtype)
    return _core.resolve_kernel(tensors, o, kernel, fast_accum, given, grouping)


def _member_options(m, filled):
    return dict(model=m["model"], split_k=int(m["split_k"]), split_k_blocks=int(m["split_k_blocks"]),
                epilogue=m["epilogue"], scaling=filled["scaling"], b_layout=filled["b_layout"],
                out_dtype=filled["out_dtype"])


def grouped_gemm_kernel(a, b, scale_a, scale_b, offs, *, kernel, fast_accum, bound, device,
                        grouping, **given):
    """grouped_gemm(kernel=...): the preset's first member (no split-K)."""
    from ._ops import grouped_gemm

    members, filled = resolve_kernel(kernel, fast_accum=fast_accum, a=a, b=b, scale_a=scale_a,
                                     scale_b=scale_b, offs=offs, grouping=grouping, **given)
    return grouped_gemm(a, b, scale_a, scale_b, offs, bound=bound, device=device,
                        grouping=grouping, **_member_options(members[0], filled))


def verify_kernel(got, a, b, scale_a, scale_b, offs, *, kernel, fast_accum, within_bound,
                  max_report, device, grouping, **given):
    """verify_grouped_gemm(kernel=...): the report of the first member that passes, else of the
    member with the fewest failures; `matched` names the member (None when none passes) and
    `members` lists (configuration, failures) for each member tried."""
    from ._ops import verify_grouped_gemm

    members, filled = resolve_kernel(kernel, fast_accum=fast_accum, got=got, a=a, b=b,
                                     scale_a=scale_a, scale_b=scale_b, offs=offs,
                                     grouping=grouping, **given)
    tried, best = [], None
    for m in members:
        r = verify_grouped_gemm(got, a, b, scale_a, scale_b, offs, within_bound=within_bound,
                                max_report=max_report, device=device, grouping=grouping,
                                **_member_options(m, filled))
        tried.append((m["configuration"], r.failures))
        if best is None or r.failures < best[1].failures:
            best = (m, r)
        if r.ok:
            break
    m, r = best
    r.matched = m["configuration"] if r.ok else None
    r.members = tried
    r.config["kernel"] = filled["kernel"]
    return r


class ExplainReport:
    """fp8-check explain's report (schema fp8ref.explain_grouped_gemm/1) as attributes: summary,
    exact_match, compared, ranking [{configuration, mismatches; screened_out and compared when
    counted on the screen only}], screen ({elements, rows}: verify's screen, docs/cli.md
    "explain"), first (the story of the first failing element: row, col, group, got, best, ulps,
    kind, because, reproduced_by, chain...)."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __str__(self):
        lines = [f"explain grouped-gemm: {self.summary}"]
        lines += [f"  {r['configuration']}: {r['mismatches']}"
                  + (f" of {r['compared']} screened" if r.get("screened_out") else "")
                  for r in self.ranking or []]
        if self.first:
            f = self.first
            lines.append(f"  first [{f['row']}, {f['col']}] group {f['group']}: got {f['got']} "
                         f"best {f['best']} ({f['ulps']:+d} ulp): {f['kind']}: {f['because']}")
        return "\n".join(lines)


def explain(got, a, b, scale_a=None, scale_b=None, offs=None, *, kernel=None, fast_accum=False,
            model=None, scaling=None, b_layout=None, split_k=None, split_k_blocks=None,
            epilogue=None, out_dtype=None, top=5):
    """`fp8-check explain grouped-gemm` on arrays (M-grouped): ranks the preset's members (or
    model=) and the wide configuration set by mismatches against `got` and explains its first
    failing element. Returns an ExplainReport."""
    if kernel is None and scaling is None and (scale_a is not None or scale_b is not None):
        raise ValueError("explain: scaling= is required with scales unless kernel= is given")
    tensors, _, o, given = _setup(got, a, b, scale_a, scale_b, offs, model, scaling, b_layout,
                                  split_k, split_k_blocks, epilogue, out_dtype)
    if kernel is None and not given[2]:
        o.out_dtype = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(
            str(as_array(got, what="got")[0].dtype), o.out_dtype)
    return ExplainReport(json.loads(_core.explain(tensors, o, kernel or "", fast_accum, given, top)))
