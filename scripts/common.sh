# shellcheck shell=bash
# Sourced by scripts/test.sh, scripts/main.sh and .ci/run: moves to the repository root, puts
# a preinstalled nvcc on PATH (CMake then compiles gpu/), and holds the one configure line that
# the build directories share.

FP8REF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$FP8REF_ROOT" || exit 1
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# The Python that scripts/setup.sh sets up for the ml_dtypes / safetensors cross-checks.
FP8REF_VENV_PYTHON="$FP8REF_ROOT/.venv/bin/python"

# fp8ref_configure BUILD_DIR [cmake args...]: Ninja for a new build directory when present;
# an existing one keeps the generator it was made with.
fp8ref_configure() {
  local build_dir=$1
  shift
  local generator=()
  if [[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja > /dev/null; then
    generator=(-G Ninja)
  fi
  if [[ ! -x "$FP8REF_VENV_PYTHON" ]]; then
    echo "warning: $FP8REF_VENV_PYTHON missing (run scripts/setup.sh); Python cross-checks skip" >&2
  fi
  cmake -S "$FP8REF_ROOT" -B "$build_dir" "${generator[@]}" "$@"
}

# fp8ref_section TITLE: a timestamped header, so a log shows where the time goes.
fp8ref_section() {
  printf '\n===== [%s] %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$*"
}
