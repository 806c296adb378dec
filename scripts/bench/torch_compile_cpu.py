#!/usr/bin/env python3
"""torch.compile(backend="luminal") against Inductor and eager PyTorch on the CPU, same run.

Models: the tiny transformers Llama and Qwen3 of tests/data/models (a 32-token prompt); a
transformers Qwen3-MoE of random weights (4 layers, hidden 512, 32 experts of FFN 256, 4 a token;
f32; its experts as transformers runs them under torch.compile, grouped by expert), a 32-token
prompt; and a
100M-parameter Llama-shaped module in plain PyTorch (scripts/bench/torch_llama.py, the shape of
bench_llm_cpu: 12 layers, hidden 768, vocabulary 32000; f32): a 128-token prompt, and a decode
step at position 128 against fixed 1024-row KV caches, in both of torch_llama's forms (static
shapes: the step attends over every row, masked): "static", the caches written in place inside
the step (gpt-fast's form), and "cat", the step attending over the caches concatenated with the
new row. Prints one table row per model and measurement: the median ms of --reps calls
after a warm-up, and each backend's compile time (the first call).

  PYTHONPATH=build/python LUMINAL_CACHE=off ~/.cache/luminal/torch-venv/bin/python \
      scripts/bench/torch_compile_cpu.py

Options: --threads (default 2), --budget (luminal's search_budget, default 20), --reps,
--only tiny|moe|100m|100m-decode (the static decode step alone)|frontend (a 32-layer step of
hidden 64: the 8B module's 453 inputs with little work, for the frontend's own time; not in the
default run), --backends (rows, e.g.
luminal), --luminal-options (JSON, e.g. '{"fold_constants": 0}' for an A/B of an option).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

# Cold compiles on both sides: Inductor without its on-disk caches (run with LUMINAL_CACHE=off
# for luminal's).
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch_llama  # noqa: E402

import luminal.torch_backend as lt  # noqa: E402  (registers backend="luminal")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def timed(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def compare(name, model, call, args, opt, dynamic=False):
    """Rows for eager, Inductor and luminal: (name, backend, compile s, median ms)."""
    rows = []
    ref = None
    for backend in opt.backends.split(","):
        torch._dynamo.reset()
        lt.reset()
        if backend == "eager":
            f = getattr(model, call)
        else:
            opts = None
            if backend == "luminal":
                opts = {"search_budget": opt.budget, "max_dim": 512, "threads": opt.threads}
                opts.update(json.loads(opt.luminal_options))
            f = torch.compile(getattr(model, call), backend=backend, options=opts, dynamic=dynamic)
        with torch.no_grad():
            t0 = time.perf_counter()
            out = f(*args)
            first = time.perf_counter() - t0
            ms = timed(lambda: f(*args), opt.reps)
        out = out[0] if isinstance(out, tuple) else out
        if ref is None:
            ref = out
        err = (out.float() - ref.float()).abs().max().item()
        rows.append((name, backend, first, ms, err))
        print(f"| {name} | {backend} | {first:.1f} | {ms:.2f} | {err:.1e} |", flush=True)
        if backend == "luminal":
            overhead(name, f, args, opt.reps)
    return rows


def overhead(name, f, args, reps):
    """The frontend's time per call: the compiled call, then its capture() replay (no Dynamo, no
    AOTAutograd wrapper), each against its session's execute alone, paired (back to back,
    medians)."""
    graphs = [g for g in lt.report()["graphs"] if g["pieces"]]
    if len(graphs) != 1 or graphs[0]["pieces"] != 1:
        return
    session = graphs[0]["sessions"][0]

    def paired(what, call_fn):
        call, run = [], []
        with torch.no_grad():
            for _ in range(max(reps, 10)):
                t0 = time.perf_counter()
                call_fn()
                call.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                try:
                    session.execute()
                except RuntimeError:  # a dynamic dim with no value set: not measured
                    return False
                run.append(time.perf_counter() - t0)
        c, r = statistics.median(call) * 1e3, statistics.median(run) * 1e3
        print(f"| {name} | luminal: {what} - session.execute (paired) | | {c - r:.2f} "
              f"({(c - r) / c * 100:.1f}% of {c:.2f}) | |", flush=True)
        return True

    if not paired("call", lambda: f(*args)):
        return
    with torch.no_grad():
        replay = lt.capture(f, *args)
    paired("capture() replay", replay)


class Logits(torch.nn.Module):
    """A transformers causal LM as ids -> logits, without a cache."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, ids):
        return self.inner(input_ids=ids, use_cache=False).logits


def tiny(args):
    import transformers

    for m in ("llama3", "qwen3"):
        model = transformers.AutoModelForCausalLM.from_pretrained(
            ROOT / "tests" / "data" / "models" / m, attn_implementation="eager"
        ).eval()
        ids = torch.randint(0, model.config.vocab_size, (1, 32))
        compare(f"tiny {m}, 32-token forward", Logits(model), "forward", (ids,), args)


def moe(args):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.Qwen3MoeConfig(
        vocab_size=8192, hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64, intermediate_size=1024, moe_intermediate_size=256,
        num_experts=32, num_experts_per_tok=4, norm_topk_prob=True, max_position_embeddings=512,
    )
    model = transformers.Qwen3MoeForCausalLM(cfg).eval()
    n = sum(p.numel() for p in model.parameters())
    print(f"<!-- Qwen3-MoE module: {n:,} parameters -->")
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    compare("Qwen3-MoE 4x32 experts, 32-token forward", Logits(model), "forward", (ids,), args)


def llama100m(args, decode_only=False):
    torch.manual_seed(0)
    c = torch_llama.LLAMA_100M
    model = torch_llama.Llama(c).eval()
    print(f"<!-- 100M module: {torch_llama.params(model):,} parameters -->")
    ids = torch.randint(0, c.vocab, (1, 128))
    if not decode_only:
        compare("100M Llama, 128-token prompt", model, "forward", (ids,), args)
    for kind in ("static",) if decode_only else ("static", "cat"):
        step = torch_llama.Step(model, kind, torch.float32, "cpu", 128)
        name = step.method(model).__name__
        compare(f"100M Llama, decode step ({kind}) at context 128", model, name, step.args(), args)


def frontend(args):
    """The frontend's own time on a step with the 8B module's inputs (32 layers: 288 weights,
    64 static caches, 453 inputs in all) and little work (hidden 64): call and capture() replay
    against the session's execute alone."""
    torch.manual_seed(0)
    c = torch_llama.Config(32, 64, 128, 4, 2, 256, 64)
    model = torch_llama.Llama(c).eval()
    step = torch_llama.Step(model, "static", torch.float32, "cpu", 5)
    compare("32 x hidden-64 Llama, decode step (static), 453 inputs", model,
            step.method(model).__name__, step.args(), args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", choices=["tiny", "moe", "100m", "100m-decode", "frontend"])
    ap.add_argument("--backends", default="eager,inductor,luminal", help="rows, comma-separated")
    ap.add_argument(
        "--luminal-options", default="{}", help='more options for luminal, JSON: \'{"fold_constants": 0}\''
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    print(f"torch {torch.__version__}, {args.threads} threads, luminal search_budget {args.budget}")
    print("| model, measurement | backend | compile (first call) s | median ms | max abs diff |")
    print("|---|---|---|---|---|")
    if args.only in (None, "tiny"):
        tiny(args)
    if args.only in (None, "moe"):
        moe(args)
    if args.only in (None, "100m", "100m-decode"):
        llama100m(args, decode_only=args.only == "100m-decode")
    if args.only == "frontend":
        frontend(args)


if __name__ == "__main__":
    main()
