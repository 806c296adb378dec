#!/usr/bin/env python3
"""Warm `luminal run` to the first token and peak memory, and `luminal bench`, as medians.

    scripts/bench_run_memory.py [--bin build/apps/luminal] [--model FILE] [--runs 5] [--threads 2]

One untimed `run` and `bench` first fill the compile cache (a search on a cold cache), then each
command runs --runs times:
  run    MODEL --prompt "The capital of France is" --max-tokens 32 --backend cpu --threads N
  bench  MODEL -p 128 -n 128 --backend cpu --threads N
Prints the median load + compile, TTFT and their sum (the first token after the start), prefill
and decode tok/s, and the peak resident memory of each process (its ru_maxrss from wait4, the
same as /usr/bin/time's "Maximum resident set size"), next to the GGUF's bytes (the issue's bound:
GGUF + KV cache + 100 MiB).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def run_once(cmd):
    """(stdout + stderr text, peak RSS in MiB) of one process."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{out}")
    return out, usage.ru_maxrss / 1024.0


def number(pattern, text):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"no match for {pattern!r} in:\n{text}")
    return float(m.group(1))


def main():
    default_model = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                 "luminal", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/apps/luminal")
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    threads = ["--backend", "cpu", "--threads", str(a.threads)]
    run = [a.bin, "run", a.model, "--prompt", "The capital of France is", "--max-tokens", "32"]
    run += threads
    bench = [a.bin, "bench", a.model, "-p", "128", "-n", "128"] + threads
    run_once(run)
    run_once(bench)
    rows = {"load + compile (ms)": [], "TTFT (ms)": [], "first token (ms)": [],
            "run peak RSS (MiB)": [], "prefill tok/s": [], "decode tok/s": [],
            "bench peak RSS (MiB)": []}
    for _ in range(a.runs):
        out, rss = run_once(run)
        load = number(r"load \+ compile: ([0-9.]+) ms", out)
        ttft = number(r"TTFT: ([0-9.]+) ms", out)
        rows["load + compile (ms)"].append(load)
        rows["TTFT (ms)"].append(ttft)
        rows["first token (ms)"].append(load + ttft)
        rows["run peak RSS (MiB)"].append(rss)
        out, rss = run_once(bench)
        rows["prefill tok/s"].append(number(r"prefill +[0-9]+ tokens, ([0-9.]+) tok/s", out))
        rows["decode tok/s"].append(number(r"decode +[0-9]+ tokens, ([0-9.]+) tok/s", out))
        rows["bench peak RSS (MiB)"].append(rss)
    print(f"{a.bin}, {os.path.basename(a.model)} ({os.path.getsize(a.model) / 2**20:.1f} MiB), "
          f"{a.threads} threads, medians of {a.runs}")
    for k, v in rows.items():
        print(f"  {k:22s} {statistics.median(v):8.1f}   (runs: {', '.join(f'{x:.1f}' for x in v)})")


if __name__ == "__main__":
    main()
