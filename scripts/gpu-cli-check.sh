#!/usr/bin/env bash
# `luminal bench --backend cuda` on GGUF files on a GPU machine, with the search reports (run under
# `script`, so the CLI sees a terminal and prints them): the quick check of the CLI's load, search
# and decode path on real files. Files too big to carry are made there with
# scripts/gguf/make_shape_gguf.py (gguf-py carried); a small quantized one here:
#   make_shape_gguf.py llama-tiny tiny-f16.gguf --vocab VOCAB && llama-quantize tiny-f16.gguf tiny-q4_0.gguf Q4_0
#
#   scripts/gpu-cli-check.sh OUT FILE ...     (DTYPES="auto f32": one run per --dtype; BUILD=dir)
#
# A FILE of the form make:SHAPE:DTYPE (make:llama8b:q4_0, make:smollm2:bf16) is written first into
# $HOME with make_shape_gguf.py (needs GGUF_PY=<llama.cpp>/gguf-py, default .dev/gguf-py, and
# VOCAB=<smol_vocab.json>, default .dev/smol_vocab.json). ENV="A=1 B=0" is set for every run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-cli-check.sh OUT FILE ...}
shift
mkdir -p "$out"
summary="$out/summary.txt"
build=${BUILD:-build-gpu}
install_debs
{ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target luminal_cli; } >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
for f in "$@"; do
  case "$f" in
    make:*)
      IFS=: read -r _ shape dt <<<"$f"
      f="$HOME/$shape-$dt.gguf"
      [ -f "$f" ] || PYTHONPATH="${GGUF_PY:-$PWD/.dev/gguf-py}" python3 scripts/gguf/make_shape_gguf.py \
        "$shape" "$f" --vocab "${VOCAB:-.dev/smol_vocab.json}" --dtype "$dt" >/dev/null ||
        { note "== $shape $dt: make_shape_gguf.py failed"; continue; }
      ;;
  esac
  for d in ${DTYPES:-auto}; do
    log="$out/$(basename "$f" .gguf)-$d.log"
    script -qec "env ${ENV:-LUMINAL_NONE=} timeout 300 $build/apps/luminal bench $f -p 128 -n 64 --backend cuda --dtype $d" \
      "$log" >/dev/null 2>&1
    note "== $f --dtype $d: rc=$?"
    grep -aE "folds:|weights |prefill |decode |session |error" "$log" | tee -a "$summary"
  done
done
