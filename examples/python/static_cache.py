"""Generate with transformers' StaticCache through torch.compile(backend="luminal").

The cache tensors are written in place by the compiled program (they are the session's carried
state, bound to the tensors' own memory): a decode step moves no cache bytes in or out of the
session, only its outputs (the logits) come back. Compared with eager generation token for
token.

    PYTHONPATH=build/python ~/.cache/luminal/torch-venv/bin/python \\
        examples/python/static_cache.py [HF_FOLDER]

HF_FOLDER defaults to the tiny test Llama in tests/data/models/llama3 (random weights).
"""

import pathlib
import sys
import time

import torch
import transformers

import luminal.torch_backend as lt  # registers backend="luminal"

root = pathlib.Path(__file__).resolve().parents[2]
path = sys.argv[1] if len(sys.argv) > 1 else root / "tests/data/models/llama3"
model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
ids = torch.tensor([[1, 17, 42, 99, 5, 200, 3, 64]])
args = dict(max_new_tokens=16, do_sample=False, cache_implementation="static")

with torch.no_grad():
    want = model.generate(ids, **args)
    # Static shapes: one graph for the prompt, one for a decode step.
    model.forward = torch.compile(model.forward, backend="luminal", options={"search_budget": 10})
    t = time.perf_counter()
    got = model.generate(ids, **args)
    first = time.perf_counter() - t
    t = time.perf_counter()
    got = model.generate(ids, **args)
    again = time.perf_counter() - t

print("tokens equal to eager:", got.tolist() == want.tolist())
print(f"first generate (with compiles) {first:.1f} s, again {again * 1e3:.1f} ms")
for i, graph in enumerate(lt.report()["graphs"]):
    for s in graph["sessions"]:
        if s is None:
            continue
        st = s.stats()
        print(f"graph {i}: {st['executes']} executes, {st['bytes_uploaded']} bytes uploaded, "
              f"{st['bytes_downloaded']} bytes of outputs read back")
