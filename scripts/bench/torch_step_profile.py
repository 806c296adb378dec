#!/usr/bin/env python3
"""Where a torch.compile(backend="luminal") decode step's time goes, beside the program's own.

The model and step are torch_compile_gpu.py's (torch_llama.Step: --step static, the caches
written inside the step, or cat, the KV write in eager after it).
After a first call (the compile) and a warm-up, it times --steps steps whole, then the same steps
with each piece's phases timed: binding the inputs, Session.execute (the launch), the device
finishing (a synchronize right after), and getting the outputs; the rest of a step is Dynamo's
guards, AOTAutograd's wrappers, the FX call (and, for --step cat, the eager KV write). Last, the
session's execute alone, back to back, with a synchronize each. Prints ms per step for each.

  PYTHONPATH=build/python python3 scripts/bench/torch_step_profile.py --shape 100m --device cpu
  PYTHONPATH=$B/python python3 scripts/bench/torch_step_profile.py --shape 8b --time-budget 30
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

import luminal.torch_backend  # noqa: E402
from luminal.torch_backend import piece as piece_mod  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=["8b", "100m", "tiny"], default="100m")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--time-budget", type=float, default=None)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--attention", choices=["matmul", "sdpa"], default="matmul",
                    help="attention as matmuls and a softmax, or as SDPA with enable_gqa (the "
                    "torch anchor's form)")
    ap.add_argument("--step", choices=["static", "cat"], default="static")
    args = ap.parse_args()
    cfg = {"8b": torch_llama.LLAMA_8B, "100m": torch_llama.LLAMA_100M, "tiny": torch_llama.TINY}[
        args.shape
    ]
    cfg = dataclasses.replace(cfg, sdpa=args.attention == "sdpa")
    dev = args.device
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    pos = cfg.max_ctx // 2
    torch.manual_seed(0)
    with torch.device(dev):
        model = torch_llama.Llama(cfg).to(dtype).eval()
    st = torch_llama.Step(model, args.step, dtype, dev, pos)

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    opts = {"backend": dev, "search_budget": args.budget}
    if args.time_budget is not None:
        opts["time_budget"] = args.time_budget
    f = torch.compile(st.method(model), backend="luminal", options=opts)

    def step():
        return st(f)

    with torch.no_grad():
        t0 = time.perf_counter()
        step()
        sync()
        print(f"{args.shape} {dtype} {dev}, step {args.step}: first call "
              f"{time.perf_counter() - t0:.1f} s")
        for _ in range(5):
            step()
        sync()
        whole = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            sync()
            whole.append((time.perf_counter() - t0) * 1e3)

        # The phases, by wrapping the pieces' methods.
        phases = {"bind": 0.0, "execute (launch)": 0.0, "device after launch": 0.0, "get": 0.0}
        pieces = [pc for graph in luminal.torch_backend._report.pieces for pc in graph]

        class Timed:
            def __init__(self, s):
                self.s = s

            def execute(self, dims):
                t = time.perf_counter()
                self.s.execute(dims)
                t1 = time.perf_counter()
                sync()
                phases["execute (launch)"] += t1 - t
                phases["device after launch"] += time.perf_counter() - t1

            def __getattr__(self, name):
                return getattr(self.s, name)

        bind0, get0 = piece_mod.Piece._bind, piece_mod.Piece._get

        def bind(self, *a):
            t = time.perf_counter()
            bind0(self, *a)
            phases["bind"] += time.perf_counter() - t

        def get(self, *a):
            t = time.perf_counter()
            r = get0(self, *a)
            phases["get"] += time.perf_counter() - t
            return r

        piece_mod.Piece._bind, piece_mod.Piece._get = bind, get
        for pc in pieces:
            pc.session = Timed(pc.session)
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
            sync()
        total = (time.perf_counter() - t0) * 1e3 / args.steps
        piece_mod.Piece._bind, piece_mod.Piece._get = bind0, get0
        for pc in pieces:
            pc.session = pc.session.s

        # The session alone.
        alone = []
        pc = pieces[0]
        dims = {}
        for _ in range(args.steps):
            t0 = time.perf_counter()
            pc.session.execute(dims)
            sync()
            alone.append((time.perf_counter() - t0) * 1e3)

    print(f"| step (whole, median) | {statistics.median(whole):.3f} ms |")
    print(f"| step with phases timed (mean) | {total:.3f} ms |")
    accounted = 0.0
    for k, v in phases.items():
        ms = v * 1e3 / args.steps
        accounted += ms
        print(f"|   {k} | {ms:.3f} ms |")
    print(f"|   the rest (Dynamo, AOTAutograd, FX, a cat step's KV write) | "
          f"{total - accounted:.3f} ms |")
    print(f"| Session.execute alone + sync (median) | {statistics.median(alone):.3f} ms |")
    print(f"pieces: {len(pieces)}")


if __name__ == "__main__":
    main()
