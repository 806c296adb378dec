#!/usr/bin/env bash
# Everything built on the host and not yet run on a GPU, in one device call (about 9 minutes on a
# fresh H100; keep the list current): first the sliding layers' ring cache (session 47) on the
# GPU, then the GPU tests of the opt-in forms, the MoE's q projection with the norm's row in its
# GEMV, and the A/Bs of earlier sessions' forms against the defaults.
# Each step's lines go to OUT/summary.txt; later steps run only while time is left (LIMIT seconds
# in all, default 570), so a short call still brings back the first results.
#
#   scripts/gpu-pending.sh OUT
#
# Needs .debs (PCRE2/ICU) and .dev (llama.cpp's source and SmolLM2's vocabulary: gpu-peers.sh's
# header) carried. BUILD=dir (default $HOME/b, kept between calls on a warm machine), JOBS=n.
# STEPS picks steps, in their order here (default: "ring tests moe bf16 profile"; also ahead, tiled,
# qgather, seed and prologue, the A/Bs that session 47 ran and settled); split
# them over two calls where a machine may be taken back mid-call (a call taken back returns
# nothing, one that runs out of time returns what it wrote).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-pending.sh OUT}
export BUILD=${BUILD:-$HOME/b} JOBS=${JOBS:-10}
gpu_begin "$out"
limit=${LIMIT:-570}
t0=$(date +%s)
left() { echo $((limit - ($(date +%s) - t0))); }
steps=" ${STEPS:-ring tests moe bf16 profile} "
want() { [[ "$steps" == *" $1 "* ]]; }
install_debs
nvidia-smi -L | tee -a "$summary"

# 0. The sliding layers' ring cache (DecoderShape::rolling_cache, session 47): the sliding
#    families' logits, greedy tokens and two turns on the GPU with it (and without), and its
#    programs compiling (host-checked already); the window read in bf16 with cuda.Attention
#    reading the cache at the window's row (CudaWindowRead: if it passes, window_read can be on
#    for CUDA too, CausalLM's for_backend).
if want ring; then
  mkdir -p "$out/ring"
  build_targets test_cuda_models test_cuda_ring_cache >"$out/ring/build.log" 2>&1
  timeout 120 "$BUILD/tests/test_cuda_models" \
    --gtest_filter='Families/CudaRing.*:CudaWindowRead.*:Families/CudaParity.*swa*:Families/CudaParity.*gemma3*' \
    >"$out/ring/models.log" 2>&1
  echo "[ring] test_cuda_models (CudaRing and the sliding families): rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$out/ring/models.log" | tr '\n' ' ')" >>"$summary"
  grep -E 'Failure|differ|want' "$out/ring/models.log" | head -8 | sed 's/^/[ring] /' >>"$summary"
  timeout 60 "$BUILD/tests/test_cuda_ring_cache" >"$out/ring/compile.log" 2>&1
  echo "[ring] test_cuda_ring_cache: rc=$?" >>"$summary"
fi

# 1. The prepared forms' GPU tests (session 43: decode ahead, cuda.QGatherS; session 44: the
#    f32-stage cuda.MatmulTiled, whose bf16 case failed on one output in session 47: its message
#    now names that output, the reference's value and the bound; session 45: cuda.RowGemv).
if want tests; then
  TESTS="test_cuda_graph test_models_causal_lm test_cuda_qgather_split test_cuda_matmul_tiled test_cuda_row_gemv" \
    RUN_TESTS=1 MODES="smollm2-q4_1" REPS=5 scripts/gpu-variants.sh "$out/t" - >/dev/null 2>&1
  sed 's/^/[tests] /' "$out/t/summary.txt" >>"$summary"
  grep -h 'outputs differ' "$out/t/tests.log" 2>/dev/null | head -4 | sed 's/^/[tests] /' >>"$summary"
fi
# 1b. The MoE's q projection (16 MiB of bf16, over cuda.RowGemv's default 4 MiB) computing the
#     norm's row in its GEMV: one row kernel fewer on each layer's path (session 47's 1.258 ms).
if want moe && [ "$(left)" -gt 150 ]; then
  MODES="qwen3moe" REPS=10 scripts/gpu-variants.sh "$out/moe" - 'LUMINAL_CUDA_ROW_PROLOGUE_MIB=64' \
    >/dev/null 2>&1
  sed 's/^/[moe] /' "$out/moe/summary.txt" >>"$summary"
fi

# 2. Decoding ahead through the CLI (the only place it acts), A and B twice, alternating.
if want ahead && [ "$(left)" -gt 200 ]; then
  # (gguf-py's quantizer, SmolLM2's published types: no llama.cpp build, which took 460 s of a
  #  call on 2026-12-07 and started over in the next)
  scripts/gpu-peers.sh "$out/p" gguf-py smollm2:q4_1:q8_0 >>"$summary" 2>&1
  for i in 1 2; do
    for ab in a b; do
      [ "$(left)" -gt 40 ] || break
      env LUMINAL_DECODE_AHEAD=$([ $ab = b ] && echo 1 || echo 0) LUMINAL_ONLY=1 \
        scripts/gpu-peers.sh "$out/$ab$i" bench smollm2-q4_1.gguf >/dev/null 2>&1
      grep -h "TPOT" "$out/$ab$i/peers.txt" | sed "s/^/[decode-ahead $ab$i] /" >>"$summary"
    done
  done
fi

# 3. The prefill scores' tiles (and with the norm's row kernel storing bf16 rows, within the
#    spread in session 39), then the split gather for the tied LM head.
if want tiled && [ "$(left)" -gt 150 ]; then
  MODES="lt-q4_0+pp" REPS=5 scripts/gpu-variants.sh "$out/v" - 'LUMINAL_CUDA_MATMUL_TILED=1' \
    'LUMINAL_CUDA_MATMUL_TILED=1 LUMINAL_CUDA_ROW_BF16=1' >/dev/null 2>&1
  sed 's/^/[tiled] /' "$out/v/summary.txt" >>"$summary"
fi
if want qgather && [ "$(left)" -gt 80 ]; then
  MODES="smollm2-q4_1" REPS=10 scripts/gpu-variants.sh "$out/g" - 'LUMINAL_CUDA_QGATHER_SPLIT=1' \
    >/dev/null 2>&1
  sed 's/^/[qgather-split] /' "$out/g/summary.txt" >>"$summary"
fi
# 4. The seed's path weight (session 44) on the latency-bound decodes.
if want seed && [ "$(left)" -gt 150 ]; then
  # (LUMINAL_BENCH_KERNELS: bench.log lists the first two layers' kernels, each timed alone)
  MODES="smollm2-q4_1 qwen3moe" REPS=10 scripts/gpu-variants.sh "$out/s" LUMINAL_BENCH_KERNELS=30 \
    'LUMINAL_BENCH_KERNELS=30 LUMINAL_CUDA_SEED_PATH=1' >/dev/null 2>&1
  sed 's/^/[seed-path] /' "$out/s/summary.txt" >>"$summary"
fi
# 4b. The norm computed by the GEMVs that read it (session 45, cuda.RowGemv).
if want prologue && [ "$(left)" -gt 150 ]; then
  MODES="smollm2-q4_1 smollm2 qwen3moe" REPS=10 scripts/gpu-variants.sh "$out/r" 'LUMINAL_CUDA_ROW_PROLOGUE=0' - \
    >/dev/null 2>&1
  sed 's/^/[row-gemv] /' "$out/r/summary.txt" >>"$summary"
  # (the 8B's matrices are over the default 4 MiB: every one of a GEMV's blocks computes the row,
  #  8 KB of bf16 read from L2 per block; whether that costs less than the row kernel on the path)
  if [ "$(left)" -gt 240 ]; then
    MODES="lt" REPS=10 scripts/gpu-variants.sh "$out/r8" - 'LUMINAL_CUDA_ROW_PROLOGUE_MIB=512' >/dev/null 2>&1
    sed 's/^/[row-gemv 8b] /' "$out/r8/summary.txt" >>"$summary"
  fi
  # (the GPU equivalence fuzz and the models' parity with the CPU, with the forms offered: the
  #  scatter, rope-product and paired forms inside whole decode steps)
  for t in test_cuda_models test_cuda_fuzz; do
    [ "$(left)" -gt 120 ] || break
    cmake --build "$BUILD" -j "$JOBS" --target "$t" >/dev/null 2>&1 || continue
    timeout 150 "$BUILD/tests/$t" >"$out/r/$t.log" 2>&1
    echo "[row-gemv] $t with the forms: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$out/r/$t.log" | tr '\n' ' ')" >>"$summary"
  done
fi
# 5. Issue 28's bf16 targets (the 8B at context 128 and 1024, its prefill, SmolLM2): on an H200
#    these are the issue's numbers (an H100's copy bandwidth is lower).
if want bf16 && [ "$(left)" -gt 150 ]; then
  MODES="lt smollm2" REPS=10 scripts/gpu-variants.sh "$out/b" - >/dev/null 2>&1
  sed 's/^/[bf16] /' "$out/b/summary.txt" >>"$summary"
fi
# 6. What limits the Q4_K integer GEMV (about 1.4 TB/s against q4_0's 2.7): Nsight Compute's
#    counters for four of its kernels.
if want profile && [ "$(left)" -gt 200 ]; then
  scripts/gpu-profile.sh "$out/f" lt-q4_k lmn_qgemv 4 >/dev/null 2>&1
  sed 's/^/[profile] /' "$out/f/summary.txt" >>"$summary"
fi
note "gpu-pending: $(($(date +%s) - t0)) s"
