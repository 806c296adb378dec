#!/usr/bin/env bash
# The quantized decode on a GPU machine: bench_cuda's block-quantized decode steps (random blocks
# of each type in SmolLM2-135M's and an 8B model's shapes) with each cuda.QGemv form the search may
# take (LUMINAL_CUDA_QGEMV=f32, int8, both), and a per-kernel profile of the search's choice.
#
#   scripts/gpu-quant-bench.sh OUT [MODE ...]      (modes: smollm2-q4_1 lt-q4_0 lt-q4_k ...;
#                                                   default: smollm2-q4_1 lt-q4_0; a mode ending
#                                                   in +pp also times a 128-token prefill, e.g.
#                                                   lt-q4_0+pp)
#   BUILD=dir (default build-gpu), JOBS=n, FORMS="f32 int8 both", PROFILE=N (kernels listed, 0: none),
#   VARIANTS="A=1,B=2 C=3" (more runs of the default form, each with those variables set: e.g.
#   LUMINAL_CUDA_QGEMV_SPLIT=0 or LUMINAL_CUDA_QGEMV_LANES=1; for the prefill GEMM
#   LUMINAL_CUDA_QGEMM_SPLIT=0, LUMINAL_CUDA_QGEMM_K=0, LUMINAL_CUDA_QGEMM_BF16=0 or
#   LUMINAL_CUDA_QGEMM_SLICES=4)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-quant-bench.sh OUT [MODE ...]}
shift
modes=${*:-smollm2-q4_1 lt-q4_0}
mkdir -p "$out"
build=${BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
forms=${FORMS:-f32 int8 both}
profile=${PROFILE:-25}
install_debs
build_targets bench_cuda || exit 1
export LUMINAL_CACHE=off  # every form searched afresh
for mode in $modes; do
  for form in $forms; do
    echo "== $mode LUMINAL_CUDA_QGEMV=$form" | tee -a "$out/bench.log"
    LUMINAL_CUDA_QGEMV=$form timeout 300 "$build/bench/bench_cuda" 10 "$mode" 2>&1 |
      tee -a "$out/bench.log" | grep -E "ms|kernels|GB" | head -8
  done
  for v in ${VARIANTS:-}; do
    echo "== $mode $v" | tee -a "$out/bench.log"
    env ${v//,/ } timeout 300 "$build/bench/bench_cuda" 10 "$mode" 2>&1 |
      tee -a "$out/bench.log" | grep -E "ms|kernels|GB" | head -8
  done
  if [ "$profile" -gt 0 ]; then
    echo "== $mode per-kernel (search's choice)" | tee -a "$out/bench.log"
    LUMINAL_BENCH_KERNELS=$profile timeout 300 "$build/bench/bench_cuda" 10 "$mode" \
      >>"$out/bench.log" 2>&1
  fi
done
