"""torch.compile a transformers model with the luminal backend and compare it with eager.

    PYTHONPATH=build/python ~/.cache/luminal/torch-venv/bin/python \\
        examples/python/torch_compile.py [HF_FOLDER]

HF_FOLDER defaults to the tiny test Llama in tests/data/models/llama3 (random weights); the other
folders there work too (tests/data/models/qwen3-moe: a mixture of experts, its experts grouped by
expert as transformers runs them under torch.compile, in one piece). Needs torch and transformers
(scripts/setup.sh puts both in ~/.cache/luminal/torch-venv).
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

# dynamic=True: the sequence length is a luminal dim, so new lengths reuse the searched program.
fast = torch.compile(model, backend="luminal", dynamic=True,
                     options={"search_budget": 10, "max_dim": 256})

ids = torch.tensor([[1, 17, 42, 99, 5, 200, 3, 64]])
with torch.no_grad():
    for step in range(8):  # greedy decoding without a KV cache: a new length every step
        t = time.perf_counter()
        logits = fast(input_ids=ids, use_cache=False).logits
        ms = (time.perf_counter() - t) * 1e3
        ref = model(input_ids=ids, use_cache=False).logits
        diff = (logits - ref).abs().max().item()
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        print(f"length {ids.shape[1]:2d}: {ms:8.1f} ms, max |luminal - eager| = {diff:.1e}, "
              f"next token {nxt.item()}")
        ids = torch.cat([ids, nxt], 1)

r = lt.report()
print(f"{r['compiles']} graph(s) converted, {r['executes']} piece runs, "
      f"ops left to eager: {r['fallback'] or 'none'}")
