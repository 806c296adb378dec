#!/usr/bin/env bash
# luminal against llama.cpp on the CPU, pairs back to back: prompt and generation tok/s of
# SmolLM2-135M-Instruct GGUFs, 128 + 128 tokens, each TYPE x THREADS searched once (a fresh
# compile cache in a temporary folder), then RUNS pairs, medians and ranges printed last.
#
#   scripts/bench/quant_pairs.sh [RUNS] [TYPES] [THREADS]
#     RUNS: 3; TYPES: "Q4_1 Q8_0 Q4_K_M"; THREADS: "2 1"
#   MODELS=DIR (default ~/.cache/luminal/models) holds SmolLM2-135M-Instruct.<TYPE>.gguf;
#   LUMINAL=path/to/luminal (default build/apps/luminal); llama.cpp as in llamacpp_cpu.sh.
#
# Each pair is `luminal bench MODEL -p 128 -n 128 -r 3 --backend cpu --threads T` then
# `scripts/bench/llamacpp_cpu.sh MODEL T` (llama-bench -p 128 -n 128 -t T -fa 1 -r 3): both sides
# print the mean of 3 timed runs after a warm-up.
set -euo pipefail
runs=${1:-3}
types=${2:-"Q4_1 Q8_0 Q4_K_M"}
threads=${3:-"2 1"}
here=$(cd "$(dirname "$0")" && pwd)
models=${MODELS:-$HOME/.cache/luminal/models}
luminal=${LUMINAL:-$here/../../build/apps/luminal}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# The median and, in brackets, the range of the runs: on a shared box the spread is the point.
spread() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%s [%s-%s]", a[int((NR+1)/2)], a[1], a[NR]}'; }
summary=""
for t in $types; do
  for th in $threads; do
    m=$models/SmolLM2-135M-Instruct.$t.gguf
    XDG_CACHE_HOME=$cache "$luminal" bench "$m" -p 128 -n 128 --backend cpu --threads "$th" \
      >/dev/null 2>&1  # the search
    op="" od="" lp="" lg=""
    for r in $(seq "$runs"); do
      out=$(XDG_CACHE_HOME=$cache "$luminal" bench "$m" -p 128 -n 128 -r 3 --backend cpu --threads "$th" 2>&1)
      p=$(awk '/^prefill/ {print $4}' <<<"$out"); d=$(awk '/^decode/ {print $4}' <<<"$out")
      l=$("$here/llamacpp_cpu.sh" "$m" "$th")
      lp1=$(sed -E 's/.*prompt ([0-9.]+) tok.*/\1/' <<<"$l"); lg1=$(sed -E 's/.*generation ([0-9.]+) tok.*/\1/' <<<"$l")
      echo "$t, $th threads, pair $r: luminal prefill $p decode $d | llama.cpp prompt $lp1 generation $lg1"
      op="$op $p" od="$od $d" lp="$lp $lp1" lg="$lg $lg1"
    done
    summary+="$t, $th threads, medians [ranges]: luminal prefill $(spread <<<"$op") decode $(spread <<<"$od") | llama.cpp prompt $(spread <<<"$lp") generation $(spread <<<"$lg")"$'\n'
  done
done
printf '%s' "$summary"
