#!/usr/bin/env bash
# Installs a built fp8ref tree into a temporary prefix, then configures, builds and runs the
# consumer project (find_package(fp8ref CONFIG)) against it, and runs the installed fp8-check.
# Usage: proptests/consumer/run.sh BUILD_DIR      (run by .ci/run after scripts/test.sh)
set -euo pipefail

if [[ $# -ne 1 || ! -f "$1/CMakeCache.txt" ]]; then
  echo "usage: $0 BUILD_DIR   (a configured and built fp8ref build directory)" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -d /usr/local/cuda/bin ]] && export PATH="/usr/local/cuda/bin:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/fp8ref-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

echo "== install $build_dir -> $prefix"
cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log" \
  || { cat "$work/install.log"; exit 1; }
echo "installed $(grep -c '^-- Installing' "$work/install.log") files"

echo "== configure + build the consumer"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$here" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
cmake --build "$work/build" -j2

echo "== run"
"$work/build/consumer"
"$work/build/consumer_reference"
if [[ -x "$work/build/consumer_gpu" ]]; then
  "$work/build/consumer_gpu"
fi

# The imported fp8ref::fp8-check must point into the prefix and run from there:
# 448.0f = 0x43E00000 encodes to e4m3 0x7E.
fp8_check=$(cat "$work/build/fp8-check-path.txt")
[[ "$fp8_check" == "$prefix"/* && -x "$fp8_check" ]] \
  || { echo "FAIL: fp8ref::fp8-check is '$fp8_check', not an executable under $prefix" >&2; exit 1; }
got_z=$(echo 0x43E00000 | "$fp8_check" encode --format e4m3 --profile ocp_sat --from f32)
if [[ "${got_z,,}" != "7e" ]]; then
  echo "FAIL: installed fp8-check encode 0x43E00000 -> '$got_z', want 7e" >&2
  exit 1
fi
echo "ok: installed fp8-check encode e4m3 ocp_sat 0x43E00000 -> $got_z"
echo "consumer: PASS"
