"""fp8ref: the FP8 reference numerics and grouped-GEMM oracle of fp8ref, for numpy, ml_dtypes,
torch and JAX arrays (docs/python.md). The functions mirror the fp8-check subcommands
(docs/cli.md); fp8ref.testing holds the pytest helpers, fp8ref.strategies the hypothesis
generators. Needs numpy and ml_dtypes; torch and JAX are used only when their arrays are given.
"""

from ._ops import (DiffReport, Failure, GroupResult, Quantized, VerifyReport, decode, dequantize,
                   diff, encode, grouped_gemm, load, quantize, save, verify_grouped_gemm)
from ._presets import ExplainReport, explain, kernel_presets

__all__ = ["encode", "decode", "quantize", "dequantize", "grouped_gemm", "verify_grouped_gemm",
           "diff", "load", "save", "explain", "kernel_presets", "ExplainReport", "Quantized", "VerifyReport", "GroupResult",
           "Failure", "DiffReport", "testing", "strategies"]


def __getattr__(name):
    # fp8ref.testing / fp8ref.strategies on first use (strategies imports hypothesis).
    if name in ("testing", "strategies"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
