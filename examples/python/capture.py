"""A decode loop replayed with luminal.torch_backend.capture: no Dynamo or AOTAutograd per step.

A one-layer decoder step over a static KV cache (written in place by the compiled program) is
compiled once, captured once, then each step writes the next token and position into the
captured tensors and replays. The tokens equal eager PyTorch's; the per-step times of the
compiled call and of the replay are printed side by side.

    PYTHONPATH=build/python ~/.cache/luminal/torch-venv/bin/python examples/python/capture.py
"""

import statistics
import time

import torch

import luminal.torch_backend as lt  # registers backend="luminal"

VOCAB, DIM, HEADS, SLOTS = 64, 32, 4, 64
HD = DIM // HEADS


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.qkv = torch.nn.Linear(DIM, 3 * DIM, bias=False)
        self.out = torch.nn.Linear(DIM, DIM, bias=False)
        self.head = torch.nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids, pos, kc, vc):
        x = self.emb(ids)  # [1, 1, DIM]
        q, k, v = self.qkv(x).view(1, 1, 3, HEADS, HD).unbind(2)
        kc[:, :, pos] = k.transpose(1, 2)  # the caches are written in place
        vc[:, :, pos] = v.transpose(1, 2)
        mask = torch.arange(SLOTS)[None, :] <= pos[:, None]
        att = (q.transpose(1, 2) @ kc.transpose(-1, -2)) / HD**0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ vc).transpose(1, 2).reshape(1, 1, DIM)
        return self.head(x + self.out(y))[:, -1]


def decode(step, ids, pos, steps):
    """Greedy: each step writes its token and position into ids and pos in place."""
    tokens, times = [], []
    for p in range(steps):
        t = time.perf_counter()
        logits = step()
        times.append(time.perf_counter() - t)
        ids.fill_(int(logits.argmax(-1)))
        pos.fill_(p + 1)
        tokens.append(int(ids))
    return tokens, statistics.median(times) * 1e6


torch.manual_seed(0)
model = Step().eval()


def fresh():
    caches = [torch.zeros(1, HEADS, SLOTS, HD) for _ in range(2)]
    return torch.tensor([[3]]), torch.tensor([0]), *caches


with torch.no_grad():
    ids, pos, kc, vc = fresh()
    want, eager_us = decode(lambda: model(ids, pos, kc, vc), ids, pos, 32)

    fast = torch.compile(model, backend="luminal", options={"search_budget": 4})
    ids, pos, kc, vc = fresh()
    fast(ids, pos, kc, vc)  # compiles
    ids, pos, kc, vc = fresh()
    got, call_us = decode(lambda: fast(ids, pos, kc, vc), ids, pos, 32)

    ids, pos, kc, vc = fresh()
    replay = lt.capture(fast, ids, pos, kc, vc)  # runs step 0 once
    ids, pos = ids.fill_(3), pos.fill_(0)
    kc.zero_()
    vc.zero_()
    replayed, replay_us = decode(replay, ids, pos, 32)

print("tokens equal to eager: compiled", got == want, "replayed", replayed == want)
print(f"median step: eager {eager_us:.0f} us, compiled call {call_us:.0f} us, "
      f"capture() replay {replay_us:.0f} us")
