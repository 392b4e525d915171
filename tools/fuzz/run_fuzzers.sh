#!/usr/bin/env bash
# Builds the tensor_io libFuzzer harnesses with clang (-fsanitize=fuzzer,address,undefined) into
# build-fuzz/ and runs each for SECONDS, seeded with the malformed corpus and valid seed files
# (torch_pickle, structure-aware: a seed spelling a one-tensor state dict in its byte stream).
# Resource limits make hangs and blow-ups findings: 5 s an input, 2 GiB RSS (ASan included),
# 512 MiB a single allocation (the harnesses read under a 64 MiB read limit, docs/security.md).
# Usage: tools/fuzz/run_fuzzers.sh SECONDS [JOBS]. Exit status non-zero on any crash/leak/report.
set -euo pipefail
secs=${1:?usage: run_fuzzers.sh SECONDS [JOBS]}
jobs=${2:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FP8REF_FUZZ_BUILD:-$root/build-fuzz}
cxx=${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14)}

cmake -S "$root/tools/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$jobs"
python3 "$root/proptests/tensor_io/make_corpus.py" --valid "$build/seeds" >/dev/null
# torch_pickle's seed: the (selector, argument) byte pairs of fuzz_torch_pickle.cpp that spell
# {'w': _rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', 16), 0, (16,), (1,), False, {})}.
mkdir -p "$build/seeds/torch_pickle"
python3 -c 'import sys; open(sys.argv[1], "wb").write(bytes.fromhex(sys.argv[2]))' \
  "$build/seeds/torch_pickle/state_dict" \
  070300040100070007000000010400020001021007040713020002100706020107060712070307040714070b

status=0
for parser in safetensors npy npz torch_zip torch_pickle; do
  case $parser in
    safetensors) dirs=(safetensors) ;;
    npy) dirs=(npy) ;;
    npz) dirs=(npz) ;;
    torch_zip) dirs=(torch npz) ;;
    torch_pickle) dirs=(torch_pickle) ;;
  esac
  work="$build/corpus_$parser"
  mkdir -p "$work"
  seeds=()
  for d in "${dirs[@]}"; do
    [[ -d "$root/proptests/tensor_io/corpus/$d" ]] && seeds+=("$root/proptests/tensor_io/corpus/$d")
    [[ -d "$build/seeds/$d" ]] && seeds+=("$build/seeds/$d")
  done
  log="$build/fuzz_$parser.log"
  if "$build/fuzz_$parser" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=5 \
       -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$build/crash_${parser}_" "$work" "${seeds[@]}" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
  [[ -z "$execs" ]] && execs=$( (grep -Eo '^#[0-9]+' "$log" || true) | tail -1 | tr -d '#')
  echo "fuzz_$parser: $result, ${execs:-?} executions in ${secs}s (log: $log)"
done
exit $status
