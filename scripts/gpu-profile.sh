#!/usr/bin/env bash
# Hardware counters of chosen kernels of a bench_cuda mode, by Nsight Compute (ncu), in one device
# call: where a kernel's time goes (memory throughput against the peak, issue-slot use, what its
# warps stall on, occupancy), for the kernels whose bandwidth or TFLOPS the per-op timings leave
# unexplained (the K types' integer GEMVs, the prefill's bf16 tile GEMM).
#
#   scripts/gpu-profile.sh OUT MODE 'REGEX' [COUNT]
#   e.g. scripts/gpu-profile.sh OUT lt-q4_k 'lmn_qgemv' 4
#        scripts/gpu-profile.sh OUT lt-q4_0+pp 'lmn_qgemm_bf16' 4
#
# REGEX matches kernel names (generated kernels are named lmn_<kind>...; `cuobjdump -symbols`
# or a bench's kernel list shows them); COUNT (default 4) kernels are profiled after skipping
# SKIP (default 200, past the search's first candidates' compilations and the warm-up). Writes
# OUT/profile.txt (ncu's details page: SpeedOfLight, MemoryWorkloadAnalysis, ComputeWorkloadAnalysis,
# WarpStateStats, Occupancy, LaunchStats) and OUT/bench.log. The clocks are left alone
# (--clock-control none, as the device notes ask). ncu replays each profiled kernel several
# times, so only COUNT launches are slowed; the bench's own timings in bench.log are not
# comparable with an unprofiled run.
#   BUILD=dir (default build-gpu); JOBS=n; SECTIONS="..." overrides the sections.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-profile.sh OUT MODE REGEX [COUNT]}
mode=${2:?usage: scripts/gpu-profile.sh OUT MODE REGEX [COUNT]}
regex=${3:?usage: scripts/gpu-profile.sh OUT MODE REGEX [COUNT]}
count=${4:-4}
gpu_begin "$out"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { note "gpu-profile: no ncu on this machine"; exit 1; }
start=$(date +%s)
install_debs
export XDG_CACHE_HOME="$PWD/.gpu-cache"
mkdir -p "$XDG_CACHE_HOME"
build_targets bench_cuda || exit 1
note "build: $(($(date +%s) - start)) s; ncu: $ncu"
# (the search first, without ncu, into the compile cache: under ncu every launch is replayed and
#  the search's timings fail, so on 2026-12-07 the 8B q4_k search kept one unfused candidate and
#  no lmn_qgemv ran; the profiled run then loads the searched program from the cache)
"$build/bench/bench_cuda" 1 "$mode" >"$out/warm.log" 2>&1
note "warm-up (the search into the cache): rc=$? in $(($(date +%s) - start)) s"
sections=${SECTIONS:-SpeedOfLight MemoryWorkloadAnalysis ComputeWorkloadAnalysis WarpStateStats Occupancy LaunchStats}
args=()
for s in $sections; do args+=(--section "$s"); done
timeout -k 20 480 "$ncu" --clock-control none --kernel-name "regex:$regex" \
  --launch-skip "${SKIP:-200}" --launch-count "$count" "${args[@]}" --print-details all \
  "$build/bench/bench_cuda" 1 "$mode" >"$out/profile.txt" 2>"$out/bench.log"
rc=$?
note "ncu $mode '$regex': rc=$rc in $(($(date +%s) - start)) s, $(grep -c '^  lmn' "$out/profile.txt") kernels"
grep -E "^  lmn|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|No Eligible" \
  "$out/profile.txt" | head -80 | tee -a "$summary"
exit $rc
