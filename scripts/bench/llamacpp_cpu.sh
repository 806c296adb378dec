#!/usr/bin/env bash
# llama.cpp's CPU speed on a GGUF model, the peer for `luminal bench`: prompt and generation tok/s
# in one line, each the median of 3 runs (after llama-bench's warm-up run).
#
#   scripts/bench/llamacpp_cpu.sh MODEL.gguf [THREADS]     # THREADS: 2
#   -> llama.cpp <commit> SmolLM2-135M-Instruct.Q4_1.gguf, 2 threads: prompt 380.1 tok/s,
#      generation 127.0 tok/s (median of 3; llama-bench -p 128 -n 128 -t 2 -fa 1 -r 3)
#
# It runs `llama-bench -m MODEL -p 128 -n 128 -t THREADS -fa 1 -r 3` (flash attention on,
# llama.cpp's best on the CPU) from scripts/gguf/build_llamacpp.sh's build (built first if
# missing; LLAMACPP=DIR uses another build's DIR/build/bin). Pair it, back to back on the same
# box, with
#   luminal bench MODEL.gguf -p 128 -n 128 --backend cpu --threads THREADS
# and compare its "prefill" and "decode" tok/s with "prompt" and "generation" here. Both time
# 128 prompt tokens from an empty context; llama-bench generates its 128 tokens from an empty
# context too (positions 0-127) and luminal after the prompt (positions 128-255), a little more
# attention per token. The box is shared and noisy: run several pairs and quote the medians.
set -euo pipefail
model=${1:?usage: scripts/bench/llamacpp_cpu.sh MODEL.gguf [THREADS]}
threads=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
llama=${LLAMACPP:-$("$here/../gguf/build_llamacpp.sh")}
args=(-p 128 -n 128 -t "$threads" -fa 1 -r 3)
"$llama/build/bin/llama-bench" -m "$model" "${args[@]}" -o jsonl 2>/dev/null |
  python3 -c '
import json, statistics, sys
model, threads, args = sys.argv[1:4]
runs = {}
commit = "?"
for line in sys.stdin:
    if line.startswith("{"):
        j = json.loads(line)
        commit = j.get("build_commit", commit)
        kind = "prompt" if j["n_gen"] == 0 else "generation"
        runs[kind] = statistics.median(j["samples_ts"])
if set(runs) != {"prompt", "generation"}:
    sys.exit("llamacpp_cpu: llama-bench printed no result for " + model)
name = model.rsplit("/", 1)[-1]
pp, tg = runs["prompt"], runs["generation"]
print(f"llama.cpp {commit} {name}, {threads} threads: prompt {pp:.1f} tok/s, "
      f"generation {tg:.1f} tok/s (median of 3; llama-bench {args})")
' "$model" "$threads" "${args[*]}"
