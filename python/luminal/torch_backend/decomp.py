"""The decompositions AOTAutograd applies before conversion: the core ATen set, plus the fused
CUDA attention kernels written as math.

On a CUDA tensor ``scaled_dot_product_attention`` is dispatched while AOTAutograd traces, to one
of ``_scaled_dot_product_flash_attention``, ``_efficient_attention`` or ``_cudnn_attention``
(which one depends on the torch build, the GPU, the dtype and the mask: torch 2.11 on an H200
picks cuDNN for a masked bf16 step). The core set decomposes only the CPU variant, so without these
every layer's attention ran in PyTorch eager between compiled pieces (a Llama-3-8B step in 33
pieces, 4x slower than one). Here each is ``_scaled_dot_product_attention_math``, the form the
CPU variant takes, which converts to luminal's matmuls and softmax. Only the first output, the
attention, is used in inference (in the layout the kernel gives it); the statistics the backward pass would read come back empty.
"""

import functools

import torch
from torch._decomp import core_aten_decompositions

aten = torch.ops.aten


def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    torch._check(
        dropout_p == 0.0,
        lambda: f"luminal runs attention without dropout; got dropout_p={dropout_p}",
    )
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        # scaled_dot_product_attention hands the fused kernels an additive bias; the math form
        # would add a boolean mask as 0 and 1
        attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill(
            attn_mask.logical_not(), float("-inf")
        )
    out, _ = aten._scaled_dot_product_attention_math.default(
        query,
        key,
        value,
        attn_mask=attn_mask,
        dropout_p=0.0,
        is_causal=is_causal,
        dropout_mask=None,
        scale=scale,
        enable_gqa=query.size(1) != key.size(1),
    )
    return out


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


FUSED_ATTENTION = {
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
