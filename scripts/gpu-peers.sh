#!/usr/bin/env bash
# Peers on the same GGUF files in the same lease of a GPU machine: llama.cpp's llama-bench (CUDA,
# flash attention on and off) and `luminal bench --backend cuda` on random-weight files in published
# shapes (scripts/gguf/make_shape_gguf.py) and their llama-quantize versions. The machine has no
# network: carry what it needs in .dev/ (ignored by git):
#
#   .dev/llama-cpp-src.tar.xz   llama.cpp's source from the llama-cpp-python 0.3.36 sdist (PyPI),
#                               stripped: python3 -m pip download --no-deps --no-binary :all:
#                               llama-cpp-python==0.3.36, keep vendor/llama.cpp without docs, models,
#                               tests, examples and the backends other than ggml-cpu/ggml-cuda
#   .dev/smol_vocab.json        make_shape_gguf.py --dump-vocab SmolLM2-135M-Instruct.Q4_1.gguf ...
#
# Three steps, each fitting a device call (a warm machine keeps $HOME between calls):
#   scripts/gpu-peers.sh OUT build-llama        unpack and start llama.cpp's CUDA build in the
#                                               background (3-8 minutes; other work runs meanwhile)
#   scripts/gpu-peers.sh OUT gguf SHAPE[:TYPE,TYPE] ...
#                                               write $HOME/gguf/SHAPE-f16.gguf (bf16 for qwen3moe12
#                                               and gemma3-1b) and each llama-quantize TYPE of it
#                                               (waits for the llama.cpp build)
#   scripts/gpu-peers.sh OUT gguf-py SHAPE:TYPE[:TABLE] ...
#                                               write $HOME/gguf/SHAPE-TYPE.gguf with gguf-py's
#                                               quantizer (TYPE q4_0, q4_1, q8_0; TABLE the
#                                               embedding's and output's type), no llama.cpp build:
#                                               smollm2:q4_1:q8_0 has the published file's types
#   scripts/gpu-peers.sh OUT bench FILE ...     llama-bench -p 128 -n 128 -r 3 -ngl 99 $LLAMA_ARGS
#                                               (default -fa 1; e.g. "-fa 1 -d 0,2048"), then
#                                               luminal bench FILE -p 128 -n 128 --backend cuda
#                                               (FILE: a path, or a name under $HOME/gguf)
#   BUILD=dir (our build, default build-gpu; bench builds luminal_cli there), JOBS=n,
#   LUMINAL_ONLY=1 / LLAMA_ONLY=1 (one side of bench)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-peers.sh OUT build-llama|gguf|bench ...}
step=${2:?usage: scripts/gpu-peers.sh OUT build-llama|gguf|bench ...}
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary="$out/peers.txt"
llama=$HOME/llama
gdir=$HOME/gguf
build=${BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
bin=$llama/build/bin

wait_llama() {
  local t0=$(date +%s)
  while [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-quantize" ] || [ ! -f "$llama/done" ]; do
    if [ -f "$llama/failed" ]; then
      note "llama.cpp build failed:"; tail -20 "$llama/build.log"; exit 1
    fi
    sleep 5
  done
  [ $(($(date +%s) - t0)) -gt 5 ] && note "waited $(($(date +%s) - t0)) s for llama.cpp's build"
  return 0
}

case "$step" in
  build-llama)
    [ -f .dev/llama-cpp-src.tar.xz ] || { note "no .dev/llama-cpp-src.tar.xz (see the header)"; exit 1; }
    # (a warm machine's earlier build stands: starting over would cost its 5-8 minutes again)
    if [ -f "$llama/done" ]; then note "llama.cpp: built by an earlier call"; exit 0; fi
    if [ -d "$llama/build" ] && [ ! -f "$llama/failed" ] && pgrep -f "cmake --build $llama/build" >/dev/null; then
      note "llama.cpp: an earlier call's build is still running"; exit 0
    fi
    rm -rf "$llama" && mkdir -p "$llama" && tar -xJf .dev/llama-cpp-src.tar.xz -C "$llama"
    cmd="cmake -S $llama/llama.cpp -B $llama/build -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF \
-DLLAMA_OPENSSL=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >$llama/build.log 2>&1 && \
cmake --build $llama/build -j ${LLAMA_JOBS:-8} --target llama-bench llama-quantize >>$llama/build.log 2>&1 \
&& touch $llama/done || touch $llama/failed"
    setsid nohup bash -c "$cmd" >/dev/null 2>&1 </dev/null &
    note "llama.cpp: CUDA build started in the background (log $llama/build.log)"
    ;;
  gguf)
    [ -f .dev/smol_vocab.json ] || { note "no .dev/smol_vocab.json (see the header)"; exit 1; }
    mkdir -p "$gdir"
    cp .dev/smol_vocab.json "$gdir/vocab.json"
    export PYTHONPATH=$llama/llama.cpp/gguf-py
    for spec in "$@"; do
      shape=${spec%%:*}
      types=
      [ "$spec" != "$shape" ] && types=${spec#*:}
      dt=f16
      case "$shape" in qwen3moe12 | gemma3-1b) dt=bf16 ;; esac
      f=$gdir/$shape-$dt.gguf
      t0=$(date +%s)
      [ -f "$f" ] || python3 scripts/gguf/make_shape_gguf.py "$shape" "$f" --vocab "$gdir/vocab.json" \
        --dtype $dt >>"$out/gguf.log" 2>&1 || { note "make_shape_gguf $shape failed"; tail -5 "$out/gguf.log"; exit 1; }
      note "$f: $(du -h "$f" | cut -f1) in $(($(date +%s) - t0)) s"
      for t in ${types//,/ }; do
        wait_llama
        q=$gdir/$shape-$(echo "$t" | tr 'A-Z' 'a-z').gguf
        t0=$(date +%s)
        [ -f "$q" ] || "$bin/llama-quantize" --allow-requantize "$f" "$q" "$t" "$(nproc)" \
          >>"$out/gguf.log" 2>&1 || { note "llama-quantize $t failed"; tail -5 "$out/gguf.log"; exit 1; }
        note "$q: $(du -h "$q" | cut -f1) in $(($(date +%s) - t0)) s"
      done
    done
    ;;
  gguf-py)
    [ -f .dev/smol_vocab.json ] || { note "no .dev/smol_vocab.json (see the header)"; exit 1; }
    [ -f .dev/llama-cpp-src.tar.xz ] || { note "no .dev/llama-cpp-src.tar.xz (see the header)"; exit 1; }
    mkdir -p "$gdir" "$HOME/gguf-py"
    cp .dev/smol_vocab.json "$gdir/vocab.json"
    # (gguf-py only: the source unpacked, nothing built)
    [ -d "$HOME/gguf-py/llama.cpp/gguf-py" ] ||
      tar -xJf .dev/llama-cpp-src.tar.xz -C "$HOME/gguf-py" llama.cpp/gguf-py
    export PYTHONPATH=$HOME/gguf-py/llama.cpp/gguf-py
    for spec in "$@"; do
      IFS=: read -r shape t table <<<"$spec"
      [ -n "${t:-}" ] || { note "gguf-py: give SHAPE:TYPE[:TABLE], got '$spec'"; exit 2; }
      f=$gdir/$shape-$t.gguf
      t0=$(date +%s)
      [ -f "$f" ] || python3 scripts/gguf/make_shape_gguf.py "$shape" "$f" --vocab "$gdir/vocab.json" \
        --dtype "$t" ${table:+--table-dtype "$table"} >>"$out/gguf.log" 2>&1 ||
        { note "make_shape_gguf $spec failed"; tail -5 "$out/gguf.log"; exit 1; }
      note "$f: $(du -h "$f" | cut -f1) in $(($(date +%s) - t0)) s"
    done
    ;;
  bench)
    if [ -z "${LLAMA_ONLY:-}" ]; then
      install_debs
      { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
          cmake --build "$build" -j "$jobs" --target luminal_cli; } >"$out/build.log" 2>&1 ||
        { tail -30 "$out/build.log"; exit 1; }
    fi
    [ -z "${LUMINAL_ONLY:-}" ] && wait_llama
    for f in "$@"; do
      [ -f "$f" ] || f=$gdir/$f
      [ -f "$f" ] || { note "no such file: $f"; continue; }
      name=$(basename "$f")
      if [ -z "${LUMINAL_ONLY:-}" ]; then
        note "== llama.cpp $name"
        timeout 300 "$bin/llama-bench" -m "$f" -p 128 -n 128 -r 3 -ngl 99 ${LLAMA_ARGS:--fa 1} 2>>"$out/llama.log" |
          tee -a "$out/llama.log" | grep -E "pp128|tg128" | tee -a "$summary"
      fi
      if [ -z "${LLAMA_ONLY:-}" ]; then
        note "== luminal $name"
        timeout 300 "$build/apps/luminal" bench "$f" -p 128 -n 128 --backend cuda 2>>"$out/luminal.log" |
          tee -a "$out/luminal.log" | tee -a "$summary"
      fi
    done
    ;;
  *) echo "gpu-peers: unknown step $step" >&2; exit 2 ;;
esac
