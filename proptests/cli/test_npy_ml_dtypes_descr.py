#!/usr/bin/env python3
"""`np.save` of ml_dtypes arrays read by `fp8-check inspect`, as a user dumps them.

float8_e5m2 is the one ml_dtypes type numpy stores under descr '<f1': it must read as F8_E5M2
without --as, with the codes unchanged. float8_e4m3fn is stored as '<V1': without --as the refusal
is one line, exit 2, naming the 1-byte types and the --as spellings (not bfloat16, which is
'<V2'); with --as e4m3 it reads. Exit 0 iff every check holds.
Usage: test_npy_ml_dtypes_descr.py --fp8-check PATH --workdir DIR
"""

import argparse
import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np


def inspect(exe, path, *extra):
    r = subprocess.run([exe, "inspect", path, "--json", "--no-progress", *extra],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    failures = []

    vals = np.array([0.0, 1.0, -2.5, 57344.0, np.inf, np.nan], dtype=np.float32)
    e5 = vals.astype(ml_dtypes.float8_e5m2)
    assert e5.dtype.str == "<f1", e5.dtype.str  # the case this test is about
    f1 = os.path.join(a.workdir, "e5m2.npy")
    np.save(f1, e5)
    rc, out, err = inspect(a.fp8_check, f1)
    if rc != 0:
        failures.append(f"'<f1' without --as: exit {rc}: {err.strip()}")
    else:
        t = json.loads(out)["tensors"][0]
        if t["dtype"] != "F8_E5M2":
            failures.append(f"'<f1' read as {t['dtype']}, want F8_E5M2")

    e4 = vals[:4].astype(ml_dtypes.float8_e4m3fn)
    v1 = os.path.join(a.workdir, "e4m3.npy")
    np.save(v1, e4)
    rc, _, err = inspect(a.fp8_check, v1)
    lines = err.strip().split("\n")
    if rc != 2 or len(lines) != 1:
        failures.append(f"'<V1' without --as: exit {rc}, {len(lines)} stderr lines (want 2, 1)")
    elif "float8_e4m3fn" not in err or "--as e4m3" not in err or "bfloat16" in err:
        failures.append(f"'<V1' message does not name the 1-byte types and --as: {err.strip()}")
    rc, out, err = inspect(a.fp8_check, v1, "--as", "e4m3")
    if rc != 0 or json.loads(out)["tensors"][0]["dtype"] != "F8_E4M3":
        failures.append(f"'<V1' --as e4m3: exit {rc}: {err.strip()}")

    for f in failures:
        print("FAIL:", f)
    print(f"{3 - len(failures)}/3 checks passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
