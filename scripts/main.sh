#!/usr/bin/env bash
# The main job: builds fp8-check (Release, reusing build/) and runs a fuzz campaign on the embedded
# defaults (every suite, the CI seed, 60 s), which shows progress and ends with a summary table.
# Extra arguments go to `fp8-check fuzz` (e.g. --seconds 600 --seed 7 --shard 0/4).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

fp8ref_configure build -DCMAKE_BUILD_TYPE=Release -DFP8REF_PYTHON="$FP8REF_VENV_PYTHON"
cmake --build build --target fp8-check -j2
# The ml_dtypes peer runs $FP8REF_PYTHON (else python3): the venv's, which has ml_dtypes.
if [[ -x "$FP8REF_VENV_PYTHON" ]]; then
  export FP8REF_PYTHON="$FP8REF_VENV_PYTHON"
fi
# Small cases: OpenMP workers that spin between them cost more than they save.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
exec build/tools/fp8-check fuzz "$@"
