# Shared fixtures of the fp8ref pytest suite (docs/python.md "Tests"): the fp8-check program for
# the CLI cross-checks (FP8REF_CHECK, set by the ctest python.pytest) and a seeded generator.
import os
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def fp8_check():
    path = os.environ.get("FP8REF_CHECK")
    if not path or not os.path.exists(path):
        pytest.skip("FP8REF_CHECK does not name the fp8-check program")

    def run(*args, stdin=None):
        r = subprocess.run([path, *args], input=stdin, capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    return run


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)
