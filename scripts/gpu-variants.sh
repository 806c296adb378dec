#!/usr/bin/env bash
# Times bench_cuda modes under several settings in one device call: for each setting (a
# space-separated list of VAR=VALUE, or "-" for the defaults), `bench_cuda REPS MODE` for each mode
# in MODES; writes bench.log and summary.txt (the decode, search and prefill lines) into OUT. Use
# it to choose between the variants of a kernel behind switches; confirm the winner with
# scripts/gpu-ab.sh (A and B alternating).
#
#   MODES="lt-q4_0 smollm2-q4_1" scripts/gpu-variants.sh OUT - 'LUMINAL_CUDA_ATTENTION=1' ...
#
#   BUILD=dir (default build-gpu); JOBS=n; REPS (default 10); TESTS="target ..." builds these test
#   targets too; RUN_TESTS=1 also runs them (each up to 300 s, into tests.log, before the timings:
#   their GPU tests check the kernels the settings choose between)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: MODES="MODE..." scripts/gpu-variants.sh OUT SETTING [SETTING...]}
shift
[ $# -gt 0 ] || { echo "gpu-variants: name at least one setting ('-': the defaults)" >&2; exit 2; }
modes=${MODES:?set MODES to the bench_cuda modes}
gpu_begin "$out"
reps=${REPS:-10}
failed=0
start=$(date +%s)
note "gpu-variants $(date -u +%Y-%m-%dT%H:%MZ): modes $modes"
install_debs
export XDG_CACHE_HOME="$PWD/.gpu-cache"
mkdir -p "$XDG_CACHE_HOME"
# shellcheck disable=SC2086  # (TESTS splits into words)
build_targets bench_cuda ${TESTS:-} || exit 1
note "build: $(($(date +%s) - start)) s"
if [ -n "${RUN_TESTS:-}" ]; then
  for t in ${TESTS:-}; do
    suite "test $t" "$out/tests.log" 300 "$build/tests/$t"
  done
fi
lines='decode at|search|prefill|FAILED'
touch "$out/bench.log"
for setting in "$@"; do
  envs=()
  [ "$setting" = - ] || read -r -a envs <<<"$setting"
  for mode in $modes; do
    n0=$(wc -l <"$out/bench.log")
    echo "=== $setting: $mode ===" >>"$out/bench.log"
    suite "[$setting] $mode" "$out/bench.log" 300 env "${envs[@]}" "$build/bench/bench_cuda" "$reps" "$mode"
    tail -n +"$((n0 + 1))" "$out/bench.log" | grep -E "$lines" | cut -c1-300 >>"$summary"
  done
done
note "total: $(($(date +%s) - start)) s"
exit $failed
