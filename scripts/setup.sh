#!/usr/bin/env bash
# Installs what fp8ref's build and tests need on a fresh Debian 12 machine: the Debian packages
# below and a Python venv (.venv at the repository root) for the ml_dtypes / safetensors
# cross-checks and the Python package fp8ref (python/; docs/python.md). Idempotent: a re-run
# that finds everything in place changes nothing and takes about a second. CUDA is not
# installed here: a preinstalled /usr/local/cuda is used if present.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

debian_packages=(
  build-essential cmake ninja-build git
  python3 python3-venv python3-pip python3-dev
  libeigen3-dev libboost-dev libgtest-dev libgmock-dev librapidcheck-dev
  libcli11-dev nlohmann-json3-dev zlib1g-dev
  clang libclang-rt-14-dev clang-format
)
# Headless browser for the report rendering test; Debian ships it under either name.
browser_candidates=(chromium-headless-shell chromium)

# numpy / ml_dtypes / safetensors: the cross-checks; nanobind / scikit-build-core: the Python
# package fp8ref (python/, built by CMake when nanobind is found); pytest / hypothesis: its tests.
python_pins=(numpy==2.4.6 ml_dtypes==0.6.0 safetensors==0.8.0 nanobind==2.9.2
  scikit-build-core==0.11.6 pytest==8.4.2 hypothesis==6.140.3)

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo > /dev/null || { echo "setup.sh: not root and no sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q '^install ok installed$'
}

has_candidate() {
  local candidate
  candidate=$(apt-cache policy "$1" 2> /dev/null | awk '/Candidate:/ {print $2}')
  [[ -n "$candidate" && "$candidate" != "(none)" ]]
}

# --- 1. Debian packages: apt only when something is missing --------------------------------
missing=()
for pkg in "${debian_packages[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done
browser=""
for pkg in "${browser_candidates[@]}"; do
  if is_installed "$pkg"; then browser=$pkg; break; fi
done

if [[ ${#missing[@]} -eq 0 && -n "$browser" ]]; then
  echo "setup: Debian packages already installed (${#debian_packages[@]} + $browser)"
else
  note=""
  [[ -n "$browser" ]] || note=" + a headless chromium"
  echo "setup: to install: ${missing[*]}$note"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  if [[ -z "$browser" ]]; then
    for pkg in "${browser_candidates[@]}"; do
      if has_candidate "$pkg"; then browser=$pkg; break; fi
    done
    [[ -n "$browser" ]] || { echo "setup: no ${browser_candidates[*]} package found" >&2; exit 1; }
    missing+=("$browser")
  fi
  unknown=()
  for pkg in "${missing[@]}"; do
    has_candidate "$pkg" || unknown+=("$pkg")
  done
  if [[ ${#unknown[@]} -gt 0 ]]; then
    echo "setup: no installable Debian package named: ${unknown[*]}" >&2
    exit 1
  fi
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- 2. Python venv with pinned packages: pip only when a pin is not met --------------------
venv_python="$root/.venv/bin/python"
pins_met() {
  "$venv_python" - "${python_pins[@]}" << 'PY' 2> /dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

if [[ -x "$venv_python" ]] && ! "$venv_python" -c 'import sys' 2> /dev/null; then
  echo "setup: .venv is broken (made on another machine?); recreating it"
  rm -rf "$root/.venv"
fi
if [[ ! -x "$venv_python" ]]; then
  # Debian's interpreter (python3-venv above), not whatever python3 comes first on PATH.
  /usr/bin/python3 -m venv "$root/.venv"
fi
if pins_met; then
  echo "setup: .venv already has ${python_pins[*]}"
else
  echo "setup: installing ${python_pins[*]} into .venv"
  "$venv_python" -m pip install --quiet --disable-pip-version-check "${python_pins[@]}"
  pins_met || { echo "setup: .venv does not have ${python_pins[*]} after pip install" >&2; exit 1; }
fi

# --- 3. What the build will find -----------------------------------------------------------
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: nvcc at /usr/local/cuda/bin (the scripts put it on PATH; gpu/ will be compiled)"
else
  echo "setup: no /usr/local/cuda/bin/nvcc: gpu/ will not be compiled"
fi
echo "setup: done"
