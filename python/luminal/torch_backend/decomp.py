"""The decompositions AOTAutograd applies before conversion: the core ATen set, with the fused
attention kernels written as an eager model's attention.

On a CUDA tensor ``scaled_dot_product_attention`` is dispatched while AOTAutograd traces, to one
of ``_scaled_dot_product_flash_attention``, ``_efficient_attention`` or ``_cudnn_attention``
(which one depends on the torch build, the GPU, the dtype and the mask: torch 2.11 on an H200
picks cuDNN for a masked bf16 step); on the CPU, to ``_scaled_dot_product_flash_attention_for_cpu``.
The core set decomposes only the CPU variant, so without these every layer's attention ran in
PyTorch eager between compiled pieces on a GPU (a Llama-3-8B step in 33 pieces, 4x slower than
one). Here each is _attention below, which converts to luminal's matmuls and a softmax. Only the
first output, the attention, is used in inference (in the layout the kernel gives it); the
statistics the backward pass would read come back empty."""

import functools
import math

import torch
from torch._decomp import core_aten_decompositions

aten = torch.ops.aten


def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """Attention as an eager model writes it (transformers' eager attention, the 8B bench's
    matmul form): scores in the inputs' dtype, the softmax in f32, P @ V. Not torch's
    _scaled_dot_product_attention_math: that casts q, k and v to f32 first (on a decode step, the
    whole KV cache a layer) and scales k: an 8B step took 12.5 ms with it on an H100, against
    8.6 ms for the bench's eager form (BENCHMARKS.md, session 26)."""
    torch._check(
        dropout_p == 0.0,
        lambda: f"luminal runs attention without dropout; got dropout_p={dropout_p}",
    )
    heads, kv_heads = query.size(-3), key.size(-3)
    shape, length = query.shape, key.size(-2)
    # Grouped-query heads (enable_gqa): a kv head's g query heads are g * L rows of one product
    # with it, as the CLI's graph has them (never repeat_interleave: its heads read k and v
    # through the stride c*(z/g), which a GEMV cannot share, so each query head read them again).
    grouped = heads != kv_heads
    rows = (*shape[:-3], kv_heads, heads // kv_heads * shape[-2])
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    q = query.reshape(*rows, shape[-1]) if grouped else query
    scores = (q @ key.transpose(-2, -1) * scale).float()
    if grouped:
        scores = scores.reshape(*shape[:-1], length)
    if is_causal:  # top-left aligned, as torch's
        keep = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device)
        scores = scores.masked_fill(keep.tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:  # True: attend
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    p = scores.softmax(-1)  # (converted whole; exp / sum would be an exact f64 division)
    # a row whose every key is masked gives 0, as the fused kernels and torch's math form do
    masked = scores.amax(-1, keepdim=True) < torch.finfo(torch.float32).min  # -inf: one compare
    p = torch.where(masked, 0.0, p).to(value.dtype)
    if grouped:
        return (p.reshape(*rows, length) @ value).reshape(*shape[:-1], value.size(-1))
    return p @ value


def _laid_out(out, heads_inside):
    """The fused kernel's layout, which Dynamo traced with its meta kernel: a later view written
    for it must stay valid. [B, H, L, E] laid out as [B, L, H, E] when heads_inside, else plain."""
    if heads_inside:
        return out.transpose(1, 2).contiguous().transpose(1, 2)
    return out.contiguous()


def _like(query):
    """Whether query is laid out [B, L, H, E] (flash and cuDNN return their output like query)."""
    return query.size(1) > 1 and query.transpose(1, 2).is_contiguous()


def _empty(query, *shape, dtype=torch.float32):
    return query.new_empty(shape, dtype=dtype)


def _lse(query):
    return _empty(query, query.size(0), query.size(1), query.size(2))


def flash(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    out = _laid_out(_attention(query, key, value, None, dropout_p, is_causal, scale), _like(query))
    none = _empty(query, 0)
    return (out, _lse(query), none, none, query.size(2), key.size(2), none, none, none)


def efficient(
    query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None
):
    out = _laid_out(_attention(query, key, value, attn_bias, dropout_p, is_causal, scale), True)
    none = _empty(query, 0, dtype=torch.int64)
    return (out, _lse(query), none, none)


def cudnn(
    query,
    key,
    value,
    attn_bias,
    compute_log_sumexp,
    dropout_p=0.0,
    is_causal=False,
    return_debug_mask=False,
    *,
    scale=None,
):
    out = _attention(query, key, value, attn_bias, dropout_p, is_causal, scale)
    out = _laid_out(out, _like(query))
    none = _empty(query, 0)
    return (out, _lse(query), none, none, query.size(2), key.size(2), none, none, none)


def flash_for_cpu(
    query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None
):
    out = _attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    # the layout the core decomposition of this op gives (torch._decomp), [L, B, H, E] in memory
    out = out.permute(2, 0, 1, 3).contiguous().permute(1, 2, 0, 3)
    return out, _lse(query)


FUSED_ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: flash_for_cpu,
    aten._scaled_dot_product_flash_attention.default: flash,
    aten._scaled_dot_product_efficient_attention.default: efficient,
    aten._scaled_dot_product_cudnn_attention.default: cudnn,
}


@functools.lru_cache(maxsize=None)
def _table():
    table = dict(core_aten_decompositions())
    table.update(FUSED_ATTENTION)
    return table


def decompositions():
    """The table for ``aot_module_simplified(decompositions=...)``."""
    return _table()
