"""Inputs the compiled graph writes in place (a static KV cache): `cache[:, :, pos] = k` and
`index_copy_` stay in the graph as copy_ nodes, which become carried state bound to the tensor's
own memory. The cache must hold eager's values after every call, never move, and never be copied
into or out of the session."""

import torch

import luminal.torch_backend as lt

SLOTS, HEADS, HD = 32, 2, 8


class CacheStep(torch.nn.Module):
    """One decode step against a static cache: writes the token's k and v rows in place (one by
    item assignment, one by index_copy_), then attends over every slot with a mask."""

    def __init__(self):
        super().__init__()
        self.k = torch.nn.Linear(16, HEADS * HD, bias=False)
        self.v = torch.nn.Linear(16, HEADS * HD, bias=False)

    def forward(self, x, pos, kc, vc):
        k = self.k(x).view(1, 1, HEADS, HD).transpose(1, 2)
        v = self.v(x).view(1, 1, HEADS, HD).transpose(1, 2)
        kc[:, :, pos] = k
        vc.index_copy_(2, pos, v)
        mask = torch.arange(SLOTS, device=pos.device)[None, :] <= pos[:, None]
        att = (k @ kc.transpose(-1, -2)).masked_fill(~mask, float("-inf")).softmax(-1)
        return (att @ vc).sum(1)


def caches(make=torch.zeros):
    return make(1, HEADS, SLOTS, HD), make(1, HEADS, SLOTS, HD)


def run_steps(model, kc, vc, steps=6, seed=3):
    g = torch.Generator().manual_seed(seed)
    outs = []
    with torch.no_grad():
        for p in range(steps):
            x = torch.randn(1, 1, 16, generator=g).to(kc.device, kc.dtype)
            pos = torch.tensor([p], device=kc.device)
            outs.append((model(x, pos, kc, vc), kc.clone(), vc.clone()))
    return outs


def expect_same(got, want):
    for step, ((y, k, v), (y0, k0, v0)) in enumerate(zip(got, want)):
        torch.testing.assert_close(y, y0, msg=lambda m: f"step {step}: {m}")
        torch.testing.assert_close(k, k0, msg=lambda m: f"step {step}, k cache: {m}")
        torch.testing.assert_close(v, v0, msg=lambda m: f"step {step}, v cache: {m}")


def test_a_static_cache_is_written_in_its_own_memory(quick):
    torch.manual_seed(0)
    model = CacheStep().eval()
    want = run_steps(model, *caches())
    kc, vc = caches()
    ptrs = (kc.data_ptr(), vc.data_ptr())
    fast = torch.compile(model, backend="luminal", options=quick)
    got = run_steps(fast, kc, vc)
    expect_same(got, want)
    assert (kc.data_ptr(), vc.data_ptr()) == ptrs
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1], r
    session = r["graphs"][0]["sessions"][0]
    stats = session.stats()
    # Nothing is uploaded (every input is used in place) and only the 6 outputs of HD floats
    # come back: the caches are never copied in or out.
    assert stats["bytes_uploaded"] == 0, stats
    assert stats["bytes_downloaded"] == 6 * HD * 4, stats
    # Bound in place once each: the caches, the weights and the values computed at compile time
    # (the mask's arange: const_fold.py), then each step's token and position.
    once = 2 * HEADS * SLOTS * HD * 4 + 2 * 16 * HEADS * HD * 4 + r["graphs"][0]["constant_bytes"]
    assert r["graphs"][0]["constants"] >= 1, r
    assert stats["bytes_wrapped"] == once + 6 * (16 * 4 + 8), stats


def test_an_unaligned_cache_is_copied_back(quick):
    """A cache at an offset that is not 16-byte aligned cannot be the session's buffer: its
    value is set before and copied back after each call, with the same results."""
    torch.manual_seed(0)
    model = CacheStep().eval()
    want = run_steps(model, *caches())
    n = HEADS * SLOTS * HD

    def offset(*shape):
        return torch.zeros(n + 1)[1:].view(*shape)  # 4 bytes past an aligned start

    kc, vc = caches(offset)
    assert kc.data_ptr() % 16 != 0
    fast = torch.compile(model, backend="luminal", options=quick)
    expect_same(run_steps(fast, kc, vc), want)
    assert lt.report()["fallback"] == {}


def test_a_cache_that_is_not_contiguous_is_written_in_eager(quick):
    """copy_ into a transposed view does not convert: it runs in eager after the piece, and the
    backend says so once."""
    torch.manual_seed(0)
    model = CacheStep().eval()
    want = run_steps(model, *caches())

    def transposed(*shape):
        return torch.zeros(shape[0], shape[2], shape[1], shape[3]).transpose(1, 2)

    kc, vc = caches(transposed)
    fast = torch.compile(model, backend="luminal", options={**quick, "fallback": True})
    with_warning = run_steps(fast, kc, vc)
    expect_same(with_warning, want)
    assert "aten.copy_.default" in lt.report()["fallback"]


def test_the_old_value_read_before_the_write_is_the_old_value(quick):
    """A graph that reads the whole cache, then writes a row in place, then reads it again: the
    first read sees the old rows, whatever order the program runs them in (the in-place write
    must wait for it)."""

    class ReadWriteRead(torch.nn.Module):
        def forward(self, x, pos, kc):
            before = kc * 2.0
            kc[:, pos] = x
            return before.sum(1) + kc.sum(1), before.index_select(1, pos)

    model = ReadWriteRead()
    g = torch.Generator().manual_seed(4)
    want_cache = torch.randn(3, 16, 8, generator=g)
    got_cache = want_cache.clone()
    fast = torch.compile(model, backend="luminal", options=quick)
    with torch.no_grad():
        for p in range(4):
            x = torch.randn(3, 1, 8, generator=g)
            want = model(x, torch.tensor([p]), want_cache)
            got = fast(x, torch.tensor([p]), got_cache)
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b)
            torch.testing.assert_close(got_cache, want_cache, rtol=0, atol=0)
    assert lt.report()["fallback"] == {}


class SdpaCacheStep(CacheStep):
    """The same step with attention as SDPA over grouped-query heads (enable_gqa) and a boolean
    mask, as the torch anchor and gpt-fast write it; 2 query heads a KV head."""

    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(16, 2 * HEADS * HD, bias=False)

    def forward(self, x, pos, kc, vc):
        q = self.q(x).view(1, 1, 2 * HEADS, HD).transpose(1, 2)
        k = self.k(x).view(1, 1, HEADS, HD).transpose(1, 2)
        v = self.v(x).view(1, 1, HEADS, HD).transpose(1, 2)
        kc[:, :, pos] = k
        vc[:, :, pos] = v
        mask = torch.arange(SLOTS, device=pos.device)[None, :] <= pos[:, None]
        o = torch.nn.functional.scaled_dot_product_attention(
            q, kc, vc, attn_mask=mask[None, None], enable_gqa=True
        )
        return o.sum(1)


def test_sdpa_over_grouped_heads_with_a_static_cache_converts_whole(quick):
    torch.manual_seed(0)
    model = SdpaCacheStep().eval()
    want = run_steps(model, *caches())
    kc, vc = caches()
    fast = torch.compile(model, backend="luminal", options=quick)
    expect_same(run_steps(fast, kc, vc), want)
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1], r
