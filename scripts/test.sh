#!/usr/bin/env bash
# Builds everything (Release, build/) and runs every test suite: the command README.md gives and
# .ci/run runs. GPU tests report SKIPPED on a machine without a CUDA device, the Python
# cross-checks without the venv, and the cuda_fp8.h host-function tests without nvcc.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

fp8ref_configure build -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$FP8REF_VENV_PYTHON"
cmake --build build -j2
ctest --test-dir build -j2 --output-on-failure --no-tests=error
