#!/usr/bin/env bash
# Builds (or reuses a build of) the CUDA backend on a GPU machine, runs every GPU suite and the
# GPU benchmark, and writes logs and a summary into OUT. Installs nothing: missing PCRE2/ICU
# headers come from .deb files in .debs/ when present (apt-get download libpcre2-dev libicu-dev
# libicu72 on a machine with network, then carry the folder).
#
#   scripts/gpu-check.sh OUT [--cache-in FILE.tgz] [--quick] [--sanitize] [--no-bench | --bench-only]
#                        [--only SUITE,SUITE...]
#
#   OUT              folder for build.log, nvrtc.log, session.log, graph.log, upload.log, lt.log,
#                    lt_epilogue.log, lt_fp8.log, lt_external.log, lt_islands.log, row_ops.log,
#                    nn_ops.log, gemv.log, quant.log, fold.log, fuzz.log, misc.log, models.log, cli.log, snippets.log, fast_nan.log,
#                    bench.log, summary.txt and cache.tgz
#                    (the kernel and program cache after the run: pass it back with --cache-in and
#                    the next run compiles nothing)
#   --quick          8 random graphs of 20 programs in the fuzz (default: 32 of 50)
#   --sanitize       also runs the session suite under compute-sanitizer memcheck
#   --no-bench       the suites only; --bench-only: the build and bench_cuda only (a device call
#                    is limited to 10 minutes: run the two in separate calls)
#   --only LIST      these suites only (comma-separated): nvrtc session graph ops rows rows-plain
#                    nn gemv gemv-kn scatter-store attention quant fold lt upload models cli
#                    snippets fuzz misc (gemv runs gemv-kn, scatter-store and attention too); to split the suites over
#                    device calls; fast-nan
#                    (ops, rows, nn and a quick fuzz with LUMINAL_CUDA_FAST_NAN=0) runs only when
#                    named here
#   BUILD=dir        build folder (default build-gpu); JOBS=n (default: all cores)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-check.sh OUT [--cache-in FILE.tgz] [--quick] [--sanitize] [--no-bench]}
shift
cache_in="" quick=0 sanitize=0 bench=1 suites=1 only=
while [ $# -gt 0 ]; do
  case "$1" in
    --cache-in) cache_in=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --sanitize) sanitize=1; shift ;;
    --no-bench) bench=0; shift ;;
    --bench-only) suites=0; shift ;;
    --only) only=",$2,"; shift 2 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
gpu_begin "$out"
start=$(date +%s)

note "gpu-check $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader \
  2>&1 | sed 's/^/gpu: /' | tee -a "$summary"

install_debs

# The kernel and program caches live under XDG_CACHE_HOME/luminal.
export XDG_CACHE_HOME="$PWD/.gpu-cache"
mkdir -p "$XDG_CACHE_HOME"
if [ -n "$cache_in" ] && [ -f "$cache_in" ]; then
  tar -xzf "$cache_in" -C "$XDG_CACHE_HOME" && note "cache: restored from $cache_in"
fi

targets="test_cuda_nvrtc test_cuda_session test_cuda_ops test_cuda_fuzz test_cuda_upload test_cuda_gemv test_cuda_gemv_kn test_cuda_gemv_split test_cuda_scatter_store test_cuda_attention test_cuda_quant test_cuda_qgemm test_cuda_qgemm_bf16 test_cuda_fold"
targets="$targets test_cuda_nn_ops test_cuda_row_ops test_cuda_lt test_cuda_lt_epilogue test_cuda_lt_fp8 test_cuda_lt_external test_cuda_lt_islands bench_cuda"
# The smaller suites without a line of their own below (suite "misc").
misc_targets="test_cuda_fused_reduce test_cuda_scatter_distinct test_cuda_scatter_ordered test_cuda_scatter_runtime_index test_cuda_step_deps test_cuda_fewest_kernels test_cuda_codegen test_cuda_lt_rule test_cuda_lt_spec test_cuda_lt_activation test_cuda_row_q8 test_cuda_quant_host test_cuda_qgemv_glu test_cuda_gemv_glu test_cuda_fused_q8 test_cuda_qgemv_then test_cuda_matmul_tiled test_cuda_row_gemv"
targets="$targets $misc_targets"
[ $suites -eq 0 ] && targets=bench_cuda  # --bench-only
# shellcheck disable=SC2086  # (the target list splits into words)
build_targets $targets
rc=$?
note "build: rc=$rc in $(($(date +%s) - start)) s ($build)"
[ $rc -eq 0 ] || exit 1
# The model suite and the CLI need the io library (PCRE2, ICU): built separately so a problem
# there does not stop the rest.
if [ $suites -eq 1 ]; then
  cmake --build "$build" -j "$jobs" --target test_cuda_models test_cuda_graph >>"$out/build.log" 2>&1 ||
    note "build: the model or graph suite failed to build (see build.log)"
  cmake --build "$build" -j "$jobs" --target luminal_cli >>"$out/build.log" 2>&1 ||
    note "build: the CLI failed to build (see build.log)"
  cmake --build "$build" -j "$jobs" --target test_cuda_cli >>"$out/build.log" 2>&1 ||
    note "build: the CLI suite failed to build (see build.log)"
  cmake --build "$build" -j "$jobs" --target snippets_cuda >>"$out/build.log" 2>&1 ||
    note "build: the CUDA header snippets failed to build (see build.log)"
fi

failed=0
want() { [ -z "$only" ] || [[ "$only" == *",$1,"* ]]; }  # want SUITE: selected by --only?

if [ $suites -eq 1 ]; then
  seeds=32 programs=50
  [ $quick -eq 1 ] && seeds=8 programs=20
  want nvrtc && suite "nvrtc (sm_90 compile of generated kernels)" "$out/nvrtc.log" 300 "$build/tests/test_cuda_nvrtc"
  want session && suite "session suite" "$out/session.log" 300 "$build/tests/test_cuda_session"
  echo "=== stream executor ===" >>"$out/session.log"
  want session && LUMINAL_CUDA_EXECUTOR=stream suite "session suite, stream executor" "$out/session.log" 300 \
    "$build/tests/test_cuda_session" --gtest_filter=-*Past2To31*
  want graph && [ -x "$build/tests/test_cuda_graph" ] &&
    suite "graph executor suite" "$out/graph.log" 300 "$build/tests/test_cuda_graph"
  want ops && suite "ops suite (every primitive x dtype)" "$out/session.log" 300 "$build/tests/test_cuda_ops"
  want rows && suite "row ops suite (row kernels x lengths x dtypes x masks, searched + alternative programs)" \
    "$out/row_ops.log" 420 "$build/tests/test_cuda_row_ops"
  grep -sE '^\[rows\].*searched' "$out/row_ops.log" | head -3 >>"$summary"
  echo "=== row kernels one element at a time (LUMINAL_CUDA_ROW_CHUNKS=0) ===" >>"$out/row_ops.log"
  want rows-plain && LUMINAL_CUDA_ROW_CHUNKS=0 suite "row ops suite, element form (LUMINAL_CUDA_ROW_CHUNKS=0)" \
    "$out/row_ops.log" 420 "$build/tests/test_cuda_row_ops" --gtest_filter='*CudaRowOps*'
  # The NaN fast paths are on by default; LUMINAL_CUDA_FAST_NAN=0 keeps every NaN payload: the
  # bit-exact ops suite, the row suite, the nn suite and a quick fuzz in that form; only when
  # --only names fast-nan.
  if [[ "$only" == *",fast-nan,"* ]]; then
    echo "=== NaN payloads kept everywhere (LUMINAL_CUDA_FAST_NAN=0) ===" >>"$out/fast_nan.log"
    LUMINAL_CUDA_FAST_NAN=0 suite "ops suite, NaN payloads kept" "$out/fast_nan.log" 300 \
      "$build/tests/test_cuda_ops"
    LUMINAL_CUDA_FAST_NAN=0 suite "row ops suite, NaN payloads kept" "$out/fast_nan.log" 420 \
      "$build/tests/test_cuda_row_ops" --gtest_filter='*CudaRowOps*'
    LUMINAL_CUDA_FAST_NAN=0 suite "nn ops suite, NaN payloads kept" "$out/fast_nan.log" 300 \
      "$build/tests/test_cuda_nn_ops"
    LUMINAL_CUDA_FAST_NAN=0 LUMINAL_CUDA_FUZZ_SEEDS=8 LUMINAL_FUZZ_PROGRAMS=20 \
      suite "equivalence fuzz, NaN payloads kept" "$out/fast_nan.log" 420 "$build/tests/test_cuda_fuzz"
  fi
  want nn && suite "nn ops suite (LLM ops: activations, rope, gather, argmax, matmul, attention, sampling)" \
    "$out/nn_ops.log" 300 "$build/tests/test_cuda_nn_ops"
  want gemv && suite "gemv suite (cuda.Gemv rows x widths x dtypes x forms, epilogues, split reductions, argmax)" \
    "$out/gemv.log" 300 "$build/tests/test_cuda_gemv"
  { want gemv || want gemv-kn; } && suite "gemv-kn suite (cuda.GemvKN: x @ W along n, P @ V over a dynamic context)" \
    "$out/gemv.log" 300 "$build/tests/test_cuda_gemv_kn"
  { want gemv || want gemv-kn; } && suite "gemv-split suite (cuda.Gemv over split heads: Q @ K^T with repeated KV heads)" \
    "$out/gemv.log" 120 "$build/tests/test_cuda_gemv_split"
  { want gemv || want scatter-store; } && suite "scatter-store suite (a matmul storing into the KV cache: same bits as the matmul then the scatter)" \
    "$out/gemv.log" 300 "$build/tests/test_cuda_scatter_store"
  { want gemv || want attention; } && suite "attention suite (cuda.Attention, flash-decoding under LUMINAL_CUDA_ATTENTION=1, against the reference)" \
    "$out/gemv.log" 300 "$build/tests/test_cuda_attention"
  want quant && suite "quant suite (Dequantize, cuda.QGemv, cuda.QuantizeQ8 + cuda.QGemvQ8, cuda.QGather per block type; a Q8_0 GGUF)" \
    "$out/quant.log" 300 "$build/tests/test_cuda_quant"
  want quant && suite "quantized prefill GEMM suite (cuda.QGemmQ8 per legacy block type, fixed and dynamic rows, against the bound)" \
    "$out/quant.log" 300 "$build/tests/test_cuda_qgemm"
  want quant && suite "quantized prefill GEMM on bf16 tensor cores (cuda.QGemmBF16 per legacy block type, the split layout, exact operands)" \
    "$out/quant.log" 300 "$build/tests/test_cuda_qgemm_bf16"
  want fold && suite "fold suite (load-time folding on the GPU)" "$out/fold.log" 300 \
    "$build/tests/test_cuda_fold"
  want lt && suite "cuBLASLt suite (random layouts x dtypes x families, FP8, capture, plan steps, a session)" \
    "$out/lt.log" 300 "$build/tests/test_cuda_lt"
  grep -sE '^\[lt\]' "$out/lt.log" >>"$summary"
  want lt && LUMINAL_TRACE=cuda.recapture suite \
    "cuBLASLt epilogues, TF32, capture probe (LUMINAL_TRACE=cuda.recapture)" \
    "$out/lt_epilogue.log" 120 "$build/tests/test_cuda_lt_epilogue"
  want lt && note "cuda.recapture trace lines: $(grep -c '^\[cuda.recapture\]' "$out/lt_epilogue.log")"
  want lt && suite "cuBLASLt FP8 (a scaled FP8 linear layer, E4M3 and E5M2 weights)" \
    "$out/lt_fp8.log" 120 "$build/tests/test_cuda_lt_fp8"
  want lt && suite "cuBLASLt with an input bound by bind_external at a 16-byte offset" \
    "$out/lt_external.log" 120 "$build/tests/test_cuda_lt_external"
  want lt && suite "cuBLASLt islands (a forced algorithm with another kernel count)" \
    "$out/lt_islands.log" 180 "$build/tests/test_cuda_lt_islands"
  grep -sE '^\[lt-islands\].*answer' "$out/lt_islands.log" >>"$summary"
  want snippets && suite "CUDA header snippets (examples/snippets/cuda)" "$out/snippets.log" 300 \
    ctest --test-dir "$build" -L cuda -R '^snippet_cuda_' --output-on-failure
  want upload && suite "upload suite (staged uploads, weights from a cold file)" "$out/upload.log" 300 \
    "$build/tests/test_cuda_upload"
  if want misc; then
    for t in $misc_targets; do
      [ -x "$build/tests/$t" ] && suite "misc: $t" "$out/misc.log" 300 "$build/tests/$t"
    done
  fi
  want models && [ -x "$build/tests/test_cuda_models" ] &&
    suite "model parity (f32, bf16/f16, sampling)" "$out/models.log" 300 \
      "$build/tests/test_cuda_models"
  want cli && [ -x "$build/tests/test_cuda_cli" ] &&
    suite "CLI (luminal run --backend cuda vs cpu)" "$out/cli.log" 300 "$build/tests/test_cuda_cli"
  want fuzz && LUMINAL_CUDA_FUZZ_SEEDS=$seeds LUMINAL_FUZZ_PROGRAMS=$programs LUMINAL_FUZZ_VERBOSE=1 \
    suite "equivalence fuzz ($seeds graphs x $programs programs + model blocks)" "$out/fuzz.log" 420 \
    "$build/tests/test_cuda_fuzz"
  grep -sE '^\[fuzz\]' "$out/fuzz.log" | head -3 >>"$summary"
  if [ $sanitize -eq 1 ]; then
    echo "=== compute-sanitizer memcheck ===" >>"$out/session.log"
    suite "session suite under compute-sanitizer memcheck" "$out/session.log" 400 \
      compute-sanitizer --tool memcheck --error-exitcode 1 "$build/tests/test_cuda_session" \
      --gtest_filter=-*Past2To31*
  fi
fi
if [ $bench -eq 1 ]; then
  suite "bench_cuda" "$out/bench.log" 420 "$build/bench/bench_cuda"
  echo "=== row kernels one element at a time (LUMINAL_CUDA_ROW_CHUNKS=0) ===" >>"$out/bench.log"
  LUMINAL_CUDA_ROW_CHUNKS=0 suite "bench_cuda rows, element form" "$out/bench.log" 120 \
    "$build/bench/bench_cuda" 20 rows
  echo "=== Llama-3-8B with cuBLASLt in the search ===" >>"$out/bench.log"
  suite "bench_cuda lt (8B decode and prefill with cuBLASLt)" "$out/bench.log" 240 "$build/bench/bench_cuda" 20 lt
  echo "=== GEMM shapes: generated kernels, cuBLASLt in the plan, raw cuBLASLt ===" >>"$out/bench.log"
  suite "bench_cuda gemm (8B GEMM shapes)" "$out/bench.log" 180 "$build/bench/bench_cuda" 10 gemm
  echo "=== decode GEMV shapes: cuda.Gemv against cuda.Matmul ===" >>"$out/bench.log"
  suite "bench_cuda gemv (8B and SmolLM2 GEMV shapes, m 1-8)" "$out/bench.log" 200 "$build/bench/bench_cuda" 20 gemv
  echo "=== NaN payloads kept everywhere (LUMINAL_CUDA_FAST_NAN=0) ===" >>"$out/bench.log"
  LUMINAL_CUDA_FAST_NAN=0 suite "bench_cuda rows, NaN payloads kept" "$out/bench.log" 120 \
    "$build/bench/bench_cuda" 20 rows
  lines='copy|fused|row kernel|search|decode step at|tiny kernels|weights upload|dims update'
  lines="$lines|prefill s change|bf16 decode at|with cuBLASLt|^gemm|^gemv|FAILED"
  grep -E "$lines" "$out/bench.log" >>"$summary"
fi
tar -czf "$out/cache.tgz" -C "$XDG_CACHE_HOME" . 2>/dev/null
note "cache: $(du -sh "$XDG_CACHE_HOME" | cut -f1) saved to cache.tgz"
note "total: $(($(date +%s) - start)) s; $([ $failed -eq 0 ] && echo ALL PASSED || echo FAILURES)"
exit $failed
