#!/usr/bin/env bash
# An A/B of one switch on the GPU: runs `bench_cuda REPS MODE` for each MODE with the switch as
# the machine has it (A: the defaults) and with VAR=VALUE set (B), A and B alternating, and
# writes bench.log and summary.txt (the decode, search and prefill lines) into OUT. Builds
# bench_cuda first (or reuses BUILD). Each bench mode searches with a cache of its own (cold),
# so a program chosen under A is never reused under B.
#
#   scripts/gpu-ab.sh OUT VAR=VALUE MODE [MODE...]
#   e.g. scripts/gpu-ab.sh out LUMINAL_CUDA_GEMV_KN=0 lt smollm2
#
#   BUILD=dir (default build-gpu); JOBS=n (default: all cores); REPS (default 20); ROUNDS (default
#   1: A then B once per mode); SAME_PROGRAM=1: A and B share one compile cache (the first A run
#   searches, every later run loads its programs), so a kernel change is compared on the same
#   programs (LUMINAL_BENCH_CACHE; use ROUNDS=2 or more)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-ab.sh OUT VAR=VALUE MODE [MODE...]}
switch=${2:?usage: scripts/gpu-ab.sh OUT VAR=VALUE MODE [MODE...]}
shift 2
[ $# -gt 0 ] || { echo "gpu-ab: name at least one bench_cuda mode" >&2; exit 2; }
[[ "$switch" == *=* ]] || { echo "gpu-ab: the switch must be VAR=VALUE, got '$switch'" >&2; exit 2; }
gpu_begin "$out"
reps=${REPS:-20}
rounds=${ROUNDS:-1}
failed=0
start=$(date +%s)
note "gpu-ab $(date -u +%Y-%m-%dT%H:%MZ): B = $switch, modes: $*"
install_debs
export XDG_CACHE_HOME="$PWD/.gpu-cache"
mkdir -p "$XDG_CACHE_HOME"
if [ "${SAME_PROGRAM:-0}" = 1 ]; then
  export LUMINAL_BENCH_CACHE="${TMPDIR:-/tmp}/luminal-gpu-ab-$$"
  rm -rf "$LUMINAL_BENCH_CACHE"
  trap 'rm -rf "$LUMINAL_BENCH_CACHE"' EXIT
fi
build_targets bench_cuda || exit 1
note "build: $(($(date +%s) - start)) s"
lines='decode at|search|prefill|steps/token|FAILED'
touch "$out/bench.log"
run() {  # run LABEL MODE [ENV]: one bench, its lines appended to the summary
  local label=$1 mode=$2 n0
  shift 2
  n0=$(wc -l <"$out/bench.log")
  echo "=== $label: $mode ===" >>"$out/bench.log"
  note "--- $label: bench_cuda $reps $mode"
  suite "$label $mode" "$out/bench.log" 300 env "$@" "$build/bench/bench_cuda" "$reps" "$mode"
  tail -n +"$((n0 + 1))" "$out/bench.log" | grep -E "$lines" | cut -c1-400 >>"$summary"
}
for ((r = 0; r < rounds; ++r)); do
  for mode in "$@"; do
    run "A (defaults)" "$mode"
    run "B ($switch)" "$mode" "$switch"
  done
done
note "total: $(($(date +%s) - start)) s"
exit $failed
