"""CUDA's fused attention kernels (flash, memory-efficient, cuDNN) convert as math (decomp.py).

On a GPU, scaled_dot_product_attention reaches AOTAutograd as one of these ops; here the ops are
called directly on CPU tensors (Dynamo and AOTAutograd trace them with their meta kernels, so
their CUDA kernels never run) and compared with eager scaled_dot_product_attention.
"""

import pytest
import torch

import luminal.torch_backend as lt
from luminal.torch_backend import decomp

aten = torch.ops.aten


def _inputs(kv_heads=4, length=6, past=0, seed=3):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, length, 16, generator=g)
    k = torch.randn(2, kv_heads, length + past, 16, generator=g)
    v = torch.randn(2, kv_heads, length + past, 16, generator=g)
    return q, k, v


def _reference(q, k, v, mask=None, causal=False, scale=None):
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=causal, scale=scale, enable_gqa=q.size(1) != k.size(1)
    )


class Flash(torch.nn.Module):
    def forward(self, q, k, v):
        return aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, scale=0.3)[0] * 2


class Efficient(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return aten._scaled_dot_product_efficient_attention(q, k, v, mask, False)[0].exp()


class Cudnn(torch.nn.Module):
    def forward(self, q, k, v, mask):
        out = aten._scaled_dot_product_cudnn_attention(q, k, v, mask, False)[0]
        # cuDNN returns the layout of q, [B, L, H, E] here: a view across heads must hold
        return out.transpose(1, 2).view(out.size(0), out.size(2), -1)


def _compile(module, *args, quick):
    fast = torch.compile(module, backend="luminal", options=quick)
    with torch.no_grad():
        got = fast(*args)
    r = lt.report()
    assert r["fallback"] == {}, r["fallback"]
    assert all(g["pieces"] == 1 for g in r["graphs"]), r["graphs"]
    return got


def test_flash_attention_converts_causal_with_a_scale(quick):
    q, k, v = _inputs()
    got = _compile(Flash(), q, k, v, quick=quick)
    torch.testing.assert_close(got, _reference(q, k, v, causal=True, scale=0.3) * 2)


def test_efficient_attention_converts_with_an_additive_mask(quick):
    q, k, v = _inputs(past=3)
    mask = torch.randn(2, 1, 6, 9, generator=torch.Generator().manual_seed(8))
    got = _compile(Efficient(), q, k, v, mask, quick=quick)
    torch.testing.assert_close(got, _reference(q, k, v, mask=mask).exp())


def test_cudnn_attention_converts_grouped_heads_and_its_layout(quick):
    q, k, v = _inputs(kv_heads=2, past=4)
    q = q.transpose(1, 2).contiguous().transpose(1, 2)  # as a projection's view gives it
    mask = torch.ones(6, 10, dtype=torch.bool).tril(4)  # a static cache's causal mask
    got = _compile(Cudnn(), q, k, v, mask, quick=quick)
    want = _reference(q, k, v, mask=mask).transpose(1, 2).reshape(2, 6, -1)
    torch.testing.assert_close(got, want)


def test_dropout_is_refused_by_name():
    q, k, v = _inputs()
    with pytest.raises(RuntimeError, match="dropout_p=0.5"):
        decomp.flash(q, k, v, 0.5)


def test_every_fused_attention_op_is_in_the_table():
    table = decomp.decompositions()
    for op in decomp.FUSED_ATTENTION:
        assert table[op] is decomp.FUSED_ATTENTION[op]
    assert aten._scaled_dot_product_flash_attention_for_cpu.default in table


class Sdpa(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=True
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpa_on_the_cpu_with_a_row_masked_whole(dtype, quick):
    """The CPU's variant goes through the same form: a row whose every key is masked gives 0, as
    eager's; bf16 scores, an f32 softmax."""
    q, k, v = (t.to(dtype) for t in _inputs(kv_heads=2, past=2))
    mask = torch.ones(6, 8, dtype=torch.bool).tril(2)
    mask[3] = False
    got = _compile(Sdpa(), q, k, v, mask, quick=quick)
    want = Sdpa()(q, k, v, mask)
    assert got[:, :, 3].abs().max() == 0 and want[:, :, 3].abs().max() == 0
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
