#!/usr/bin/env bash
# The expert matmuls on a GPU machine (cuda.ExpertGemv / cuda.ExpertRows, docs/cuda.md "Mixtures
# of experts"): builds what it needs in BUILD, runs the expert suite, the MoE cases of the model
# parity suite and the fuzz's expert graphs, then bench_cuda's expert matmuls of a Qwen3-30B-A3B
# layer alone (each split-k width against the unfused form) and its bf16 decodes of that shape
# cut to 12 layers (with the expert ops, and without them: LUMINAL_CUDA_EXPERT=0, the unfused
# gather + matmul) and of a Gemma-3-1B shape. Logs and a summary go into OUT.
#
#   scripts/gpu-expert-check.sh OUT [--tests-only | --bench-only]
#
#   OUT            folder for build.log, expert.log, models.log, fuzz.log, bench.log and summary.txt
#   --tests-only   the build and the suites; --bench-only: the build and the benches (a device
#                  call is limited to 10 minutes: on a cold machine run the two in separate calls)
#   BUILD=dir (default build-gpu), JOBS=n (default: all cores), LIMIT=n (the benches' search
#   graph limit, default 10), BENCHES="expert qwen3moe qwen3moe-unfused gemma3" (the benches, in
#   order; about 2, 4, 4 and 3 minutes: two device calls)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-expert-check.sh OUT [--tests-only | --bench-only]}
shift
tests=1 bench=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tests-only) bench=0; shift ;;
    --bench-only) tests=0; shift ;;
    *) echo "gpu-expert-check: unknown option $1" >&2; exit 2 ;;
  esac
done
gpu_begin "$out"
limit=${LIMIT:-10}
benches=${BENCHES:-expert qwen3moe qwen3moe-unfused gemma3}
start=$(date +%s)
note "gpu-expert-check $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
  sed 's/^/gpu: /' | tee -a "$summary"

install_debs

targets=""
[ $tests -eq 1 ] && targets="test_cuda_expert test_cuda_expert_glu test_cuda_expert_sum test_cuda_models test_cuda_fuzz"
[ $bench -eq 1 ] && targets="$targets bench_cuda"
# shellcheck disable=SC2086  # (the target list splits into words)
build_targets $targets
rc=$?
note "build: rc=$rc in $(($(date +%s) - start)) s ($build: $targets)"
[ $rc -eq 0 ] || exit 1

failed=0

export LUMINAL_CACHE=off  # every search runs
if [ $tests -eq 1 ]; then
  suite "expert suite (cuda.ExpertGemv / cuda.ExpertRows: rules, sm_90 compiles, f32/bf16/f16 against the reference, block types within their bounds, bad ids, tiny MoE models against the CPU)" \
    "$out/expert.log" 300 "$build/tests/test_cuda_expert"
  grep -E '^\[expert\]|Failure|FAILED' "$out/expert.log" | head -20 >>"$summary"
  suite "expert glu suite (cuda.ExpertGemvGlu: SiLU(gate) * up in the gate_up expert matmul's store, the same bits as the matmul then the region; off with LUMINAL_CUDA_EXPERT_GLU=0)" \
    "$out/expert_glu.log" 300 "$build/tests/test_cuda_expert_glu"
  suite "expert sum suite (cuda.ExpertGemvSum: a token's experts summed with the router's weights in the down matmul's kernel; off with LUMINAL_CUDA_EXPERT_SUM=0)" \
    "$out/expert_sum.log" 300 "$build/tests/test_cuda_expert_sum"
  suite "model parity, MoE families (searched programs against transformers' goldens)" \
    "$out/models.log" 300 "$build/tests/test_cuda_models" --gtest_filter='*moe*:*mixtral*'
  suite "equivalence fuzz, expert graphs (12 random graphs x 20 programs)" "$out/fuzz.log" 300 \
    "$build/tests/test_cuda_fuzz" --gtest_filter='CudaFuzz.ExpertGraphs'
  grep -E '^\[fuzz\]' "$out/fuzz.log" >>"$summary"
fi
if [ $bench -eq 1 ]; then
  for b in $benches; do
    case "$b" in
      expert)
        echo "=== the expert matmuls alone: cuda.ExpertGemv at each W against the unfused form ===" \
          >>"$out/bench.log"
        suite "bench_cuda expert" "$out/bench.log" 300 "$build/bench/bench_cuda" "$limit" expert ;;
      qwen3moe)
        echo "=== Qwen3-30B-A3B shape, 12 layers, bf16 ===" >>"$out/bench.log"
        suite "bench_cuda qwen3moe" "$out/bench.log" 420 "$build/bench/bench_cuda" "$limit" qwen3moe ;;
      qwen3moe-unfused)
        echo "=== the same without expert ops (LUMINAL_CUDA_EXPERT=0) ===" >>"$out/bench.log"
        LUMINAL_CUDA_EXPERT=0 suite "bench_cuda qwen3moe, LUMINAL_CUDA_EXPERT=0" "$out/bench.log" \
          420 "$build/bench/bench_cuda" "$limit" qwen3moe ;;
      gemma3)
        echo "=== Gemma-3-1B shape, bf16 ===" >>"$out/bench.log"
        suite "bench_cuda gemma3" "$out/bench.log" 420 "$build/bench/bench_cuda" "$limit" gemma3 ;;
      *) note "unknown bench $b (expert, qwen3moe, qwen3moe-unfused, gemma3)"; failed=1 ;;
    esac
  done
  grep -E '^expert|copy|shape|decode at context|FAILED' "$out/bench.log" >>"$summary"
fi
note "done in $(($(date +%s) - start)) s; failed=$failed"
exit $failed
