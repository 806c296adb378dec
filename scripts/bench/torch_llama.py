"""A Llama in plain PyTorch for the torch.compile benchmarks (no transformers).

``Llama(cfg)`` has three entry points:
  forward(ids)                          logits of a whole prompt [1, s] (causal, no cache)
  decode_static(ids, pos, kcs, vcs)     one token [1, 1] at position `pos` (an int tensor [1])
                                        against per-layer static caches [1, kv_heads, max_ctx,
                                        head_dim] (``static_caches``), written in place inside
                                        the step (``kc[:, :, pos] = k``, gpt-fast's form and the
                                        anchors'); attends over every row, rows > pos masked
                                        out; returns the logits
  decode(ids, pos, k_cache, v_cache)    the same step against caches [layers, max_ctx, kv_heads,
                                        head_dim] that it does not write: it attends over the
                                        cache concatenated with the new row and returns the
                                        logits and the new K and V rows, which the caller writes
                                        (``Llama.write``) outside the compiled step
Shapes are static: CUDA graphs can capture either step. ``Step`` holds a step's caches and calls
either form the same way.
"""

import dataclasses
import math

import torch


@dataclasses.dataclass
class Config:
    layers: int = 12
    hidden: int = 768
    ffn: int = 2048
    heads: int = 12
    kv_heads: int = 4
    vocab: int = 32000
    max_ctx: int = 1024
    theta: float = 500000.0
    eps: float = 1e-5
    tied: bool = True
    # Attention as F.scaled_dot_product_attention with enable_gqa (the torch anchor's form),
    # instead of repeat_interleave, two matmuls and a softmax.
    sdpa: bool = False

    @property
    def head_dim(self):
        return self.hidden // self.heads


# The shape of the CPU benchmark's 100M-parameter Llama (bench_llm_cpu) and of Llama-3-8B.
LLAMA_100M = Config()
LLAMA_8B = Config(32, 4096, 14336, 32, 8, 128256, 2048, tied=False)
TINY = Config(2, 64, 128, 4, 2, 256, 64)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos, theta):
    """x [b, h, s, d] rotated at positions pos [s] (rotate-half form)."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    ang = pos.to(torch.float32)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        hd = c.head_dim
        self.attn_norm = torch.nn.Parameter(torch.ones(c.hidden))
        self.q = torch.nn.Linear(c.hidden, c.heads * hd, bias=False)
        self.k = torch.nn.Linear(c.hidden, c.kv_heads * hd, bias=False)
        self.v = torch.nn.Linear(c.hidden, c.kv_heads * hd, bias=False)
        self.o = torch.nn.Linear(c.heads * hd, c.hidden, bias=False)
        self.ffn_norm = torch.nn.Parameter(torch.ones(c.hidden))
        self.gate = torch.nn.Linear(c.hidden, c.ffn, bias=False)
        self.up = torch.nn.Linear(c.hidden, c.ffn, bias=False)
        self.down = torch.nn.Linear(c.ffn, c.hidden, bias=False)

    def qkv(self, x, pos):
        c, (b, s, _) = self.c, x.shape
        h = rms_norm(x, self.attn_norm, c.eps)
        q = self.q(h).view(b, s, c.heads, c.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.v(h).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        return rope(q, pos, c.theta), rope(k, pos, c.theta), v

    def attend(self, x, q, k, v, mask):
        """`mask`: True where a key is masked out."""
        c, (b, s, _) = self.c, x.shape
        if c.sdpa:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=~mask, enable_gqa=True
            )
        else:
            rep = c.heads // c.kv_heads
            k = k.repeat_interleave(rep, 1)
            v = v.repeat_interleave(rep, 1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(c.head_dim)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = att @ v
        y = y.transpose(1, 2).reshape(b, s, c.heads * c.head_dim)
        x = x + self.o(y)
        h = rms_norm(x, self.ffn_norm, c.eps)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(c.vocab, c.hidden)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c.layers)])
        self.norm = torch.nn.Parameter(torch.ones(c.hidden))
        self.head = None if c.tied else torch.nn.Linear(c.hidden, c.vocab, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.ndim == 2:
                    p.normal_(0, 0.02)

    def logits(self, x):
        x = rms_norm(x, self.norm, self.c.eps)
        return x @ self.embed.weight.T if self.head is None else self.head(x)

    def forward(self, ids):
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device)
        mask = torch.ones(s, s, dtype=torch.bool, device=ids.device).triu(1)
        x = self.embed(ids)
        for layer in self.layers:
            q, k, v = layer.qkv(x, pos)
            x = layer.attend(x, q, k, v, mask)
        return self.logits(x)

    def decode(self, ids, pos, k_cache, v_cache):
        c = self.c
        x = self.embed(ids)
        rows = torch.arange(c.max_ctx + 1, device=ids.device)
        # Masked out: the cached rows from pos on (not written yet); the new row is last.
        mask = ((rows >= pos) & (rows < c.max_ctx))[None, None, None, :]
        ks, vs = [], []
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, pos)
            kc = torch.cat([k_cache[i].permute(1, 0, 2)[None], k], 2)
            vc = torch.cat([v_cache[i].permute(1, 0, 2)[None], v], 2)
            x = layer.attend(x, q, kc, vc, mask)
            ks.append(k[0, :, 0])
            vs.append(v[0, :, 0])
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def decode_static(self, ids, pos, k_caches, v_caches):
        c = self.c
        x = self.embed(ids)
        mask = (torch.arange(c.max_ctx, device=ids.device) > pos)[None, None, None, :]
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, pos)
            k_caches[i][:, :, pos] = k
            v_caches[i][:, :, pos] = v
            x = layer.attend(x, q, k_caches[i], v_caches[i], mask)
        return self.logits(x)

    def static_caches(self, dtype, device):
        c = self.c
        shape = (1, c.kv_heads, c.max_ctx, c.head_dim)
        return (
            [torch.zeros(shape, dtype=dtype, device=device) for _ in range(c.layers)],
            [torch.zeros(shape, dtype=dtype, device=device) for _ in range(c.layers)],
        )

    def caches(self, dtype, device):
        c = self.c
        shape = (c.layers, c.max_ctx, c.kv_heads, c.head_dim)
        return torch.zeros(shape, dtype=dtype, device=device), torch.zeros(
            shape, dtype=dtype, device=device
        )

    @staticmethod
    def write(k_cache, v_cache, pos, k, v):
        k_cache[:, pos] = k
        v_cache[:, pos] = v


class Step:
    """One decode step of the model at position `pos`, `kind` "static" (decode_static: the caches
    written inside the step) or "cat" (decode, then Llama.write outside it), with its caches
    (random values, as a filled context). ``step(f)`` runs it through f, the method
    (``step.method(model)``) eager or compiled, and returns the logits; repeated calls write the
    same rows, so every call computes the same logits."""

    def __init__(self, model, kind, dtype, device, pos):
        self.kind, self.pos = kind, pos
        if kind == "static":
            self.kc, self.vc = model.static_caches(dtype, device)
        else:
            self.kc, self.vc = model.caches(dtype, device)
        for t in self.tensors():
            t.normal_()
        self.ids = torch.tensor([[11]], device=device)
        self.p = torch.tensor([pos], device=device)

    def tensors(self):
        if self.kind == "static":
            return self.kc + self.vc
        return [self.kc, self.vc]

    def method(self, model):
        return model.decode_static if self.kind == "static" else model.decode

    def args(self):
        return (self.ids, self.p, self.kc, self.vc)

    def __call__(self, f):
        if self.kind == "static":
            return f(*self.args())
        logits, k, v = f(*self.args())
        Llama.write(self.kc, self.vc, self.pos, k, v)
        return logits


def params(model):
    return sum(p.numel() for p in model.parameters())
