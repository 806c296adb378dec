#!/usr/bin/env python3
"""Decode ms/token of an 8B-shaped Llama in plain PyTorch: luminal vs Inductor + CUDA graph.

The model is scripts/bench/torch_llama.py at the Llama-3-8B shape (32 layers, hidden 4096, FFN
14336, 32/8 heads, vocabulary 128256; random bf16 weights), one decode step at a fixed position
against fixed-size KV caches (static shapes). --step static (the default) writes the token's K and
V rows into per-layer caches inside the step, as gpt-fast and the torch anchor do; --step cat
attends over the caches concatenated with the new rows and writes them in eager after the step
(torch_llama.Step). Rows, in one run:
  eager                 the step in eager PyTorch
  inductor+cudagraph    torch.compile (Inductor, --inductor-mode, default "default"), then the
                        step captured by hand in one torch.cuda.CUDAGraph and replayed (CUDA);
                        plain Inductor on the CPU
  luminal               torch.compile(backend="luminal", options={"backend": "cuda"}), and
                        the same with torch.compiler.set_stance(skip_guard_eval_unsafe=True)
Prints the median ms per step over --steps steps after --warmup, and the first call's time.

  PYTHONPATH=build/python python3 scripts/bench/torch_compile_gpu.py            # H200, 8B
  PYTHONPATH=build/python python3 scripts/bench/torch_compile_gpu.py --shape tiny --device cpu
"""

import argparse
import dataclasses
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch_llama  # noqa: E402

import luminal.torch_backend  # noqa: E402,F401  (registers backend="luminal")


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def measure(name, step, device, warmup, steps):
    t0 = time.perf_counter()
    step()
    sync(device)
    first = time.perf_counter() - t0
    for _ in range(warmup):
        step()
    sync(device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    ms = statistics.median(times)
    print(f"| {name} | {first:.1f} | {ms:.3f} | {min(times):.3f} |", flush=True)
    return ms


def measure_back_to_back(name, step, device, warmup, steps):
    """ms per step with no wait between steps (one at the end), as a generation loop that keeps
    its tokens on the device runs: the host's work for a step overlaps the device's."""
    for _ in range(warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    ms = (time.perf_counter() - t0) * 1e3 / steps
    print(f"| {name} | | {ms:.3f} | |", flush=True)
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=["8b", "100m", "tiny"], default="8b")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bf16", "f32"], default=None)
    ap.add_argument("--pos", type=int, default=None, help="the token's position (default ctx/2)")
    ap.add_argument("--budget", type=int, default=20, help="luminal's search_budget")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="luminal's time_budget: seconds of search per bucket (default none)")
    ap.add_argument("--profile-timeout", type=float, default=None,
                    help="luminal's profile_timeout: seconds a candidate's timed runs may take "
                         "(default the backend's, 30 as the CLI)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--inductor-mode", default="default",
                    help='e.g. "max-autotune-no-cudagraphs" (slow to compile at 8B)')
    ap.add_argument("--skip", default="", help="rows to leave out, e.g. eager,inductor")
    ap.add_argument("--stream-order", choices=["sync", "events"], default="events",
                    help="luminal's stream_order option (events: no host wait per call)")
    ap.add_argument("--attention", choices=["matmul", "sdpa"], default="matmul",
                    help="attention as matmuls and a softmax, or as SDPA with enable_gqa (the "
                    "torch anchor's form)")
    ap.add_argument("--step", choices=["static", "cat"], default="static",
                    help="the step's form (torch_llama.Step)")
    args = ap.parse_args()
    cfg = {"8b": torch_llama.LLAMA_8B, "100m": torch_llama.LLAMA_100M, "tiny": torch_llama.TINY}[
        args.shape
    ]
    cfg = dataclasses.replace(cfg, sdpa=args.attention == "sdpa")
    dev = args.device
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[
        args.dtype or ("bf16" if dev == "cuda" else "f32")
    ]
    pos = args.pos if args.pos is not None else cfg.max_ctx // 2
    torch.manual_seed(0)
    with torch.device(dev):
        model = torch_llama.Llama(cfg).to(dtype).eval()
    st = torch_llama.Step(model, args.step, dtype, dev, pos)
    n = torch_llama.params(model)
    print(f"{args.shape}: {n / 1e9:.2f}B parameters, {dtype}, {dev}, position {pos} of "
          f"{cfg.max_ctx}, step {args.step}; torch {torch.__version__}")
    print("| backend | first call s | median ms/step | best ms |")
    print("|---|---|---|---|")
    skip = set(args.skip.split(","))
    outs = {}

    def stepper(f):
        def step():
            outs["logits"] = st(f)

        return step

    results = {}
    with torch.no_grad():
        if "eager" not in skip:
            results["eager"] = measure("eager", stepper(st.method(model)), dev, args.warmup,
                                       args.steps)
            ref = outs["logits"].float().clone()
        if "inductor" not in skip:
            torch._dynamo.reset()
            f = torch.compile(st.method(model), mode=args.inductor_mode)
            if dev == "cuda":
                for _ in range(3):
                    f(*st.args())
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static = f(*st.args())

                def replay(*_):
                    graph.replay()
                    return static

                results["inductor"] = measure("inductor+cudagraph", stepper(replay), dev,
                                              args.warmup, args.steps)
                measure_back_to_back("inductor+cudagraph, steps back to back", stepper(replay),
                                     dev, args.warmup, args.steps)
            else:
                results["inductor"] = measure("inductor", stepper(f), dev, args.warmup,
                                              args.steps)
        if "luminal" not in skip:
            torch._dynamo.reset()
            opts = {"backend": dev, "search_budget": args.budget,
                    "stream_order": args.stream_order}
            if args.time_budget is not None:
                opts["time_budget"] = args.time_budget
            if args.profile_timeout is not None:
                opts["profile_timeout"] = args.profile_timeout
            f = torch.compile(st.method(model), backend="luminal", options=opts)
            results["luminal"] = measure("luminal", stepper(f), dev, args.warmup,
                                         args.steps)
            measure_back_to_back(f"luminal ({args.stream_order}), steps back to back",
                                 stepper(f), dev, args.warmup, args.steps)
            # The same compiled step with Dynamo's guard check skipped (the inputs never change
            # shape or dtype here): Inductor's row replays a CUDA graph and skips Dynamo too.
            torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
            measure("luminal, guards skipped", stepper(f), dev, args.warmup, args.steps)
            torch.compiler.set_stance("default")
            # The same step replayed by luminal.torch_backend.capture (no Dynamo, no
            # AOTAutograd wrapper), as Inductor's row replays its hand-captured CUDA graph.
            replay = luminal.torch_backend.capture(f, *st.args())
            results["luminal capture"] = measure(
                "luminal, capture() replay", lambda: outs.update(logits=replay()), dev,
                args.warmup, args.steps,
            )
            if "eager" not in skip:
                a = st(f).float()
                b = st(st.method(model)).float()
                print(f"luminal vs eager logits: max abs diff {(a - b).abs().max().item():.3e}, "
                      f"argmax equal: {bool((a.argmax(-1) == b.argmax(-1)).all())}")
            print(f"luminal pieces and fallbacks: "
                  f"{[g['pieces'] for g in luminal.torch_backend.report()['graphs']]}, "
                  f"{luminal.torch_backend.report()['fallback'] or 'no fallback'}")
    if "luminal" in results and "inductor" in results:
        print(f"luminal / inductor: {results['luminal'] / results['inductor']:.2f}x; "
              f"replayed: {results['luminal capture'] / results['inductor']:.2f}x")


if __name__ == "__main__":
    main()
